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
