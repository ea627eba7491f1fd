"""The history view's lines for tool calls (activities and local activities)."""

from infra.history import Step, render


def test_tool_call_lines_show_arguments_result_errors_and_replays():
    call = {"call": {"id": "c1", "name": "str_replace", "arguments_preview": '{"path": "a.py"}'}}
    ok = Step(workflow_id="w/agent-1", kind="local activity", name="tool_call", input=call, duration_s=0.004,
              result={"call_id": "c1", "name": "str_replace", "summary": "edited a.py [exact]"})
    replayed = Step(workflow_id="w/agent-1", kind="local activity", name="tool_call", input=call, duration_s=0.001,
                    result={"call_id": "c1", "name": "str_replace", "summary": "edited a.py [exact]",
                            "replayed": True})
    failed = Step(workflow_id="w/agent-1", kind="activity", name="tool_call", attempt=2, duration_s=1.5,
                  input={"call": {"name": "run_tests", "arguments_preview": "{}"}},
                  result={"summary": "pytest: 1 failed", "is_error": True, "error_kind": "Timeout"})
    lines = render(Step(workflow_id="w/agent-1", kind="workflow", name="AgentWorkflow", children=[ok, replayed,
                                                                                                   failed]))
    assert lines[1].endswith('tool str_replace {"path": "a.py"} -> edited a.py [exact]')
    assert lines[2].endswith("(recorded result of an earlier attempt)")
    assert lines[3].endswith("tool run_tests {} -> pytest: 1 failed [Timeout] (attempt 2)")


def test_an_agent_that_failed_or_was_terminated_shows_how_it_ended():
    turn = Step(workflow_id="w/b", kind="activity", name="model_call", result={"usage": {}},
                input={"turn": 1, "model": "m"})
    tool = Step(workflow_id="w/b", kind="local activity", name="tool_call", result={"summary": "ok"})
    failed = Step(workflow_id="w/b", kind="child", name="AgentWorkflow", status="failed",
                  error="ScriptDiverged: turn 2 expected read_file", children=[turn, tool])
    terminated = Step(workflow_id="w/c", kind="child", name="AgentWorkflow", status="terminated")
    returned = Step(workflow_id="w/d", kind="child", name="AgentWorkflow", status="completed",
                    result={"status": "failed", "turns": 3, "tool_calls": 4, "error_kind": "ProviderError",
                            "reason": "401 Unauthorized"})
    out = Step(workflow_id="w/e", kind="child", name="AgentWorkflow", status="completed",
               result={"status": "budget_exhausted", "turns": 2, "tool_calls": 2, "stopped": "turn limit (2)"})
    running = Step(workflow_id="w/f", kind="child", name="AgentWorkflow")
    lines = render(Step(workflow_id="w", kind="workflow", name="TaskWorkflow", status="terminated",
                        error="terminated: by an operator", children=[failed, terminated, returned, out, running]))
    text = "\n".join(lines)
    assert lines[0] == "TaskWorkflow w: TERMINATED: terminated: by an operator"
    assert "agent w/b (AgentWorkflow): status failed, 1 turns, 1 tool calls — ScriptDiverged: turn 2" in text
    assert "agent w/c (AgentWorkflow): status terminated, 0 turns, 0 tool calls" in text
    assert "agent w/d (AgentWorkflow): status failed, 3 turns, 4 tool calls — ProviderError: 401 Unauthorized" in text
    assert "status budget_exhausted, 2 turns, 2 tool calls — stopped: turn limit (2)" in text
    assert "agent w/f (AgentWorkflow): status running, 0 turns, 0 tool calls" in text
