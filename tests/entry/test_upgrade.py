"""Upgrading is "drain, then upgrade" (docs/operations.md): a worker names its build of the workflow code to
Temporal, and when it starts it says which runs in progress another build started. On a real Temporal dev server."""

from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

from temporalio import workflow
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from entry.stack import workflow_build
from entry.worker import older_runs, older_runs_note

ROOT = Path(__file__).resolve().parents[2]


@workflow.defn(name="TaskWorkflow")
class _WaitingTask:
    """Stands in for a task of another build: its type is bosun's, it waits until signalled."""

    def __init__(self) -> None:
        self.done = False

    @workflow.signal
    def finish(self) -> None:
        self.done = True

    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self.done)


@workflow.defn(name="SomebodyElsesWorkflow")
class _Other(_WaitingTask):
    @workflow.run
    async def run(self) -> None:
        await workflow.wait_condition(lambda: self.done)


def test_the_build_is_the_workflow_code_content_not_its_files_dates(tmp_path):
    for pkg in ("workflows", "evaluation"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    here = workflow_build()
    assert workflow_build(tmp_path) == here and here.startswith("bosun-")  # the same code in another checkout
    task = tmp_path / "workflows" / "task.py"
    task.touch()
    assert workflow_build(tmp_path) == here
    task.write_text(task.read_text() + "\n# a change\n")
    assert workflow_build(tmp_path) != here
    task.write_text(task.read_text()[:-len("\n# a change\n")])
    (tmp_path / "evaluation" / "workflow.py").write_text("# another change\n")
    assert workflow_build(tmp_path) != here


async def _started_by(client, workflow_cls, wf_id: str, queue: str):
    """Start ``workflow_cls`` on ``queue``; wait until its first workflow task is completed."""
    handle = await client.start_workflow(workflow_cls.run, id=wf_id, task_queue=queue)
    for _ in range(100):
        history = await handle.fetch_history()
        if any(e.HasField("workflow_task_completed_event_attributes") for e in history.events):
            return handle
        await asyncio.sleep(0.1)
    raise AssertionError(f"{wf_id}: no workflow task completed")


async def test_a_worker_finds_the_runs_another_build_started(env):
    client, queue, tag = env.client, f"older-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:8]
    async with Worker(client, task_queue=queue, workflows=[_WaitingTask, _Other], build_id="bosun-older",
                      workflow_runner=UnsandboxedWorkflowRunner()):  # (this module imports the worker's)
        task = await _started_by(client, _WaitingTask, f"task-{tag}", queue)
        other = await _started_by(client, _Other, f"other-{tag}", queue)
        for _ in range(50):  # (visibility follows a moment later)
            older = await older_runs(client, "bosun-newer")
            if f"task-{tag}" in older:
                break
            await asyncio.sleep(0.2)
        assert older.get(f"task-{tag}") == "bosun-older"
        assert f"other-{tag}" not in older  # not bosun's
        assert f"task-{tag}" not in await older_runs(client, "bosun-older")  # its own build: nothing to say
        note = older_runs_note(older, "bosun-newer")
        assert f"task-{tag}" in note and "bosun-older" in note and "this worker: bosun-newer" in note
        assert "Drain, then upgrade" in note and "docs/operations.md" in note
        for h in (task, other):
            await h.signal("finish")
            await h.result()
    assert f"task-{tag}" not in await older_runs(client, "bosun-newer")  # finished: nothing in progress


def test_the_note_names_at_most_five_runs():
    older = {f"task-{i}": "bosun-a" for i in range(8)}
    note = older_runs_note(older, "bosun-b")
    assert note.startswith("8 run(s) in progress") and "and 3 more" in note and "task-7" not in note
