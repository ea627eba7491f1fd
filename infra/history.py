"""Read a run's steps back from Temporal: model turns, tool calls with arguments and short results, durations.

The history view is built from workflow history alone (refs point into the artifact store for full contents).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from infra.errors import ConfigError

WHERE_IDS = "`bosun run` prints a run's id as it starts it; `bosun runs` lists the recent ones"
"""Where run ids come from: said with every unknown id."""

@dataclass
class Step:
    workflow_id: str
    kind: str
    """activity | local activity | child | workflow"""
    name: str
    activity_id: str = ""
    input: Any = None
    result: Any = None
    error: str | None = None
    attempt: int = 1
    started: float | None = None
    duration_s: float | None = None
    status: str | None = None
    """Workflows and child agents: how they ended (completed, failed, terminated, cancelled, timed out); None while
    running."""
    missing: str | None = None
    """Child workflows: why their own steps are not there (Temporal no longer keeps their history); workflows:
    which of their earlier runs are not there."""
    children: list[Step] = field(default_factory=list)


def _decode(payloads) -> list[Any]:
    out = []
    for p in payloads:
        try:
            out.append(json.loads(p.data) if p.data else None)
        except ValueError:
            out.append(f"<{len(p.data)} bytes>")
    return out


def _innermost(failure) -> str:
    """The innermost message of a Temporal failure chain, with its type (what actually went wrong)."""
    while failure.HasField("cause"):
        failure = failure.cause
    kind = failure.application_failure_info.type if failure.HasField("application_failure_info") else ""
    return f"{kind}: {failure.message}" if kind and not failure.message.startswith(kind) else failure.message


_CHILD_ENDS = {
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_FAILED: ("failed",
                                                          "child_workflow_execution_failed_event_attributes"),
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TIMED_OUT: ("timed out",
                                                             "child_workflow_execution_timed_out_event_attributes"),
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_TERMINATED: ("terminated",
                                                               "child_workflow_execution_terminated_event_attributes"),
    EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_CANCELED: ("cancelled",
                                                             "child_workflow_execution_canceled_event_attributes"),
}
_ENDS = {
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED: "failed",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT: "timed out",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED: "terminated",
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED: "cancelled",
}


def _ts(ev) -> float:
    return ev.event_time.seconds + ev.event_time.nanos / 1e9


LOCAL_ACTIVITY_MARKER = "core_local_activity"


def _local_activity(workflow_id: str, ev, calls: dict[str, dict]) -> Step | None:
    """A local activity (file tool calls run as such) from its marker: type, id, attempt, result or failure."""
    a = ev.marker_recorded_event_attributes
    if a.marker_name != LOCAL_ACTIVITY_MARKER:
        return None
    data = (_decode(a.details["data"].payloads) or [None])[0] if "data" in a.details else None
    data = data if isinstance(data, dict) else {}
    result = (_decode(a.details["result"].payloads) or [None])[0] if "result" in a.details else None
    step = Step(workflow_id=workflow_id, kind="local activity", name=str(data.get("activity_type", "?")),
                activity_id=str(data.get("activity_id", "")), attempt=int(data.get("attempt") or 1), result=result)
    if a.HasField("failure"):
        step.error = a.failure.message or "failed"
    duration = result.get("duration_s") if isinstance(result, dict) else None
    step.duration_s = round(float(duration), 3) if isinstance(duration, (int, float)) else None
    step.started = _ts(ev) - (step.duration_s or 0.0)
    if step.name == "tool_call" and isinstance(result, dict):
        step.input = {"call": calls.get(result.get("call_id"), {"id": result.get("call_id"),
                                                                 "name": result.get("name")})}
    return step


async def collect_run(client: Client, workflow_id: str) -> Step:
    """The run's steps (as :func:`collect`); ConfigError naming the run and the namespace when there is none."""
    try:
        return await collect(client, workflow_id)
    except RPCError as e:
        raise ConfigError(f"no run {workflow_id!r} in namespace {client.namespace}: {e.message} "
                          f"({WHERE_IDS})") from None


def _gone(e: RPCError) -> bool:
    """Temporal no longer has the run (its retention passed, or it was deleted)."""
    return e.status == RPCStatusCode.NOT_FOUND


async def previous_run(client: Client, workflow_id: str, run_id: str | None) -> str:
    """The run ``run_id`` (None: the latest) continued, if it continued one ("" if not)."""
    async for ev in client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history_events(page_size=1):
        return ev.workflow_execution_started_event_attributes.continued_execution_run_id
    return ""


