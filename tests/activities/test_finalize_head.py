"""finalize delivers the branch at the task's head (the coordinator's record), on a real task repository: a copy of
the branch behind it is moved forward (a host that became the task's home late); one that cannot be moved there is an
error that delivers nothing, never a smaller diff (workflows/task.py, TaskWorkflow._sync_host)."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.models import CollectInput, FinalizeInput
from activities.workspace import WorkspaceActivities
from infra.artifacts import ArtifactStore
from infra.errors import UnexpectedEnvironment
from infra.settings import Settings
from sandbox.manager import SandboxManager
from tests.conftest import make_example_repo

BRANCH = "bosun/fin-1"


async def _task(tmp_path: Path) -> tuple[WorkspaceActivities, str, str]:
    """A task repository with its branch at the base and one run's work collected as a commit beside it."""
    settings = Settings(data_dir=tmp_path / "data", environments=False, sandbox_disk_mb=0)
    acts = WorkspaceActivities(settings, ArtifactStore(settings.artifacts_dir),
                               SandboxManager("bwrap", settings.sandbox_image))
    repo = acts.repo("fin-1")
    base = repo.prepare(str(make_example_repo(tmp_path / "calc")), "HEAD")
    repo.start_branch(BRANCH, base)
    ws = repo.materialize("agent-1", base)
    (ws / "NOTES.md").write_text("changed by the agent\n")
    collected = await acts.collect_agent_work(CollectInput(workflow_id="fin-1", name="agent-1", parent=base,
                                                           message="agent-1"))
    assert collected.commit
    return acts, base, collected.commit


async def test_a_branch_behind_the_task_head_is_moved_forward_and_delivered(tmp_path):
    acts, base, commit = await _task(tmp_path)
    final = await acts.finalize(FinalizeInput(workflow_id="fin-1", base_commit=base, branch=BRANCH, head=commit))
    assert final.files_changed == ["NOTES.md"] and final.commit == commit
    assert acts.repo("fin-1").head(BRANCH) == commit
    # without the head (a workflow from before the field), the branch is delivered as it is
    again = await acts.finalize(FinalizeInput(workflow_id="fin-1", base_commit=base, branch=BRANCH))
    assert again.commit == commit


async def test_a_head_this_host_lacks_is_an_error_and_the_branch_stays(tmp_path):
    acts, base, _ = await _task(tmp_path)
    missing = "f" * 40
    with pytest.raises(UnexpectedEnvironment, match=f"not at the task's head {missing}"):
        await acts.finalize(FinalizeInput(workflow_id="fin-1", base_commit=base, branch=BRANCH, head=missing))
    assert acts.repo("fin-1").head(BRANCH) == base


async def test_a_branch_that_is_not_behind_the_head_is_not_moved(tmp_path):
    acts, base, commit = await _task(tmp_path)
    repo = acts.repo("fin-1")
    repo.set_branch(BRANCH, commit)
    with pytest.raises(UnexpectedEnvironment, match="cannot be moved there"):
        await acts.finalize(FinalizeInput(workflow_id="fin-1", base_commit=base, branch=BRANCH, head=base))
    assert repo.head(BRANCH) == commit
