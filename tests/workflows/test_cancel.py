"""Cancel means stop: a task cancelled in any phase (planner, a fan-out wave, tests, a merge, the debugger, a solo
agent, an evaluation's instances) ends ``cancelled`` within seconds, starts no new agent, model call or step,
releases every sandbox and cleans up. Stub activities (tests/workflows/harness.py) on a real Temporal dev server;
a model call that never returns stands for an agent waiting on its model."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable

import pytest
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.exceptions import CancelledError
from temporalio.worker import Worker

from evaluation.workflow import EvalInput, EvalInstanceWorkflow, EvalItem, EvalWorkflow, Variant
from tests.workflows.conftest import FAIL_FAST, slots_worker, task_input
from tests.workflows.harness import REF, AgentScript, Stubs, Turn, World
from tests.workflows.test_task import home_and_agent_hosts, plan
from workflows.agent import AgentWorkflow
from workflows.task import TaskWorkflow

ORIGIN = {"source": "github", "repo": "acme/api", "number": 7}
STEPS = ("init_agent", "model_call", "tool_call", "prepare_agent_workspace", "run_checks", "merge_agent_work",
         "collect_agent_work", "route_model", "eval_prepare", "eval_instance")
"""The steps that do work: none of them may start once the cancel was sent."""


def _model_calls_of(world: World, *agents: str) -> Callable[[], bool]:
    return lambda: all(any(c.input.agent_id.endswith(f"/{a}") for c in world.named("model_call")) for a in agents)


def _started(world: World, name: str, label: str | None = None) -> Callable[[], bool]:
    return lambda: any(label is None or c.input.label == label for c in world.named(name))


PHASES: dict[str, Callable[[], tuple[World, dict, Callable[[World], Callable[[], bool]]]]] = {
    "planner": lambda: (World(hang={"planner"}), {}, lambda w: _model_calls_of(w, "planner")),
    "fan-out wave": lambda: (World(plan=plan(("a", []), ("b", [])), hang={"fast_edit-a-1", "fast_edit-b-1"}), {},
                             lambda w: _model_calls_of(w, "fast_edit-a-1", "fast_edit-b-1")),
    "fan-out wave, some queued": lambda: (
        World(plan=plan(("a", []), ("b", []), ("c", [])), hang={"fast_edit-a-1", "fast_edit-b-1", "fast_edit-c-1"}),
        {"max_parallel": 2}, lambda w: _model_calls_of(w, "fast_edit-a-1", "fast_edit-b-1")),
    "fan-out wave, one agent waiting, one collected": lambda: (
        World(plan=plan(("a", []), ("b", [])), hang={"fast_edit-a-1"}, collect_seconds=120), {},
        lambda w: lambda: _model_calls_of(w, "fast_edit-a-1")() and _started(w, "collect_agent_work")()),
    "tests before": lambda: (World(check_seconds={"before": 120}), {}, lambda w: _started(w, "run_checks", "before")),
    "solo: tests before, alongside the agent": lambda: (
        World(check_seconds={"before": 120}, hang={"agent-1"}), {"mode": "solo"},
        lambda w: lambda: _started(w, "run_checks", "before")() and _model_calls_of(w, "agent-1")()),
    "merge": lambda: (World(merge_seconds=120), {}, lambda w: _started(w, "merge_agent_work")),
    "verify": lambda: (World(check_seconds={"after": 120}), {}, lambda w: _started(w, "run_checks", "after")),
    "debugger": lambda: (World(checks=lambda label: False, hang={"debugger-1"}), {},
                         lambda w: _model_calls_of(w, "debugger-1")),
    "solo agent": lambda: (World(hang={"agent-1"}), {"mode": "solo"}, lambda w: _model_calls_of(w, "agent-1")),
    "solo tool call": lambda: (World(agents={"agent-1": AgentScript(turns=[
        Turn(tools=["run_command"], tool_seconds=120), Turn()])}), {"mode": "solo"},
        lambda w: _started(w, "tool_call")),
}


async def _agents_closed(env, world: World) -> None:
    """Every agent the task started is over: those waiting on their model (``world.hang``) cancelled, the others
    done before the cancel."""
    ids = {c.input.agent_id for c in world.named("init_agent")}
    got = {i: (await env.client.get_workflow_handle(i).describe()).status for i in sorted(ids)}
    done = {WorkflowExecutionStatus.COMPLETED, WorkflowExecutionStatus.CANCELED}
    want = {i: {WorkflowExecutionStatus.CANCELED} if i.rsplit("/", 1)[-1] in world.hang else done for i in ids}
    assert all(s in want[i] for i, s in got.items()), got


async def cancel_once(handle, reached: Callable[[], object], what: Callable[[], object]):
    """Wait (up to 30 s) until ``reached()``, cancel the run, wait for its end (up to 30 s): the failure it ended
    with, when the cancel was sent and how long the run took to end."""
    for _ in range(300):
        if reached():
            break
        await asyncio.sleep(0.1)
    assert reached(), f"the run never got there: {what()}"
    sent = time.monotonic()
    await handle.cancel()
    with pytest.raises(WorkflowFailureError) as ended:
        await asyncio.wait_for(handle.result(), 30)
    return ended.value, sent, time.monotonic() - sent


@pytest.mark.parametrize("phase", list(PHASES))
async def test_a_cancelled_task_stops_in_every_phase(env, phase):
    world, fields, reached = PHASES[phase]()
    world.queue = f"wf-cancel-{uuid.uuid4().hex[:8]}"
    stubs = Stubs(world)
    wf_id = f"t-cancel-{uuid.uuid4().hex[:8]}"
    async with Worker(env.client, task_queue=world.queue, workflows=[TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST,
                      activities=stubs.all(), max_concurrent_activities=64), slots_worker(env, world, stubs):
        handle = await env.client.start_workflow(TaskWorkflow.run, task_input(**fields), id=wf_id,
                                                 task_queue=world.queue, memo={"origin": ORIGIN})
        ended, sent, took = await cancel_once(handle, reached(world), lambda: [c.name for c in world.calls])
    assert isinstance(ended.cause, CancelledError), ended.cause
    assert (await handle.describe()).status == WorkflowExecutionStatus.CANCELED
    assert took < 20, f"the cancel took {took:.1f} s"
    late = [(c.name, getattr(c.input, "agent_id", "") or getattr(c.input, "label", "")) for c in world.calls
            if c.name in STEPS and c.started > sent]
    assert late == [], f"started after the cancel: {late}"
    inits = {c.input.agent_id for c in world.named("init_agent")}
    assert inits <= {c.input.agent_id for c in world.named("release_sandbox")}, "every agent's sandbox released"
    await _agents_closed(env, world)
    assert [c.input.status for c in world.named("report_status")] == ["cancelled"]
    names = [c.name for c in world.calls]
    assert names[-2:] == ["cleanup_task", "report_status"], names  # sandboxes first, then the status back


def _items(n: int) -> list[EvalItem]:
    return [EvalItem(instance_id=f"calc__calc-{i}", repo="calc/calc", base_commit=f"{i:040x}", version="1.0",
                     source="/nonexistent/calc", instance_ref=REF, prediction_ref=REF, task="fix it")
            for i in range(n)]


@pytest.mark.parametrize("mode", ["judging", "agents"])
async def test_a_cancelled_evaluation_stops_its_instances(env, mode):
    """An evaluation cancelled while its first instance is judged (or its agents wait on the model) stops: the
    instances queued behind it never start, the running one's children end cancelled."""
    world = World(hang={"stub"} if mode == "judging" else {"agent-1"})
    world.queue = f"wf-cancel-{uuid.uuid4().hex[:8]}"
    stubs = Stubs(world)
    variants = [Variant(name="v", task={"model": "stub:model"})] if mode == "agents" else []
    eval_id = f"eval-cancel-{uuid.uuid4().hex[:8]}"
    async with Worker(env.client, task_queue=world.queue, activities=stubs.all(), max_concurrent_activities=64,
                      workflows=[EvalWorkflow, EvalInstanceWorkflow, TaskWorkflow, AgentWorkflow]), \
            slots_worker(env, world, stubs):
        handle = await env.client.start_workflow(
            EvalWorkflow.run, EvalInput(run_id="c", items=_items(3), max_parallel=1, variants=variants),
            id=eval_id, task_queue=world.queue)
        busy = (lambda: world.named("eval_instance")) if mode == "judging" else _model_calls_of(world, "agent-1")
        ended, sent, took = await cancel_once(handle, busy, lambda: [c.name for c in world.calls])
    assert isinstance(ended.cause, CancelledError), ended.cause
    assert took < 20, f"the cancel took {took:.1f} s"
    late = [c.name for c in world.calls if c.name in STEPS and c.started > sent]
    assert late == [], f"started after the cancel: {late}"
    suffix = "/v" if mode == "agents" else ""
    first = await env.client.get_workflow_handle(f"{eval_id}/calc__calc-0{suffix}").describe()
    assert first.status == WorkflowExecutionStatus.CANCELED
    await _agents_closed(env, world)
    assert {c.input.agent_id for c in world.named("init_agent")} <= {c.input.agent_id
                                                                     for c in world.named("release_sandbox")}


