"""One agent's state (workflows/models.py AgentState): the progress it shows, what a continue-as-new carries,
the base of its result."""

from __future__ import annotations

from agents.messages import Usage
from workflows.models import AgentInput, AgentState, ModelSwitch


def test_recent_steps_are_bounded_and_errors_counted():
    s = AgentState(model="scripted:x")
    for i in range(50):
        s.note(f"turn {i}")
    s.count("Timeout")
    s.count("Timeout")
    assert len(s.recent) == AgentState.RECENT and s.recent[-1] == "turn 49" and s.recent[0] == "turn 30"
    assert s.errors == {"Timeout": 2}


def test_a_continue_as_new_carries_it_whole():
    s = AgentState(transcript_ref="t", turn=7, tool_calls=12, model="m2", spawned=2, errors={"ToolFailed": 1},
                   switches=[ModelSwitch(turn=3, previous="m1", model="m2", by="router", reason="")],
                   status="running tools", recent=["turn 7: ..."], spent={"tokens": 900})
    inp = AgentInput(agent_id="a", task="t", model="m1", workspace="/w", worker_queue="q", resume=s)
    back = AgentInput.model_validate_json(inp.model_dump_json()).resume
    assert back == s


def test_the_result_is_built_from_it():
    s = AgentState(transcript_ref="t", turn=3, tool_calls=4, model="m", errors={"Timeout": 1})
    r = s.result("a", "done", Usage(input_tokens=10), 0.5, final_message="ok")
    assert (r.turns, r.tool_calls, r.transcript_ref, r.model, r.errors, r.final_message, r.cost_usd) == \
        (3, 4, "t", "m", {"Timeout": 1}, "ok", 0.5)
