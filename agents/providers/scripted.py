"""The scripted model: THE TEST DOUBLE. It replays a recorded trajectory instead of calling a language model.

A trajectory is a JSONL file, one assistant turn per line::

    {"content": "Let me read the test.", "tool_calls": [{"name": "read_file", "arguments": {"path": "t.py"}}]}
    {"expect": [{"tool": "read_file", "contains": "def test_add"}], "content": "...",
     "tool_calls": [...]}
    {"expect": [{"tool": "run_tests", "contains": "passed"}], "content": "Done."}

``expect`` checks the tool results that came back since the previous turn. In a team run each agent replays its
own lines: a line's optional ``"agent"`` names it (``planner``, ``fast_edit:<subtask id>``, ``debugger``,
``fast_edit:<subtask id>#2`` for a re-run); an agent with no lines of its own replays the lines without ``agent``.
The provider is a pure function of the transcript: turn N of the agent's lines answers its N-th model call. It
fails loudly (ScriptDiverged) when the run diverges: more model calls than recorded turns, an unexpected tool
result, a tool error the trajectory did not expect, or a transcript whose earlier tool calls differ from the
recorded ones.

Compaction (agents/context/compaction.py) rewrites what the model is given: an old tool call's long argument and a
long tool output become a placeholder naming the ``sha256:`` ref of the text they replaced. The provider compares
and checks the text the placeholder stands for, read back from the artifact store (``fetch``), so a faithful
replay stays faithful however the transcript was compacted, and a divergence is still one: content-addressed, the
ref names exactly the text that was there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agents.messages import Message, ModelResponse, ToolCall, ToolSpec, Usage
from agents.providers.base import Provider
from infra.errors import BosunError, ConfigError, ScriptDiverged, describe_validation


class Expectation(BaseModel):
    """A check on one tool result of the previous turn."""

    model_config = {"extra": "forbid"}

    tool: str
    """Name of the tool whose result is checked (the first result of that tool since the last turn)."""
    contains: str | None = None
    """A substring the result must contain."""
    is_error: bool = False
    """Whether the result is expected to be an error."""


class ScriptedCall(BaseModel):
    model_config = {"extra": "forbid"}

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedTurn(BaseModel):
    """One recorded assistant turn."""

    model_config = {"extra": "forbid"}

    agent: str | None = None
    """Which agent replays this turn (see the module docstring); None: any agent without lines of its own."""
    content: str = ""
    tool_calls: list[ScriptedCall] = Field(default_factory=list)
    expect: list[Expectation] = Field(default_factory=list)


def turns_for(turns: list[ScriptedTurn], keys: list[str]) -> list[ScriptedTurn]:
    """The turns of the first agent key that has any, else the turns without an agent."""
    for key in keys:
        mine = [t for t in turns if t.agent == key]
        if mine:
            return mine
    return [t for t in turns if t.agent is None]


EXPORT_SCHEMA = "bosun.trajectory/1"
"""``bosun export`` documents (docs/TRAJECTORY.md) replay too: every agent's recorded turns, under its own key."""


def _export_doc(text: str) -> dict[str, Any] | None:
    """The export document in ``text`` (the JSON form, or the JSON-lines form gathered back), else None."""
    head = text.lstrip()[:1]
    if head != "{":
        return None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = None
    if isinstance(doc, dict) and doc.get("schema") == EXPORT_SCHEMA:
        return doc
    records = []
    for line in text.splitlines():
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                return None
    if not records or not isinstance(records[0], dict) or records[0].get("record") != "task" \
            or records[0].get("schema") != EXPORT_SCHEMA:
        return None
    agents = {r["agent_id"]: {**r, "turns": []} for r in records if r.get("record") == "agent"}
    for r in records:
        if r.get("record") == "turn" and r.get("agent_id") in agents:
            agents[r["agent_id"]]["turns"].append(r)
    return {"schema": EXPORT_SCHEMA, "agents": list(agents.values())}


