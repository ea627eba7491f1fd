"""Harness settings (agents/harness_settings.py) as a turn applies them: the tool shape and prompt flavour over the
model's profile, the compaction threshold and what it keeps, tools a request did not offer, and the errors a bad
settings file gets."""

from __future__ import annotations

import json

import pytest

from agents.harness_settings import HarnessSettings, load_harness, parse_harness
from agents.messages import Message, ModelResponse, ToolCall
from agents.profiles import profile_for
from agents.providers import parse_spec
from agents.tools.builtin import default_registry
from agents.turn import first_messages, prepare, settle
from infra.errors import ConfigError

REG = default_registry()
CLAUDE = "anthropic:claude-sonnet-4-5"
TINY = "openai-compatible:http://127.0.0.1:9/v1#tiny"


def put(text: str) -> str:
    return f"sha256:{abs(hash(text)):064x}"[:71]


def long_transcript(turns: int, lines: int) -> list[Message]:
    out = [Message(role="system", content="s"), Message(role="user", content="task")]
    for i in range(turns):
        call = ToolCall(id=f"c{i}", name="run_command", arguments={"command": f"step {i}"})
        out += [Message(role="assistant", content=f"step {i}", tool_calls=[call]),
                Message(role="tool", content=f"line {i}\n" * lines, tool_call_id=f"c{i}", name="run_command")]
    return out


def test_empty_settings_change_nothing():
    assert HarnessSettings().profile(CLAUDE) == profile_for(parse_spec(CLAUDE))
    plain = prepare(first_messages("fast_edit", CLAUDE, "t", REG), [], [], role_name="fast_edit", model=CLAUDE,
                    base=REG, store_put=put)
    same = prepare(first_messages("fast_edit", CLAUDE, "t", REG, harness=HarnessSettings()), [], [],
                   role_name="fast_edit", model=CLAUDE, base=REG, store_put=put, harness=HarnessSettings())
    assert plain.messages == same.messages and plain.tools == same.tools


def test_the_edit_tool_and_prompt_flavour_override_the_models_profile():
    harness = HarnessSettings(edit_tool="apply_patch", prompt_variant="gpt")
    assert harness.profile(CLAUDE).edit_tool == "apply_patch" and harness.profile(CLAUDE).prompt_variant == "gpt"
    assert harness.profile(CLAUDE).input_usd_per_mtok == profile_for(parse_spec(CLAUDE)).input_usd_per_mtok
    req = prepare([], [], [], role_name="fast_edit", model=CLAUDE, base=REG, store_put=put, harness=harness)
    names = {t.name for t in req.tools}
    assert "apply_patch" in names and not names & {"str_replace", "write_file"}
    system = first_messages("fast_edit", CLAUDE, "t", REG, harness=harness)[0].content
    assert "apply_patch" in system and system != first_messages("fast_edit", CLAUDE, "t", REG)[0].content


@pytest.mark.parametrize("edit_tool,left_out", [("apply_patch", {"str_replace", "write_file"}),
                                                ("str_replace", {"apply_patch"})])
def test_a_solo_agent_is_offered_only_the_edit_set_the_settings_name(edit_tool, left_out):
    every = {t.name for t in prepare([], [], [], role_name="solo", model=CLAUDE, base=REG, store_put=put).tools}
    req = prepare([], [], [], role_name="solo", model=CLAUDE, base=REG, store_put=put,
                  harness=HarnessSettings(edit_tool=edit_tool))
    assert {t.name for t in req.tools} == every - left_out and edit_tool in every


def test_the_compaction_threshold_and_the_turns_kept_come_from_the_settings():
    transcript = long_transcript(turns=6, lines=300)  # about 9k tokens: well under 70% of the 32k window
    assert prepare(transcript, [], [], role_name="solo", model=TINY, base=REG, store_put=put).compaction is None
    early = prepare(transcript, [], [], role_name="solo", model=TINY, base=REG, store_put=put,
                    harness=HarnessSettings(compact_at=0.1))
    assert early.compaction is not None and early.compaction.threshold == 0.1
    keep_none = prepare(transcript, [], [], role_name="solo", model=TINY, base=REG, store_put=put,
                        harness=HarnessSettings(compact_at=0.1, keep_recent_turns=0))
    whole = [m for m in early.messages if m.role == "tool" and m.content.startswith("line 5\n")]
    assert whole and not [m for m in keep_none.messages if m.role == "tool" and m.content.startswith("line 5\n")]


