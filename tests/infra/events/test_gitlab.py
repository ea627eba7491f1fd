"""GitLab as a source, over real parts: the ingress against a real nats-server (a bad token or body is refused with
4xx and publishes nothing; a delivery is stored once), the starter against the embedded Temporal (a label, a
mention and a failed pipeline each start the right workflow exactly once), and status back over HTTP against a
fixture server that follows GitLab's documented REST API (every side effect once)."""

from __future__ import annotations

import base64
import subprocess
import uuid

import pytest

from infra.events.github_api import ExternalServiceError, marker
from infra.events.gitlab_api import GitLabClient, project_path
from tests.conftest import make_example_repo
from tests.infra.events.conftest import (
    make_cfg,
    running_ingress,
    running_starter,
    settled_runs,
    stream_messages,
    wait_until,
)
from tests.infra.events.fakes import FakeGitLab, serve
from tests.infra.events.samples import (
    GL_PROJECT,
    gitlab_labelled,
    gitlab_note,
    gitlab_pipeline,
    gitlab_request,
)
from tests.infra.events.test_ingress import hostile_json, last_message


@pytest.fixture
async def gitlab():
    fake = FakeGitLab(per_page_cap=2)  # tiny pages: the marker search must follow Link: rel="next"
    async with serve(fake.app()) as url:
        yield fake, f"{url}/api/v4"


# ---------------------------------------------------------------- the ingress

async def test_a_gitlab_delivery_is_published_as_sent_and_stored_once(settings, cfg):
    body, headers = gitlab_request("Issue Hook", gitlab_labelled(), delivery="13792a34-cac6-4fda-95a8-c58e00a3954e",
                                   idempotency_key="f5e5f430-f57b-4e6e-9fac-d9128cd7232f")
    async with running_ingress(settings, cfg) as ing:
        first = await ing.gitlab(body, headers)
        assert first.status_code == 200, first.text
        assert first.json()["subject"] == "events.gitlab.issue_hook" and first.json()["duplicate"] is False
        msg = await last_message(settings)
        assert msg.data == body and msg.headers["Nats-Msg-Id"] == "f5e5f430-f57b-4e6e-9fac-d9128cd7232f"
        # GitLab's retry keeps the Idempotency-Key (and a new Event-UUID would not make it new)
        again = await ing.gitlab(body, {**headers, "X-Gitlab-Event-UUID": str(uuid.uuid4())})
        assert again.json()["duplicate"] is True
        # before 17.4 there is no Idempotency-Key: the Event-UUID identifies the delivery
        old = {k: v for k, v in headers.items() if k != "Idempotency-Key"}
        assert (await ing.gitlab(body, old)).json()["duplicate"] is False
        assert (await ing.gitlab(body, old)).json()["duplicate"] is True
    assert await stream_messages(settings) == 2


def gitlab_cases():
    body, good = gitlab_request("Note Hook", gitlab_note())

    def without(*names):
        return {k: v for k, v in good.items() if k not in names}

    return [
        ("no token", body, without("X-Gitlab-Token"), 401, "missing header X-Gitlab-Token"),
        ("wrong token", body, {**good, "X-Gitlab-Token": "guess"}, 401, "does not match the configured secret"),
        ("token with a suffix", body, {**good, "X-Gitlab-Token": good["X-Gitlab-Token"] + "x"}, 401,
         "does not match"),
        ("empty token", body, {**good, "X-Gitlab-Token": ""}, 401, "does not match"),
        ("no event", body, without("X-Gitlab-Event"), 400, "missing header X-Gitlab-Event"),
        ("event not a name", body, {**good, "X-Gitlab-Event": "Note.Hook"}, 400, "is not an event name"),
        ("no delivery id", body, without("X-Gitlab-Event-UUID", "Idempotency-Key"), 400,
         "missing header X-Gitlab-Event-UUID"),
        ("idempotency key with spaces", body, {**good, "Idempotency-Key": "a b"}, 400, "is not a delivery id"),
        ("form-encoded", body, {**good, "Content-Type": "application/x-www-form-urlencoded"}, 415,
         "expected 'application/json'"),
        ("malformed JSON", b'{"object_kind": "note",', gitlab_request("Note Hook", b'{"object_kind": "note",')[1],
         400, "the body is not valid JSON"),
        ("JSON list", b"[]", gitlab_request("Note Hook", b"[]")[1], 400, "the body is JSON list"),
        *[(name, b, gitlab_request("Note Hook", b)[1], 400, msg) for name, b, msg in hostile_json()],
    ]


