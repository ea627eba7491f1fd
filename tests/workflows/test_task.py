"""TaskWorkflow and AgentWorkflow on stub activities: the coordinator's decisions, without sandboxes or models."""

from __future__ import annotations

import asyncio

import pytest
from temporalio.client import WorkflowFailureError

from activities.models import PlanInfo, SubtaskInfo
from tests.workflows.conftest import SUGGEST_CONTINUE_AS_NEW_AT, run_task, task_input
from tests.workflows.harness import AgentScript, Turn, World


def plan(*subtasks: tuple[str, list[str]]) -> PlanInfo:
    """Subtasks (id, depends_on) in waves by dependency."""
    subs = [SubtaskInfo(id=i, goal=f"goal {i}", depends_on=deps) for i, deps in subtasks]
    waves, done = [], set()
    while len(done) < len(subs):
        wave = [s.id for s in subs if s.id not in done and set(s.depends_on) <= done]
        waves.append(wave)
        done |= set(wave)
    return PlanInfo(subtasks=subs, waves=waves)


async def test_solo_run_goes_onto_the_branch_and_is_verified(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["read_file"]), Turn()])})
    result = await run_task(env, world, task_input(mode="solo"))
    assert result.status == "succeeded" and result.agent.turns == 2
    names = [c.name for c in world.calls]
    assert names.index("prepare_agent_workspace") < names.index("init_agent") < names.index("collect_agent_work")
    [merge] = world.named("merge_agent_work")
    assert merge.input.fast_forward and merge.input.label == "solo run agent-1"
    checks = [c.input.label for c in world.named("run_checks")]
    assert checks == ["before", "after"]
    assert world.named("run_checks")[1].input.commit == merge.result.head  # verified what is on the branch
    assert names[-1] == "cleanup_task"


async def test_waves_run_in_dependency_order_and_in_parallel_within_a_wave(env):
    world = World(plan=plan(("a", []), ("b", []), ("c", ["a", "b"])),
                  agents={f"fast_edit-{s}-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.5),
                                                                 Turn()]) for s in "abc"})
    result = await run_task(env, world, task_input(max_parallel=4))
    assert [(s.id, s.status) for s in result.subtasks] == [("a", "merged"), ("b", "merged"), ("c", "merged")]
    tools = {c.input.agent_id.split("/")[-1]: c for c in world.named("tool_call")}
    a, b, c = tools["fast_edit-a-1"], tools["fast_edit-b-1"], tools["fast_edit-c-1"]
    assert a.started < b.ended and b.started < a.ended  # a and b overlapped
    assert c.started > max(a.ended, b.ended)  # c waited for its dependencies
    merges = [m.input.label for m in world.named("merge_agent_work")]
    assert merges[2] == "subtask c (attempt 1)"
    # the second wave started from the merged head of the first
    c_ws = next(w for w in world.named("prepare_agent_workspace") if w.input.name == "fast_edit-c-1")
    assert c_ws.input.commit != "b" * 40


async def test_max_parallel_bounds_the_fan_out(env):
    world = World(plan=plan(*[(s, []) for s in "abcd"]),
                  agents={f"fast_edit-{s}-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.4),
                                                                 Turn()]) for s in "abcd"})
    await run_task(env, world, task_input(max_parallel=2))
    spans = [(c.started, c.ended) for c in world.named("tool_call")]
    most = max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)
    assert most == 2


async def test_a_conflicting_subtask_is_rerun_once_on_the_merged_tree(env):
    world = World(plan=plan(("a", []), ("b", [])),
                  conflicts=lambda label: ["calc/x.py"] if label == "subtask b (attempt 1)" else [])
    result = await run_task(env, world, task_input())
    assert [(s.id, s.status, s.attempts) for s in result.subtasks] == [("a", "merged", 1), ("b", "merged", 2)]
    rerun = next(w for w in world.named("prepare_agent_workspace") if w.input.name == "fast_edit-b-2")
    merged_a = world.named("merge_agent_work")[0]
    assert rerun.input.commit != merged_a.input.commit  # the re-run starts on the merged head, not b's own start
    prompt = next(c.input.task for c in world.named("init_agent") if c.input.agent_id.endswith("fast_edit-b-2"))
    assert "conflicted" in prompt and "calc/x.py" in prompt


