"""A conversation round's status back over HTTP, against the GitHub fixture server: the commit goes onto the pull
request's own branch (no second pull request), each review comment gets exactly one reply in its thread, the
reviews one answer, the conversation one status comment that is edited; a retried report changes nothing, and a
branch someone moved is left alone and said so."""

from __future__ import annotations

import subprocess

import pytest

from activities.report import ReportInput, report_status
from infra.events.github_api import marker
from infra.settings import Settings
from sandbox.hostrepo import TaskRepo
from tests.conftest import make_example_repo
from tests.infra.events.fakes import FakeGitHub, serve
from tests.infra.events.samples import REPO

HEAD = "bosun/gh-octo-org-hello-world-issue-7"
CONV = f"gh:{REPO}:conversation:12"


@pytest.fixture
async def github():
    fake = FakeGitHub(per_page_cap=2)
    async with serve(fake.app()) as url:
        yield fake, url


def round_input(tmp_path, url, *, replies, round_no=1):
    remote = tmp_path / "remote.git"
    if not remote.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    ws = tmp_path / "ws"
    if not ws.exists():
        make_example_repo(ws)
    settings = Settings(data_dir=tmp_path / "data", github_token="ghs_test", github_api_url=url)
    wf_id = f"{CONV}/round-{round_no}"
    commit = TaskRepo(settings.workspaces_dir, wf_id).prepare(str(ws), "HEAD")
    origin = {"source": "github", "repo": REPO, "number": 12, "head_branch": HEAD, "base_branch": "main",
              "push_to_head": True, "conversation": CONV, "round": round_no, "replies": replies,
              "notes": ["check 'lint' failed at aaaaaaaaaaaa: not acted on (bob pushed to the branch)"]}
    inp = ReportInput(workflow_id=wf_id, origin=origin, status="succeeded", summary="tests: 3 failed -> 0 failed",
                      branch=f"bosun/{wf_id}", commit=commit, remote=str(remote))
    return settings, inp, remote


async def test_a_round_answers_each_thread_once_and_opens_no_pull_request(github, tmp_path):
    fake, url = github
    fake.review_comments[(REPO, 12)] = [{"id": 100 + i, "body": f"rename {i}", "path": "calc/stats.py",
                                         "user": {"login": "alice", "type": "User"}} for i in range(1, 6)]
    replies = [{"kind": "review_comment", "comment_id": 100 + i, "author": "alice", "id": f"review_comment:{100 + i}"}
               for i in range(1, 6)] + [{"kind": "review", "author": "alice", "id": "review:7"}]
    settings, inp, remote = round_input(tmp_path, url, replies=replies)
    first = await report_status(settings, inp)
    again = await report_status(settings, inp)  # the activity retried, or the round's report replayed
    assert first.actions == again.actions == [f"pushed {HEAD}"] + [f"reply {100 + i}" for i in range(1, 6)] + [
        "comment", "status", "label bosun:done"]
    threads = fake.review_comments[(REPO, 12)]
    answers = [c for c in threads if c.get("in_reply_to_id")]
    assert sorted(c["in_reply_to_id"] for c in answers) == [101, 102, 103, 104, 105]  # exactly one each
    assert all(c["body"].startswith(f"Changed in {inp.commit}.") for c in answers)
    comments = fake.comments[(REPO, 12)]
    assert len(comments) == 2 and comments[0]["body"].startswith("@alice: Changed in")
    status = next(c for c in comments if marker(f"{CONV}:status") in c["body"])
    assert "round 1 succeeded" in status["body"] and "bob pushed to the branch" in status["body"]
    assert REPO not in fake.pulls  # no second pull request
    head = subprocess.run(["git", "-C", str(remote), "rev-parse", HEAD], capture_output=True, text=True).stdout
    assert head.strip() == inp.commit


async def test_the_next_round_edits_the_one_status_comment(github, tmp_path):
    fake, url = github
    settings, one, _ = round_input(tmp_path, url, replies=[{"kind": "comment", "author": "carol", "id": "comment:1"}])
    await report_status(settings, one)
    _, two, _ = round_input(tmp_path, url, replies=[{"kind": "comment", "author": "dan", "id": "comment:2"}],
                            round_no=2)
    await report_status(settings, two)
    statuses = [c for c in fake.comments[(REPO, 12)] if marker(f"{CONV}:status") in c["body"]]
    assert len(statuses) == 1 and "round 2" in statuses[0]["body"]


async def test_a_branch_someone_moved_is_left_alone_and_said_so(github, tmp_path):
    fake, url = github
    settings, inp, remote = round_input(tmp_path, url, replies=[{"kind": "comment", "author": "carol",
                                                                 "id": "comment:1"}])
    other = make_example_repo(tmp_path / "other")  # an unrelated history on the branch: not a fast-forward
    (other / "NOTES").write_text("a person's commit\n")
    git = ["git", "-C", str(other), "-c", "user.name=p", "-c", "user.email=p@p"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "person"], check=True)
    subprocess.run(git + ["push", "-q", str(remote), f"HEAD:refs/heads/{HEAD}"], check=True)
    before = subprocess.run(["git", "-C", str(remote), "rev-parse", HEAD], capture_output=True, text=True).stdout
    out = await report_status(settings, inp)
    assert not any(a.startswith("pushed") for a in out.actions)
    after = subprocess.run(["git", "-C", str(remote), "rev-parse", HEAD], capture_output=True, text=True).stdout
    assert before == after
    assert f"Not pushed: `{HEAD}` moved meanwhile" in fake.comments[(REPO, 12)][0]["body"]