class ClosedRuns:
    """The steps of child workflows that have ended, by workflow and first run id, kept for the next read of the
    same task: an ended child's history never changes (the web view reads a running task every 2 seconds; only
    what still runs is read again). At most ``size``, the least recently used dropped first."""

    def __init__(self, size: int = 512) -> None:
        self.size = size
        self._steps: OrderedDict[tuple[str, str], Step] = OrderedDict()

    def get(self, workflow_id: str, run_id: str) -> Step | None:
        step = self._steps.get((workflow_id, run_id))
        if step is not None:
            self._steps.move_to_end((workflow_id, run_id))
        return step

    def keep(self, workflow_id: str, run_id: str, step: Step) -> None:
        self._steps[(workflow_id, run_id)] = step
        self._steps.move_to_end((workflow_id, run_id))
        while len(self._steps) > self.size:
            self._steps.popitem(last=False)

    def __len__(self) -> int:
        return len(self._steps)


async def collect(client: Client, workflow_id: str, run_id: str | None = None, *,
                  closed: ClosedRuns | None = None) -> Step:
    """The steps of a workflow read from its history, its children's recursively: from ``run_id`` on (a child's
    first run), or (None) the whole workflow. A workflow that continued as new: the steps of all its runs in order,
    from the first one Temporal still keeps (``missing`` says when earlier ones are gone) to the last. RPCError when
    the run itself is not there. ``closed``: ended children already read (taken from there, and kept there)."""
    root = Step(workflow_id=workflow_id, kind="workflow", name="")
    first = run_id
    if run_id is None:  # back to the first run still kept (a run's start names the run it continues)
        previous = await previous_run(client, workflow_id, None)
        while previous:
            try:
                earlier = await previous_run(client, workflow_id, previous)
            except RPCError as e:
                if not _gone(e):
                    raise
                root.missing = f"its run {previous} and any before it are no longer kept"
                break
            first, previous = previous, earlier
    calls: dict[str, dict] = {}
    """Tool calls the model asked for, by call id (a local activity's marker does not carry its input)."""
    current: str | None = first
    while True:  # forward to the last run (a run that continued as new names the next)
        following = await _read_run(client, root, current, calls, closed)
        if not following:
            return root
        current = following


async def _read_run(client: Client, root: Step, run_id: str | None, calls: dict[str, dict],
                    closed: ClosedRuns | None) -> str:
    """One run's steps into ``root``; the run it continued as new into ("" if none). Its children's own steps are
    read once the run's history is (whether a child has ended is known only then)."""
    run = _RunSteps(root, calls)
    async for ev in client.get_workflow_handle(root.workflow_id, run_id=run_id).fetch_history_events():
        run.feed(ev)
    for step, child_run in run.started:
        await _read_child(client, step, child_run, closed)
    return run.following


