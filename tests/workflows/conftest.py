"""A Temporal dev server for the workflow tests (the same binary the stack runs, started offline by temporalio's
test environment) and a helper that runs TaskWorkflow on stub activities (tests/workflows/harness.py)."""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.conftest import SUGGEST_CONTINUE_AS_NEW_AT  # noqa: F401  (imported from here by the workflow tests)
from tests.workflows.harness import Stubs, World
from workflows.agent import AgentWorkflow
from workflows.models import TaskInput
from workflows.task import TaskWorkflow

FAIL_FAST = [Exception]
"""A workflow task that raises fails its workflow here: a bug in workflow code (a TypeError, a nondeterminism) fails
the test at once instead of hanging it. (A production worker retries such a task until a worker that can run it
takes it: drain, then upgrade, docs/operations.md.)"""


def slots_worker(env: WorkflowEnvironment, world: World, stubs: Stubs) -> Worker:
    """The stub host polling the slots queue with ``world.slots`` slots (activities/hosts.py: hold_slot)."""
    return Worker(env.client, task_queue=f"{world.queue}-slots", activities=[stubs.hold_slot],
                  max_concurrent_activities=world.slots, max_heartbeat_throttle_interval=timedelta(milliseconds=100),
                  default_heartbeat_throttle_interval=timedelta(milliseconds=100))


def task_input(**kw) -> TaskInput:
    base = {"repo": "/nonexistent/repo", "task": "fix the tests", "model": "stub:model", "mode": "team"}
    return TaskInput(**{**base, **kw})


async def run_task(env: WorkflowEnvironment, world: World, inp: TaskInput, *, wf_id: str | None = None,
                   during=None, origin: dict | None = None):
    """Run TaskWorkflow with ``world``'s stubs; returns its result (raises what the workflow raised).
    ``during(handle)`` runs while the workflow runs (to send signals); ``origin``: the memo an event-started task
    carries (status back)."""
    world.queue = f"wf-test-{uuid.uuid4().hex[:8]}"
    stubs = Stubs(world)
    async with Worker(env.client, task_queue=world.queue, workflows=[TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST,
                      activities=stubs.all(), max_concurrent_activities=64), \
            slots_worker(env, world, stubs):
        handle = await env.client.start_workflow(TaskWorkflow.run, inp, id=wf_id or f"t-{uuid.uuid4().hex[:8]}",
                                                 task_queue=world.queue, memo={"origin": origin} if origin else None)
        if during is not None:
            await during(handle)
        return await handle.result()