def test_a_call_to_a_tool_the_request_did_not_offer_is_marked():
    req = prepare([], [], [], role_name="planner", model=CLAUDE, base=REG, store_put=put)
    calls = [ToolCall(id="a", name="read_file", arguments={"path": "x.py"}),
             ToolCall(id="b", name="write_file", arguments={"path": "x.py", "content": "pwned"}),
             ToolCall(id="c", name="no_such_tool", arguments={})]
    out = settle(req, ModelResponse(message=Message(role="assistant", content="", tool_calls=calls)), CLAUDE)
    assert out.not_offered == ["b", "c"]  # the planner is read-only: it is not offered write_file


@pytest.mark.parametrize("value,message", [
    ({"edit_tool": "sed"}, "edit_tool: Input should be 'apply_patch' or 'str_replace'"),
    ({"compact_at": 0}, "compact_at: Input should be greater than 0"),
    ({"compact_at": 1.5}, "compact_at: Input should be less than or equal to 1"),
    ({"keep_recent_turns": -1}, "keep_recent_turns: Input should be greater than or equal to 0"),
    ({"compaction": 0.5}, "compaction: Extra inputs are not permitted"),
    ({"router": {"tiers": {"small": "nonsense"}}}, "router.tiers"),
    ([1, 2], "(settings): Input should be a valid dictionary"),
])
def test_bad_settings_are_refused_with_the_field_named(value, message):
    with pytest.raises(ConfigError) as e:
        parse_harness(value, "--harness h.json")
    assert str(e.value).startswith("--harness h.json: bad harness settings: ") and message in str(e.value)
    assert "fields: edit_tool, prompt_variant, compact_at, keep_recent_turns, context_window, router" in str(e.value)


def test_a_settings_file_is_read_or_refused(tmp_path):
    good = tmp_path / "h.json"
    good.write_text(json.dumps({"compact_at": 0.5, "router": {"model_fallbacks": {"*": ["openai:gpt-5-mini"]}}}))
    h = load_harness(good, "--harness")
    assert h.threshold == 0.5 and h.keep_turns == 2 and h.router.model_fallbacks == {"*": ["openai:gpt-5-mini"]}
    assert h.without_router().router is None and h.without_router().compact_at == 0.5
    with pytest.raises(ConfigError, match=r"--harness .*missing.json: cannot read it \(No such file"):
        load_harness(tmp_path / "missing.json", "--harness")
    bad = tmp_path / "bad.json"
    bad.write_text("{compact_at: 0.5}")
    with pytest.raises(ConfigError, match=r"--harness .*bad.json: not JSON"):
        load_harness(bad, "--harness")


def test_a_context_window_for_a_local_server_compacts_earlier_and_asks_for_less():
    """A server started with less than the model's native window (vLLM --max-model-len 8192): the window setting
    is what compaction measures against, and a response is asked for at most a quarter of it."""
    qwen = "openai-compatible:http://127.0.0.1:8000/v1#Qwen/Qwen3-Coder-30B-A3B-Instruct"
    native = HarnessSettings().profile(qwen)
    small = HarnessSettings(context_window=8192).profile(qwen)
    assert native.context_window == 262_144 and small.context_window == 8192
    assert small.max_output_tokens == 2048 and small.prompt_budget_tokens == 6144
    transcript = long_transcript(turns=6, lines=1000)  # about 11k tokens: past 70% of 8192, far from the native
    assert prepare(transcript, [], [], role_name="solo", model=qwen, base=REG, store_put=put).compaction is None
    cut = prepare(transcript, [], [], role_name="solo", model=qwen, base=REG, store_put=put,
                  harness=HarnessSettings(context_window=8192))
    assert cut.compaction is not None and cut.profile.context_window == 8192
