"""The `bosun` commands that start, follow and steer runs through Temporal: run, history, steer, cancel,
approve, inspect. Each takes the parsed arguments and the settings and returns the exit code."""

from __future__ import annotations

import argparse
import getpass
import json
import os
import secrets
import sys
import time

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError

from agents.harness_settings import HarnessSettings, load_harness
from agents.providers import ModelSpec, parse_spec
from agents.providers.scripted import load_trajectory
from agents.router import load_config
from infra import telemetry
from infra.errors import ConfigError
from infra.history import collect_run, render, to_json
from infra.objectstore import open_store
from infra.settings import Settings
from infra.temporal import connect
from sandbox.hostrepo import check_source_repo as check_repo
from workflows.models import TaskInput, TaskResult
from workflows.task import TaskWorkflow


def _validate_run(args: argparse.Namespace, s: Settings):
    """Everything a run needs, checked before anything starts: (repository, model spec, trajectory text, harness
    settings)."""
    if not args.task.strip():
        raise ConfigError("the task is empty; say what bosun should do, e.g. bosun run --repo . \"fix the test\"")
    repo = check_repo(args.repo)
    spec_text = args.model or s.default_model
    if not spec_text:
        raise ConfigError("no model: pass --model SPEC or set BOSUN_DEFAULT_MODEL")
    # Every agent reads it (fallback chains for any model): a bad one is refused here, before anything starts.
    load_config(s.router_config)
    harness = load_harness(args.harness, "--harness") if args.harness else HarnessSettings()
    spec = "auto" if spec_text == "auto" else _usable_model(spec_text, s)
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


def _usable_model(text: str, s: Settings) -> ModelSpec:
    """The spec, if it parses and its provider has what it needs (an API key); ConfigError saying what is missing."""
    spec = parse_spec(text)
    if spec.kind == "openai" and not (_secret(s.openai_api_key) or _env("OPENAI_API_KEY")):
        raise ConfigError(f"model {spec}: no API key; set BOSUN_OPENAI_API_KEY (or OPENAI_API_KEY)")
    if spec.kind == "anthropic" and not (_secret(s.anthropic_api_key) or _env("ANTHROPIC_API_KEY")):
        raise ConfigError(f"model {spec}: no API key; set BOSUN_ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY)")
    return spec


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
    return os.environ.get(name) or None


async def run(args: argparse.Namespace, s: Settings) -> int:
    repo, spec, trajectory, harness = _validate_run(args, s)
    tel = telemetry.setup(s, "cli")  # the trace of the task starts here (StartWorkflow:TaskWorkflow)
    client = await connect(s, tracing=tel.on)
    trajectory_ref = open_store(s).put_text(trajectory) if trajectory is not None else None
    wf_id = args.id or f"task-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    handle = await client.start_workflow(
        TaskWorkflow.run,
        TaskInput(repo=str(repo), task=args.task, model=str(spec), trajectory_ref=trajectory_ref, ref=args.ref,
                  max_turns=args.max_turns or s.max_turns, mode=args.mode, max_parallel=args.max_parallel,
                  budget={k: v for k, v in (("usd", args.budget_usd), ("tokens", args.budget_tokens))
                          if v is not None}, harness=harness),
        id=wf_id, task_queue=s.task_queue, static_summary=args.task[:200])
    label = " (scripted: the test double, no language model)" if spec != "auto" and spec.is_test_double else ""
    print(f"started {wf_id} with model {spec}{label}", file=sys.stderr)
    if not s.temporal_address:
        print(f"  web UI: http://{s.host}:{s.temporal_ui_port}/namespaces/{s.temporal_namespace}/workflows/{wf_id}",
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
    return 0 if result.status == "succeeded" else 1


async def history(args: argparse.Namespace, s: Settings) -> int:
    client = await connect(s)
    root = await collect_run(client, args.id)
    if args.json:
        print(json.dumps(to_json(root), indent=2, default=str))
    else:
        print("\n".join(render(root)))
    return 0


async def _handle(s: Settings, wf_id: str):

    client = await connect(s)
    handle = client.get_workflow_handle(wf_id)
    try:
        desc = await handle.describe()
    except RPCError as e:
        raise ConfigError(f"no run {wf_id!r} in namespace {s.temporal_namespace}: {e.message}") from None
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
