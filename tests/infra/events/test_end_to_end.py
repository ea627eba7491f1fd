"""A labelled GitHub issue, end to end on the real stack: ingress -> JetStream -> starter -> TaskWorkflow run by the
stack's worker on the example repository with the scripted model (the test double)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.client import WorkflowFailureError

from tests.conftest import make_example_repo
from tests.infra.events.conftest import TRAJECTORY, make_cfg, running_ingress, running_starter
from tests.infra.events.samples import REPO, github_request, issues_labeled
from workflows.models import branch_name


@pytest.mark.slow
async def test_labelled_issue_runs_a_task_to_completion(settings, stack, tmp_path, temporal_client):
    repo = make_example_repo(tmp_path / "calc")
    # the stack's data dir (its worker reads the trajectory from that artifact store) and its shared task queue
    s = settings.model_copy(update={
        "data_dir": stack.data_dir, "task_queue": "bosun",
        "temporal_port": int(stack.env["BOSUN_TEMPORAL_PORT"]),
        "temporal_ui_port": int(stack.env["BOSUN_TEMPORAL_UI_PORT"])})
    mode = {"mode": "solo"} if TRAJECTORY.name == "solo.jsonl" else {}
    cfg = make_cfg(repos={REPO: str(repo)}, model=f"scripted:{TRAJECTORY}", task_defaults=mode)
    n = uuid.uuid4().int % 10_000_000
    wf_id = f"gh:{REPO}:issue:{n}"
    async with running_ingress(s, cfg) as ing, running_starter(s, cfg):
        assert (await ing.github(*github_request("issues", issues_labeled(n)))).status_code == 200
        handle = temporal_client.get_workflow_handle(wf_id)
        for _ in range(100):
            try:
                await handle.describe()
                break
            except Exception:  # noqa: BLE001 - not started yet
                await asyncio.sleep(0.1)
        try:
            result = await asyncio.wait_for(handle.result(), 240)
        except WorkflowFailureError as e:
            raise AssertionError(_chain(e)) from e
    status = result["status"] if isinstance(result, dict) else result.status
    assert status == "succeeded", result
    branch = result["branch"] if isinstance(result, dict) else result.branch
    assert branch == branch_name(wf_id)  # the ids of event-started tasks make valid git branch names


def _chain(e: BaseException) -> str:
    parts = []
    cur: BaseException | None = e
    while cur is not None:
        parts.append(str(cur))
        cur = getattr(cur, "cause", None) or cur.__cause__
    return " <- ".join(parts)
