"""The scripted model (the test double) replays exactly and fails loudly on divergence."""

import json

import pytest

from agents.messages import Message, ToolCall, ToolSpec
from agents.providers.scripted import ScriptedProvider, load_trajectory, parse_trajectory
from infra.errors import ConfigError, ScriptDiverged
from tests.conftest import ROOT

TRAJ = "\n".join(json.dumps(t) for t in [
    {"content": "look", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.py"}}]},
    {"expect": [{"tool": "read_file", "contains": "def f"}], "content": "done"},
])
TOOLS = [ToolSpec(name="read_file", description="", parameters={})]


def convo(result: str, is_error: bool = False) -> list[Message]:
    return [Message(role="system", content="s"), Message(role="user", content="task"),
            Message(role="assistant", content="look",
                    tool_calls=[ToolCall(id="call_0_0", name="read_file", arguments={"path": "a.py"})]),
            Message(role="tool", content=result, tool_call_id="call_0_0", name="read_file", is_error=is_error)]


async def test_replays_turns_in_order():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    first = await p.complete(convo("")[:2], TOOLS)
    assert first.message.tool_calls[0].name == "read_file"
    assert first.message.tool_calls[0].id == "call_0_0"
    second = await p.complete(convo("def f(): pass"), TOOLS)
    assert second.message.content == "done" and not second.message.tool_calls
    assert second.stop_reason == "end_turn"


async def test_unexpected_result_diverges():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    with pytest.raises(ScriptDiverged, match="does not contain 'def f'"):
        await p.complete(convo("something else"), TOOLS)


async def test_unexpected_tool_error_diverges():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    with pytest.raises(ScriptDiverged, match="returned an error"):
        await p.complete(convo("ToolFailed: def f", is_error=True), TOOLS)


async def test_more_turns_than_recorded_diverges():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    msgs = convo("def f") + [Message(role="assistant", content="done")]
    with pytest.raises(ScriptDiverged, match="only 2 turns"):
        await p.complete(msgs, TOOLS)


async def test_tampered_transcript_diverges():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    msgs = convo("def f")
    msgs[2].tool_calls[0].arguments = {"path": "b.py"}
    with pytest.raises(ScriptDiverged, match="turn 1 has tool calls"):
        await p.complete(msgs, TOOLS)


async def test_tool_not_offered_diverges():
    p = ScriptedProvider(parse_trajectory(TRAJ))
    with pytest.raises(ScriptDiverged, match="not among the offered tools"):
        await p.complete(convo("")[:2], [ToolSpec(name="grep", description="", parameters={})])


@pytest.mark.parametrize("text,match", [
    ("", "no turns"),
    ("{not json", ":1: not valid JSON"),
    ('{"content": "x", "tool_calls": [{"arguments": {}}]}', ":1: tool_calls.0.name: Field required"),
    ('{"content": "x", "bogus": 1}', ":1: bogus: Extra inputs are not permitted"),
    ('{"content": "x", "tool_calls": [{"name": "a"}]}', "last turn has tool calls"),
])
def test_bad_trajectories_are_refused_with_the_line(text, match):
    with pytest.raises(ConfigError, match=match):
        parse_trajectory(text, "t.jsonl")


def test_unreadable_trajectory_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_trajectory(tmp_path / "nope.jsonl")
    with pytest.raises(ConfigError, match="is a directory"):
        load_trajectory(tmp_path)
    bad = tmp_path / "bin.jsonl"
    bad.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_trajectory(bad)


def test_the_bundled_example_trajectory_parses():
    _, turns = load_trajectory(ROOT / "examples" / "calc" / "solo.jsonl")
    assert [c.name for t in turns for c in t.tool_calls] == ["run_tests", "read_file", "read_file", "str_replace",
                                                             "str_replace", "run_tests"]
    _, team = load_trajectory(ROOT / "examples" / "calc" / "team.jsonl")
    assert {t.agent for t in team} == {"planner", "fast_edit:median", "fast_edit:percent", "debugger"}


def test_agent_keys_pick_lines():
    from agents.providers.scripted import turns_for

    turns = parse_trajectory("\n".join(json.dumps(t) for t in [
        {"agent": "planner", "content": "plan"}, {"agent": "debugger", "content": "dbg"}, {"content": "any"}]))
    assert [t.content for t in turns_for(turns, ["planner"])] == ["plan"]
    assert [t.content for t in turns_for(turns, ["debugger#2", "debugger"])] == ["dbg"]
    assert [t.content for t in turns_for(turns, ["fast_edit:x"])] == ["any"]


def test_each_agent_must_end_with_a_final_turn():
    text = json.dumps({"agent": "planner", "content": "x", "tool_calls": [{"name": "a"}]}) + "\n" + json.dumps(
        {"content": "done"})
    with pytest.raises(ConfigError, match="last turn of agent 'planner' has tool calls"):
        parse_trajectory(text)


def _export(**agent_overrides):
    agent = {"agent_id": "t/planner", "role": "planner", "agent_keys": ["planner"], "turns": [
        {"turn": 1, "content": "looking", "tool_calls": [{"name": "grep", "arguments": {"pattern": "x"}}]},
        {"turn": 2, "content": "done", "tool_calls": []}], **agent_overrides}
    return {"schema": "bosun.trajectory/1", "task": {}, "agents": [agent]}


def test_an_export_replays_in_both_forms():
    import json

    from agents.providers.scripted import EXPORT_SCHEMA
    from infra.export import SCHEMA

    assert EXPORT_SCHEMA == SCHEMA  # the replay reads the schema the export writes
    doc = _export()
    turns = parse_trajectory(json.dumps(doc), "run.json")
    assert [(t.agent, t.content, [c.name for c in t.tool_calls]) for t in turns] == [
        ("planner", "looking", ["grep"]), ("planner", "done", [])]
    lines = [{"record": "task", "schema": "bosun.trajectory/1"},
             {"record": "agent", "agent_id": "t/planner", "agent_keys": ["planner"]},
             *[{"record": "turn", "agent_id": "t/planner", **t} for t in doc["agents"][0]["turns"]]]
    assert parse_trajectory("\n".join(json.dumps(x) for x in lines), "run.jsonl") == turns
    bad = _export(turns=[{"turn": 1, "content": "x", "tool_calls": [
        {"name": "grep", "arguments": {"missing": "sha256:" + "0" * 64, "why": "gone"}}]}])
    with pytest.raises(ConfigError, match="t/planner turn 1: the arguments of tool call grep were not exported"):
        parse_trajectory(json.dumps(bad), "run.json")
    with pytest.raises(ConfigError, match="no model turns"):
        parse_trajectory(json.dumps(_export(turns=[])), "run.json")
