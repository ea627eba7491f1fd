"""The span tree of `bosun trace`: the task's traces only, Temporal's start/run pairs folded, the slowest path."""

from __future__ import annotations

from infra.traceview import render, task_spans

S = 1_000_000_000


def span(sid, parent, name, start, end, trace="t1", **attrs):
    return {"trace_id": trace, "span_id": sid, "parent_id": parent, "name": name, "start": start * S,
            "end": end * S, "status": "ERROR" if attrs.get("error.type") else "UNSET", "attributes": attrs}


def run():
    return [
        span("a", None, "StartWorkflow:TaskWorkflow", 0, 0.01, temporalWorkflowID="task-1"),
        span("b", "a", "RunWorkflow:TaskWorkflow", 0.02, 0.02, temporalWorkflowID="task-1"),
        span("c", "a", "StartActivity:run_checks", 0.1, 0.1),
        span("d", "c", "RunActivity:run_checks", 0.1, 2.5, temporalWorkflowID="task-1"),
        span("e", "a", "StartChildWorkflow:AgentWorkflow", 3, 3),
        span("f", "e", "RunWorkflow:AgentWorkflow", 3, 3, temporalWorkflowID="task-1/agent-1"),
        span("g", "e", "StartActivity:model_call", 3.1, 3.1),
        span("h", "g", "RunActivity:model_call", 3.1, 3.6, temporalWorkflowID="task-1/agent-1"),
        span("i", "h", "chat openai:gpt-5", 3.1, 3.5, **{"gen_ai.usage.input_tokens": 900,
                                                           "gen_ai.usage.output_tokens": 40}),
        span("j", "e", "StartActivity:tool_call", 4, 4),
        span("k", "j", "RunActivity:tool_call", 4, 9, temporalWorkflowID="task-1/agent-1"),
        span("l", "k", "execute_tool run_tests", 4, 9, **{"error.type": "Timeout"}),
        span("x", None, "StartWorkflow:TaskWorkflow", 0, 1, trace="t2", temporalWorkflowID="task-2"),
    ]


def test_only_the_tasks_traces():
    assert {s["trace_id"] for s in task_spans(run(), "task-1")} == {"t1"}
    assert {s["span_id"] for s in task_spans(run(), "task-1/agent-1")} == {s["span_id"] for s in run()[:12]}
    assert task_spans(run(), "task") == []  # a prefix of an id is not the id


def test_tree_folds_temporal_pairs_and_marks_the_slowest_path():
    lines = render(task_spans(run(), "task-1"))
    assert lines[0] == "trace t1: 12 spans, 1 with errors, 9.00s (» marks the slowest path)"
    assert lines[1] == "» TaskWorkflow task-1  (9.000s)"
    assert lines[2] == "  ├─ run_checks  (2.400s)"
    assert lines[3] == "» └─ AgentWorkflow task-1/agent-1  (6.000s)"
    assert lines[4] == "     ├─ model_call  (0.500s)"
    assert lines[5] == "     │  └─ chat openai:gpt-5  (0.400s, tokens 900/40)"
    assert lines[6] == "»    └─ tool_call  (5.000s)"  # the activity did its job; the tool call failed
    assert lines[7] == "»       └─ execute_tool run_tests  (5.000s, ERROR Timeout)"
    assert render([]) == []


def test_a_sandbox_started_ahead_is_shown_but_not_counted_in_the_acquire_that_set_it_off():
    """The pool starts the next sandbox while the agent's acquire returns: that start runs on in the background
    (0.1 s to 0.5 s here) and must not make the acquire (0.2 s) look 0.5 s long, nor be on the slowest path."""
    spans = [
        span("a", None, "StartActivity:agent_workspace", 0, 0, temporalWorkflowID="task-1/planner"),
        span("b", "a", "RunActivity:agent_workspace", 0, 0.25, temporalWorkflowID="task-1/planner"),
        span("c", "b", "sandbox acquire", 0, 0.2),
        span("d", "c", "sandbox start", 0, 0.2, **{"bosun.sandbox.start": "warm", "bosun.sandbox.backend": "bwrap"}),
        span("e", "c", "sandbox start ahead", 0.1, 0.5, **{"bosun.background": True, "bosun.sandbox.backend": "bwrap"}),
        span("f", "e", "sandbox hello", 0.4, 0.5),
    ]
    lines = render(spans)
    assert lines[1] == "» agent_workspace  (0.250s)"
    assert lines[2] == "» └─ sandbox acquire  (0.200s)"
    assert lines[3] == "»    ├─ sandbox start  (0.200s, warm start on bwrap)"
    assert lines[4] == "     └─ sandbox start ahead  (0.400s, in the background)"
    assert lines[5] == "        └─ sandbox hello  (0.100s)"
