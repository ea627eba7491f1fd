"""The `bosun` commands that start, follow and steer runs through Temporal: run, history, steer, cancel,
approve, inspect. Each takes the parsed arguments and the settings and returns the exit code."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import shlex
import socket
import sys
import time

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError

from agents.harness_settings import HarnessSettings, load_harness, parse_harness
from agents.providers import KEYS, VENDOR_URLS, ModelSpec, keyed, parse_spec
from agents.providers.scripted import load_trajectory
from agents.router import RouterConfig, load_config
from entry.stack import worker_health
from environments.ecosystems import unsupported
from infra import telemetry
from infra.errors import ConfigError
from infra.history import WHERE_IDS, collect_run, render, to_json
from infra.objectstore import open_store
from infra.settings import Settings
from infra.temporal import connect
from sandbox.hostgit import check_revision, git
from sandbox.hostrepo import check_source_repo as check_repo
from workflows.models import TaskInput, TaskResult, branch_name
from workflows.task import TaskWorkflow


def _validate_run(args: argparse.Namespace, s: Settings):
    """Everything a run needs, checked before anything starts: (repository, model spec, trajectory text, harness
    settings)."""
    if not args.task.strip():
        raise ConfigError("the task is empty; say what bosun should do, e.g. bosun run --repo . \"fix the test\"")
    repo = check_repo(args.repo)
    _check_ref(repo, args.ref)
    spec_text = args.model or s.default_model
    if not spec_text:
        raise ConfigError("no model: pass --model SPEC or set BOSUN_DEFAULT_MODEL")
    # Every agent reads it (fallback chains for any model): a bad one is refused here, before anything starts.
    router = load_config(s.router_config)
    harness = load_harness(args.harness, "--harness") if args.harness else HarnessSettings()
    if getattr(args, "context_window", None) is not None:
        harness = parse_harness({**harness.model_dump(exclude_none=True), "context_window": args.context_window},
                                "--context-window")
    if spec_text == "auto":
        spec: ModelSpec | str = "auto"
        whose = "--harness router" if harness.router is not None else \
            f"BOSUN_ROUTER_CONFIG={s.router_config}" if s.router_config else "the router's default tiers"
        _router_usable(harness.router or router, s, whose)
    else:
        spec = _usable_model(spec_text, s)
    trajectory = None
    if spec != "auto" and spec.kind == "scripted":
        trajectory, _ = load_trajectory(spec.model)
    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError("--max-turns must be at least 1")
    if args.max_parallel < 1:
        raise ConfigError("--max-parallel must be at least 1")
    if (args.budget_usd is not None and args.budget_usd <= 0) or (args.budget_tokens is not None
                                                                  and args.budget_tokens <= 0):
        raise ConfigError("--budget-usd and --budget-tokens must be positive")
    return repo, spec, trajectory, harness


def _check_ref(repo, ref: str) -> None:
    """``--ref`` names a commit of the repository (a branch, tag, commit id or HEAD); ConfigError saying what it
    takes otherwise: found here, not after the start."""
    check_revision(ref, "--ref")
    found = git(None, "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                check=False)
    if found.returncode != 0:
        raise ConfigError(f"--ref {ref}: not a branch, tag or commit of {repo} (`git -C {repo} branch -a` and "
                          "`git tag` list what is there)")


def _worker_keys(s: Settings) -> list[str] | None:
    """The providers the embedded stack's worker has a key for (its health record says), or None when it cannot
    tell: no worker runs here, one from before it told, or the workers are elsewhere (BOSUN_TEMPORAL_ADDRESS: a
    task's model calls run on whichever host takes them)."""
    if s.temporal_address:
        return None
    health = worker_health(s)
    keys = health.get("model_keys") if health else None
    return list(keys) if isinstance(keys, list) else None


def _usable_model(text: str, s: Settings, why: str = "") -> ModelSpec:
    """The spec, if it parses and its provider has what it needs (an API key) where the model is called: in the
    worker. The worker of this machine says which keys it has; without one here, this shell's environment stands
    in for it. ConfigError saying what is missing and how to give it. (No key is read into the run's input.)"""
    spec = parse_spec(text)
    if spec.kind not in KEYS or getattr(s, f"{spec.kind}_base_url", None) not in VENDOR_URLS:
        return spec  # (a gateway of the settings' own may need no key)
    names = " or ".join(KEYS[spec.kind])
    mine = spec.kind in keyed(s)
    worker = _worker_keys(s)
    what = f"model {spec}{why}"
    if worker is not None:
        if spec.kind in worker:
            return spec
        if mine:
            raise ConfigError(f"{what}: the running worker has no {spec.kind} API key. This shell has it, but the "
                              "worker reads keys from the environment `bosun up` started in, so restart the stack "
                              "from this shell: `bosun down && bosun up`")
        raise ConfigError(f"{what}: no API key; set {names} and restart the stack (`bosun down && bosun up`): the "
                          "worker reads keys when it starts")
    if not mine:
        raise ConfigError(f"{what}: no API key; set {names} in the environment the worker starts in (`bosun up`)")
    return spec


def _router_usable(router: RouterConfig, s: Settings, whose: str) -> None:
    """``--model auto``: every model the router may pick for an agent is usable (its key present): a run that
    could route to a model without its key would fail only when it did."""
    for spec in router.choices():
        _usable_model(spec, s, f" (one that --model auto may pick: {whose})")


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


def _undetected(repo, ref: str) -> str:
    """What detection would not see in the repository at ``ref`` (a repository of another language), or ''."""
    listed = git(None, "-C", str(repo), "ls-tree", "-r", "-z", "--name-only", "--end-of-options", ref, check=False,
                 timeout_s=60)
    if listed.returncode != 0:
        return ""
    return unsupported([os.fsdecode(p) for p in listed.stdout.split(b"\0") if p])


async def run(args: argparse.Namespace, s: Settings) -> int:
    repo, spec, trajectory, harness = _validate_run(args, s)
    if warning := _undetected(repo, args.ref):
        print(f"bosun: warning: {repo} at {args.ref}: {warning}", file=sys.stderr)
    tel = telemetry.setup(s, "cli")  # the trace of the task starts here (StartWorkflow:TaskWorkflow)
    client = await connect(s, tracing=tel.on)
    trajectory_ref = open_store(s).put_text(trajectory) if trajectory is not None else None
    wf_id = args.id or f"task-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    local = not getattr(args, "no_branch", False)
    handle = await client.start_workflow(
        TaskWorkflow.run,
        TaskInput(repo=str(repo), task=args.task, model=str(spec), trajectory_ref=trajectory_ref, ref=args.ref,
                  max_turns=args.max_turns or s.max_turns, mode=args.mode, max_parallel=args.max_parallel,
                  budget={k: v for k, v in (("usd", args.budget_usd), ("tokens", args.budget_tokens))
                          if v is not None}, harness=harness, local_branch=local, local_host=socket.gethostname()),
        id=wf_id, task_queue=s.task_queue, static_summary=args.task[:200],
        memo={"trigger": "cli", "repo": str(repo)})
    label = " (scripted: the test double, no language model)" if spec != "auto" and spec.is_test_double else ""
    print(f"started {wf_id} with model {spec}{label}", file=sys.stderr)
    if not s.temporal_address:
        print(f"  web UI: http://{s.host}:{s.temporal_ui_port}/namespaces/{s.temporal_namespace}/workflows/{wf_id}",
              file=sys.stderr)
    if local:
        print(f"  the result: the branch {branch_name(wf_id)} in {repo} when the task ends (`bosun history {wf_id}`)",
              file=sys.stderr)
    tel.flush()
    if not args.wait:
        print(wf_id)
        return 0
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
        turns = sum(a.turns for a in result.all_agents())
        print(f"status: {result.status}; {turns} agent turns; branch {result.branch} "
              f"({(result.commit or 'no commit')[:12]}) in {result.workspace}")
        for line in result_lines(result, str(repo)):
            print(line)
    return 0 if result.status == "succeeded" else 1


def result_lines(result: TaskResult | dict, repo: str) -> list[str]:
    """Where the result is and how to look at it: the branch in the user's repository, or why it is not there."""
    get = result.get if isinstance(result, dict) else lambda k, d=None: getattr(result, k, d)
    branch, note = get("local_branch", "") or "", get("local_note", "") or ""
    if branch:
        at = shlex.quote(repo)
        return [f"result: the branch {branch} in your repository {repo} (your working tree, index and checked-out "
                "branch are as they were):",
                f"  git -C {at} log --oneline HEAD..{branch}    # its commits",
                f"  git -C {at} diff HEAD...{branch}            # its changes",
                f"  git -C {at} merge {branch}                  # take them"]
    if note:
        return [f"result: not in your repository: {note}"]
    return []


async def history(args: argparse.Namespace, s: Settings) -> int:
    client = await connect(s)
    root = await collect_run(client, args.id)
    if args.json:
        print(json.dumps(to_json(root), indent=2, default=str))
    else:
        print("\n".join(render(root)))
        if isinstance(root.result, dict):
            for line in result_lines(root.result, root.input.get("repo", "") if isinstance(root.input, dict) else ""):
                print(line)
    return 0


async def _handle(s: Settings, wf_id: str):

    client = await connect(s)
    handle = client.get_workflow_handle(wf_id)
    try:
        desc = await handle.describe()
    except RPCError as e:
        raise ConfigError(f"no run {wf_id!r} in namespace {s.temporal_namespace}: {e.message} ({WHERE_IDS})") from None
    return handle, desc, desc.status == WorkflowExecutionStatus.RUNNING


async def steer(args: argparse.Namespace, s: Settings) -> int:
    if not args.message.strip():
        raise ConfigError("the message is empty")
    handle, desc, running = await _handle(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to steer")
    await handle.signal("steer", args.message)
    print(f"sent to {args.id} ({desc.workflow_type}); the agents see it with their next model call")
    return 0


async def model(args: argparse.Namespace, s: Settings) -> int:
    """Switch a running task's agents (or one agent: TASK/NAME) to another model from their next turn on."""
    spec = _usable_model(args.spec, s)
    if spec.kind == "scripted":
        raise ConfigError("cannot switch to a scripted: model: a run replays the trajectory it started with")
    handle, desc, running = await _handle(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to switch")
    who = args.by or getpass.getuser()
    await handle.signal("switch_model", args=[str(spec), who, args.reason])
    scope = "its running agents and every agent it starts" if desc.workflow_type == "TaskWorkflow" else "the agent"
    print(f"{args.id} ({desc.workflow_type}): {scope} switch to {spec} at the next turn (by {who}); "
          f"`bosun history {args.id}` records it")
    return 0


async def cancel(args: argparse.Namespace, s: Settings) -> int:
    handle, desc, running = await _handle(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to cancel")
    await handle.cancel()
    print(f"cancellation requested for {args.id}; its agents stop and release their sandboxes")
    return 0


async def approve(args: argparse.Namespace, s: Settings) -> int:
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


async def inspect(args: argparse.Namespace, s: Settings) -> int:
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
        for msg in await handle.query("messages"):
            msg = msg if isinstance(msg, dict) else msg.model_dump()
            where = ", ".join(msg["delivered_to"]) or "queued for the next agent that starts"
            print(f"  message {msg['id']} ({msg['kind']}{' by ' + msg['by'] if msg['by'] else ''}): "
                  f"{msg['text'][:80]!r} -> {where}")
    else:
        print(json.dumps(await handle.query("progress"), indent=2))
    return 0


RUN_STATUSES = ("running", "succeeded", "partial", "failed", "no_changes", "cancelled", "environment_failed",
                "terminated", "timed_out")
"""What ``bosun runs`` says a run is: running, a finished task's own status, or how Temporal ended it."""
ENDED = {WorkflowExecutionStatus.FAILED: "failed", WorkflowExecutionStatus.CANCELED: "cancelled",
         WorkflowExecutionStatus.TERMINATED: "terminated", WorkflowExecutionStatus.TIMED_OUT: "timed_out",
         WorkflowExecutionStatus.RUNNING: "running"}
QUERY = {"running": "ExecutionStatus = 'Running'", "cancelled": "ExecutionStatus = 'Canceled'",
         "terminated": "ExecutionStatus = 'Terminated'", "timed_out": "ExecutionStatus = 'TimedOut'",
         "succeeded": "ExecutionStatus = 'Completed'", "partial": "ExecutionStatus = 'Completed'",
         "no_changes": "ExecutionStatus = 'Completed'", "environment_failed": "ExecutionStatus = 'Completed'",
         "failed": "(ExecutionStatus = 'Completed' OR ExecutionStatus = 'Failed')"}
"""What Temporal's visibility store is asked for each status (a task's own status is read per run)."""
ROOTS = "(WorkflowType = 'TaskWorkflow' OR WorkflowType = 'EvalWorkflow')"


async def runs(args: argparse.Namespace, s: Settings) -> int:
    """The recent runs (tasks and evaluations, not their agents or instances), newest first."""
    if args.status is not None and args.status not in RUN_STATUSES:
        raise ConfigError(f"--status {args.status!r}: one of {', '.join(RUN_STATUSES)}")
    if args.limit < 1:
        raise ConfigError(f"--limit {args.limit}: give 1 or more")
    client = await connect(s)
    query = ROOTS + (f" AND {QUERY[args.status]}" if args.status else "")
    found: list[dict] = []
    async for w in _listed(client, query, args.limit if args.status in (None, "running") else None):
        if w.parent_id or w.status == WorkflowExecutionStatus.CONTINUED_AS_NEW:  # (an instance; an earlier run)
            continue
        row = await _run_row(client, w)
        if args.status is None or row["status"] == args.status:
            found.append(row)
        if len(found) >= args.limit:
            break
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    if not found:
        print("no runs" + (f" with status {args.status}" if args.status else "") + "; `bosun run` starts one")
        return 0
    width = max(len(r["id"]) for r in found)
    print(f"{'ID':<{width}}  {'STATUS':<18} {'TRIGGER':<8} {'STARTED':<20} {'TOOK':>8}  REPOSITORY")
    for r in found:
        took = f"{r['duration_s']:.0f}s" if r["duration_s"] is not None else "-"
        print(f"{r['id']:<{width}}  {r['status']:<18} {r['trigger']:<8} {r['started']:<20} {took:>8}  "
              f"{r['repository']}")
    return 0


async def _listed(client, query: str, limit: int | None):
    """Runs newest first, those no other workflow started (no evaluation's instance tasks) when the visibility
    store can say so; else all of them (the caller leaves the instances out)."""
    given = 0
    try:
        async for w in client.list_workflows(f"{query} AND ParentWorkflowId IS NULL", limit=limit, page_size=100):
            given += 1
            yield w
        return
    except RPCError:  # (a visibility store that knows no ParentWorkflowId)
        if given:
            raise
    async for w in client.list_workflows(query, page_size=100):
        yield w


async def _run_row(client, w) -> dict:
    """One run as ``bosun runs`` shows it: id, kind, status, trigger, repository, start (UTC) and seconds."""
    try:
        memo = await w.memo()
    except Exception:  # noqa: BLE001 - a memo this client cannot decode: the run is shown with what is known
        memo = {}
    memo = memo if isinstance(memo, dict) else {}
    origin = memo.get("origin") if isinstance(memo.get("origin"), dict) else {}
    evaluation = w.workflow_type == "EvalWorkflow"
    status = ENDED.get(w.status, "")
    repo = str(memo.get("repo") or origin.get("repo") or "")
    if w.status == WorkflowExecutionStatus.COMPLETED:
        status = "succeeded" if evaluation else str(memo.get("result") or "")
    if not evaluation and (not status or not repo):  # (a run from before its memo said so: read from its history)
        status, repo = await _from_history(client, w, status, repo)
    end = w.close_time.timestamp() if w.close_time else time.time()
    return {"id": w.id, "kind": "evaluation" if evaluation else "task", "status": status or "completed",
            "trigger": "eval" if evaluation else str(origin.get("source") or memo.get("trigger") or "cli"),
            "repository": repo, "started": w.start_time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "duration_s": round(end - w.start_time.timestamp(), 1), "closed": w.close_time is not None}


async def _from_history(client, w, status: str, repo: str) -> tuple[str, str]:
    handle = client.get_workflow_handle(w.id, run_id=w.run_id)  # (this run: an id may have been used again)
    try:
        if not repo:
            async for event in handle.fetch_history_events(page_size=1):
                attrs = event.workflow_execution_started_event_attributes
                if attrs.input.payloads:
                    repo = str(json.loads(attrs.input.payloads[0].data).get("repo", ""))
                break
        if not status:
            result = await handle.result(follow_runs=False)
            status = result.get("status", "") if isinstance(result, dict) else getattr(result, "status", "")
    except Exception:  # noqa: BLE001 - a run whose history is gone (retention): shown with what is known
        pass
    return status, repo