def _recorded_outcomes(calls: list[dict[str, Any]]) -> list[Expectation]:
    """The results of a turn's calls as the export recorded them, to be met again: a call that failed (an edit
    whose text was not found) fails again, one that succeeded succeeds. No expectation when any call's result is
    not recorded."""
    if not all(isinstance(c.get("is_error"), bool) and c.get("result_ref") for c in calls):
        return []
    return [Expectation(tool=c["name"], is_error=c["is_error"]) for c in calls]


def turns_from_export(doc: dict[str, Any], source: str) -> list[ScriptedTurn]:
    """Each agent's turns of an export, keyed by the agent's first key (``planner``, ``fast_edit:median#1``...)."""
    turns: list[ScriptedTurn] = []
    for agent in doc.get("agents", []):
        keys = agent.get("agent_keys") or [agent.get("role") or "solo"]
        previous: list[dict[str, Any]] = []
        for t in agent.get("turns", []):
            calls = []
            for c in t.get("tool_calls", []):
                args = c.get("arguments")
                if not isinstance(args, dict) or "missing" in args and len(args) == 2 and "why" in args:
                    raise ConfigError(f"{source}: agent {agent.get('agent_id')} turn {t.get('turn')}: the arguments "
                                      f"of tool call {c.get('name')} were not exported ({args}); cannot replay")
                calls.append(ScriptedCall(name=c["name"], arguments=args))
            turns.append(ScriptedTurn(agent=keys[0], content=t.get("content") or "", tool_calls=calls,
                                      expect=_recorded_outcomes(previous)))
            previous = t.get("tool_calls", [])
    if not turns:
        raise ConfigError(f"{source}: the exported run has no model turns to replay")
    return turns


def parse_trajectory(text: str, source: str = "<trajectory>") -> list[ScriptedTurn]:
    """Parse trajectory JSONL, or a ``bosun export`` document. Raises ConfigError naming the line and what is
    wrong."""
    doc = _export_doc(text)
    if doc is not None:
        return turns_from_export(doc, source)
    turns: list[ScriptedTurn] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{source}:{lineno}: not valid JSON ({e.msg} at column {e.colno}); "
                              "each line of a trajectory is one JSON object") from None
        try:
            turns.append(ScriptedTurn.model_validate(raw))
        except ValidationError as e:
            raise ConfigError(f"{source}:{lineno}: {describe_validation(e, where='(line)', first_only=True)}") from None
    if not turns:
        raise ConfigError(f"{source}: the trajectory has no turns; add one JSON object per assistant turn")
    for agent in dict.fromkeys(t.agent for t in turns):
        last = [t for t in turns if t.agent == agent][-1]
        if last.tool_calls:
            who = f" of agent {agent!r}" if agent else ""
            raise ConfigError(f"{source}: the last turn{who} has tool calls; a trajectory must end with a turn "
                              "without tool calls (the agent's final answer)")
    return turns