class _RunSteps:
    """The steps of one run, made from its history event by event: the run's own start and end, its activities
    (and local activities), its children."""

    def __init__(self, root: Step, calls: dict[str, dict]) -> None:
        self.root, self.calls = root, calls
        """``calls``: every model call's tool calls by id (a local tool call's step is named after its call)."""
        self.scheduled: dict[int, Step] = {}
        self.children: dict[str, Step] = {}
        self.started: list[tuple[Step, str]] = []
        """Each child that started, with its run id."""
        self.following = ""
        """The run this one continued as new into."""

    def feed(self, ev) -> None:
        t = ev.event_type
        if t in (EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED,
                 EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
                 EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, EventType.EVENT_TYPE_MARKER_RECORDED):
            self._activity(t, ev)
        elif t in (EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
                   EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED,
                   EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED) or t in _CHILD_ENDS:
            self._child(t, ev)
        else:
            self._run(t, ev)

    def _run(self, t, ev) -> None:
        root = self.root
        if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
            a = ev.workflow_execution_started_event_attributes
            root.name = a.workflow_type.name
            if root.started is None:  # (the first run's)
                root.input = (_decode(a.input.payloads) or [None])[0]
                root.started = _ts(ev)
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
            self.following = ev.workflow_execution_continued_as_new_event_attributes.new_execution_run_id
        elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED:
            root.result = (_decode(ev.workflow_execution_completed_event_attributes.result.payloads) or [None])[0]
            root.status = "completed"
            root.duration_s = round(_ts(ev) - (root.started or _ts(ev)), 3)
        elif t in _ENDS:
            root.status = _ENDS[t]
            if t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
                root.error = _innermost(ev.workflow_execution_failed_event_attributes.failure)
            elif t == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
                reason = ev.workflow_execution_terminated_event_attributes.reason
                root.error = f"terminated{': ' + reason if reason else ''}"
            root.duration_s = round(_ts(ev) - (root.started or _ts(ev)), 3)

    def _activity(self, t, ev) -> None:
        if t == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            a = ev.activity_task_scheduled_event_attributes
            step = Step(workflow_id=self.root.workflow_id, kind="activity", name=a.activity_type.name,
                        activity_id=a.activity_id, input=(_decode(a.input.payloads) or [None])[0],
                        started=_ts(ev))
            self.scheduled[ev.event_id] = step
            self.root.children.append(step)
        elif t == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            a = ev.activity_task_started_event_attributes
            self.scheduled[a.scheduled_event_id].attempt = a.attempt
        elif t == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            a = ev.activity_task_completed_event_attributes
            step = self.scheduled[a.scheduled_event_id]
            step.result = (_decode(a.result.payloads) or [None])[0]
            step.duration_s = round(_ts(ev) - (step.started or _ts(ev)), 3)
            if step.name == "model_call" and isinstance(step.result, dict):
                self.calls.update({c.get("id"): c for c in step.result.get("tool_calls", []) if isinstance(c, dict)})
        elif t == EventType.EVENT_TYPE_MARKER_RECORDED:
            step = _local_activity(self.root.workflow_id, ev, self.calls)
            if step is not None:
                self.root.children.append(step)
        else:  # failed or timed out
            a = (ev.activity_task_failed_event_attributes if t == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
                 else ev.activity_task_timed_out_event_attributes)
            step = self.scheduled[a.scheduled_event_id]
            step.error = a.failure.message or "timed out"
            step.duration_s = round(_ts(ev) - (step.started or _ts(ev)), 3)

    def _child(self, t, ev) -> None:
        if t == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
            a = ev.start_child_workflow_execution_initiated_event_attributes
            step = Step(workflow_id=a.workflow_id, kind="child", name=a.workflow_type.name, started=_ts(ev))
            self.children[a.workflow_id] = step
            self.root.children.append(step)
        elif t == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED:
            a = ev.child_workflow_execution_started_event_attributes
            self.started.append((self.children[a.workflow_execution.workflow_id], a.workflow_execution.run_id))
        elif t == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED:
            a = ev.child_workflow_execution_completed_event_attributes
            step = self.children[a.workflow_execution.workflow_id]
            step.result = (_decode(a.result.payloads) or [None])[0]
            step.status = "completed"
            step.duration_s = round(_ts(ev) - (step.started or _ts(ev)), 3)
        else:
            status, attr = _CHILD_ENDS[t]
            a = getattr(ev, attr)
            step = self.children[a.workflow_execution.workflow_id]
            step.status = status
            if status == "failed":
                step.error = _innermost(a.failure)
            step.duration_s = round(_ts(ev) - (step.started or _ts(ev)), 3)


async def _read_child(client: Client, step: Step, run_id: str, closed: ClosedRuns | None) -> None:
    """A child workflow's own steps into ``step`` (from ``closed`` when it ended and was read before)."""
    sub = closed.get(step.workflow_id, run_id) if closed is not None else None
    if sub is None:
        try:
            sub = await collect(client, step.workflow_id, run_id, closed=closed)
        except RPCError as e:
            if not _gone(e):
                raise
            step.missing = f"its history is no longer kept ({e.message})"[:300]
            return
        if closed is not None and step.status is not None and sub.status is not None:
            closed.keep(step.workflow_id, run_id, sub)
    step.children, step.input, step.missing = sub.children, sub.input, sub.missing

