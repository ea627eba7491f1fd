"""Trajectory export: everything a run did, in a documented, versioned schema (docs/TRAJECTORY.md).

Built from the workflow histories (``infra.history``) and the artifact store: for the task its input, result and
coordinator steps; for each agent (subagents included) its role, model, keys, status, usage, cost, model switches,
every turn (the assistant's text and tool calls with their full arguments, each call's full result, timings,
usage, compaction) and the conversation as the model last saw it. Contents come with their artifact refs.

``scripted:`` replays an export (agents/providers/scripted.py reads this schema), so any run becomes a regression
test that replays to the same diff.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

from infra.artifacts import ArtifactStore, BadRef
from infra.errors import BosunError
from infra.history import Step

SCHEMA = "bosun.trajectory/1"


def _content(store: ArtifactStore, ref: Any, *, as_json: bool = False) -> Any:
    """The artifact behind ``ref``, or a marker saying why it cannot be read (never raises)."""
    if not isinstance(ref, str):
        return None
    try:
        return store.get_json(ref) if as_json else store.get_text(ref)
    except (BosunError, BadRef, OSError, ValueError) as e:
        return {"missing": ref, "why": str(e)[:200]}


def _agent_steps(step: Step) -> Iterator[Step]:
    """The agent workflows below ``step``, depth first (agents, then their subagents)."""
    for child in step.children:
        if child.kind == "child":
            yield child
            yield from _agent_steps(child)


def _turn(store: ArtifactStore, model_step: Step, tool_steps: dict[str, Step]) -> dict[str, Any]:
    i = model_step.input if isinstance(model_step.input, dict) else {}
    r = model_step.result if isinstance(model_step.result, dict) else {}
    transcript = _content(store, r.get("transcript_ref"), as_json=True)
    said = transcript[-1] if isinstance(transcript, list) and transcript else {}
    calls = []
    for ref in r.get("tool_calls", []):
        done = tool_steps.get(ref.get("id"))
        res = (done.result if done is not None and isinstance(done.result, dict) else {})
        calls.append({
            "id": ref.get("id"), "name": ref.get("name"),
            "arguments": _content(store, ref.get("arguments_ref"), as_json=True),
            "arguments_ref": ref.get("arguments_ref"),
            "result": _content(store, res.get("result_ref")), "result_ref": res.get("result_ref"),
            "is_error": res.get("is_error", False), "error_kind": res.get("error_kind"),
            "summary": res.get("summary"), "duration_s": done.duration_s if done is not None else None,
            "attempt": done.attempt if done is not None else None, "replayed": res.get("replayed", False),
            "error": done.error if done is not None else "never ran"})
    return {"turn": i.get("turn"), "model": i.get("model"), "response_model": r.get("model"),
            "content": said.get("content", "") if isinstance(said, dict) else "",
            "tool_calls": calls, "usage": r.get("usage"), "cost_usd": r.get("cost_usd"),
            "stop_reason": r.get("stop_reason"), "compaction": r.get("compaction"),
            "user_messages": i.get("user_messages", []), "duration_s": model_step.duration_s,
            "attempt": model_step.attempt, "error": model_step.error}


def _agent(store: ArtifactStore, step: Step, parent: str | None) -> dict[str, Any]:
    inp = step.input if isinstance(step.input, dict) else {}
    res = step.result if isinstance(step.result, dict) else {}
    tool_steps = {}
    for s in step.children:
        if s.name == "tool_call":
            call = s.input.get("call", {}) if isinstance(s.input, dict) else {}
            key = call.get("id") or (s.result.get("call_id") if isinstance(s.result, dict) else None)
            if key:
                tool_steps[key] = s
    turns = [_turn(store, s, tool_steps) for s in step.children if s.name == "model_call" and s.result is not None]
    final_ref = res.get("transcript_ref") or next(
        ((s.result or {}).get("transcript_ref") for s in reversed(step.children)
         if s.name == "model_call" and isinstance(s.result, dict)), None)
    return {
        "agent_id": step.workflow_id, "parent": parent, "role": inp.get("role"), "task": inp.get("task"),
        "model": res.get("model") or inp.get("model"), "agent_keys": inp.get("agent_keys", []),
        "depth": inp.get("depth", 0), "status": res.get("status") or step.status or "running",
        "error_kind": res.get("error_kind"), "reason": res.get("reason") or step.error,
        "turns_taken": res.get("turns", len(turns)), "tool_calls": res.get("tool_calls"),
        "usage": res.get("usage"), "cost_usd": res.get("cost_usd"), "stopped": res.get("stopped"),
        "switches": res.get("switches", []), "started": step.started, "duration_s": step.duration_s,
        "turns": turns, "messages": _content(store, final_ref, as_json=True), "transcript_ref": final_ref,
        "history_missing": step.missing}


def export(root: Step, store: ArtifactStore) -> dict[str, Any]:
    """The run under ``root`` (a task's or an agent's history) as a ``bosun.trajectory/1`` document."""
    agents = []
    parents: dict[str, str | None] = {}
    for step in _agent_steps(root):
        parent = step.workflow_id.rsplit("/", 1)[0]
        parents[step.workflow_id] = parent if parent in parents else None
        agents.append(_agent(store, step, parents[step.workflow_id]))
    if root.name == "AgentWorkflow":
        agents.insert(0, _agent(store, root, None))
    result = root.result if isinstance(root.result, dict) else None
    steps = [{"name": s.name, "kind": s.kind, "input": s.input, "result": s.result, "error": s.error,
              "attempt": s.attempt, "started": s.started, "duration_s": s.duration_s}
             for s in root.children if s.kind != "child"]
    return {"schema": SCHEMA, "exported_at": time.time(),
            "task": {"workflow_id": root.workflow_id, "workflow_type": root.name, "input": root.input,
                     "status": (result or {}).get("status") or root.status or "running", "error": root.error,
                     "result": result, "started": root.started, "duration_s": root.duration_s,
                     "diff": _content(store, (result or {}).get("diff_ref")) if result else None, "steps": steps},
            "agents": agents}


def to_jsonl(doc: dict[str, Any]) -> str:
    """The same document as JSON lines: a ``task`` record (with the schema), then per agent an ``agent`` record and
    one ``turn`` record per turn (docs/TRAJECTORY.md)."""
    lines = [{"record": "task", "schema": doc["schema"], "exported_at": doc["exported_at"], **doc["task"]}]
    for agent in doc["agents"]:
        lines.append({"record": "agent", **{k: v for k, v in agent.items() if k != "turns"}})
        lines += [{"record": "turn", "agent_id": agent["agent_id"], **turn} for turn in agent["turns"]]
    return "".join(json.dumps(line, default=str) + "\n" for line in lines)