def load_trajectory(path: str | Path) -> tuple[str, list[ScriptedTurn]]:
    """Read and parse a trajectory file; returns (text, turns). Raises ConfigError if unreadable or invalid."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"trajectory file {p} does not exist (from the model spec 'scripted:{path}')") from None
    except IsADirectoryError:
        raise ConfigError(f"trajectory {p} is a directory; scripted:PATH needs a JSONL file") from None
    except PermissionError:
        raise ConfigError(f"trajectory file {p} is not readable (permission denied)") from None
    except UnicodeDecodeError:
        raise ConfigError(f"trajectory file {p} is not UTF-8 text") from None
    return text, parse_trajectory(text, str(p))


def call_id(turn: int, index: int) -> str:
    return f"call_{turn}_{index}"


class ScriptedProvider(Provider):
    """Replays a trajectory. Labelled ``scripted:`` everywhere it appears: it is not a language model."""

    def __init__(self, turns: list[ScriptedTurn], source: str = "trajectory",
                 fetch: Callable[[str], str] | None = None) -> None:
        self.turns = turns
        self.source = source
        self.name = f"scripted:{source}"
        self.fetch = fetch
        """Reads a ``sha256:`` ref from the artifact store: the full text behind a compacted placeholder."""

    def _diverged(self, turn: int, what: str) -> ScriptDiverged:
        return ScriptDiverged(f"scripted model ({self.source}) diverged at model turn {turn + 1}: {what}")

    def _full(self, value: Any) -> Any:
        """``value``, or when compaction replaced it, the text it replaced (as long as the store has it)."""
        from agents.context.compaction import compacted_ref  # lazy: loading a trajectory (bosun run) needs none
        ref = compacted_ref(value) if isinstance(value, str) else None
        if ref is None or self.fetch is None:
            return value
        try:
            return self.fetch(ref)
        except BosunError:
            return value  # not in the store: the placeholder is compared as it is, and differs

    def _same(self, got: ToolCall, want: ScriptedCall) -> bool:
        """Whether a transcript's call is the recorded one: same name, same arguments, each argument compared as it
        was before any compaction."""
        return got.name == want.name and got.arguments.keys() == want.arguments.keys() and all(
            value == want.arguments[key] or self._full(value) == want.arguments[key]
            for key, value in got.arguments.items())

    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = 4096
                       ) -> ModelResponse:
        assistant_idx = [i for i, m in enumerate(messages) if m.role == "assistant"]
        n = len(assistant_idx)
        if n >= len(self.turns):
            raise self._diverged(n, f"the run asked for another turn but the trajectory has only "
                                    f"{len(self.turns)} turns")
        # The transcript's earlier turns must be the recorded ones.
        for k, i in enumerate(assistant_idx):
            calls, recorded = messages[i].tool_calls, self.turns[k].tool_calls
            if len(calls) != len(recorded) or not all(map(self._same, calls, recorded)):
                got = [(c.name, c.arguments) for c in calls]
                want = [(c.name, c.arguments) for c in recorded]
                raise self._diverged(n, f"the transcript's turn {k + 1} has tool calls {got}, recorded {want}")
        results = messages[assistant_idx[-1] + 1:] if assistant_idx else []
        # each result as the tool returned it: a compacted one is checked against its full text
        results = [m.model_copy(update={"content": self._full(m.content)}) for m in results if m.role == "tool"]
        turn = self.turns[n]
        tool_names = {t.name for t in tools}
        for call in turn.tool_calls:
            if tools and call.name not in tool_names:
                raise self._diverged(n, f"the recorded tool call {call.name!r} is not among the offered tools "
                                        f"{sorted(tool_names)}")
        checked: set[int] = set()
        for exp in turn.expect:
            match = next((j for j, m in enumerate(results) if m.name == exp.tool and j not in checked), None)
            if match is None:
                raise self._diverged(n, f"expected a result of tool {exp.tool!r}, got results of "
                                        f"{[m.name for m in results]}")
            checked.add(match)
            res = results[match]
            if res.is_error != exp.is_error:
                state = "an error" if res.is_error else "a success"
                raise self._diverged(n, f"tool {exp.tool!r} returned {state}, the trajectory expected "
                                        f"is_error={exp.is_error}: {res.content[:400]!r}")
            if exp.contains is not None and exp.contains not in res.content:
                raise self._diverged(n, f"the result of {exp.tool!r} does not contain {exp.contains!r}; "
                                        f"it starts with {res.content[:400]!r}")
        for j, res in enumerate(results):
            if res.is_error and j not in checked:
                raise self._diverged(n, f"tool {res.name!r} failed and the trajectory did not expect it: "
                                        f"{res.content[:400]!r}")
        msg = Message(role="assistant", content=turn.content,
                      tool_calls=[ToolCall(id=call_id(n, i), name=c.name, arguments=c.arguments)
                                  for i, c in enumerate(turn.tool_calls)])
        prompt_chars = sum(len(m.content) for m in messages)
        return ModelResponse(message=msg, stop_reason="tool_use" if turn.tool_calls else "end_turn",
                             model=self.name,
                             usage=Usage(input_tokens=prompt_chars // 4, output_tokens=len(turn.content) // 4 + 1))
