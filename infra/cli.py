"""The `bosun` command line. Every command is documented in the README (`bosun COMMAND --help` too)."""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import sys
import time

from infra.errors import BosunError, ConfigError
from infra.settings import Settings, load_settings

EPILOG = "Settings come from BOSUN_* environment variables; `bosun settings` shows them."


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bosun", description="Durable, sandboxed, multi-agent coding workflows.",
                                epilog=EPILOG)
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    sub.add_parser("up", help="start the embedded stack (Temporal, NATS, worker); idempotent")
    sub.add_parser("down", help="stop what `bosun up` started")
    sub.add_parser("status", help="show each part of the stack with its address and health")
    sub.add_parser("worker", help="run a worker in the foreground (the stack runs one for you)")
    sub.add_parser("settings", help="print the settings in force (secrets redacted)")

    r = sub.add_parser("run", help="start a task on a repository")
    r.add_argument("task", help="what to do, in plain words")
    r.add_argument("--repo", required=True, help="path of the git repository to work on")
    r.add_argument("--model", help="model spec (default: BOSUN_DEFAULT_MODEL), e.g. anthropic:claude-sonnet-4-5, "
                                   "openai:gpt-5-codex, openai-compatible:http://host:port/v1#model, "
                                   "scripted:PATH (the test double: replays a recorded trajectory), or auto "
                                   "(the router picks per role; BOSUN_ROUTER_CONFIG)")
    r.add_argument("--ref", default="HEAD", help="git ref to start from (default HEAD)")
    r.add_argument("--id", help="workflow id (default: generated)")
    r.add_argument("--max-turns", type=int, help="model turns each agent may take (default BOSUN_MAX_TURNS)")
    r.add_argument("--mode", choices=["team", "solo"], default="team",
                   help="team (default): planner, parallel fast-edit agents, stitching, debugger; solo: one agent")
    r.add_argument("--max-parallel", type=int, default=4, help="fast-edit agents at once (team mode, default 4)")
    r.add_argument("--budget-usd", type=float, help="task budget in USD (team mode: fan-out and debugger rounds "
                                                    "start only what fits)")
    r.add_argument("--budget-tokens", type=int, help="task budget in tokens (as --budget-usd)")
    r.add_argument("--wait", action="store_true", help="wait for the result and print it")
    r.add_argument("--json", action="store_true", help="with --wait: print the result as JSON")

    h = sub.add_parser("history", help="print a run's steps read back from Temporal")
    h.add_argument("id", help="workflow id printed by `bosun run`")
    h.add_argument("--json", action="store_true", help="print the steps as JSON")

    st = sub.add_parser("steer", help="send a message to the agents of a running task")
    st.add_argument("id", help="workflow id of the task (or of one agent: TASK/agent-name)")
    st.add_argument("message", help="what to tell the agents")
    ca = sub.add_parser("cancel", help="cancel a running task; its agents stop and release their sandboxes")
    ca.add_argument("id", help="workflow id of the task")
    ap = sub.add_parser("approve", help="approve (or --deny) an agent's request to run a command outside the sandbox")
    ap.add_argument("request", help="request id, as `bosun inspect TASK/AGENT` shows it (AGENT_WORKFLOW_ID#CALL_ID)")
    ap.add_argument("--deny", action="store_true", help="deny the request instead")
    ap.add_argument("--by", default="", help="who decides (recorded in history); default: $USER")
    ins = sub.add_parser("inspect", help="a running task's phase, plan and agents (Temporal queries)")
    ins.add_argument("id", help="workflow id of the task")

    sb = sub.add_parser("sandbox", help="sandbox tools")
    sbs = sb.add_subparsers(dest="sandbox_cmd", required=True, metavar="SUBCOMMAND")
    sbs.add_parser("exec", help="run one command in a fresh sandbox", add_help=False)
    se = sub.add_parser("search", help="code search: bosun search files --repo DIR --query TEXT --json",
                        add_help=False)
    se.add_argument("rest", nargs=argparse.REMAINDER)
    ev = sub.add_parser("eval", help="evaluate the edit engine: bosun eval edits --cases CASES.jsonl", add_help=False)
    ev.add_argument("rest", nargs=argparse.REMAINDER)
    return p


