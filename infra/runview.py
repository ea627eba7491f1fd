"""What the web view shows of a run, as plain values: the phases on a timeline, the agents in parallel lanes,
each agent's turns (text, tool calls with arguments and results, errors, compactions, steering, model switches),
the diff per file, the tests before and after. Built from a run's history and the artifact store through the
trajectory export (``infra.export``), so the page and ``bosun export`` never disagree.

Everything here is hostile text (model output, tool output, file names, commit messages): it stays plain ``str``
and is escaped where it is rendered (the web view's templates escape every value).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from infra.export import export
from infra.history import Step
from infra.names import name_bytes, shown

MAX_TEXT = 20_000
"""Characters of one argument list or result shown on the page (the rest is cut, with a note)."""
PHASE_OF = {"bind_worker": "prepare", "prepare_workspace": "prepare", "start_branch": "prepare",
            "read_plan": "plan", "merge_agent_work": "merge", "collect_agent_work": "merge",
            "finalize": "deliver", "report_status": "deliver", "cleanup_task": "deliver", "diff_since": "debug"}
SAFE_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(:\d+)?(/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*)?$")
REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def cut(text: Any, limit: int = MAX_TEXT) -> str:
    text = text if isinstance(text, str) else json.dumps(text, indent=1, ensure_ascii=False, default=str)
    return text if len(text) <= limit else f"{text[:limit]}\n[... {len(text) - limit} more characters not shown]"


def safe_url(url: Any) -> str | None:
    """``url`` when it is a plain http(s) URL (a link on the page never runs script), else None."""
    return url if isinstance(url, str) and SAFE_URL.match(url) else None


@dataclass
class Trigger:
    kind: str
    """cli, github, linear"""
    label: str
    url: str | None = None


def trigger_of(memo: dict[str, Any] | None) -> Trigger:
    origin = (memo or {}).get("origin") or {}
    if not isinstance(origin, dict) or origin.get("source") not in ("github", "linear"):
        return Trigger("cli", "command line")
    if origin["source"] == "github":
        repo, number = origin.get("repo"), origin.get("number")
        if isinstance(repo, str) and REPO_NAME.match(repo) and isinstance(number, int):
            event = str((memo or {}).get("event", "github")).removeprefix("github.")
            return Trigger("github", f"GitHub {repo}#{number} ({event})",
                           safe_url(origin.get("url")) or f"https://github.com/{repo}/issues/{number}")
        return Trigger("github", "GitHub", safe_url(origin.get("url")))
    ident = origin.get("issue_identifier") or origin.get("agent_session_id") or "session"
    return Trigger("linear", f"Linear {ident}", safe_url(origin.get("url")))


@dataclass
class ToolCallView:
    name: str
    arguments: str
    result: str
    is_error: bool
    error_kind: str | None
    summary: str
    duration_s: float | None
    attempt: int | None
    replayed: bool


@dataclass
class TurnView:
    turn: int
    model: str
    text: str
    tool_calls: list[ToolCallView]
    tokens_in: int
    tokens_out: int
    cost_usd: float
    compaction: str | None
    steering: list[str]
    error: str | None


@dataclass
class AgentView:
    agent_id: str
    name: str
    role: str
    status: str
    reason: str
    model: str
    start: float
    end: float
    turns: list[TurnView]
    switches: list[dict[str, Any]]
    cost_usd: float
    depth: int
    lane: int = 0


@dataclass
class PhaseView:
    name: str
    start: float
    end: float


@dataclass
class RunView:
    workflow_id: str
    status: str
    running: bool
    task: str
    repo: str
    trigger: Trigger
    start: float
    end: float
    phases: list[PhaseView]
    agents: list[AgentView]
    lanes: int
    diff_files: list[tuple[str, str]] = field(default_factory=list)
    """(path, the file's part of the diff)."""
    tests_before: str = ""
    tests_after: str = ""
    problems: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    cost_usd: float = 0.0
    turns: int = 0

    @property
    def duration_s(self) -> float:
        return max(0.0, self.end - self.start)


def _turn(t: dict[str, Any]) -> TurnView:
    calls = [ToolCallView(name=str(c.get("name")), arguments=cut(c.get("arguments")), result=cut(c.get("result") or ""),
                          is_error=bool(c.get("is_error")), error_kind=c.get("error_kind"),
                          summary=str(c.get("summary") or ""), duration_s=c.get("duration_s"),
                          attempt=c.get("attempt"), replayed=bool(c.get("replayed")))
             for c in t.get("tool_calls", [])]
    usage = t.get("usage") or {}
    comp = t.get("compaction")
    return TurnView(turn=int(t.get("turn") or 0), model=str(t.get("model") or ""), text=cut(t.get("content") or ""),
                    tool_calls=calls, tokens_in=int(usage.get("input_tokens") or 0),
                    tokens_out=int(usage.get("output_tokens") or 0), cost_usd=float(t.get("cost_usd") or 0.0),
                    compaction=comp.get("summary") if isinstance(comp, dict) else None,
                    steering=[str(m) for m in t.get("user_messages") or []], error=t.get("error"))


def _lanes(agents: list[AgentView]) -> int:
    """Give each agent the first lane free at its start (agents that overlap in time get separate lanes)."""
    ends: list[float] = []
    for a in sorted(agents, key=lambda a: a.start):
        for i, end in enumerate(ends):
            if end <= a.start:
                a.lane, ends[i] = i, a.end
                break
        else:
            a.lane = len(ends)
            ends.append(a.end)
    return max(1, len(ends))


def _phases(root: Step, agents: list[AgentView], now: float) -> list[PhaseView]:
    marks: list[tuple[str, float, float]] = []
    for s in root.children:
        start = s.started or 0.0
        end = start + (s.duration_s or 0.0) if s.duration_s is not None else now
        if s.kind == "child":
            name = s.workflow_id.rsplit("/", 1)[-1]
            kind = ("plan" if name == "planner" else "debug" if name.startswith("debugger") else
                    "follow-up" if name.startswith("follow-up") else "work")
            marks.append((kind, start, end))
        elif s.name == "run_checks":
            label = str((s.input or {}).get("label", "")) if isinstance(s.input, dict) else ""
            marks.append(("tests before" if label == "before" else "verify", start, end))
        elif s.name in PHASE_OF:
            marks.append((PHASE_OF[s.name], start, end))
    phases: list[PhaseView] = []
    for name, start, end in sorted(marks, key=lambda m: m[1]):
        if phases and phases[-1].name == name and start <= phases[-1].end + 1.0:
            phases[-1].end = max(phases[-1].end, end)
        else:
            phases.append(PhaseView(name, start, end))
    waves = 0
    for p in phases:
        if p.name == "work":
            waves += 1
            p.name = f"wave {waves}"
    return phases


_DIFF_HEAD = re.compile(r'diff --git (?:"a/(?:[^"\\]|\\.)*"|a/.*?) ("b/(?:[^"\\]|\\.)*"|b/.*)$')
"""A file's header in a git diff; git quotes a path that is not plain (``"b/\\377\\376bin"``)."""


def _diff_files(diff: str) -> list[tuple[str, str]]:
    files: list[tuple[str, str]] = []
    for part in re.split(r"(?m)^(?=diff --git )", diff or ""):
        if not part.strip():
            continue
        m = _DIFF_HEAD.match(part.splitlines()[0])
        files.append((_diff_name(m.group(1)) if m else "?", cut(part, 200_000)))
    return files


def _diff_name(side: str) -> str:
    """The shown name (infra/names.py) of a diff header's ``b/PATH``, quoted by git or not."""
    if not side.startswith('"'):
        return side[2:]
    try:
        return shown(name_bytes(side)[2:])
    except ValueError:
        return side


def build(root: Step, store: Any, *, memo: dict[str, Any] | None = None, now: float | None = None) -> RunView:
    """The run under ``root`` (a TaskWorkflow's history) as the page shows it."""
    now = time.time() if now is None else now
    doc = export(root, store)
    task, result = doc["task"], doc["task"].get("result") or {}
    start = root.started or now
    end = start + root.duration_s if root.duration_s is not None else now
    agents = []
    for a in doc["agents"]:
        a_start = a.get("started") or start
        a_end = a_start + a["duration_s"] if a.get("duration_s") is not None else now
        agents.append(AgentView(
            agent_id=a["agent_id"], name=a["agent_id"].split("/", 1)[-1], role=str(a.get("role") or ""),
            status=str(a.get("status") or "running"), reason=str(a.get("reason") or a.get("stopped") or ""),
            model=str(a.get("model") or ""), start=a_start, end=max(a_end, a_start),
            turns=[_turn(t) for t in a["turns"]], switches=list(a.get("switches") or []),
            cost_usd=float(a.get("cost_usd") or 0.0), depth=int(a.get("depth") or 0)))
    lanes = _lanes(agents)
    inp = task.get("input") if isinstance(task.get("input"), dict) else {}
    view = RunView(workflow_id=root.workflow_id, status=str(task.get("status") or "running"),
                   running=root.status is None, task=str(inp.get("task") or ""), repo=str(inp.get("repo") or ""),
                   trigger=trigger_of(memo), start=start, end=end, phases=_phases(root, agents, now), agents=agents,
                   lanes=lanes, diff_files=_diff_files(task.get("diff") or result.get("diff") or ""),
                   problems=[str(p) for p in result.get("problems") or []],
                   messages=list(result.get("messages") or []),
                   cost_usd=round(sum(a.cost_usd for a in agents), 6), turns=sum(len(a.turns) for a in agents))
    view.tests_before = str((result.get("tests_before") or {}).get("summary") or "")
    view.tests_after = str((result.get("tests_after") or {}).get("summary") or "")
    if not view.tests_before or not view.tests_after:
        checks = [s for s in root.children if s.name == "run_checks" and isinstance(s.result, dict)]
        if checks and not view.tests_before:
            view.tests_before = str(checks[0].result.get("summary") or "")
        if len(checks) > 1 and not view.tests_after:
            view.tests_after = str(checks[-1].result.get("summary") or "")
    if root.error and view.status == "running":
        view.status = root.status or "failed"
    return view