async def test_a_cancelled_task_on_hosts_that_share_their_state_stops_its_agents(env):
    """With placement on (agents on the host that takes their slot, host watches racing every step), the cancel
    reaches the agent waiting on its model: it ends cancelled, its slot is given back, nothing starts after."""
    world = World(shared=True, hang={"planner"})
    async with home_and_agent_hosts(env, world):
        wf_id = f"t-cancel-{uuid.uuid4().hex[:8]}"
        handle = await env.client.start_workflow(TaskWorkflow.run, task_input(), id=wf_id, task_queue=world.queue)
        ended, sent, _ = await cancel_once(handle, _model_calls_of(world, "planner"), lambda: world.calls)
        for _ in range(50):  # (the slot's hold ends once its activity hears of the cancel)
            if len(world.released) == len(world.named("hold_slot")):
                break
            await asyncio.sleep(0.1)
    assert isinstance(ended.cause, CancelledError)
    assert [c.name for c in world.calls if c.name in STEPS and c.started > sent] == []
    await _agents_closed(env, world)
    assert [c.input.agent_id for c in world.named("release_sandbox")] == [f"{wf_id}/planner"]
    assert sorted(world.released) == sorted(c.input.claim for c in world.named("hold_slot"))


async def test_a_cancel_while_the_agents_host_is_gone_ends_when_the_host_is_found_lost(env):
    """The agent's host died (its worker is gone, so its agent never hears of the cancel); the cancel waits for the
    host's watch, not for ever: once the host is found lost, the task ends cancelled and cleans up."""
    world = World(shared=True, hang={"planner"})
    world.queue = f"wf-test-{uuid.uuid4().hex[:8]}"
    shared, h2 = Stubs(world, "shared", world.queue), Stubs(world, "h2", f"{world.queue}@h2")
    async with Worker(env.client, task_queue=world.queue, workflows=[TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST,
                      activities=shared.all()), slots_worker(env, world, h2):
        agent_host = Worker(env.client, task_queue=h2.queue, workflows=[AgentWorkflow],
                            workflow_failure_exception_types=FAIL_FAST, activities=h2.all())
        async with agent_host:
            handle = await env.client.start_workflow(TaskWorkflow.run, task_input(), id=f"t-{uuid.uuid4().hex[:8]}",
                                                     task_queue=world.queue)
            for _ in range(300):
                if _model_calls_of(world, "planner")():
                    break
                await asyncio.sleep(0.1)
            assert _model_calls_of(world, "planner")()
        await handle.cancel()  # (h2's worker is gone: its planner never takes the cancel)
        await asyncio.sleep(2)
        assert (await handle.describe()).status == WorkflowExecutionStatus.RUNNING  # waiting for the agent
        world.lost.setdefault("h2", asyncio.Event()).set()  # the watch finds h2 lost
        with pytest.raises(WorkflowFailureError) as ended:
            await asyncio.wait_for(handle.result(), 30)
    assert isinstance(ended.value.cause, CancelledError)
    assert [c.input.drop_repository for c in world.named("cleanup_task")] == [False]  # (h2, lost, not waited for)