def _validate_run(args: argparse.Namespace, s: Settings):
    from agents.providers import parse_spec
    from sandbox.hostrepo import check_source_repo as check_repo

    if not args.task.strip():
        raise ConfigError("the task is empty; say what bosun should do, e.g. bosun run --repo . \"fix the test\"")
    repo = check_repo(args.repo)
    spec_text = args.model or s.default_model
    if not spec_text:
        raise ConfigError("no model: pass --model SPEC or set BOSUN_DEFAULT_MODEL")
    from agents.router import load_config

    # Every agent reads it (fallback chains for any model): a bad one is refused here, before anything starts.
    load_config(s.router_config)
    if spec_text == "auto":
        return repo, "auto", None
    spec = parse_spec(spec_text)
    trajectory = None
    if spec.kind == "scripted":
        from agents.providers.scripted import load_trajectory

        trajectory, _ = load_trajectory(spec.model)
    elif spec.kind == "openai" and not (_secret(s.openai_api_key) or _env("OPENAI_API_KEY")):
        raise ConfigError(f"model {spec}: no API key; set BOSUN_OPENAI_API_KEY (or OPENAI_API_KEY)")
    elif spec.kind == "anthropic" and not (_secret(s.anthropic_api_key) or _env("ANTHROPIC_API_KEY")):
        raise ConfigError(f"model {spec}: no API key; set BOSUN_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY)")
    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError("--max-turns must be at least 1")
    if args.max_parallel < 1:
        raise ConfigError("--max-parallel must be at least 1")
    if (args.budget_usd is not None and args.budget_usd <= 0) or (args.budget_tokens is not None
                                                                  and args.budget_tokens <= 0):
        raise ConfigError("--budget-usd and --budget-tokens must be positive")
    return repo, spec, trajectory


def _failure_chain(e: BaseException) -> str:
    """The innermost causes of a workflow failure, e.g. 'child workflow failed <- ScriptDiverged: ...'."""
    parts: list[str] = []
    cur: BaseException | None = e.cause if hasattr(e, "cause") else e
    while cur is not None:
        msg = str(cur) or type(cur).__name__
        if not parts or parts[-1] != msg:
            parts.append(msg)
        cur = getattr(cur, "cause", None) or cur.__cause__
    return " <- ".join(parts[-2:]) if parts else str(e)


def _secret(value) -> str | None:
    return value.get_secret_value() or None if value is not None else None


def _env(name: str) -> str | None:
    import os

    return os.environ.get(name) or None


async def _run(args: argparse.Namespace, s: Settings) -> int:
    from infra.artifacts import ArtifactStore
    from infra.temporal import connect
    from workflows.models import TaskInput, TaskResult
    from workflows.task import TaskWorkflow

    repo, spec, trajectory = _validate_run(args, s)
    client = await connect(s)
    trajectory_ref = ArtifactStore(s.artifacts_dir).put_text(trajectory) if trajectory is not None else None
    wf_id = args.id or f"task-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    handle = await client.start_workflow(
        TaskWorkflow.run,
        TaskInput(repo=str(repo), task=args.task, model=str(spec), trajectory_ref=trajectory_ref, ref=args.ref,
                  max_turns=args.max_turns or s.max_turns, mode=args.mode, max_parallel=args.max_parallel,
                  budget={k: v for k, v in (("usd", args.budget_usd), ("tokens", args.budget_tokens))
                          if v is not None}),
        id=wf_id, task_queue=s.task_queue, static_summary=args.task[:200])
    label = " (scripted: the test double, no language model)" if spec != "auto" and spec.is_test_double else ""
    print(f"started {wf_id} with model {spec}{label}", file=sys.stderr)
    if not s.temporal_address:
        print(f"  web UI: http://{s.host}:{s.temporal_ui_port}/namespaces/{s.temporal_namespace}/workflows/{wf_id}",
              file=sys.stderr)
    if not args.wait:
        print(wf_id)
        return 0
    from temporalio.client import WorkflowFailureError

    try:
        result: TaskResult = await handle.result()
    except WorkflowFailureError as e:
        print(f"bosun: run {wf_id} failed: {_failure_chain(e)}", file=sys.stderr)
        print(f"  see every step with: bosun history {wf_id}", file=sys.stderr)
        return 1
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.diff or "(no changes)")
        print(f"tests before: {result.tests_before.summary}")
        print(f"tests after:  {result.tests_after.summary}")
        if result.plan:
            print(f"plan ({result.plan.source}): " + "; ".join(f"{s.id}: {s.goal[:60]}" for s in result.plan.subtasks))
        for sub in result.subtasks:
            print(f"  subtask {sub.id}: {sub.status} after {sub.attempts} attempt(s) {sub.note}".rstrip())
        if result.budget_note:
            print(f"  {result.budget_note}")
        for n, dbg in enumerate(result.debug_rounds, 1):
            print(f"  debugger round {n}: {dbg.status} after {dbg.turns} turns")
        agents = [result.agent] if result.agent else [s.agent for s in result.subtasks if s.agent]
        turns = sum(a.turns for a in agents) + sum(d.turns for d in result.debug_rounds)
        print(f"status: {result.status}; {turns} agent turns; branch {result.branch} "
              f"({(result.commit or 'no commit')[:12]}) in {result.workspace}")
    return 0 if result.status == "succeeded" else 1


async def _history(args: argparse.Namespace, s: Settings) -> int:
    from temporalio.service import RPCError

    from infra.history import collect, render, to_json
    from infra.temporal import connect

    client = await connect(s)
    try:
        root = await collect(client, args.id)
    except RPCError as e:
        raise ConfigError(f"no run {args.id!r} in namespace {s.temporal_namespace}: {e.message}") from None
    if args.json:
        print(json.dumps(to_json(root), indent=2, default=str))
    else:
        print("\n".join(render(root)))
    return 0


