"""Status back to GitHub and Linear over real HTTP against local fixture servers that follow the documented APIs:
every side effect is idempotent (a retry never posts twice)."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid

import pytest

from infra.errors import ConfigError
from infra.events.github_api import ExternalServiceError, GitHubClient, marker
from infra.events.linear_api import LinearClient, activity_id
from sandbox.hostgit import GitError
from sandbox.hostrepo import TaskRepo
from tests.conftest import make_example_repo
from tests.infra.events.conftest import make_cfg, running_ingress, running_starter, settled_runs, wait_until
from tests.infra.events.fakes import FakeGitHub, FakeLinear, serve
from tests.infra.events.samples import (
    REPO,
    github_request,
    issue_comment,
    issues_labeled,
    linear_agent_session,
    linear_request,
)


@pytest.fixture
async def github():
    fake = FakeGitHub(per_page_cap=2)  # tiny pages: the marker search must follow Link: rel="next"
    async with serve(fake.app()) as url:
        yield fake, url


@pytest.fixture
async def linear():
    fake = FakeLinear()
    async with serve(fake.app()) as url:
        yield fake, f"{url}/graphql"


async def test_comment_is_posted_once_per_key_and_edited_in_place(github):
    fake, url = github
    async with GitHubClient("ghs_test", url) as gh:
        for i in range(5):  # other people's comments first, so the marker is on a later page
            await gh._request("POST", f"/repos/{REPO}/issues/7/comments", json={"body": f"human comment {i}"})
        first = await gh.upsert_comment(REPO, 7, "gh:x:issue:7:started", "bosun is on it")
        again = await gh.upsert_comment(REPO, 7, "gh:x:issue:7:started", "bosun is on it")
        edited = await gh.upsert_comment(REPO, 7, "gh:x:issue:7:started", "bosun is on it (run 2)")
        other = await gh.upsert_comment(REPO, 7, "gh:x:issue:7:done", "done")
    assert first.created and not again.created and not edited.created and other.created
    assert first.id == again.id == edited.id != other.id
    ours = [c for c in fake.comments[(REPO, 7)] if "<!-- bosun:" in c["body"]]
    assert len(ours) == 2
    assert ours[0]["body"] == "bosun is on it (run 2)\n\n<!-- bosun:gh:x:issue:7:started -->"
    assert ("PATCH", f"/repos/{REPO}/issues/comments/{first.id}") in fake.requests


def test_markers_cannot_close_the_html_comment_early():
    assert marker("a--b") == "<!-- bosun:a-b -->"


async def test_state_labels_replace_each_other(github):
    fake, url = github
    fake.labels[(REPO, 7)] = ["bug", "bosun"]
    async with GitHubClient("ghs_test", url) as gh:
        await gh.set_state(REPO, 7, "working")
        await gh.set_state(REPO, 7, "working")
        await gh.set_state(REPO, 7, "blocked")
        assert sorted(fake.labels[(REPO, 7)]) == ["bosun", "bosun:blocked", "bug"]
        await gh.set_state(REPO, 7, "partial")
        assert sorted(fake.labels[(REPO, 7)]) == ["bosun", "bosun:partial", "bug"]
        await gh.set_state(REPO, 7, "done")
    assert sorted(fake.labels[(REPO, 7)]) == ["bosun", "bosun:done", "bug"]
    with pytest.raises(ValueError, match="not one of working, blocked, partial, done"):
        await GitHubClient("t", url).set_state(REPO, 7, "finished")  # type: ignore[arg-type]


async def test_pull_request_is_opened_once(github):
    fake, url = github
    async with GitHubClient("ghs_test", url) as gh:
        a = await gh.open_pull_request(REPO, "bosun/gh-x-issue-7", "Fix median", "Fixes #7", key="gh:x:issue:7:pr")
        b = await gh.open_pull_request(REPO, "bosun/gh-x-issue-7", "Fix median", "Fixes #7", key="gh:x:issue:7:pr")
    assert a.created and not b.created and a.number == b.number == 1 and a.base == "main"
    assert len(fake.pulls[REPO]) == 1 and "<!-- bosun:gh:x:issue:7:pr -->" in fake.pulls[REPO][0]["body"]


async def test_reaction_is_idempotent(github):
    fake, url = github
    async with GitHubClient("ghs_test", url) as gh:
        await gh.react(REPO, 5001)
        await gh.react(REPO, 5001)
    assert fake.reactions[5001] == {"eyes"}


async def test_bad_token_is_a_clear_non_retryable_error(github):
    _, url = github
    async with GitHubClient("wrong", url) as gh:
        with pytest.raises(ExternalServiceError, match="answered 401: Bad credentials") as e:
            await gh.set_state(REPO, 7, "working")
    assert e.value.retryable is False and e.value.status == 401


def test_push_from_the_task_repository_is_idempotent(tmp_path):
    work = make_example_repo(tmp_path / "work")
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    repo = TaskRepo(tmp_path / "ws", "gh:x:issue:7")
    sha = repo.prepare(str(work), "HEAD")
    assert repo.push("bosun/gh-x-issue-7", str(remote), sha) == sha
    assert repo.push("bosun/gh-x-issue-7", str(remote), sha) == sha
    out = subprocess.run(["git", "-C", str(remote), "rev-parse", "refs/heads/bosun/gh-x-issue-7"],
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == sha


def test_push_errors_never_show_the_token(tmp_path):
    work = make_example_repo(tmp_path / "work")
    repo = TaskRepo(tmp_path / "ws", "t")
    sha = repo.prepare(str(work), "HEAD")
    with pytest.raises(GitError) as e:
        repo.push("bosun/x", "https://127.0.0.1:9/acme/api.git", sha, token="ghs_SECRET123", timeout_s=30)
    assert "ghs_SECRET123" not in str(e.value) and "failed" in str(e.value)
    assert "Basic" not in str(e.value)


def test_push_refuses_option_like_names(tmp_path):
    work = make_example_repo(tmp_path / "work")
    repo = TaskRepo(tmp_path / "ws", "t")
    sha = repo.prepare(str(work), "HEAD")
    for branch, remote in (("--upload-pack=touch /tmp/x", str(tmp_path)), ("ok", "--receive-pack=id"),
                           ("a\nb", str(tmp_path)), ("x..y", str(tmp_path))):
        with pytest.raises(ConfigError):
            repo.push(branch, remote, sha)


async def test_linear_activity_is_created_once_per_key(linear):
    fake, url = linear
    async with LinearClient("lin_api_test", url) as lin:
        a = await lin.thought("sess-1", "Reading the issue", key="wf:thought:1")
        b = await lin.thought("sess-1", "Reading the issue", key="wf:thought:1")
        await lin.action("sess-1", "run_tests", "tests/", key="wf:action:1", result="3 failed")
        await lin.response("sess-1", "Opened PR #1", key="wf:response")
    assert a.created and not b.created and a.id == b.id == activity_id("sess-1", "wf:thought:1")
    contents = [x["content"] for x in fake.for_session("sess-1")]
    assert contents == [{"type": "thought", "body": "Reading the issue"},
                        {"type": "action", "action": "run_tests", "parameter": "tests/", "result": "3 failed"},
                        {"type": "response", "body": "Opened PR #1"}]


async def test_linear_retry_after_a_lost_response_does_not_post_twice(linear):
    fake, url = linear
    fake.lose_next_responses = 1
    async with LinearClient("lin_api_test", url) as lin:
        with pytest.raises(ExternalServiceError) as e:
            await lin.error("sess-2", "Tests still fail", key="wf:error")
        assert e.value.retryable
        again = await lin.error("sess-2", "Tests still fail", key="wf:error")  # the activity's retry
    assert not again.created
    assert len(fake.for_session("sess-2")) == 1


async def test_linear_refusals_are_errors(linear):
    _, url = linear
    async with LinearClient("lin_api_wrong", url) as lin:
        with pytest.raises(ExternalServiceError, match="Authentication required"):
            await lin.thought("sess-3", "hi", key="k")


async def test_starter_acknowledges_on_github_once(tsettings, github):
    fake, url = github
    cfg = make_cfg(post_status=True, github_token="ghs_test", github_api_url=url, duplicate_window_s=1.0)
    n = uuid.uuid4().int % 10_000_000
    body, headers = github_request("issues", issues_labeled(n), delivery=f"s-{n}")
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        assert (await ing.github(body, headers)).status_code == 200
        await wait_until(lambda: _has(starter, f"github:s-{n}"), what="the start")
        await asyncio.sleep(1.2)
        assert (await ing.github(body, headers)).status_code == 200  # a late redelivery
        await wait_until(lambda: _is(starter, f"github:s-{n}", "duplicate"), what="the redelivery")
    comments = fake.comments[(REPO, n)]
    assert len(comments) == 1
    assert f"gh:{REPO}:issue:{n}" in comments[0]["body"] and "/namespaces/default/workflows/" in comments[0]["body"]
    assert f"<!-- bosun:gh:{REPO}:issue:{n}:started:s-{n} -->" in comments[0]["body"]
    assert fake.labels[(REPO, n)] == ["bosun:working"]


async def test_starter_posts_a_linear_thought_within_10_s(tsettings, linear):
    fake, url = linear
    cfg = make_cfg(post_status=True, linear_api_key="lin_api_test", linear_api_url=url)
    sid = f"sess-{uuid.uuid4().hex[:8]}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        t0 = time.time()
        assert (await ing.linear(*linear_request(linear_agent_session("created", sid)))).status_code == 200
        await wait_until(lambda: _activities(fake, sid, 1), timeout=10, what="the first thought")
        first = fake.for_session(sid)[0]
        assert first["content"]["type"] == "thought" and first["createdAt"] - t0 < 10

        async def linked() -> bool:  # (the session's link is a mutation of its own, after the thought)
            return bool(fake.sessions.get(sid, {}).get("externalUrls"))

        await wait_until(linked, timeout=10, what="the session's link to the run")
        assert fake.sessions[sid]["externalUrls"][0]["url"].endswith(f"linear%3Asession%3A{sid}")
        stop = linear_agent_session("prompted", sid, text="", signal="stop")
        assert (await ing.linear(*linear_request(stop))).status_code == 200
        await wait_until(lambda: _activities(fake, sid, 2), timeout=10, what="the stop response")
    assert [a["content"]["type"] for a in fake.for_session(sid)] == ["thought", "response"]


async def _has(starter, key: str) -> bool:
    return key in starter.stats.outcomes


async def _is(starter, key: str, outcome: str) -> bool:
    return starter.stats.outcomes.get(key) == outcome


async def _activities(fake: FakeLinear, sid: str, n: int) -> bool:
    return len(fake.for_session(sid)) >= n


async def test_a_pull_request_comment_starts_the_task_at_the_pull_request_head(tsettings, github, temporal_client):
    """The comment event does not carry the pull request's head: the starter looks it up (GET /pulls/N); a pull
    request GitHub does not know (404) starts from the default branch."""
    import json

    fake, url = github
    n, unknown = uuid.uuid4().int % 10_000_000, uuid.uuid4().int % 10_000_000 + 10_000_000
    sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
    fake.pulls[REPO] = [{"number": n, "html_url": f"https://github.com/{REPO}/pull/{n}", "state": "open",
                         "head": {"ref": "fix-median", "sha": sha, "label": "octo-org:fix-median"},
                         "base": {"ref": "main", "sha": "7638417db6d59f3c431d3e1f261cc637155684cd"}}]
    cfg = make_cfg(github_token="ghs_test", github_api_url=url)
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        for number, delivery in ((n, f"pr-{n}"), (unknown, f"pr-{unknown}")):
            body, headers = github_request("issue_comment", issue_comment("@bosun please fix", number=number,
                                                                          on_pr=True), delivery=delivery)
            assert (await ing.github(body, headers)).status_code == 200
        for number in (n, unknown):
            await settled_runs(temporal_client, f"gh:{REPO}:pr:{number}", settle_s=0.2)

    async def started(number: int) -> tuple[dict, dict]:
        handle = temporal_client.get_workflow_handle(f"gh:{REPO}:pr:{number}")
        first = [e async for e in handle.fetch_history_events()][0].workflow_execution_started_event_attributes
        return json.loads(first.input.payloads[0].data), await (await handle.describe()).memo()

    inp, memo = await started(n)
    assert inp["ref"] == sha and "pull request's branch fix-median" in inp["task"]
    assert memo["origin"]["head_branch"] == "fix-median"
    assert ("GET", f"/repos/{REPO}/pulls/{n}") in fake.requests
    inp2, memo2 = await started(unknown)
    assert inp2["ref"] == "HEAD" and "head_branch" not in memo2["origin"]


async def test_a_pull_request_task_opens_its_pull_request_into_that_branch(github, tmp_path):
    from activities.report import ReportInput, report_status
    from infra.settings import Settings

    fake, url = github
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ws = make_example_repo(tmp_path / "ws")
    settings = Settings(data_dir=tmp_path / "data", github_token="ghs_test", github_api_url=url)
    wf_id = f"gh:{REPO}:pr:9"
    commit = TaskRepo(settings.workspaces_dir, wf_id).prepare(str(ws), "HEAD")  # the task's own repository
    origin = {"source": "github", "repo": REPO, "number": 9, "head_branch": "fix-median"}
    out = await report_status(settings, ReportInput(workflow_id=wf_id, origin=origin, status="succeeded",
                                                    summary="tests green", branch="bosun/gh-pr-9", commit=commit,
                                                    remote=str(remote)))
    assert out.actions[0] == "pushed bosun/gh-pr-9"
    [pr] = fake.pulls[REPO]
    assert pr["base"]["ref"] == "fix-median" and pr["head"]["ref"] == "bosun/gh-pr-9"
    assert pr["title"] == "bosun: changes for #9" and "into its branch `fix-median`" in pr["body"]


async def test_linear_state_labels_replace_each_other_and_are_made_once(linear):
    fake, url = linear
    fake.labels = {"l-bug": {"name": "Bug", "team": "team-eng"}, "l-old": {"name": "bosun:working", "team": None}}
    fake.issues = {"issue-9": {"team": "team-eng", "labels": ["l-bug", "l-old"]}}
    async with LinearClient("lin_api_test", url) as lin:
        assert await lin.set_state("issue-9", "done") == ["Bug", "bosun:done"]
        assert await lin.set_state("issue-9", "done") == ["Bug", "bosun:done"]  # a retry: the same label
        assert await lin.set_state("issue-9", "working") == ["Bug", "bosun:working"]  # the workspace's label
        with pytest.raises(ExternalServiceError, match="Entity not found"):
            await lin.set_state("issue-404", "done")
    made = [lb for lb in fake.labels.values() if lb["name"] == "bosun:done"]
    assert made == [{"name": "bosun:done", "team": "team-eng"}]  # made once, in the issue's team
