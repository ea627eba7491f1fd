"""An evaluation on hosts that share their state (a cluster): each instance is prepared and judged in a slot of
the host that takes it (placement by free capacity, as for agents), and an instance whose host is lost while it
is judged there is judged again on another host. Stub activities (tests/workflows/harness.py) on a real Temporal
dev server."""

from __future__ import annotations

import asyncio
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from evaluation.workflow import EvalInput, EvalInstanceWorkflow, EvalItem, EvalWorkflow
from tests.workflows.conftest import slots_worker
from tests.workflows.harness import REF, Stubs, World
from workflows.agent import AgentWorkflow
from workflows.task import TaskWorkflow


def _items(n: int) -> list[EvalItem]:
    return [EvalItem(instance_id=f"calc__calc-{i}", repo="calc/calc", base_commit=f"{i:040x}", version="1.0",
                     source="/nonexistent/calc", instance_ref=REF, prediction_ref=REF) for i in range(n)]


def _shared_world(**kw) -> tuple[World, Stubs, dict[str, Stubs]]:
    world = World(shared=True, **kw)
    world.queue = f"wf-eval-{uuid.uuid4().hex[:8]}"
    hosts = {h: Stubs(world, h, f"{world.queue}@{h}") for h in ("a", "b")}
    return world, Stubs(world, "shared", world.queue), hosts


def _workers(env, world: World, shared: Stubs, hosts: dict[str, Stubs]) -> list[Worker]:
    return [Worker(env.client, task_queue=world.queue, activities=shared.all(), max_concurrent_activities=64,
                   workflows=[EvalWorkflow, EvalInstanceWorkflow, TaskWorkflow, AgentWorkflow]),
            *(Worker(env.client, task_queue=h.queue, activities=h.all()) for h in hosts.values())]


async def _slots_of_b(env, world: World, b: Stubs) -> Worker:
    """Host b's slots worker, on a client of its own (one client polls a queue with one worker), as on a host."""
    client = await Client.connect(env.client.service_client.config.target_host, namespace=env.client.namespace,
                                  data_converter=env.client.data_converter)
    return Worker(client, task_queue=f"{world.queue}-slots", activities=[b.hold_slot],
                  max_concurrent_activities=world.slots, max_heartbeat_throttle_interval=timedelta(milliseconds=100),
                  default_heartbeat_throttle_interval=timedelta(milliseconds=100))


def _outcomes(world: World) -> list[dict]:
    return [o for c in world.named("eval_keep_outcomes") for o in c.result]


async def test_instances_take_slots_and_no_host_judges_more_than_its_slots(env):
    """Two hosts with one slot each, four instances judged two at a time: each instance is judged once, on the
    host that took its slot, and no host ever judges two instances at once."""
    world, shared, hosts = _shared_world(slots=1, judge_seconds=0.5)
    async with AsyncExitStack() as stack:
        for w in [*_workers(env, world, shared, hosts), slots_worker(env, world, hosts["a"]),
                  await _slots_of_b(env, world, hosts["b"])]:
            await stack.enter_async_context(w)
        await env.client.execute_workflow(
            EvalWorkflow.run, EvalInput(run_id="placed", items=_items(4), max_parallel=2),
            id=f"eval-{uuid.uuid4().hex[:8]}", task_queue=world.queue)
    judged = world.named("eval_instance")
    assert sorted(c.input.key.rsplit("/", 1)[-1] for c in judged) == [f"calc__calc-{i}" for i in range(4)]
    for host in ("a", "b"):
        runs = sorted((c.started, c.ended) for c in judged if c.host == host)
        assert all(end <= nxt for (_, end), (nxt, _) in zip(runs, runs[1:], strict=False)), (host, runs)
    assert {c.host for c in judged} == {"a", "b"}  # both hosts took work
    outcomes = _outcomes(world)
    assert [o["resolved"] for o in outcomes] == [True] * 4
    assert all(o["host"] == c.host for o in outcomes for c in judged if c.input.key.endswith(o["instance_id"]))
    assert len(world.named("hold_slot")) == 4 and sorted(world.released) == sorted(
        c.input.claim for c in world.named("hold_slot"))  # every slot given back


async def test_an_instance_whose_host_is_lost_is_judged_again_elsewhere(env):
    """Host a takes the instance and is lost while it judges it (its heartbeat stops): the instance is prepared
    and judged again on host b, and its outcome says so."""
    world, shared, hosts = _shared_world()
    world.hang.add("a")
    async with AsyncExitStack() as stack:
        for w in _workers(env, world, shared, hosts):
            await stack.enter_async_context(w)
        a_slots = await stack.enter_async_context(slots_worker(env, world, hosts["a"]))
        handle = await env.client.start_workflow(
            EvalWorkflow.run, EvalInput(run_id="moved", items=_items(1)), id=f"eval-{uuid.uuid4().hex[:8]}",
            task_queue=world.queue)
        for _ in range(300):
            if world.named("eval_instance"):
                break
            await asyncio.sleep(0.1)
        await a_slots.shutdown()  # host a is gone: it takes no more slots, and its heartbeat stops
        await stack.enter_async_context(slots_worker(env, world, hosts["b"]))
        world.lost.setdefault("a", asyncio.Event()).set()
        await handle.result()
    assert [c.host for c in world.named("eval_instance")] == ["a", "b"]
    assert [c.host for c in world.named("eval_prepare")] == ["a", "b"]
    [outcome] = _outcomes(world)
    assert outcome["resolved"] and outcome["host"] == "b"
    [move] = outcome["moves"]
    assert move["what"] == "judge" and move["from_worker"] == "a" and "no heartbeat" in move["why"]
