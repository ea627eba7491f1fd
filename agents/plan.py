"""The planner's output: a typed Plan of subtasks with file scopes, dependencies and acceptance checks.

``parse_plan(text)`` reads a Plan from a model's final message (a JSON object, possibly inside a ```json
fence) and raises ``PlanError`` whose message is written to be sent back to the model as is.
``topological_waves(plan)`` groups subtasks into waves: every subtask of a wave depends only on earlier waves,
so a wave's subtasks can run in parallel.
"""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from infra.errors import InvalidArguments

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class PlanError(InvalidArguments):
    """The plan is malformed or inconsistent. ``problems`` lists each issue; ``str()`` is model-ready feedback."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("the plan is not valid:\n" + "\n".join(f"- {p}" for p in problems)
                         + "\nFix these problems and submit the whole plan again.")


def normalize_scope(path: str) -> str:
    """A file scope as a normalised relative POSIX path; ValueError when it is absolute or leaves the repo."""
    raw = path.strip()
    if not raw:
        raise ValueError("a file scope is empty")
    if "\\" in raw:
        raise ValueError(f"file scope {path!r} uses backslashes; use '/'")
    if raw.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", raw):
        raise ValueError(f"file scope {path!r} is absolute; give a path relative to the repository root")
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../"):
        raise ValueError(f"file scope {path!r} points outside the repository")
    if norm == ".git" or norm.startswith(".git/"):
        raise ValueError(f"file scope {path!r} is inside .git, which agents may not edit")
    return norm


class Acceptance(BaseModel):
    """How to tell a subtask is done: a shell command that exits 0, and/or pytest test ids that must pass."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    command: str | None = None
    """Shell command run in the repository root; success = exit code 0."""
    tests: list[str] = Field(default_factory=list)
    """pytest node ids (``tests/test_x.py::test_y``) that must pass."""

    @model_validator(mode="after")
    def _needs_one(self) -> Acceptance:
        if not (self.command and self.command.strip()) and not self.tests:
            raise ValueError("an acceptance check needs a 'command' or at least one test id in 'tests'")
        return self


class Subtask(BaseModel):
    """One unit of work for one fast-edit agent."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    id: str = Field(pattern=ID_PATTERN)
    """Short unique id: letters, digits, '_', '.', '-' (e.g. ``parse-args``)."""
    goal: str = Field(min_length=1)
    """What to change and why, self-contained: the agent sees this, not the whole task."""
    files: list[str] = Field(min_length=1)
    """File scope: paths (files or directories) relative to the repository root that the subtask may edit."""
    depends_on: list[str] = Field(default_factory=list)
    """Ids of subtasks that must be finished (and merged) before this one starts."""
    acceptance: Acceptance
    """The check that says the subtask is done."""

    @field_validator("files")
    @classmethod
    def _scopes(cls, files: list[str]) -> list[str]:
        out: list[str] = []
        for f in files:
            norm = normalize_scope(f)
            if norm not in out:
                out.append(norm)
        return out

    def touches(self, other: Subtask) -> list[str]:
        """Scopes of this subtask that overlap ``other``'s (same path, or one inside the other)."""
        def inside(a: str, b: str) -> bool:
            return a == b or b == "." or a.startswith(b.rstrip("/") + "/")
        return [a for a in self.files if any(inside(a, b) or inside(b, a) for b in other.files)]