async def test_bad_gitlab_deliveries_are_refused_with_4xx_and_publish_nothing(settings, cfg):
    async with running_ingress(settings, cfg) as ing:
        for name, body, headers, status, message in gitlab_cases():
            r = await ing.gitlab(body, headers)
            assert r.status_code == status, (name, r.text)
            assert message in r.json()["error"], (name, r.json())
        assert await stream_messages(settings) == 0
        unconfigured = make_cfg(gitlab_webhook_secret=None)
    async with running_ingress(settings, unconfigured) as ing:
        r = await ing.gitlab(*gitlab_request("Note Hook", gitlab_note()))
        assert r.status_code == 503 and "BOSUN_GITLAB_WEBHOOK_SECRET" in r.json()["error"]
    assert await stream_messages(settings) == 0


# ---------------------------------------------------------------- the starter

async def test_a_label_a_mention_and_a_failed_pipeline_each_start_their_workflow_once(tsettings, gitlab,
                                                                                      temporal_client):
    fake, url = gitlab
    n = uuid.uuid4().int % 1_000_000
    fake.members[(5, 42)] = 30  # a Developer
    fake.members[(5, 43)] = 20  # a Reporter: cannot push, so cannot ask
    cfg = make_cfg(gitlab_token="glpat-test", gitlab_api_url=url, post_status=True)
    sha = f"{n:08d}".ljust(40, "a")
    deliveries = [
        ("Issue Hook", gitlab_labelled("issue_hook", iid=n)),
        ("Note Hook", gitlab_note("issue", "@bosun also update the docs", iid=n + 1, user_id=42)),
        ("Note Hook", gitlab_note("issue", "@bosun do it", iid=n + 2, user_id=43)),
        ("Note Hook", gitlab_note("issue", "@bosun do it", iid=n + 3, user_id=77)),  # not a member
        ("Pipeline Hook", gitlab_pipeline("failed", ref=f"bosun/gl-{n}", sha=sha)),
    ]
    for payload in (d[1] for d in deliveries):
        payload["project"]["id"] = 5
    sent = [gitlab_request(event, payload) for event, payload in deliveries]
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        for body, headers in sent + sent:  # every delivery twice (a redelivery)
            assert (await ing.gitlab(body, headers)).status_code == 200

        async def settled() -> bool:
            return all(starter.stats.outcomes.get(f"gitlab:{h['Idempotency-Key']}") in
                       ("started", "signalled", "ignored", "duplicate") for _, h in sent)

        await wait_until(settled, what="every delivery handled")
        for wf in (f"gl:{GL_PROJECT}:issue:{n}", f"gl:{GL_PROJECT}:issue:{n + 1}", f"gl:{GL_PROJECT}:ci:{sha}"):
            assert len(await settled_runs(temporal_client, wf, settle_s=0.3)) == 1, wf
        for iid in (n + 2, n + 3):
            assert not [w async for w in temporal_client.list_workflows(
                f"WorkflowId = 'gl:{GL_PROJECT}:issue:{iid}'")]
        outcomes = [starter.stats.outcomes[f"gitlab:{h['Idempotency-Key']}"] for _, h in sent]
    assert outcomes[2:4] == ["ignored", "ignored"]
    assert ("GET", "/api/v4/projects/5/members/all/43") in fake.requests
    # the start is acknowledged where it came from, once: a note, the working label; the mention gets an award
    started = fake.notes[(5, "issues", n)]
    assert len(started) == 1 and f"gl:{GL_PROJECT}:issue:{n}" in started[0]["body"]
    assert fake.labels[(5, "issues", n)] == ["bosun:working"]
    assert fake.awards == {1241: {"eyes"}}


async def test_a_mention_is_not_acted_on_without_a_token_to_check_its_author(tsettings, temporal_client):
    cfg = make_cfg()
    n = uuid.uuid4().int % 1_000_000
    body, headers = gitlab_request("Note Hook", gitlab_note("issue", "@bosun go", iid=n))
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        assert (await ing.gitlab(body, headers)).status_code == 200
        key = f"gitlab:{headers['Idempotency-Key']}"

        async def handled() -> bool:
            return starter.stats.outcomes.get(key) == "ignored"

        await wait_until(handled, what="the mention refused")
    assert not [w async for w in temporal_client.list_workflows(f"WorkflowId = 'gl:{GL_PROJECT}:issue:{n}'")]


# ---------------------------------------------------------------- status back

async def test_a_note_is_posted_once_per_key_and_edited_in_place(gitlab):
    fake, url = gitlab
    fake.notes[(5, "issues", 7)] = [{"id": i, "body": f"someone {i}"} for i in range(5)]  # three pages
    async with GitLabClient("glpat-test", url) as gl:
        first = await gl.upsert_note(5, "issue", 7, "wf:result", "working")
        again = await gl.upsert_note(GL_PROJECT, "issue", 7, "wf:result", "done")  # by path, retried
    assert first.created and not again.created and first.id == again.id
    mine = [n for n in fake.notes[(5, "issues", 7)] if marker("wf:result") in n["body"]]
    assert len(mine) == 1 and mine[0]["body"].startswith("done")


