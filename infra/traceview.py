"""A task's spans as a tree for the terminal (``bosun trace ID``), from the offline span store.

The task's traces are the ones holding a span of its workflow id (Temporal's ``temporalWorkflowID`` attribute on
the task, its agents ``ID/...`` and their activities; the starter's ``bosun.workflow_id``). Each line shows a span's
duration and what matters about it (tokens of a model call, the error class of a failed step); the slowest path
from the root down — at every level the child that took longest — is marked with ``»``.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

BACKGROUND = "bosun.background"
"""The attribute of a span that runs on after what started it returned (a sandbox started ahead for a later use):
shown under its parent, but not counted in the parent's time nor on the slowest path."""
KEEP_ATTRIBUTES = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.response.model",
                   "bosun.sandbox.backend", "bosun.delivery")


def task_spans(spans: list[dict[str, Any]], workflow_id: str) -> list[dict[str, Any]]:
    """Every span of the traces that touch ``workflow_id`` (the task or any of its agents)."""
    def mine(span: dict[str, Any]) -> bool:
        attrs = span.get("attributes") or {}
        wf = attrs.get("temporalWorkflowID") or attrs.get("bosun.workflow_id") or ""
        return wf == workflow_id or str(wf).startswith(workflow_id + "/")
    traces = {s["trace_id"] for s in spans if mine(s)}
    return [s for s in spans if s["trace_id"] in traces]


def _background(span: dict[str, Any]) -> bool:
    return bool((span.get("attributes") or {}).get(BACKGROUND))


def _duration(span: dict[str, Any]) -> float:
    return max(0.0, ((span.get("end") or span["start"]) - span["start"]) / 1e9)


def _label(span: dict[str, Any], shown_as: str | None = None, seconds: float | None = None) -> str:
    attrs = span.get("attributes") or {}
    bits = [f"{_duration(span) if seconds is None else seconds:.3f}s"]
    if attrs.get("bosun.sandbox.start"):
        bits.append(f"{attrs['bosun.sandbox.start']} start on {attrs.get('bosun.sandbox.backend', '?')}")
    if "bosun.exec.exit_code" in attrs:
        bits.append("timed out" if attrs.get("bosun.exec.timed_out") else f"exit {attrs['bosun.exec.exit_code']}")
    if attrs.get("bosun.sandbox.refused"):
        bits.append(f"refused: {attrs['bosun.sandbox.refused']}")
    if "gen_ai.usage.input_tokens" in attrs:
        bits.append(f"tokens {attrs['gen_ai.usage.input_tokens']}/{attrs.get('gen_ai.usage.output_tokens', 0)}")
    if attrs.get("error.type"):
        bits.append(f"ERROR {attrs['error.type']}")
    elif span.get("status") == "ERROR":
        bits.append(f"ERROR {span.get('error') or ''}".rstrip())
    if attrs.get("bosun.replayed"):
        bits.append("replayed")
    if attrs.get(BACKGROUND):
        bits.append("in the background")
    return f"{shown_as or span['name']}  ({', '.join(bits)})"


class _Tree:
    """Spans by parent, with Temporal's zero-length ``Start*`` spans folded into what they started."""

    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.by_id = {s["span_id"]: s for s in spans}
        self.kids: dict[str | None, list[dict[str, Any]]] = defaultdict(list)
        for s in spans:
            parent = s.get("parent_id")
            self.kids[parent if parent in self.by_id else None].append(s)
        for kids in self.kids.values():
            kids.sort(key=lambda s: s["start"])
        self._end: dict[str, int] = {}

    def end(self, span: dict[str, Any]) -> int:
        """When the span or anything under it ended (a Start* span ends at once; what it started runs on), but for
        what it left running in the background."""
        sid = span["span_id"]
        if sid not in self._end:
            self._end[sid] = max([span.get("end") or span["start"],
                                  *(self.end(k) for k in self.kids[sid] if not _background(k))])
        return self._end[sid]

    def took(self, span: dict[str, Any]) -> float:
        return max(0.0, (self.end(span) - span["start"]) / 1e9)

    def node(self, span: dict[str, Any]) -> tuple[str, float, list[dict[str, Any]], dict[str, Any]]:
        """(label, seconds, children, the span that carries the attributes) of one line of the tree."""
        name, kids = span["name"], self.kids[span["span_id"]]
        if name.startswith("StartActivity:"):
            runs = [k for k in kids if k["name"] == "Run" + name.removeprefix("Start")]
            if runs:
                last = runs[-1]
                tries = f" (attempt {len(runs)})" if len(runs) > 1 else ""
                return (f"{name.removeprefix('StartActivity:')}{tries}", self.took(span),
                        [c for r in runs for c in self.kids[r["span_id"]]], last)
        if name.startswith("StartChildWorkflow:"):
            agent = next((k.get("attributes", {}).get("temporalWorkflowID") for k in kids
                          if k["name"].startswith("RunWorkflow:")), None)
            rest = [k for k in kids if not k["name"].startswith(("RunWorkflow:", "CompleteWorkflow:"))]
            return (f"{name.removeprefix('StartChildWorkflow:')} {agent or ''}".rstrip(), self.took(span), rest, span)
        if name.startswith("StartWorkflow:"):
            runs = [k for k in kids if k["name"].startswith("RunWorkflow:")]
            rest = [k for k in kids if not k["name"].startswith(("RunWorkflow:", "CompleteWorkflow:"))]
            wf = (span.get("attributes") or {}).get("temporalWorkflowID", "")
            return (f"{name.removeprefix('StartWorkflow:')} {wf}".rstrip(), self.took(span),
                    rest + [c for r in runs for c in self.kids[r["span_id"]]], span)
        return name, self.took(span), kids, span


def render(spans: list[dict[str, Any]], max_lines: int = 3000) -> list[str]:
    """The span tree(s), children in start order, Temporal's start/run pairs folded into one line each, the
    slowest path marked; empty when there are no spans."""
    if not spans:
        return []
    tree = _Tree(spans)
    roots = tree.kids[None]
    slow: set[str] = set()
    node: dict[str, Any] | None = max(roots, key=tree.took)
    while node is not None:
        slow.add(node["span_id"])
        _, _, kids, _ = tree.node(node)
        ahead = [k for k in kids if not _background(k)]
        node = max(ahead, key=tree.took) if ahead else None
    start, end = min(s["start"] for s in spans), max(tree.end(s) for s in roots)
    traces = sorted({s["trace_id"] for s in spans})
    errors = sum(1 for s in spans if s.get("status") == "ERROR" or (s.get("attributes") or {}).get("error.type"))
    lines = [f"trace {', '.join(traces)}: {len(spans)} spans, {errors} with errors, {(end - start) / 1e9:.2f}s "
             f"(» marks the slowest path)"]

    def walk(span: dict[str, Any], prefix: str, last: bool, top: bool) -> None:
        if len(lines) >= max_lines:
            return
        label, seconds, kids, carrier = tree.node(span)
        mark = "» " if span["span_id"] in slow else "  "
        branch = "" if top else ("└─ " if last else "├─ ")
        lines.append(f"{mark}{prefix}{branch}{_label(carrier, label, seconds)}")
        for i, kid in enumerate(kids):
            walk(kid, prefix + ("" if top else ("   " if last else "│  ")), i == len(kids) - 1, False)

    for root in roots:
        walk(root, "", True, True)
    if len(lines) >= max_lines:
        lines.append(f"... ({len(spans)} spans in all; the rest left out)")
    return lines