async def test_a_subtask_that_conflicts_twice_is_reported(env):
    world = World(plan=plan(("a", []), ("b", [])), conflicts=lambda label: ["x.py"] if label.startswith("subtask b")
                  else [])
    result = await run_task(env, world, task_input())
    assert [(s.id, s.status) for s in result.subtasks] == [("a", "merged"), ("b", "conflict")]


async def test_debugger_rounds_until_green(env):
    world = World(checks=lambda label: label == "after debug round 2")
    result = await run_task(env, world, task_input(max_debug_rounds=3))
    assert result.status == "succeeded" and len(result.debug_rounds) == 2
    labels = [c.input.label for c in world.named("run_checks")]
    assert labels == ["before", "after", "after debug round 1", "after debug round 2"]
    dbg = [c.input for c in world.named("init_agent") if c.input.role == "debugger"]
    assert "tests/test_x.py::test_y" in dbg[0].task and [a.title for a in dbg[0].attachments] == [
        "Test output", "The changes so far (diff against the starting commit)"]


async def test_debugger_rounds_stop_at_the_limit(env):
    world = World(checks=lambda label: False)
    result = await run_task(env, world, task_input(max_debug_rounds=2))
    assert result.status == "failed" and len(result.debug_rounds) == 2


async def test_task_budget_skips_agents_that_do_not_fit(env):
    world = World(plan=plan(("a", []), ("b", ["a"]), ("c", ["a"])),
                  agents={"planner": AgentScript(turns=[Turn(tokens=300)]),
                          "fast_edit-a-1": AgentScript(turns=[Turn(tokens=400)])})
    result = await run_task(env, world, task_input(budget={"tokens": 1000}))
    # planner 330 tokens: "a" fits (estimate 330 of 670 left); after it 770 spent, ~385 per agent: b, c do not
    statuses = {s.id: s.status for s in result.subtasks}
    assert statuses == {"a": "merged", "b": "skipped", "c": "skipped"}
    assert "task budget: 2 of 2 fast-edit agents not started" in result.budget_note
    assert not [c for c in world.named("init_agent") if c.input.agent_id.endswith(("-b-1", "-c-1"))]


async def test_steering_reaches_the_next_model_call(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["read_file"]), Turn()])},
                  model_gate=asyncio.Event())

    async def during(handle):
        for _ in range(200):
            if world.named("model_call"):
                break
            await asyncio.sleep(0.05)
        await handle.signal("steer", "please also update the docs")
        await asyncio.sleep(0.3)
        world.model_gate.set()

    await run_task(env, world, task_input(mode="solo"), during=during)
    messages = [c.input.user_messages for c in world.named("model_call")]
    assert messages[1] == ["please also update the docs"] and messages[0] == []


async def test_a_long_agent_continues_as_new_and_keeps_its_place(env):
    turns = [Turn(tools=["read_file"]) for _ in range(SUGGEST_CONTINUE_AS_NEW_AT)] + [Turn()]
    world = World(agents={"agent-1": AgentScript(turns=turns)})
    result = await run_task(env, world, task_input(mode="solo", max_turns=100))
    assert result.agent.turns == len(turns) and result.agent.status == "done"
    assert [c.input.turn for c in world.named("model_call")] == list(range(1, len(turns) + 1))
    assert len(world.named("init_agent")) == 1  # the new run resumed; it did not start over
    assert len({c.run_id for c in world.named("model_call")}) > 1  # it did continue as new
    assert len([c for c in world.named("release_sandbox") if c.input.agent_id.endswith("agent-1")]) == 1


async def test_a_failed_agent_fails_the_task_and_nothing_is_left_running(env):
    world = World(plan=plan(("a", []), ("b", [])),
                  agents={"fast_edit-b-1": AgentScript(turns=[Turn(fail="ScriptDiverged")]),
                          "fast_edit-a-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.5), Turn()])})
    with pytest.raises(WorkflowFailureError):
        await run_task(env, world, task_input())
    released = {c.input.agent_id.split("/")[-1] for c in world.named("release_sandbox")}
    assert "fast_edit-b-1" in released
    assert world.calls[-1].name == "cleanup_task"