async def test_state_labels_replace_each_other_in_one_request(gitlab):
    fake, url = gitlab
    fake.labels[(5, "merge_requests", 3)] = ["backend", "bosun:working"]
    async with GitLabClient("glpat-test", url) as gl:
        after = await gl.set_state(5, "merge_request", 3, "done")
    assert after == ["backend", "bosun:done"]
    assert [r for r in fake.requests if r[0] == "PUT"] == [("PUT", "/api/v4/projects/5/merge_requests/3")]


async def test_a_merge_request_is_opened_once(gitlab):
    fake, url = gitlab
    async with GitLabClient("glpat-test", url) as gl:
        first = await gl.open_merge_request(5, "bosun/x", "bosun: fix #7", "body", key="wf")
        again = await gl.open_merge_request(5, "bosun/x", "bosun: fix #7", "body", key="wf")
    assert first.created and not again.created and first.number == again.number == 1
    assert fake.merge_requests[5][0]["target_branch"] == "main" and marker("wf") in fake.merge_requests[5][0][
        "description"]


async def test_a_reply_in_a_thread_is_posted_once_and_an_award_is_idempotent(gitlab):
    fake, url = gitlab
    did = "6a9c1750b37d513a43987b574953fceb50b03ce7"
    fake.discussions[did] = [{"id": 1, "body": "@bosun why?"}]
    async with GitLabClient("glpat-test", url) as gl:
        for _ in range(2):
            await gl.reply(5, "merge_request", 1, did, "wf:result", "because")
            await gl.award(5, "merge_request", 1, 1, "eyes")
        with pytest.raises(ValueError):
            await gl.reply(5, "merge_request", 1, "../../x", "k", "no")
    assert [n["body"].split("\n")[0] for n in fake.discussions[did]] == ["@bosun why?", "because"]
    assert fake.awards == {1: {"eyes"}}


async def test_refusals_say_what_and_only_transient_ones_retry(gitlab):
    fake, url = gitlab
    async with GitLabClient("wrong", url) as gl:
        with pytest.raises(ExternalServiceError) as e:
            await gl.upsert_note(5, "issue", 1, "k", "x")
    assert e.value.status == 401 and not e.value.retryable and "401 Unauthorized" in str(e.value)
    async with GitLabClient("glpat-test", url) as gl:
        assert await gl.access_level(5, 12345) == 0  # not a member
        with pytest.raises(ExternalServiceError) as e:
            await gl.upsert_note(999, "issue", 1, "k", "x")
    assert e.value.status == 404 and not e.value.retryable


def test_project_paths_are_encoded_and_odd_ones_refused():
    assert project_path(5) == "/projects/5" and project_path("5") == "/projects/5"
    assert project_path("acme/platform/api") == "/projects/acme%2Fplatform%2Fapi"
    for bad in ("", "/", "a//b", "a/../b"):
        with pytest.raises(ValueError):
            project_path(bad)


async def test_a_task_from_a_merge_request_pushes_with_the_token_and_opens_its_merge_request_into_that_branch(
        gitlab, tmp_path):
    from activities.report import ReportInput, report_status
    from infra.settings import Settings
    from sandbox.hostrepo import TaskRepo

    fake, url = gitlab
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ws = make_example_repo(tmp_path / "ws")
    settings = Settings(data_dir=tmp_path / "data", gitlab_token="glpat-test", gitlab_api_url=url)
    wf_id = f"gl:{GL_PROJECT}:mr:4"
    commit = TaskRepo(settings.workspaces_dir, wf_id).prepare(str(ws), "HEAD")
    origin = {"source": "gitlab", "repo": GL_PROJECT, "project_id": 5, "number": 4, "noteable": "merge_request",
              "head_branch": "fix-median", "discussion_id": "abc123", "comment_id": 1}
    fake.discussions["abc123"] = [{"id": 1, "body": "@bosun fix the median"}]
    inp = ReportInput(workflow_id=wf_id, origin=origin, status="succeeded", summary="tests green",
                      branch="bosun/gl-mr-4", commit=commit, remote=str(remote))
    out = await report_status(settings, inp)
    again = await report_status(settings, inp)  # a retried activity
    assert out.actions == ["pushed bosun/gl-mr-4", "merge request !1", "reply", "label bosun:done"] == again.actions
    [mr] = fake.merge_requests[5]
    assert mr["target_branch"] == "fix-median" and mr["source_branch"] == "bosun/gl-mr-4"
    assert mr["title"] == "bosun: changes for !4" and "into its branch `fix-median`" in mr["description"]
    assert len(fake.discussions["abc123"]) == 2 and "Opened merge request !1" in fake.discussions["abc123"][1]["body"]
    assert fake.labels[(5, "merge_requests", 4)] == ["bosun:done"]
    pushed = subprocess.run(["git", "-C", str(remote), "rev-parse", "bosun/gl-mr-4"], capture_output=True, text=True)
    assert pushed.stdout.strip() == commit


