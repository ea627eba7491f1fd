"""The workspace activities' results hold an agent's file names whatever their bytes, and cross to the workflow
(Temporal's pydantic converter) as they are shown (infra/names.py). The whole run: tests/entry/test_hostile_names.py."""

from __future__ import annotations

import os
from pathlib import Path

from temporalio.contrib.pydantic import pydantic_data_converter

from activities.models import CollectInput, CollectResult, FinalizeInput, FinalizeResult, MergeInput, MergeResult
from activities.workspace import WorkspaceActivities
from infra.artifacts import ArtifactStore
from infra.settings import Settings
from sandbox.manager import SandboxManager
from tests.conftest import make_example_repo


def across(value, kind):
    """``value`` as the workflow gets it: through the converter, as Temporal carries an activity's result."""
    convert = pydantic_data_converter.payload_converter
    return convert.from_payloads(convert.to_payloads([value]), [kind])[0]


async def test_collect_merge_and_finalize_results_cross_with_names_that_are_not_utf8(tmp_path: Path):
    settings = Settings(data_dir=tmp_path / "data", environments=False, sandbox_disk_mb=0)
    acts = WorkspaceActivities(settings, ArtifactStore(settings.artifacts_dir),
                               SandboxManager("bwrap", settings.sandbox_image))
    repo = acts.repo("names-1")
    base = repo.prepare(str(make_example_repo(tmp_path / "calc")), "HEAD")
    repo.start_branch("bosun/names-1", base)
    for run, text in (("a", "from a\n"), ("b", "from b\n")):
        ws = repo.materialize(run, base)
        (ws / os.fsdecode(b"both\xff.txt")).write_text(text)
        os.mkfifo(ws / os.fsdecode(b"fifo\xfe"))
    collected = [across(await acts.collect_agent_work(CollectInput(workflow_id="names-1", name=run, parent=base,
                                                                   message=run)), CollectResult)
                 for run in ("a", "b")]
    assert collected[0].files == ['"both\\377.txt"'] and collected[0].notes == ['"fifo\\376": a FIFO, not imported']
    merges = [across(await acts.merge_agent_work(MergeInput(workflow_id="names-1", branch="bosun/names-1",
                                                            commit=c.commit, message="m")), MergeResult)
              for c in collected]
    assert merges[0].merged and merges[1].conflicts == ['"both\\377.txt"']
    final = across(await acts.finalize(FinalizeInput(workflow_id="names-1", base_commit=base,
                                                     branch="bosun/names-1")), FinalizeResult)
    assert final.files_changed == ['"both\\377.txt"'] and '"b/both\\377.txt"' in final.diff
    assert (Path(final.workspace) / os.fsdecode(b"both\xff.txt")).read_text() == "from a\n"