async def test_a_review_through_the_ingress_and_the_starter_is_one_conversation_with_each_event_once(
        tsettings, github, temporal_client):
    """Five inline comments and their review, each delivered twice (GitHub's redelivery keeps the delivery id), a
    comment on bosun's pull request found by its head: one PullRequestWorkflow, one signal per event."""
    import json
    import uuid

    from tests.infra.events.conftest import make_cfg, running_ingress, running_starter, settled_runs, wait_until
    from tests.infra.events.samples import github_request, issue_comment
    from tests.infra.events.test_conversation_triggers import BRANCH, example, on_bosuns_branch

    fake, url = github
    n = uuid.uuid4().int % 1_000_000
    repo = "Codertocat/Hello-World"
    cfg = make_cfg(github_token="ghs_test", github_api_url=url, repos={repo: "/srv/hello-world"})
    review = on_bosuns_branch(example("pull_request_review.submitted"))
    review["pull_request"]["number"] = n
    review["review"]["state"] = "changes_requested"
    deliveries = [("pull_request_review", review, f"r-{n}")]
    for i in range(5):
        c = on_bosuns_branch(example("pull_request_review_comment.created"))
        c["pull_request"]["number"] = n
        c["comment"].update({"id": 900 + i, "body": f"comment {i}"})
        deliveries.append(("pull_request_review_comment", c, f"c-{n}-{i}"))
    mention = issue_comment("@bosun and the changelog", number=n, on_pr=True, comment_id=n)
    mention["repository"]["full_name"] = repo
    mention["issue"]["body"] = f"Closes #1.\n\n<!-- bosun:gh:{repo}:issue:1 -->"
    deliveries.append(("issue_comment", mention, f"m-{n}"))
    fake.pulls[repo] = [{"number": n, "state": "open", "head": {"ref": BRANCH, "sha": "e" * 40,
                                                                "repo": {"full_name": repo}},
                         "base": {"ref": "master", "sha": "f" * 40}}]
    wf_id = f"gh:{repo}:conversation:{n}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        for event, payload, delivery in deliveries + deliveries:
            assert (await ing.github(*github_request(event, payload, delivery=delivery))).status_code == 200

        async def handled() -> bool:
            return all(starter.stats.outcomes.get(f"github:{d}") in ("started", "signalled", "duplicate")
                       for _, _, d in deliveries)

        await wait_until(handled, what="every delivery handled")
        runs = await settled_runs(temporal_client, wf_id, settle_s=0.3)
    assert len(runs) == 1 and runs[0].workflow_type == "PullRequestWorkflow"
    history = [e async for e in temporal_client.get_workflow_handle(wf_id).fetch_history_events()]
    signals = [json.loads(e.workflow_execution_signaled_event_attributes.input.payloads[0].data)
               for e in history if e.HasField("workflow_execution_signaled_event_attributes")]
    ids = [s["id"] for s in signals]
    assert sorted(ids) == sorted([f"review:{review['review']['id']}", f"comment:{n}"]
                                 + [f"review_comment:{900 + i}" for i in range(5)])
    started = history[0].workflow_execution_started_event_attributes
    inp = json.loads(started.input.payloads[0].data)
    assert inp["number"] == n and inp["repo_name"] == repo and inp["task"]["repo"] == "/srv/hello-world"



async def test_a_failed_checks_context_is_its_base_branch_and_its_logs_tail(github, tmp_path):
    """ci_context: the same check failing on the base branch (not the pull request's doing), and the failing job's
    log, bounded, its control characters dropped, downloaded from the other host without the token."""
    from activities.report import LOG_TAIL, CIContextInput, ci_context

    fake, url = github
    async with serve(fake.blob_app()) as blob:
        fake.blob_url = blob
        fake.logs[77] = b"\x1b[31mnoise\x1b[0m\n" * 5000 + b"FAILED test_median - assert 2 == 2.5\x07\r\n"
        fake.checks[(REPO, "main")] = [{"name": "flaky", "status": "completed", "conclusion": "failure"},
                                       {"name": "tests", "status": "completed", "conclusion": "success"}]
        settings = Settings(data_dir=tmp_path / "data", github_token="ghs_test", github_api_url=url)
        ctx = await ci_context(settings, CIContextInput(repo=REPO, check="tests", sha="a" * 40, base_branch="main",
                                                        job_id=77))
        assert not ctx.fails_on_base and ctx.note == ""
        assert ctx.log_tail.endswith("FAILED test_median - assert 2 == 2.5\n") and len(ctx.log_tail) <= LOG_TAIL
        assert "\x1b" not in ctx.log_tail and "\x07" not in ctx.log_tail and "\r" not in ctx.log_tail
        assert fake.blob_auth == [None]  # the token stayed with GitHub
        flaky = await ci_context(settings, CIContextInput(repo=REPO, check="flaky", sha="a" * 40, base_branch="main",
                                                          job_id=77))
        assert flaky.fails_on_base and flaky.log_tail == ""  # (no log needed: no round)
        missing = await ci_context(settings, CIContextInput(repo=REPO, check="tests", sha="a" * 40, job_id=78))
        assert "the job's log could not be read" in missing.note and "404" in missing.note


async def test_a_rounds_working_label_replaces_the_last_rounds_state(github, tmp_path):
    from activities.report import LabelInput, set_label

    fake, url = github
    fake.labels[(REPO, 12)] = ["bug", "bosun:done"]
    settings = Settings(data_dir=tmp_path / "data", github_token="ghs_test", github_api_url=url)
    assert await set_label(settings, LabelInput(repo=REPO, number=12, state="working"))
    assert fake.labels[(REPO, 12)] == ["bug", "bosun:working"]
    without = Settings(data_dir=tmp_path / "data2", github_api_url=url)
    assert not await set_label(without, LabelInput(repo=REPO, number=12, state="done"))  # no token: nothing
