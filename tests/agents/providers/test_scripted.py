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


# ---- replays through compaction -----------------------------------------------------------------------------------

HEREDOC = "cat > notes.txt <<'EOF'\n" + "\n".join(
    f"line {i:03d}: the quick brown fox jumps over the lazy dog" for i in range(27)) + "\nEOF"
SEQ_OUTPUT = "exit code: 0\nstdout:\n" + "".join(f"{i}\n" for i in range(1, 2501))


def _heredoc_run(last_expect: str = "\n2500\n") -> list[dict]:
    """The issue's repro: a run_command over compaction's argument cap, then four commands with long outputs."""
    turns = [{"content": "notes", "tool_calls": [{"name": "run_command", "arguments": {"command": HEREDOC}}]}]
    turns += [{"content": f"count {n}", "tool_calls": [{"name": "run_command", "arguments": {"command": "seq 1 2500"}}]}
              for n in range(4)]
    return [*turns, {"expect": [{"tool": "run_command", "contains": last_expect}], "content": "done"}]


async def _drive(turns: list[dict], tmp_path, *, fetch: bool = True):
    """Run the agent loop's pure part (agents/turn.py, as the model-call activity does) against the scripted
    provider with a real artifact store, each command 'returning' its output above; returns the compaction events,
    the last call's messages and tools, and the store."""
    from agents.tools.builtin import default_registry
    from agents.turn import first_messages, prepare, settle
    from infra.artifacts import ArtifactStore

    artifacts = ArtifactStore(tmp_path / "artifacts")
    outputs = {HEREDOC: "exit code: 0", "seq 1 2500": SEQ_OUTPUT}
    reg, model = default_registry(), "scripted:t.jsonl"
    replayed = ScriptedProvider(parse_trajectory("\n".join(json.dumps(t) for t in turns)),
                                fetch=artifacts.get_text if fetch else None)
    transcript = first_messages("solo", model, "write the notes", reg)
    results: list[Message] = []
    events = []
    for _ in turns:
        req = prepare(transcript, results, [], role_name="solo", model=model, base=reg,
                      store_put=artifacts.put_text)
        events.append(req.compaction)
        out = settle(req, await replayed.complete(req.messages, req.tools), model)
        transcript = out.transcript
        results = [Message(role="tool", content=outputs[c.arguments["command"]], tool_call_id=c.id, name=c.name)
                   for c, _ in out.calls]
    return events, req, artifacts


async def test_a_replay_survives_compaction_of_arguments_and_outputs(tmp_path):
    events, _, _ = await _drive(_heredoc_run(), tmp_path)
    stored = [s for e in events if e for s in e.stored]
    # the heredoc's argument and the last output were both replaced in what the model was given
    assert any(s.what == "argument:command" and s.chars == len(HEREDOC) for s in stored)
    assert any(s.what == "output" for s in stored)


async def test_a_divergence_is_still_caught_under_compaction(tmp_path):
    _, last, artifacts = await _drive(_heredoc_run(), tmp_path)
    assert "[compacted command: " in str(last.messages[2].tool_calls[0].arguments)
    other = _heredoc_run()
    other[0]["tool_calls"][0]["arguments"]["command"] = HEREDOC.replace("line 013", "line 0l3")  # one character
    judge = ScriptedProvider(parse_trajectory("\n".join(json.dumps(t) for t in other)), fetch=artifacts.get_text)
    with pytest.raises(ScriptDiverged, match=r"turn 1 has tool calls .*\[compacted command: 1,4\d\d chars"):
        await judge.complete(last.messages, last.tools)
    # a compacted result is checked against its full text: what that does not contain still diverges
    with pytest.raises(ScriptDiverged, match="does not contain '\\\\n2501\\\\n'"):
        await _drive(_heredoc_run(last_expect="\n2501\n"), tmp_path)
    # without the store a placeholder cannot stand for the recorded text: a divergence, never a silent pass
    with pytest.raises(ScriptDiverged, match="turn 1 has tool calls"):
        await _drive(_heredoc_run(), tmp_path, fetch=False)


def test_compacted_ref_reads_only_what_compaction_wrote():
    from agents.context.compaction import compacted_ref

    ref = "sha256:" + "ab" * 32
    assert compacted_ref(f"[compacted command: 1,486 chars, 28 lines; full text: {ref}]") == ref
    assert compacted_ref(f"[compacted run_command output: 9 chars (~2 tokens); full text: {ref}]\nsummary") == ref
    assert compacted_ref(f"[compacted user message: 5,000 chars; full text: {ref}]\nhead\n[...]") == ref
    assert compacted_ref(f"echo '[compacted command: 3 chars; full text: {ref}]'") is None  # not at the start
    assert compacted_ref("[compacted command: 3 chars; full text: sha256:abc]") is None  # not a ref
    assert compacted_ref(f"[compacted x: 1 chars]\nfull text: {ref}]") is None  # not on the first line


async def test_an_export_replays_its_recorded_tool_errors():
    """A real model's run has failed calls (an edit whose text was not there): the replay expects each recorded
    outcome again, so it replays, and a call whose outcome differs from the recording is a divergence."""
    ref = "sha256:" + "0" * 64
    doc = _export(turns=[
        {"turn": 1, "content": "edit", "tool_calls": [
            {"name": "read_file", "arguments": {"path": "a.py"}, "is_error": False, "result_ref": ref},
            {"name": "read_file", "arguments": {"path": "b.py"}, "is_error": True, "result_ref": ref}]},
        {"turn": 2, "content": "done", "tool_calls": []}])
    turns = parse_trajectory(json.dumps(doc), "run.json")
    assert [(e.tool, e.is_error) for e in turns[1].expect] == [("read_file", False), ("read_file", True)]
    msgs = convo("def f") + [Message(role="tool", content="ToolFailed: no b.py", tool_call_id="call_0_1",
                                     name="read_file", is_error=True)]
    msgs[2].tool_calls.append(ToolCall(id="call_0_1", name="read_file", arguments={"path": "b.py"}))
    done = await ScriptedProvider(turns).complete(msgs, TOOLS)
    assert done.message.content == "done"
    msgs[-1] = msgs[-1].model_copy(update={"is_error": False, "content": "1| b"})
    with pytest.raises(ScriptDiverged, match="returned a success, the trajectory expected is_error=True"):
        await ScriptedProvider(turns).complete(msgs, TOOLS)