def _describe(step: Step) -> str:
    i, r = step.input or {}, step.result
    n = step.name
    if n == "model_call" and isinstance(r, dict):
        calls = ", ".join(f"{c['name']}({c['arguments_preview'][:60]})" for c in r.get("tool_calls", []))
        u = r.get("usage", {})
        text = r.get("text_preview", "")
        comp = r.get("compaction")
        note = f"\n{' ' * 16}compaction before this call: {comp['summary']} (event {comp['event_ref'][:19]})" \
            if comp else ""
        return (f"model turn {i.get('turn')} [{i.get('model')}] tokens {u.get('input_tokens', 0)}/"
                f"{u.get('output_tokens', 0)}: {text[:100]!r}" + (f" -> {calls}" if calls else " (final)") + note)
    if n == "tool_call" and isinstance(r, dict):
        c = i.get("call", {})
        flag = (f" [{r.get('error_kind')}]" if r.get("is_error") else "") + \
            (" (recorded result of an earlier attempt)" if r.get("replayed") else "")
        return f"  tool {c.get('name')} {c.get('arguments_preview', '')[:100]} -> {r.get('summary', '')[:120]}{flag}"
    if n == "run_checks" and isinstance(r, dict):
        return f"tests {i.get('label')}: {r.get('summary')}"
    if n == "prepare_workspace" and isinstance(r, dict):
        return f"repository {r.get('repository')} at {str(r.get('base_commit'))[:10]}"
    if n == "finalize" and isinstance(r, dict):
        return f"commit {str(r.get('commit'))[:10]} on {i.get('branch')}: {len(r.get('files_changed', []))} files"
    if n == "bind_worker":
        return f"bound to worker queue {r}"
    if n == "bind_host" and isinstance(r, dict):
        return f"bound to host {r.get('worker_id')} (queue {r.get('queue')}" + \
            (", state shared: checkpoints and host watches)" if r.get("shared") else ")")
    if n == "hold_slot":
        return f"slot for {str(i.get('claim', '')).split('#')[0]} (held {step.duration_s or 0:.1f} s)"
    if n == "watch_host" and isinstance(r, dict):
        return f"HOST LOST: {r.get('worker_id')}: {r.get('why')}"
    if n == "terminate_agent":
        return f"ended {i.get('workflow_id')}: {i.get('reason')}"
    if n == "restore_task" and isinstance(r, dict):
        return f"restored the task's repository here: {r.get('applied')} of {len(i.get('checkpoints', []))} " \
               "checkpoints applied"
    if n == "read_plan" and isinstance(r, dict):
        subs = ", ".join(f"{x['id']} ({', '.join(x.get('files', [])) or 'any file'})" for x in r.get("subtasks", []))
        note = f"; {r['note']}" if r.get("note") else ""
        return f"plan ({r.get('source')}): {len(r.get('subtasks', []))} subtasks in {len(r.get('waves', []))} " \
               f"wave(s): {subs}{note}"
    if n == "prepare_agent_workspace":
        return f"workspace for {i.get('name')} at {str(i.get('commit'))[:10]}"
    if n == "collect_agent_work" and isinstance(r, dict):
        notes = f" (left out: {'; '.join(r['notes'][:3])})" if r.get("notes") else ""
        return f"{i.get('name')}: " + (f"commit {str(r.get('commit'))[:10]}, files {', '.join(r.get('files', []))}"
                                       if r.get("commit") else "no changes") + notes
    if n == "merge_agent_work" and isinstance(r, dict):
        what = i.get("label") or str(i.get("commit"))[:10]
        return f"merged {what} -> {str(r.get('head'))[:10]}" if r.get("merged") else \
            f"CONFLICT merging {what} in {', '.join(r.get('conflicts', []))}"
    if n == "route_model" and isinstance(r, dict):
        return f"route {i.get('role')}: {r.get('model')} — {r.get('reason')}"
    if n == "start_branch":
        return f"branch {i.get('branch')}"
    if n == "diff_since":
        return "snapshot of the changes so far (for the debugger)"
    if n == "init_agent":
        return f"init {i.get('role')} agent" + (f" with {len(i.get('attachments', []))} attachment(s)"
                                                  if i.get("attachments") else "")
    return n


def _agent_line(c: Step) -> str:
    """An agent's summary: its own result when it returned one, else what its history shows (a failed, terminated
    or timed-out agent returns nothing): how it ended, why, and the turns and tool calls it made."""
    res = c.result if isinstance(c.result, dict) else {}
    turns = sum(1 for s in c.children if s.name == "model_call" and s.result is not None)
    calls = sum(1 for s in c.children if s.name == "tool_call")
    status = res.get("status") or c.status or "running"
    line = (f"agent {c.workflow_id} ({c.name}): status {status}, {res.get('turns', turns)} turns, "
            f"{res.get('tool_calls', calls)} tool calls")
    why = res.get("reason") or c.error
    if status != "done" and why:
        kind = res.get("error_kind")
        line += f" — {kind + ': ' if kind and not why.startswith(kind) else ''}{why[:200]}"
    elif res.get("stopped"):
        line += f" — stopped: {res['stopped']}"
    return line


def render(step: Step, indent: str = "") -> list[str]:
    lines = []
    if step.kind == "workflow":
        state = step.status or ("completed" if step.result is not None else "running")
        if step.error:
            state = f"{state.upper()}: {step.error}"
        dur = f" in {step.duration_s:.2f}s" if step.duration_s is not None else ""
        lines.append(f"{indent}{step.name} {step.workflow_id}: {state}{dur}")
    if step.missing:
        lines.append(f"{indent}  ({step.missing})")
    for c in step.children:
        dur = f"{c.duration_s:7.3f}s" if c.duration_s is not None else "   ...  "
        retry = f" (attempt {c.attempt})" if c.attempt > 1 else ""
        if c.kind == "child":
            lines.append(f"{indent}  [{dur}] {_agent_line(c)}")
            if c.missing:
                lines.append(f"{indent}      ({c.missing})")
            sub = Step(workflow_id=c.workflow_id, kind="child", name=c.name, children=c.children)
            lines += render(sub, indent + "    ")
        else:
            err = f"  ERROR: {c.error[:200]}" if c.error else ""
            lines.append(f"{indent}  [{dur}] {_describe(c)}{retry}{err}")
    return lines


def to_json(step: Step) -> dict:
    return asdict(step)
