"""Whole team runs through the stack against fake model servers that speak the real wire formats (OpenAI Chat
Completions streaming, Anthropic Messages streaming), through bosun's real providers over HTTP; and a team run in
which one agent's model answers 401: the task ends partial, reports back to GitHub and leaves no sandbox."""

from __future__ import annotations

import asyncio
import json
import subprocess
import time

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.conftest import EXAMPLE, Served, Stack, free_port, leftovers, make_example_repo, wait_for
from tests.entry.model_fixture import FakeModel
from tests.infra.events.fakes import FakeGitHub
from workflows.models import TaskInput

OPENAI_KEY = "sk-compat-e2e-0123456789"
ANTHROPIC_KEY = "sk-ant-e2e-0123456789"
TEAM = EXAMPLE / "team.jsonl"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """One stack whose providers point at the fake model server and whose GitHub is the fake GitHub."""
    model, github = FakeModel.from_file(TEAM), FakeGitHub()
    model_port, gh_port = free_port(), free_port()
    st = Stack(tmp_path_factory.mktemp("providers"))
    st.env.update({"BOSUN_OPENAI_COMPATIBLE_API_KEY": OPENAI_KEY, "BOSUN_ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                   "BOSUN_ANTHROPIC_BASE_URL": f"http://127.0.0.1:{model_port}",
                   "BOSUN_GITHUB_TOKEN": github.token, "BOSUN_GITHUB_API_URL": f"http://127.0.0.1:{gh_port}"})
    with Served(model.app(), model_port), Served(github.app(), gh_port):
        st.up()
        try:
            yield st, model, github, f"http://127.0.0.1:{model_port}"
        finally:
            st.down()


def team_run(st: Stack, repo, wf_id: str, model: str) -> dict:
    proc = st.bosun("run", "--repo", str(repo), "--model", model, "--id", wf_id, "--wait", "--json",
                    "fix the failing tests", timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:] + proc.stdout[-3000:]
    return json.loads(proc.stdout)


def check_team_result(result: dict) -> None:
    assert result["status"] == "succeeded" and result["tests_after"]["green"]
    assert [(s["id"], s["status"]) for s in result["subtasks"]] == [("median", "merged"), ("percent", "merged")]
    assert result["files_changed"] == ["calc/report.py", "calc/stats.py"]


@pytest.mark.slow
def test_a_team_run_through_the_openai_chat_completions_stream(world, tmp_path):
    st, model, _, url = world
    model.requests.clear()
    result = team_run(st, make_example_repo(tmp_path / "calc"), "e2e-openai", f"openai-compatible:{url}/v1#calc")
    check_team_result(result)
    seen = [(r["agent"], r["turn"]) for r in model.requests if r["wire"] == "openai"]
    assert ("planner", 3) in seen and ("fast_edit:median", 4) in seen and ("debugger", 5) in seen
    assert {r["headers"]["authorization"] for r in model.requests} == {f"Bearer {OPENAI_KEY}"}
    assert result["agent"] is None and result["debug_rounds"][0]["model"] == f"openai-compatible:{url}/v1#calc"


@pytest.mark.slow
def test_a_team_run_through_the_anthropic_messages_stream(world, tmp_path):
    st, model, _, _ = world
    model.requests.clear()
    result = team_run(st, make_example_repo(tmp_path / "calc"), "e2e-anthropic", "anthropic:claude-sonnet-4-5")
    check_team_result(result)
    assert {r["wire"] for r in model.requests} == {"anthropic"} and len(model.requests) >= 16
    assert {r["headers"]["x-api-key"] for r in model.requests} == {ANTHROPIC_KEY}
    assert {r["headers"]["anthropic-version"] for r in model.requests} == {"2023-06-01"}