def test_the_push_authenticates_as_gitlab_expects(tmp_path, monkeypatch):
    """GitLab takes a token as the password of HTTP basic auth with any user name; bosun says oauth2."""
    from sandbox import delivery

    seen = {}

    def fake_git(git_dir, *args, config=(), **kw):
        seen["config"] = list(config)

    monkeypatch.setattr(delivery, "git", fake_git)
    from sandbox.hostrepo import TaskRepo

    TaskRepo(tmp_path, "gl:a/b:issue:1").push("bosun/x", "https://gitlab.example.com/a/b.git", "a" * 40,
                                              token="glpat-secret", token_user="oauth2")
    header = seen["config"][0]
    assert header.startswith("http.extraHeader=Authorization: Basic ")
    assert base64.b64decode(header.rsplit(" ", 1)[1]).decode() == "oauth2:glpat-secret"



async def test_a_merge_request_round_answers_in_each_thread_once_and_opens_no_merge_request(gitlab, tmp_path):
    """A conversation round on GitLab: the commit onto the merge request's own branch (as oauth2), one reply per
    asking thread, one note for the rest, the one status note, the label; a retried report changes nothing."""
    from activities.report import ReportInput, report_status
    from infra.settings import Settings
    from sandbox.hostrepo import TaskRepo

    fake, url = gitlab
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ws = make_example_repo(tmp_path / "ws")
    settings = Settings(data_dir=tmp_path / "data", gitlab_token="glpat-test", gitlab_api_url=url)
    conv = f"gl:{GL_PROJECT}:conversation:3"
    wf_id = f"{conv}/round-1"
    commit = TaskRepo(settings.workspaces_dir, wf_id).prepare(str(ws), "HEAD")
    for did in ("d1", "d2"):
        fake.discussions[did] = [{"id": 1, "body": "@bosun fix this line"}]
    origin = {"source": "gitlab", "repo": GL_PROJECT, "project_id": 5, "number": 3, "noteable": "merge_request",
              "head_branch": "bosun/gl-issue-17", "push_to_head": True, "conversation": conv, "round": 1,
              "replies": [{"kind": "review_comment", "comment_id": 11, "author": "root", "discussion_id": "d1"},
                          {"kind": "review_comment", "comment_id": 12, "author": "root", "discussion_id": "d2"},
                          {"kind": "comment", "comment_id": 13, "author": "alice"}]}
    inp = ReportInput(workflow_id=wf_id, origin=origin, status="succeeded", summary="tests green",
                      branch=f"bosun/{wf_id}", commit=commit, remote=str(remote))
    first = await report_status(settings, inp)
    again = await report_status(settings, inp)
    assert first.actions == again.actions == ["pushed bosun/gl-issue-17", "reply 11", "reply 12", "note", "status",
                                              "label bosun:done"]
    assert [len(fake.discussions[d]) for d in ("d1", "d2")] == [2, 2]  # exactly one reply each
    notes = fake.notes[(5, "merge_requests", 3)]
    assert len(notes) == 2 and notes[0]["body"].startswith("@alice: Changed in")
    assert "round 1 succeeded" in notes[1]["body"]
    assert fake.merge_requests == {} and fake.labels[(5, "merge_requests", 3)] == ["bosun:done"]
    pushed = subprocess.run(["git", "-C", str(remote), "rev-parse", "bosun/gl-issue-17"], capture_output=True,
                            text=True)
    assert pushed.stdout.strip() == commit


async def test_a_failed_pipelines_context_on_gitlab(gitlab, tmp_path):
    from activities.report import CIContextInput, ci_context
    from infra.settings import Settings

    fake, url = gitlab
    fake.pipelines[(5, "main")] = ["success", "failed"]
    fake.pipelines[(5, "broken")] = ["failed"]
    fake.traces[378] = b"\x1b[0K$ pytest\n" + b"x" * 50_000 + b"\nFAILED test_median\n"
    settings = Settings(data_dir=tmp_path / "data", gitlab_token="glpat-test", gitlab_api_url=url)
    ctx = await ci_context(settings, CIContextInput(repo=GL_PROJECT, source="gitlab", project_id=5, check="pipeline 31",
                                                    sha="a" * 40, base_branch="main", job_id=378))
    assert not ctx.fails_on_base and ctx.log_tail.endswith("FAILED test_median\n") and len(ctx.log_tail) <= 12_000
    on_base = await ci_context(settings, CIContextInput(repo=GL_PROJECT, source="gitlab", project_id=5,
                                                        check="pipeline 31", sha="a" * 40, base_branch="broken",
                                                        job_id=378))
    assert on_base.fails_on_base and on_base.log_tail == ""
