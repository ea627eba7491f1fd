"""Status back at the end of a run started by an event: branch pushed, pull request, comment, labels (GitHub) and
the final response (Linear), against local fixture servers that follow the documented APIs."""

from __future__ import annotations

import subprocess
import time

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.conftest import EXAMPLE, Stack, make_example_repo
from tests.infra.events.fakes import FakeGitHub, FakeLinear, serve
from workflows.models import TaskInput


async def test_a_finished_run_reports_back_to_github_and_linear(tmp_path):
    gh, lin = FakeGitHub(), FakeLinear()
    async with serve(gh.app()) as gh_url, serve(lin.app()) as lin_url:
        st = Stack(tmp_path / "data")
        st.env.update({"BOSUN_GITHUB_TOKEN": gh.token, "BOSUN_GITHUB_API_URL": gh_url,
                       "BOSUN_LINEAR_API_KEY": lin.api_key, "BOSUN_LINEAR_API_URL": f"{lin_url}/graphql"})
        st.up()
        try:
            repo = make_example_repo(tmp_path / "calc")
            subprocess.run(["git", "checkout", "-q", "-b", "work"], cwd=repo, check=True)  # leave main pushable
            client = await Client.connect(f"127.0.0.1:{st.env['BOSUN_TEMPORAL_PORT']}",
                                          data_converter=pydantic_data_converter)
            from infra.artifacts import ArtifactStore

            traj = ArtifactStore(st.data_dir / "artifacts").put_text((EXAMPLE / "team.jsonl").read_text())
            origin_gh = {"source": "github", "repo": "acme/calc", "number": 7}
            gh.pulls["acme/calc"] = []
            handle = await client.start_workflow(
                "TaskWorkflow", TaskInput(repo=str(repo), task="fix the tests",
                                          model=f"scripted:{EXAMPLE / 'team.jsonl'}", trajectory_ref=traj),
                id="gh:acme/calc:issue:7", task_queue="bosun", memo={"origin": origin_gh})
            result = await handle.result()
            assert result["status"] == "succeeded"
            # the branch was pushed to the repository, a pull request opened, a comment posted, the label set
            branches = subprocess.run(["git", "branch", "--list", "bosun/*"], cwd=repo, capture_output=True,
                                      text=True).stdout
            assert "bosun/gh-acme/calc-issue-7" in branches
            assert [p["head"]["ref"] for p in gh.pulls["acme/calc"]] == ["bosun/gh-acme/calc-issue-7"]
            bodies = [c["body"] for c in gh.comments[("acme/calc", 7)]]
            assert len(bodies) == 1 and "Opened pull request #" in bodies[0] and "**succeeded**" in bodies[0]
            assert "bosun:done" in gh.labels[("acme/calc", 7)]

            origin_lin = {"source": "linear", "agent_session_id": "sess-1"}
            lin.sessions["sess-1"] = {"id": "sess-1"}
            handle = await client.start_workflow(
                "TaskWorkflow", TaskInput(repo=str(repo), task="fix the tests", mode="solo", max_turns=2,
                                          model=f"scripted:{EXAMPLE / 'solo.jsonl'}",
                                          trajectory_ref=ArtifactStore(st.data_dir / "artifacts").put_text(
                                              (EXAMPLE / "solo.jsonl").read_text())),
                id=f"linear:session:sess-1-{int(time.time())}", task_queue="bosun", memo={"origin": origin_lin})
            result = await handle.result()
            # two turns are not enough to fix anything: the agent ran out of budget, the task failed
            assert result["status"] == "failed" and "ran out of budget" in result["problems"][0]
            acts = lin.for_session("sess-1")
            assert [a["content"]["type"] for a in acts] == ["error"]
            assert "**failed**" in acts[0]["content"]["body"] and "ran out of budget" in acts[0]["content"]["body"]
        finally:
            st.down()