@pytest.mark.slow
async def test_an_agent_whose_model_answers_401_leaves_a_partial_result_reported_and_clean(world, tmp_path):
    st, model, github, url = world
    model.requests.clear()
    model.fail = {"fast_edit:percent": (401, {"error": {"message": "Incorrect API key provided",
                                                        "type": "invalid_request_error", "code": "invalid_api_key"}})}
    try:
        repo = make_example_repo(tmp_path / "calc")
        subprocess.run(["git", "checkout", "-q", "-b", "work"], cwd=repo, check=True)  # leave main pushable
        client = await Client.connect(f"127.0.0.1:{st.env['BOSUN_TEMPORAL_PORT']}",
                                      data_converter=pydantic_data_converter)
        github.pulls["acme/calc"] = []
        wf_id = f"gh:acme/calc:issue:{int(time.time()) % 100000}"
        handle = await client.start_workflow(
            "TaskWorkflow", TaskInput(repo=str(repo), task="fix the failing tests", max_debug_rounds=0,
                                      model=f"openai-compatible:{url}/v1#calc"),
            id=wf_id, task_queue="bosun", memo={"origin": {"source": "github", "repo": "acme/calc", "number": 12}})
        started = time.monotonic()
        result = await handle.result()
        took = time.monotonic() - started
    finally:
        model.fail = {}
    # the sibling finished and merged; the failing subtask was retried once, then reported
    assert result["status"] == "partial", result
    subtasks = {s["id"]: s for s in result["subtasks"]}
    assert subtasks["median"]["status"] == "merged"
    assert subtasks["percent"]["status"] == "failed" and subtasks["percent"]["attempts"] == 2
    assert "ProviderError" in subtasks["percent"]["note"] and "401" in subtasks["percent"]["note"]
    assert result["files_changed"] == ["calc/stats.py"]
    assert sum(1 for r in model.requests if r["agent"] == "fast_edit:percent") == 2  # 401 is final: no retries
    # status back: a pull request with what merged, one comment saying what did not, the partial label
    comment = github.comments[("acme/calc", 12)][0]["body"]
    assert "**partial**" in comment and "not done: subtask percent: failed" in comment and "401" in comment
    assert "bosun:partial" in github.labels[("acme/calc", 12)]
    assert [p["title"] for p in github.pulls["acme/calc"]] == ["bosun: partial fix for #12"]
    # history tells the failed agents' real status and reason; no sandbox of the run is left
    text = st.bosun("history", wf_id).stdout
    assert "fast_edit-percent-1 (AgentWorkflow): status failed" in text and "ProviderError" in text
    await asyncio.to_thread(wait_for, lambda: not leftovers(st), 30, 0.5, "the run's sandboxes to be gone")
    print(f"partial run with a 401 agent: {took:.1f} s")


@pytest.mark.slow
@pytest.mark.parametrize("mode,agent", [("team", "planner"), ("solo", "solo")])
def test_a_run_cancelled_while_its_agent_waits_on_the_model_stops(world, tmp_path, mode, agent):
    """The model holds the agent's request open (a real model thinking); `bosun cancel` stops the run within
    seconds: the request is closed, no other model request is made, no sandbox is left, every workflow of the run
    ends cancelled (team: no fast-edit agent starts after the planner)."""
    st, model, _, url = world
    model.requests.clear()
    model.held.clear()
    model.hold = {agent}
    wf = f"e2e-cancel-{mode}"
    try:
        started = st.bosun("run", "--repo", str(make_example_repo(tmp_path / "calc")), "--model",
                           f"openai-compatible:{url}/v1#calc", "--id", wf, "--mode", mode, "fix the failing tests")
        assert started.returncode == 0, started.stderr
        wait_for(lambda: model.held, 240, what=f"the {agent}'s model request")
        asked = len(model.requests)
        sent = time.monotonic()
        cancel = st.bosun("cancel", wf)
        assert cancel.returncode == 0, cancel.stderr
        wait_for(lambda: "): canceled" in st.bosun("inspect", wf).stdout.splitlines()[0], 60, interval=0.5,
                 what="the run to end cancelled")
        took = time.monotonic() - sent
        wait_for(lambda: model.held[0]["closed"] is not None, 30, interval=0.2, what="the held request to be closed")
        wait_for(lambda: not leftovers(st, wf), 30, interval=0.5, what="the run's sandboxes to be gone")
        time.sleep(3)  # (anything the run would still start would have asked by now)
    finally:
        model.hold = set()
    assert len(model.requests) == asked, [r["agent"] for r in model.requests[asked:]]
    assert [h["agent"] for h in model.held] == [agent]
    first = "planner" if mode == "team" else "agent-1"
    assert "): canceled" in st.bosun("inspect", f"{wf}/{first}").stdout
    text = st.bosun("history", wf).stdout
    assert "fast_edit" not in text, text
    print(f"{mode} run cancelled while its model held the request: ended in {took:.1f} s, request closed "
          f"{model.held[0]['closed'] - sent:.1f} s after the cancel")
