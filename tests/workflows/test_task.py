"""TaskWorkflow and AgentWorkflow on stub activities: the coordinator's decisions, without sandboxes or models."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.worker import Worker

from activities.models import PlanInfo, SubtaskInfo
from agents.harness_settings import HarnessSettings
from agents.router import RouterConfig
from infra import history
from infra.history import collect
from tests.workflows.conftest import FAIL_FAST, SUGGEST_CONTINUE_AS_NEW_AT, run_task, slots_worker, task_input
from tests.workflows.harness import AgentScript, Stubs, Turn, World
from workflows.agent import AgentWorkflow
from workflows.task import TaskWorkflow


def plan(*subtasks: tuple[str, list[str]]) -> PlanInfo:
    """Subtasks (id, depends_on) in waves by dependency."""
    subs = [SubtaskInfo(id=i, goal=f"goal {i}", depends_on=deps) for i, deps in subtasks]
    waves, done = [], set()
    while len(done) < len(subs):
        wave = [s.id for s in subs if s.id not in done and set(s.depends_on) <= done]
        waves.append(wave)
        done |= set(wave)
    return PlanInfo(subtasks=subs, waves=waves)


async def until(condition: Callable[[], object]) -> None:
    """Wait (up to 30 s) until ``condition()`` holds: what the stub world records, while a task runs."""
    for _ in range(300):
        if condition():
            return
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def home_and_agent_hosts(env, world: World):
    """Stub hosts that share their state: the shared queue (the task's workflow), h1 and h2 (their own queues); only
    h2 has slots, so the agents run there. ``world.binds`` says which host bind_host answers in turn."""
    world.queue = f"wf-test-{uuid.uuid4().hex[:8]}"
    shared, h1, h2 = (Stubs(world, h, q) for h, q in (("shared", world.queue), ("h1", f"{world.queue}@h1"),
                                                        ("h2", f"{world.queue}@h2")))
    async with Worker(env.client, task_queue=world.queue, workflows=[TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST,
                      activities=shared.all()), \
            Worker(env.client, task_queue=h1.queue, workflows=[AgentWorkflow],
                   workflow_failure_exception_types=FAIL_FAST, activities=h1.all()), \
            Worker(env.client, task_queue=h2.queue, workflows=[AgentWorkflow],
                   workflow_failure_exception_types=FAIL_FAST, activities=h2.all()), \
            slots_worker(env, world, h2):
        yield


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


async def test_a_commit_tested_already_is_not_tested_again(env):
    """Debug rounds that change nothing leave the branch where it was: its tests ran on that commit, so they are not
    run again (same tree, environment and command); the result stays the one they gave."""
    world = World(checks=lambda label: False, agents={"debugger-1": AgentScript(changes=False),
                                                      "debugger-2": AgentScript(changes=False)})
    result = await run_task(env, world, task_input(max_debug_rounds=2))
    assert result.status == "failed" and len(result.debug_rounds) == 2
    assert [c.input.label for c in world.named("run_checks")] == ["before", "after"]
    assert result.tests_after.summary == "1 failed"


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
    wf_id = f"t-long-{uuid.uuid4().hex[:8]}"
    result = await run_task(env, world, task_input(mode="solo", max_turns=100), wf_id=wf_id)
    assert result.agent.turns == len(turns) and result.agent.status == "done"
    assert [c.input.turn for c in world.named("model_call")] == list(range(1, len(turns) + 1))
    assert len(world.named("init_agent")) == 1  # the new run resumed; it did not start over
    assert len({c.run_id for c in world.named("model_call")}) > 1  # it did continue as new
    assert len([c for c in world.named("release_sandbox") if c.input.agent_id.endswith("agent-1")]) == 1
    # read back (bosun history, the export), the agent has the turns of all its runs, in order
    root = await collect(env.client, wf_id)
    [agent] = [c for c in root.children if c.kind == "child"]
    calls = [c.input["turn"] for c in agent.children if c.name == "model_call"]
    assert calls == list(range(1, len(turns) + 1)) and agent.missing is None


GITHUB = {"source": "github", "repo": "acme/api", "number": 7}


async def test_a_failed_agent_is_retried_once_and_the_task_ends_partial(env):
    world = World(plan=plan(("a", []), ("b", [])),
                  agents={"fast_edit-b-1": AgentScript(turns=[Turn(fail="ScriptDiverged")]),
                          "fast_edit-b-2": AgentScript(turns=[Turn(fail="ProviderError")]),
                          "fast_edit-a-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.5), Turn()])},
                  checks=lambda label: False)
    result = await run_task(env, world, task_input(max_debug_rounds=1), origin=GITHUB)
    assert result.status == "partial"
    assert [(s.id, s.status, s.attempts) for s in result.subtasks] == [("a", "merged", 1), ("b", "failed", 2)]
    assert "ProviderError" in result.subtasks[1].note and any("subtask b: failed" in p for p in result.problems)
    # the sibling finished its work while b failed: nothing was cut off
    assert result.subtasks[0].agent.status == "done"
    retry = next(c.input for c in world.named("init_agent") if c.input.agent_id.endswith("fast_edit-b-2"))
    assert "An earlier attempt at this subtask failed (ScriptDiverged" in retry.task
    # the failed agents' work is not collected, their sandboxes are released, the task reports back and cleans up
    assert {c.input.name for c in world.named("collect_agent_work")} >= {"fast_edit-a-1"}
    assert not {"fast_edit-b-1", "fast_edit-b-2"} & {c.input.name for c in world.named("collect_agent_work")}
    released = {c.input.agent_id.split("/")[-1] for c in world.named("release_sandbox")}
    assert {"fast_edit-b-1", "fast_edit-b-2", "fast_edit-a-1"} <= released
    [report] = world.named("report_status")
    assert report.input.status == "partial" and "not done: subtask b: failed" in report.input.summary
    assert world.calls[-1].name == "cleanup_task"


async def test_a_retry_that_works_makes_the_task_succeed(env):
    world = World(plan=plan(("a", []),), agents={"fast_edit-a-1": AgentScript(turns=[Turn(fail="Timeout")])})
    result = await run_task(env, world, task_input())
    assert result.status == "succeeded" and result.subtasks[0].status == "merged"
    assert result.subtasks[0].attempts == 2 and "after a failure (Timeout)" in result.subtasks[0].note


async def test_a_failed_planner_falls_back_to_one_subtask(env):
    world = World(agents={"planner": AgentScript(turns=[Turn(fail="ProviderError")])})
    result = await run_task(env, world, task_input())
    assert result.plan.source == "fallback" and "the planner failed (ProviderError" in result.plan.note
    assert [s.id for s in result.subtasks] == ["task"] and result.status == "succeeded"


async def test_a_call_to_a_tool_not_offered_is_answered_without_an_activity(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["unoffered:write_file", "read_file"]), Turn()])})
    result = await run_task(env, world, task_input(mode="solo"))
    assert result.status == "succeeded" and result.agent.errors == {"InvalidArguments": 1}
    assert [c.input.call.name for c in world.named("tool_call")] == ["read_file"]  # only the offered one ran
    second = next(c.input for c in world.named("model_call") if c.input.turn == 2)
    assert [(r.name, r.is_error) for r in second.tool_results] == [("write_file", True), ("read_file", False)]


async def test_a_failed_solo_agent_fails_the_task_and_reports_it(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(fail="ScriptDiverged")])})
    result = await run_task(env, world, task_input(mode="solo"), origin=GITHUB)
    assert result.status == "failed" and result.agent.status == "failed"
    assert result.agent.error_kind == "ScriptDiverged" and "stub ScriptDiverged" in result.agent.reason
    assert world.named("report_status")[0].input.status == "failed"


async def test_a_solo_agent_out_of_turns_fails_the_task_and_says_why(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["read_file"])] * 5, changes=False)})
    result = await run_task(env, world, task_input(mode="solo", max_turns=2), origin=GITHUB)
    assert result.agent.status == "budget_exhausted" and result.agent.turns == 2
    assert result.status == "failed"
    assert result.problems == ["the agent ran out of budget before it finished (turn limit (2))"]
    assert world.named("report_status")[0].input.status == "failed"


async def test_provider_failures_switch_to_the_fallback_model(env):
    world = World(fallbacks={"stub:big": ["stub:small"]},
                  agents={"agent-1": AgentScript(turns=[Turn(fail="ProviderError"), Turn()])})

    # the first model call fails (non-retryable here), the fallback answers the same turn
    class Flaky(AgentScript):
        pass

    result = await run_task(env, world, task_input(mode="solo", model="stub:big"))
    models = [c.input.model for c in world.named("model_call")]
    assert models[0] == "stub:big" and models[1] == "stub:small"
    assert [(s.previous, s.model, s.by) for s in result.agent.switches] == [("stub:big", "stub:small", "router")]


async def test_a_person_switches_the_model_mid_run(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["read_file"]), Turn(tools=["read_file"]),
                                                        Turn()])}, model_gate=asyncio.Event())

    async def during(handle):
        await _until(lambda: world.named("model_call"))
        await handle.signal("switch_model", args=["stub:other", "ana", "too slow"])
        await asyncio.sleep(0.3)
        world.model_gate.set()

    result = await run_task(env, world, task_input(mode="solo", model="stub:first"), during=during)
    models = [c.input.model for c in world.named("model_call")]
    assert models == ["stub:first", "stub:other", "stub:other"]
    [sw] = result.agent.switches
    assert (sw.turn, sw.previous, sw.model, sw.by, sw.reason) == (2, "stub:first", "stub:other", "ana", "too slow")


async def _until(pred, timeout: float = 10.0):
    for _ in range(int(timeout / 0.05)):
        if pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def test_a_steer_in_each_phase_reaches_exactly_one_model_call(env):
    """planning (planner running), a wave (one agent running), tests, merging and verifying (no agent running:
    queued for the next agent that starts), debugging; and one sent when no agent is left (a follow-up agent)."""
    world = World(plan=plan(("a", []), ("b", ["a"])), checks=lambda label: label not in ("before", "after"),
                  agents={"planner": AgentScript(turns=[Turn(tools=["read_file"], tool_seconds=0.6), Turn()]),
                          "fast_edit-a-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.6), Turn()]),
                          "debugger-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.6), Turn()])})
    sent = []

    async def during(handle):
        async def when(what, pred):
            await _until(pred, 20)
            await handle.signal("steer", args=[what, "tester"])
            sent.append(what)

        await when("during planning", lambda: any(c.input.agent_id.endswith("planner")
                                                  for c in world.named("tool_call")))
        await when("during wave 1", lambda: any(c.input.agent_id.endswith("fast_edit-a-1")
                                                for c in world.named("tool_call")))
        await when("before the debugger", lambda: any(c.input.label == "after" for c in world.named("run_checks")))
        await when("during debugging", lambda: any(c.input.agent_id.endswith("debugger-1")
                                                   for c in world.named("tool_call")))

    result = await run_task(env, world, task_input(max_debug_rounds=1), during=during)
    assert len(sent) == 4
    seen: dict[str, list[str]] = {}
    for c in world.named("model_call"):
        for m in c.input.user_messages:
            seen.setdefault(m, []).append(c.input.agent_id.split("/")[-1])
    assert seen["during planning"] == ["planner"]
    assert seen["during wave 1"] == ["fast_edit-a-1"]
    assert len(seen["before the debugger"]) == 1  # queued, then given to the next agent that started
    assert seen["during debugging"] == ["debugger-1"]
    assert all(m.delivered_to for m in result.messages) and len(result.messages) == 4


async def test_a_message_nobody_read_gets_a_follow_up_agent(env):
    """A follow-up that arrives while the last tests run (no agent is running, none would start): an agent on the
    branch gets it, then the tests run again; nothing a person sends is lost."""
    world = World(agents={"agent-1": AgentScript(turns=[Turn()])}, check_seconds={"after": 1.0})

    async def during(handle):
        await _until(lambda: any(c.input.label == "after" for c in world.named("run_checks")), 20)
        await handle.signal("follow_up", "also update the changelog")

    result = await run_task(env, world, task_input(mode="solo"), during=during)
    assert len(result.follow_ups) == 1 and result.follow_ups[0].status == "done"
    got = [c.input.user_messages for c in world.named("model_call") if c.input.agent_id.endswith("follow-up-1")]
    assert got[0] == ["also update the changelog"]
    assert [m.delivered_to for m in result.messages] == [[f"{result.branch.removeprefix('bosun/')}/follow-up-1"]]
    assert [c.input.label for c in world.named("run_checks")] == ["before", "after", "after follow-up 1"]


async def test_cancelling_a_task_reports_it_and_cleans_up(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=5), Turn()])})

    async def during(handle):
        await _until(lambda: world.named("tool_call"), 20)
        await handle.cancel()

    with pytest.raises(WorkflowFailureError):
        await run_task(env, world, task_input(mode="solo"), during=during, origin=GITHUB)
    assert [c.input.status for c in world.named("report_status")] == ["cancelled"]
    assert [c.name for c in world.calls][-2:] == ["cleanup_task", "report_status"]


async def test_harness_settings_reach_the_router_and_every_agent(env):
    """A task's harness settings: the router's part to every routing, the rest to every agent's first messages
    and model calls (planner, fast-edit agents and debugger alike); a task without them sends the defaults."""
    router = RouterConfig(tiers={"small": "openai:gpt-5-mini", "medium": "openai:gpt-5-mini", "large": "openai:gpt-5"})
    harness = HarnessSettings(edit_tool="apply_patch", prompt_variant="claude", compact_at=0.5, keep_recent_turns=1,
                              router=router)
    world = World(checks=lambda label: label == "after debug round 1")
    result = await run_task(env, world, task_input(harness=harness))
    assert result.status == "succeeded" and len(result.debug_rounds) == 1
    routes = world.named("route_model")
    assert len(routes) >= 3 and all(c.input.router == router for c in routes)
    inits, calls = world.named("init_agent"), world.named("model_call")
    assert {c.input.role for c in inits} >= {"planner", "fast_edit", "debugger"}
    sent = {c.input.harness.model_dump_json() for c in inits + calls}
    assert sent == {harness.without_router().model_dump_json()} and harness.without_router().edit_tool == "apply_patch"

    plain = World()
    await run_task(env, plain, task_input(mode="solo"))
    assert all(c.input.router is None for c in plain.named("route_model"))
    default = HarnessSettings().model_dump_json()
    assert {c.input.harness.model_dump_json() for c in plain.named("model_call")} == {default}


async def test_a_second_read_of_a_task_reads_only_what_still_runs(env, monkeypatch):
    """The web view reads a running task every 2 seconds: ended agents are read from history once (ClosedRuns),
    and what a read with them gives is what a fresh read gives."""
    world = World(plan=plan(("a", []), ("b", [])),
                  agents={f"fast_edit-{s}-1": AgentScript(turns=[Turn(tools=["read_file"]), Turn()]) for s in "ab"})
    wf_id = f"t-read-{uuid.uuid4().hex[:8]}"
    await run_task(env, world, task_input(max_parallel=2), wf_id=wf_id)
    reads: list[str] = []
    real = history._read_run

    async def counted(client, root, run_id, calls, closed):
        reads.append(root.workflow_id)
        return await real(client, root, run_id, calls, closed)

    monkeypatch.setattr(history, "_read_run", counted)
    closed = history.ClosedRuns()
    first = await collect(env.client, wf_id, closed=closed)
    agents = sorted(r for r in reads if r != wf_id)
    assert len(agents) == 3 and len(closed) == 3  # the planner and two fast-edit agents, all ended
    reads.clear()
    again = await collect(env.client, wf_id, closed=closed)
    assert reads == [wf_id]  # only the task's own history
    assert history.render(again) == history.render(first) == history.render(await collect(env.client, wf_id))


async def test_agents_take_slots_and_a_full_host_runs_no_more(env):
    """Placement by capacity: with one slot, the two agents of a wave run one after the other, each holding the
    slot while it works and giving it back when done; a task waiting for its agents holds none."""
    world = World(plan=plan(("a", []), ("b", [])), slots=1,
                  agents={f"fast_edit-{s}-1": AgentScript(turns=[Turn(tools=["run_command"], tool_seconds=0.5),
                                                                 Turn()]) for s in "ab"})
    result = await run_task(env, world, task_input(max_parallel=4))
    assert [s.status for s in result.subtasks] == ["merged", "merged"]
    tools = {c.input.agent_id.split("/")[-1]: c for c in world.named("tool_call")}
    a, b = tools["fast_edit-a-1"], tools["fast_edit-b-1"]
    assert a.ended <= b.started or b.ended <= a.started  # never at the same time
    claims = [c.input.claim for c in world.named("hold_slot")]
    assert len(claims) == 3 and sorted(world.released) == sorted(claims)  # planner + 2 agents, all given back


async def test_a_lost_hosts_agent_runs_again_elsewhere_and_a_finished_one_does_not(env):
    """Host loss, on stub hosts that share their state: host a runs the planner and both agents of a wave; one
    finishes, the other is working when host a is lost (its heartbeat stops). That agent's workflow is ended and it
    runs again on host b, from the task's checkpoints restored there; the finished one is not run again."""
    world = World(plan=plan(("a", []), ("b", [])), shared=True,
                  agents={"fast_edit-a-1": AgentScript(turns=[Turn(tools=["read_file"]), Turn()]),
                          "fast_edit-b-1": AgentScript(turns=[Turn()]),
                          "fast_edit-a-1.m2": AgentScript(turns=[Turn()])})
    world.hang.add("fast_edit-a-1")
    world.queue = f"wf-test-{uuid.uuid4().hex[:8]}"
    home, host_a, host_b = (Stubs(world, h, q) for h, q in (("home", world.queue), ("a", f"{world.queue}@a"),
                                                              ("b", f"{world.queue}@b")))
    wf_id = f"t-move-{uuid.uuid4().hex[:8]}"

    def host_worker(stubs: Stubs) -> Worker:
        return Worker(env.client, task_queue=stubs.queue, workflows=[AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST, activities=stubs.all())

    async with Worker(env.client, task_queue=world.queue, workflows=[TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST,
                      activities=home.all()), host_worker(host_a), host_worker(host_b):
        async with slots_worker(env, world, host_a):
            handle = await env.client.start_workflow(TaskWorkflow.run, task_input(max_parallel=2), id=wf_id,
                                                     task_queue=world.queue)
            for _ in range(300):  # until b's work is in and a's agent is at work
                if world.named("collect_agent_work") and any(
                        c.input.agent_id.endswith("fast_edit-a-1") for c in world.named("model_call")):
                    break
                await asyncio.sleep(0.1)
        # host a is gone: it takes no more slots, and its heartbeat stops
        async with slots_worker(env, world, host_b):
            world.lost.setdefault("a", asyncio.Event()).set()
            result = await handle.result()
    assert result.status == "succeeded" and [s.status for s in result.subtasks] == ["merged", "merged"]
    ran = [c.input.agent_id.split("/")[-1] for c in world.named("init_agent")]
    assert ran.count("fast_edit-b-1") == 1 and ran.count("fast_edit-a-1") == 1 and "fast_edit-a-1.m2" in ran
    [ended] = world.named("terminate_agent")
    assert ended.input.workflow_id == f"{wf_id}/fast_edit-a-1" and "host a was lost" in ended.input.reason
    # hosts a and b had nothing of the task: a got the clone; b, later, the clone and b's agent's commit (made on
    # a); the home host, to merge, both agents' commits (made on a and on b)
    restores = [r.input.checkpoints for r in world.named("restore_task")]
    assert [len(c) for c in restores] == [1, 2, 3] and restores[1][0].tips == ["b" * 40]
    [move] = result.moves
    assert move.what == "fast_edit-a-1" and move.from_worker == "a" and "no heartbeat" in move.why
    desc = await env.client.get_workflow_handle(f"{wf_id}/fast_edit-a-1").describe()
    assert desc.status.name == "TERMINATED"


async def test_a_task_whose_home_host_is_lost_moves_and_goes_on(env):
    """The home host (the coordinator's steps) is lost while the tests run there: the task binds a live host,
    restores its repository there from the checkpoints (the branch at the head it had) and runs the step again."""
    world = World(shared=True, binds=["h1", "h2"], agents={"agent-1": AgentScript(turns=[Turn()])})
    world.hang.add("h1")  # its test runs never end: it is about to be lost
    wf_id = f"t-home-{uuid.uuid4().hex[:8]}"
    async with home_and_agent_hosts(env, world):
        handle = await env.client.start_workflow(TaskWorkflow.run, task_input(mode="solo"), id=wf_id,
                                                 task_queue=world.queue)
        await until(lambda: world.named("run_checks"))
        world.lost.setdefault("h1", asyncio.Event()).set()
        result = await handle.result()
        placement = await handle.query(TaskWorkflow.placement)
    assert result.status == "succeeded"
    # (a solo task's agent runs alongside the tests before: when it was still on h1, it moves too)
    moves = [(m.what, m.from_worker, m.to_worker) for m in result.moves]
    assert [m for m in moves if m[0] == "task"] == [("task", "h1", "h2")], moves
    assert {m[0] for m in moves} <= {"task", "agent-1"}, moves
    assert [b.result for b in world.named("bind_host")] == [None, None] and len(world.named("bind_host")) == 2
    restore = world.named("restore_task")[0].input  # h2 had nothing: the clone, and the branch where it was
    assert [c.tips for c in restore.checkpoints] == [["b" * 40]] and restore.head == "b" * 40
    assert [c.input.label for c in world.named("run_checks")] == ["before", "before", "after"]
    assert placement["home"] == "h2" and placement["lost"] == ["h1"]


async def test_a_new_home_that_holds_every_checkpoint_gets_the_branch_at_the_task_head(env):
    """The agent works on h2, so h2 holds every checkpoint (the clone, the agent's commit); h1, the home, moves the
    branch to that commit (a fast-forward adds no checkpoint), then is lost while the tests run. h2 becomes the home:
    its branch is set to the task's head before its first step, so the task delivers the agent's work (it ended
    ``no_changes`` when h2's branch stayed where h2 last saw it)."""
    world = World(shared=True, binds=["h1", "h2"], agents={"agent-1": AgentScript(turns=[Turn()])})
    world.check_seconds["after"] = 1.0  # time to mark h1 as about to be lost once it merged
    wf_id = f"t-head-{uuid.uuid4().hex[:8]}"
    async with home_and_agent_hosts(env, world):
        handle = await env.client.start_workflow(TaskWorkflow.run, task_input(mode="solo"), id=wf_id,
                                                 task_queue=world.queue)
        await until(lambda: world.named("merge_agent_work"))
        world.hang.add("h1")  # its test runs never end: it is about to be lost
        await until(lambda: [c for c in world.named("run_checks") if c.input.label == "after"])
        world.lost.setdefault("h1", asyncio.Event()).set()
        result = await handle.result()
    [collected] = [c for c in world.named("collect_agent_work") if c.host == "h2"]
    [merged] = world.named("merge_agent_work")
    assert merged.host == "h1" and merged.input.commit == collected.result
    restores = [c for c in world.named("restore_task") if c.host == "h2"]
    assert [len(r.input.checkpoints) for r in restores] == [1, 2]  # before the agent; after the move
    assert restores[1].input.head == merged.result.head and world.branches["h2"] == merged.result.head
    [fin] = world.named("finalize")
    assert fin.host == "h2" and fin.started > restores[1].ended
    assert result.status == "succeeded" and result.files_changed == ["agent-1.py"], result.status
    assert [(m.what, m.from_worker, m.to_worker) for m in result.moves] == [("task", "h1", "h2")]


@pytest.mark.parametrize("delay", [0.0, 0.01, 0.02, 0.04])
async def test_a_steer_while_the_agent_starts_reaches_it(env, delay):
    """A message that arrives after the agent's input was made and before it runs (the task is starting the child
    workflow) is neither lost nor given twice."""
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["read_file"], tool_seconds=0.3), Turn()])})

    async def during(handle):
        await _until(lambda: any(c.ended for c in world.named("route_model")), 20)
        await asyncio.sleep(delay)
        await handle.signal("steer", args=["as it starts", "tester"])

    wf_id = f"t-starts-{uuid.uuid4().hex[:8]}"
    result = await run_task(env, world, task_input(mode="solo"), during=during, wf_id=wf_id)
    got = [c.input.user_messages.count("as it starts") for c in world.named("model_call")]
    assert sum(got) == 1, got
    assert [m.delivered_to for m in result.messages] == [[f"{wf_id}/agent-1"]]