async def _handle(s: Settings, wf_id: str):
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    from infra.temporal import connect

    client = await connect(s)
    handle = client.get_workflow_handle(wf_id)
    try:
        desc = await handle.describe()
    except RPCError as e:
        raise ConfigError(f"no run {wf_id!r} in namespace {s.temporal_namespace}: {e.message}") from None
    return handle, desc, desc.status == WorkflowExecutionStatus.RUNNING


async def _steer(args: argparse.Namespace, s: Settings) -> int:
    if not args.message.strip():
        raise ConfigError("the message is empty")
    handle, desc, running = await _handle(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to steer")
    await handle.signal("steer", args.message)
    print(f"sent to {args.id} ({desc.workflow_type}); the agents see it with their next model call")
    return 0


async def _cancel(args: argparse.Namespace, s: Settings) -> int:
    handle, desc, running = await _handle(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to cancel")
    await handle.cancel()
    print(f"cancellation requested for {args.id}; its agents stop and release their sandboxes")
    return 0


async def _approve(args: argparse.Namespace, s: Settings) -> int:
    import getpass

    agent_id, sep, call_id = args.request.rpartition("#")
    if not sep or not agent_id or not call_id:
        raise ConfigError(f"request id {args.request!r} is not of the form AGENT_WORKFLOW_ID#CALL_ID; "
                          "`bosun inspect TASK/AGENT` lists the pending ones")
    handle, desc, running = await _handle(s, agent_id)
    if not running:
        raise ConfigError(f"agent {agent_id} is not running ({desc.status.name.lower()}); nothing to decide")
    pending = (await handle.query("progress")).get("pending_escalations", {})
    if args.request not in pending:
        raise ConfigError(f"no pending request {args.request!r}; pending: {', '.join(pending) or 'none'}")
    who = args.by or getpass.getuser()
    await handle.signal("approve", args=[args.request, not args.deny, who])
    print(f"{'denied' if args.deny else 'approved'} {args.request} ({pending[args.request]['call'][:200]})")
    return 0


async def _inspect(args: argparse.Namespace, s: Settings) -> int:
    handle, desc, running = await _handle(s, args.id)
    print(f"{args.id} ({desc.workflow_type}): {desc.status.name.lower()}")
    if not running:
        print(f"  the run has ended; `bosun history {args.id}` shows every step")
        return 0
    if desc.workflow_type == "TaskWorkflow":
        print(f"  phase: {await handle.query('status')}")
        plan = await handle.query("plan")
        if plan:
            for sub in plan["subtasks"] if isinstance(plan, dict) else plan.subtasks:
                sub = sub if isinstance(sub, dict) else sub.model_dump()
                print(f"  subtask {sub['id']}: {sub['goal'][:90]}")
        for name, state in (await handle.query("agents")).items():
            print(f"  agent {name}: {state}")
    else:
        print(json.dumps(await handle.query("progress"), indent=2))
    return 0


def _settings(s: Settings) -> int:
    for name in Settings.model_fields:
        value = getattr(s, name)
        if value is not None and "key" in name:
            value = "***"
        print(f"BOSUN_{name.upper()}={value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["sandbox", "exec"]:
        from sandbox.cli import exec_main

        return exec_main(argv[2:])
    if argv[:1] == ["search"]:
        from agents.search.cli import search_main

        return search_main(argv[1:])
    if argv[:1] == ["eval"]:
        from agents.edits.eval import eval_main

        return eval_main(argv[1:])
    args = _parser().parse_args(argv)
    try:
        s = load_settings()
        if args.cmd == "up":
            from infra.stack import up

            return up(s)
        if args.cmd == "down":
            from infra.stack import down

            return down(s)
        if args.cmd == "status":
            from infra.stack import status

            return status(s)
        if args.cmd == "worker":
            from infra.worker import main as worker_main

            worker_main()
            return 0
        if args.cmd == "settings":
            return _settings(s)
        if args.cmd == "run":
            return asyncio.run(_run(args, s))
        if args.cmd == "history":
            return asyncio.run(_history(args, s))
        if args.cmd == "steer":
            return asyncio.run(_steer(args, s))
        if args.cmd == "cancel":
            return asyncio.run(_cancel(args, s))
        if args.cmd == "inspect":
            return asyncio.run(_inspect(args, s))
        if args.cmd == "approve":
            return asyncio.run(_approve(args, s))
    except BosunError as e:
        print(f"bosun: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 2


def entry() -> None:
    """Console-script entry point. Exits with os._exit after flushing: the Temporal client's native runtime can
    crash the interpreter's finalisation (a known SDK issue), which must not turn a clean result into a signal."""
    import os

    from infra.safetext import SafeStream

    sys.stdout, sys.stderr = SafeStream(sys.stdout), SafeStream(sys.stderr)  # type: ignore[assignment]
    try:
        rc = main()
    except SystemExit as e:  # argparse errors and --help
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)


if __name__ == "__main__":
    entry()
