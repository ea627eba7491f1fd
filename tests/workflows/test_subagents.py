"""spawn_subagents on the real AgentWorkflow with stub activities: parallel child agents under the parent, their
spend charged to it, editors on workspaces of their own merged back, failures as results, depth and role limits."""

from __future__ import annotations

from agents.harness_settings import HarnessSettings
from tests.workflows.conftest import run_task, task_input
from tests.workflows.harness import AgentScript, Turn, World
from workflows.agent import _capped

PARENT = AgentScript(turns=[Turn(tools=["spawn_subagents"]), Turn()])


def span(calls) -> float:
    return max(c.ended for c in calls) - min(c.started for c in calls)


async def test_four_explorers_run_in_parallel_and_their_spend_is_the_parents(env):
    explorer = AgentScript(turns=[Turn(tools=["read_file"], tool_seconds=1.0, tokens=1000), Turn(tokens=1000)])
    world = World(subagents=["explorer"] * 4, agents={"agent-1": PARENT, **{f"sub{i}": explorer for i in range(1, 5)}})
    harness = HarnessSettings(compact_at=0.4)
    result = await run_task(env, world, task_input(mode="solo", harness=harness), wf_id="sub-parallel")
    assert result.agent.status == "done"
    children = {}
    for c in world.calls:
        agent_id = getattr(c.input, "agent_id", "")
        if "/sub" in agent_id:
            children.setdefault(agent_id, []).append(c)
    assert sorted(children) == [f"sub-parallel/agent-1/sub{i}" for i in range(1, 5)]
    wall = world.named("subagent_results")[0].started - world.named("plan_subagents")[0].ended
    spans = [span(calls) for calls in children.values()]
    # in sequence the wall would be at least the sum; in parallel it is near the slowest, even under load
    assert min(spans) >= 1.0 and wall < sum(spans) / 2, (wall, spans)
    # explorers read the parent's workspace with roles of their own, at depth 1
    inits = [c.input for c in world.named("init_agent") if "/sub" in c.input.agent_id]
    parent_ws = next(c.input.workspace for c in world.named("init_agent") if c.input.agent_id.endswith("agent-1"))
    assert {i.workspace for i in inits} == {parent_ws} and {i.role for i in inits} == {"explorer"}
    # and the task's harness settings, as the parent has them
    assert {c.input.harness.compact_at for c in world.named("model_call") if "/sub" in c.input.agent_id} == {0.4}
    # their spend is the parent's: 2 own turns of 100 input tokens, 4 explorers x 2 turns of 1000
    assert result.agent.usage.input_tokens == 2 * 100 + 4 * 2 * 1000
    outcomes = world.named("subagent_results")[0].input.outcomes
    assert [(o.status, o.turns) for o in outcomes] == [("done", 2)] * 4
    # each explorer released its own sandbox; the parent's was released once, at its end
    released = [c.input.agent_id for c in world.named("release_sandbox")]
    assert sorted(r for r in released if "/sub" in r) == sorted(children)


async def test_editors_work_apart_and_merge_back_and_a_failed_subagent_is_a_result(env):
    editor = AgentScript(turns=[Turn(tools=["str_replace"]), Turn()])
    world = World(subagents=["editor", "editor", "explorer"], unmergeable={"agent-1.sub2"},
                  agents={"agent-1": PARENT, "sub1": editor, "sub2": editor,
                          "sub3": AgentScript(turns=[Turn(fail="ProviderError")])})
    result = await run_task(env, world, task_input(mode="solo"), wf_id="sub-edit")
    assert result.agent.status == "done"
    outcomes = world.named("subagent_results")[0].input.outcomes
    assert [(o.name, o.kind, o.status, o.merged) for o in outcomes] == [
        ("agent-1.sub1", "editor", "done", True), ("agent-1.sub2", "editor", "done", False),
        ("agent-1.sub3", "explorer", "failed", None)]
    assert "ProviderError" in outcomes[2].error
    # editors got fresh workspaces at the commit the parent started from, and their work went to the parent
    parent_start = next(c.input.commit for c in world.named("prepare_agent_workspace") if c.input.name == "agent-1")
    subs = {c.input.name: c.input.commit for c in world.named("prepare_agent_workspace") if ".sub" in c.input.name}
    assert subs == {"agent-1.sub1": parent_start, "agent-1.sub2": parent_start}
    assert {(c.input.agent_id, c.input.base) for c in world.named("apply_work")} == {("sub-edit/agent-1",
                                                                                      parent_start)}
    # the editors' own commits never reach the task branch: only the parent's collected work does
    merged = [c.input.commit for c in world.named("merge_agent_work")]
    sub_commits = {c.result for c in world.named("collect_agent_work") if ".sub" in c.input.name}
    assert merged and not sub_commits & set(merged)


async def test_depth_and_role_limits_come_back_to_the_model(env):
    # a subagent may start subagents, whose own request (depth 2) is refused; the refusal is a tool result
    world = World(subagents=["explorer"], agents={"agent-1": PARENT, "sub1": PARENT})
    result = await run_task(env, world, task_input(mode="solo"), wf_id="sub-depth")
    assert result.agent.status == "done"
    depths = [c.input.depth for c in world.named("plan_subagents")]
    assert depths == [0, 1, 2]
    assert [c.input.agent_id for c in world.named("init_agent")][-1] == "sub-depth/agent-1/sub1/sub1"
    assert len(world.named("subagent_results")) == 2  # the depth-2 call was refused before anything started
    # a read-only planner may not start editors
    world = World(subagents=["editor"], agents={"planner": PARENT})
    await run_task(env, world, task_input(), wf_id="sub-planner")
    assert world.named("plan_subagents") and not world.named("subagent_results")
    assert not [c for c in world.named("prepare_agent_workspace") if ".sub" in c.input.name]


def test_a_subagent_budget_is_capped_by_its_share():
    assert _capped({"tokens": 300_000, "turns": 15, "usd": 1.0}, {"tokens": 50_000, "usd": 2.0, "wall_clock_s": 60}) \
        == {"tokens": 50_000, "turns": 15, "usd": 1.0, "wall_clock_s": 60}
    assert _capped({}, {}) == {}