class Plan(BaseModel):
    """Subtasks and notes for the coordinator."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    subtasks: list[Subtask] = Field(min_length=1)
    notes: str = ""
    """Anything the coordinator or the debugger should know (risks, order, how to verify the whole)."""

    @model_validator(mode="after")
    def _consistent(self) -> Plan:
        problems = plan_problems(self)
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def get(self, subtask_id: str) -> Subtask:
        for s in self.subtasks:
            if s.id == subtask_id:
                return s
        raise KeyError(subtask_id)

    def parallel_overlaps(self) -> list[tuple[str, str, list[str]]]:
        """Pairs of subtasks in the same wave whose file scopes overlap (their patches may conflict)."""
        out = []
        for wave in topological_waves(self):
            for i, a in enumerate(wave):
                for b in wave[i + 1:]:
                    shared = self.get(a).touches(self.get(b))
                    if shared:
                        out.append((a, b, shared))
        return out


def scopes_outside(plan: Plan, repo_root: Path) -> list[str]:
    """File scopes that resolve outside ``repo_root`` on disk (through symlinks), as problem sentences."""
    root = Path(repo_root).resolve()
    out = []
    for s in plan.subtasks:
        for f in s.files:
            target = (root / f).resolve()
            if target != root and root not in target.parents:
                out.append(f"subtask {s.id!r}: file scope {f!r} resolves outside the repository (symlink)")
    return out


def plan_problems(plan: Plan) -> list[str]:
    """Consistency problems: duplicate ids, unknown or self dependencies, dependency cycles."""
    problems: list[str] = []
    ids = [s.id for s in plan.subtasks]
    seen: set[str] = set()
    for i in ids:
        if i in seen:
            problems.append(f"subtask id {i!r} is used more than once; ids must be unique")
        seen.add(i)
    for s in plan.subtasks:
        for d in s.depends_on:
            if d == s.id:
                problems.append(f"subtask {s.id!r} depends on itself")
            elif d not in seen:
                problems.append(f"subtask {s.id!r} depends on {d!r}, which is not a subtask id "
                                f"(ids: {', '.join(ids)})")
    if not problems:
        cycle = _find_cycle(plan)
        if cycle:
            problems.append("dependency cycle: " + " -> ".join(cycle))
    return problems


def _find_cycle(plan: Plan) -> list[str] | None:
    deps = {s.id: s.depends_on for s in plan.subtasks}
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for d in deps.get(node, []):
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for s in plan.subtasks:
        if s.id not in state:
            found = visit(s.id)
            if found:
                return found
    return None


def topological_waves(plan: Plan) -> list[list[str]]:
    """Subtask ids in waves; each wave depends only on earlier ones. Order within a wave follows the plan."""
    remaining = {s.id: set(s.depends_on) for s in plan.subtasks}
    order = [s.id for s in plan.subtasks]
    done: set[str] = set()
    waves: list[list[str]] = []
    while remaining:
        wave = [i for i in order if i in remaining and remaining[i] <= done]
        if not wave:  # unreachable for a validated plan
            raise PlanError([f"dependency cycle among {', '.join(sorted(remaining))}"])
        waves.append(wave)
        done.update(wave)
        for i in wave:
            del remaining[i]
    return waves


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in a model's message: the whole text, a ```json fence, or the outermost {...} / [...]."""
    stripped = text.strip()
    candidates = [stripped] if stripped[:1] in ('{', '[', '"') else []
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = text.find(open_), text.rfind(close)
        if start != -1 and end > start:
            candidates.append(text[start:end + 1])
    first_error: json.JSONDecodeError | None = None
    for c in candidates:
        if not c:
            continue
        try:
            return json.loads(c)
        except json.JSONDecodeError as e:
            first_error = first_error or e
    if first_error is None:
        raise PlanError(["the message contains no JSON object; answer with the plan as one JSON object "
                         '{"subtasks": [...], "notes": "..."}'])
    raise PlanError([f"the plan is not valid JSON: {first_error.msg} at line {first_error.lineno} "
                     f"column {first_error.colno}"])


def _location(loc: tuple[Any, ...], data: Any) -> str:
    parts: list[str] = []
    node = data
    for p in loc:
        if isinstance(p, int):
            label = f"[{p}]"
            if isinstance(node, list) and p < len(node) and isinstance(node[p], dict) and "id" in node[p]:
                label = f"[{p}] (id {node[p]['id']!r})"
            parts.append(label)
            node = node[p] if isinstance(node, list) and p < len(node) else None
        else:
            parts.append(("." if parts else "") + str(p))
            node = node.get(p) if isinstance(node, dict) else None
    return "".join(parts) or "plan"


def validation_problems(e: ValidationError, data: Any) -> list[str]:
    """pydantic errors as short, located sentences a model can act on."""
    out = []
    for err in e.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field (allowed: see the schema)"
        if err["type"] == "missing":
            msg = "required field is missing"
        where = _location(tuple(err["loc"]), data)
        out.extend(line if where == "plan" else f"{where}: {line}" for line in msg.splitlines())
    return out


def plan_from_data(data: Any) -> Plan:
    """A Plan from parsed JSON: an object with ``subtasks`` (and ``notes``), or a bare list of subtasks."""
    if isinstance(data, list):
        data = {"subtasks": data}
    if isinstance(data, dict) and "plan" in data and "subtasks" not in data and isinstance(data["plan"], dict):
        data = data["plan"]
    if not isinstance(data, dict):
        raise PlanError([f"the plan must be a JSON object with 'subtasks', not {type(data).__name__}"])
    try:
        return Plan.model_validate(data)
    except ValidationError as e:
        raise PlanError(validation_problems(e, data)) from None


def parse_plan(text: str) -> Plan:
    """Parse and validate the plan in a model's message; PlanError carries feedback for the model."""
    return plan_from_data(extract_json(text))


def plan_from_transcript(messages: list) -> Plan:
    """The plan a planner submitted: the arguments of its last accepted ``submit_plan`` call, else the JSON of its
    final message. PlanError (with every problem) when there is no usable plan."""
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
    for m in reversed(messages):
        if m.role == "tool" and m.name == "submit_plan" and not m.is_error and m.tool_call_id in calls:
            return parse_plan(json.dumps(calls[m.tool_call_id].arguments))
    return parse_plan(next((m.content for m in reversed(messages) if m.role == "assistant"), ""))
