"""One agent turn as plain values (agents/turn.py): what a model call sends and what its answer means, with no
Temporal, sandbox or network."""

from __future__ import annotations

import pytest

from agents.messages import Message, ModelResponse, ToolCall, Usage
from agents.tools.builtin import default_registry
from agents.turn import Attached, first_messages, prepare, settle
from infra.errors import ConfigError

REG = default_registry()


def store():
    kept: dict[str, str] = {}

    def put(text: str) -> str:
        ref = f"sha256:{len(kept):064x}"
        kept[ref] = text
        return ref
    return put, kept


def test_first_messages_hold_the_role_prompt_context_task_and_attachments():
    msgs = first_messages("debugger", "anthropic:claude-sonnet-4-5", "make the tests pass", REG,
                          static_context="# Environment\nLinux",
                          attachments=[Attached("Test output", "x" * 50_000, max_chars=1000)])
    assert [m.role for m in msgs] == ["system", "user"]
    user = msgs[1].content
    assert user.startswith("# Environment\nLinux\n\n# Task\n\nmake the tests pass")
    assert "## Test output" in user and "[... cut ...]" in user and len(user) < 1200
    with pytest.raises(ConfigError, match="unknown agent role 'wizard'"):
        first_messages("wizard", "anthropic:claude-sonnet-4-5", "t", REG)


@pytest.mark.parametrize("model,edit_tool", [("openai:gpt-5-codex", "apply_patch"),
                                             ("anthropic:claude-sonnet-4-5", "str_replace")])
def test_the_edit_tool_follows_the_model(model, edit_tool):
    put, _ = store()
    req = prepare(first_messages("fast_edit", model, "t", REG), [], [], role_name="fast_edit", model=model,
                  base=REG, store_put=put)
    names = {t.name for t in req.tools}
    assert edit_tool in names and ({"apply_patch", "str_replace"} - {edit_tool}).isdisjoint(names)
    assert "submit_plan" not in names  # the planner's tool, not a fast-edit agent's
    planner = prepare([], [], [], role_name="planner", model=model, base=REG, store_put=put)
    assert "submit_plan" in {t.name for t in planner.tools} and edit_tool not in {t.name for t in planner.tools}


def test_prepare_appends_results_then_steering_in_order():
    put, _ = store()
    call = ToolCall(id="c1", name="read_file", arguments={"path": "a.py"})
    transcript = [Message(role="system", content="s"), Message(role="user", content="task"),
                  Message(role="assistant", content="", tool_calls=[call])]
    failed = Message(role="tool", content="no such file", tool_call_id="c1", name="read_file", is_error=True)
    req = prepare(transcript, [failed],
                  ["please also update the docs"], role_name="solo", model="anthropic:claude-sonnet-4-5", base=REG,
                  store_put=put)
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool", "user"]
    assert req.messages[3].tool_call_id == "c1" and req.messages[3].is_error
    assert req.messages[4].content == "please also update the docs"
    assert req.compaction is None and len(req.tools) == len(REG.specs())  # solo: every tool


def test_prepare_compacts_past_the_window_and_keeps_raw_outputs():
    put, kept = store()
    model = "openai-compatible:http://127.0.0.1:9/v1#tiny"
    transcript = [Message(role="system", content="s"), Message(role="user", content="task")]
    for i in range(12):
        call = ToolCall(id=f"c{i}", name="run_command", arguments={"command": f"step {i}"})
        transcript += [Message(role="assistant", content=f"step {i}", tool_calls=[call]),
                       Message(role="tool", content=f"line {i}\n" * 4000, tool_call_id=f"c{i}", name="run_command")]
    req = prepare(transcript, [], [], role_name="solo", model=model, base=REG, store_put=put)
    assert req.compaction is not None and req.compaction.after_tokens < req.compaction.before_tokens
    assert kept and any("line 0" in text for text in kept.values())  # the raw output can be read back


def test_settle_prices_the_call_and_keys_each_write():
    put, _ = store()
    model = "anthropic:claude-sonnet-4-5"
    req = prepare([Message(role="system", content="s"), Message(role="user", content="t")], [], [],
                  role_name="fast_edit", model=model, base=REG, store_put=put)
    calls = [ToolCall(id="a", name="read_file", arguments={"path": "x.py"}),
             ToolCall(id="b", name="str_replace", arguments={"path": "x.py", "old_str": "1", "new_str": "2"}),
             ToolCall(id="c", name="run_tests", arguments={})]
    answer = ModelResponse(message=Message(role="assistant", content="fixing", tool_calls=calls),
                           usage=Usage(input_tokens=1_000_000, output_tokens=0), stop_reason="tool_use")
    out = settle(req, answer, model)
    assert [key for _, key in out.calls] == [None, "x.py", "*"]
    assert out.transcript[-1] == answer.message and out.transcript[:-1] == req.messages
    assert out.cost_usd == pytest.approx(req.profile.input_usd_per_mtok)
    assert out.model == model and out.stop_reason == "tool_use" and out.text == "fixing"
