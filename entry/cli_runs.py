"""The `bosun` commands that follow and steer runs through Temporal: runs, history, steer, cancel, approve, inspect
(`run` and `model`, which load the agents' modules: entry/cli_run.py). Each takes the parsed arguments and the
settings and returns the exit code."""

from __future__ import annotations

import argparse
import getpass
import json
import shlex
import time
from typing import TYPE_CHECKING

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from infra.errors import ConfigError
from infra.history import WHERE_IDS, collect_run, render, to_json
from infra.settings import Settings
from infra.temporal import connect

if TYPE_CHECKING:
    from workflows.models import TaskResult


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


async def handle_of(s: Settings, wf_id: str):
    """(the run's handle, its description, whether it is running); ConfigError when there is no such run."""
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
    handle, desc, running = await handle_of(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to steer")
    await handle.signal("steer", args.message)
    print(f"sent to {args.id} ({desc.workflow_type}); the agents see it with their next model call")
    return 0


async def cancel(args: argparse.Namespace, s: Settings) -> int:
    handle, desc, running = await handle_of(s, args.id)
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
    handle, desc, running = await handle_of(s, agent_id)
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
    handle, desc, running = await handle_of(s, args.id)
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
    # Temporal's visibility store does not list by start time (a run that started earlier but is still running,
    # or closed later, can come first): newest first is sorted here
    found.sort(key=lambda r: r["started"], reverse=True)
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
