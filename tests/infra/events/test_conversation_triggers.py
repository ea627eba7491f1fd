"""The trigger rules of a pull request's conversation, over GitHub's own example payloads (octokit/webhooks,
tests/infra/events/github/): reviews, review comments, pushes, the closing and failed checks of a pull request bosun
opened reach its conversation; those of anyone else's pull request, of a fork's branch that borrows bosun's name,
of a bot or of bosun itself start nothing; every example is still accepted or ignored as before."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from infra.events.triggers import decide
from tests.infra.events.conftest import make_cfg

FIXTURES = Path(__file__).parent / "github"
REPO = "Codertocat/Hello-World"
BRANCH = "bosun/gh-codertocat-hello-world-issue-1"


def example(name: str) -> dict:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def on_bosuns_branch(payload: dict) -> dict:
    payload = copy.deepcopy(payload)
    payload["pull_request"]["head"]["ref"] = BRANCH
    return payload


@pytest.fixture(scope="module")
def cfg():
    return make_cfg(repos={REPO: "/srv/hello-world", "octo-org/octo-repo": "/srv/octo-repo"})


EXAMPLES = {"pull_request_review.submitted": "pull_request_review",
            "pull_request_review_comment.created": "pull_request_review_comment",
            "pull_request.synchronize": "pull_request", "pull_request.closed": "pull_request",
            "pull_request.labeled": "pull_request", "issue_comment.created": "issue_comment",
            "check_run.completed": "check_run", "check_run.completed.failure": "check_run",
            "workflow_run.completed": "workflow_run", "workflow_run.completed.with-pull-requests": "workflow_run",
            "issues.labeled": "issues"}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_githubs_examples_as_they_stand_start_nothing_new(name, cfg):
    """Their pull request (#2, branch ``changes``) is not bosun's, their labels are not ``bosun``, their comment
    mentions nobody, their checks ran on ``changes`` and ``master``: all are ignored, as before."""
    d = decide("github", EXAMPLES[name], example(name), cfg)
    assert d.kind == "ignore", (name, d)


def test_a_review_of_bosuns_pull_request_reaches_its_conversation(cfg):
    payload = on_bosuns_branch(example("pull_request_review.submitted"))
    d = decide("github", "pull_request_review", payload, cfg)
    assert d.kind == "converse" and d.workflow_id == f"gh:{REPO}:conversation:2"
    ev = d.event
    assert ev.id == "review:237895671" and ev.review_state == "commented" and not ev.actionable  # no mention
    assert d.origin.head_branch == BRANCH and d.origin.base_branch == "master" and d.ref == payload[
        "pull_request"]["head"]["sha"]
    payload["review"].update({"state": "changes_requested"})
    assert decide("github", "pull_request_review", payload, cfg).event.actionable
    payload["review"].update({"state": "approved", "body": "Nice. @bosun please also update the changelog"})
    assert decide("github", "pull_request_review", payload, cfg).event.actionable


def test_a_review_comment_joins_its_review_and_is_answered_in_its_thread(cfg):
    payload = on_bosuns_branch(example("pull_request_review_comment.created"))
    ev = decide("github", "pull_request_review_comment", payload, cfg).event
    assert ev.kind == "review_comment" and ev.review_id == 237895671 and ev.comment_id == 284312630
    assert ev.path == "README.md" and ev.line == 265 and ev.body == "Maybe you should use more emoji on this line."
    payload["comment"]["in_reply_to_id"] = 284312000  # a reply: the thread's first comment is where bosun answers
    assert decide("github", "pull_request_review_comment", payload, cfg).event.comment_id == 284312000


@pytest.mark.parametrize("who,association,why", [
    ({"login": "dependabot[bot]", "type": "Bot"}, "NONE", "bot"),
    ({"login": "Codertocat", "type": "User"}, "CONTRIBUTOR", "author_association CONTRIBUTOR"),
    ({"login": "Codertocat", "type": "User"}, "NONE", "author_association NONE"),
])
def test_a_bot_or_someone_without_write_access_is_not_heard(who, association, why, cfg):
    review = on_bosuns_branch(example("pull_request_review.submitted"))
    review["review"].update({"user": who, "author_association": association, "state": "changes_requested"})
    d = decide("github", "pull_request_review", review, cfg)
    assert d.kind == "ignore" and why in d.reason
    comment = on_bosuns_branch(example("pull_request_review_comment.created"))
    comment["comment"].update({"user": who, "author_association": association})
    assert decide("github", "pull_request_review_comment", comment, cfg).kind == "ignore"


def test_bosuns_own_review_comment_is_not_heard(cfg):
    payload = on_bosuns_branch(example("pull_request_review_comment.created"))
    payload["comment"]["body"] = "Changed in abc.\n\n<!-- bosun:gh:x:conversation:2/round-1:reply:1 -->"
    assert decide("github", "pull_request_review_comment", payload, cfg).kind == "ignore"


def test_a_forks_branch_that_borrows_bosuns_name_is_not_bosuns(cfg):
    payload = on_bosuns_branch(example("pull_request_review.submitted"))
    payload["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    d = decide("github", "pull_request_review", payload, cfg)
    assert d.kind == "ignore" and "did not open" in d.reason


def test_a_push_and_the_closing_reach_the_conversation(cfg):
    push = decide("github", "pull_request", on_bosuns_branch(example("pull_request.synchronize")), cfg)
    assert push.kind == "converse" and push.event.kind == "push"
    assert push.event.sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821" and push.event.author == "Codertocat"
    closed = on_bosuns_branch(example("pull_request.closed"))
    closed["pull_request"].update({"merged": True, "merged_at": "2019-05-15T15:21:00Z"})
    d = decide("github", "pull_request", closed, cfg)
    assert d.kind == "converse" and d.event.kind == "closed" and d.event.merged
    # a label still starts a task, on any pull request
    labelled = example("pull_request.labeled")
    labelled["label"]["name"] = "bosun"
    assert decide("github", "pull_request", labelled, cfg).kind == "start"


def test_a_failed_check_on_a_pull_requests_head_reaches_its_conversation(cfg):
    payload = copy.deepcopy(example("check_run.completed"))
    run = payload["check_run"]
    run["conclusion"] = "failure"
    run["check_suite"]["head_branch"] = BRANCH
    run["pull_requests"][0]["head"]["ref"] = BRANCH
    d = decide("github", "check_run", payload, cfg)
    assert d.kind == "converse" and d.workflow_id == f"gh:{REPO}:conversation:2"
    assert d.event.kind == "check_failed" and d.event.sha == run["head_sha"] and d.event.job_id == run["id"]
    assert d.event.id == f"check:{run['head_sha']}:{run['name']}" and d.event.actionable
    # the same failure on a bosun branch that no pull request has: a task of its own, as before
    run["pull_requests"] = []
    assert decide("github", "check_run", payload, cfg).workflow_id == f"gh:{REPO}:ci:{run['head_sha']}"


def test_a_mention_on_a_pull_request_with_bosuns_marker_is_a_follow_up_the_starter_may_take_to_the_conversation(cfg):
    payload = copy.deepcopy(example("issue_comment.created"))
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/Codertocat/Hello-World/pulls/1"}
    payload["issue"]["body"] = "Closes #7.\n\n<!-- bosun:gh:Codertocat/Hello-World:issue:7 -->"
    payload["comment"]["body"] = "@bosun please also handle empty lists"
    d = decide("github", "issue_comment", payload, cfg)
    assert d.kind == "follow_up" and d.pull_request == 1 and d.event is not None  # checked against the head
    assert d.event.id == f"comment:{payload['comment']['id']}" and d.event.kind == "comment"
    payload["issue"]["body"] = "no marker"
    assert decide("github", "issue_comment", payload, cfg).event is None


@pytest.mark.parametrize("event,name,drop", [
    ("pull_request_review", "pull_request_review.submitted", ("review", "id")),
    ("pull_request_review", "pull_request_review.submitted", ("pull_request", "head")),
    ("pull_request_review_comment", "pull_request_review_comment.created", ("comment", "user")),
    ("pull_request", "pull_request.synchronize", ("pull_request", "number")),
])
def test_a_conversation_event_without_its_documented_fields_is_an_unknown_shape(event, name, drop, cfg):
    """Counted towards dead-lettering by the starter, never acted on and never a crash."""
    from infra.events.triggers import UnknownShape

    payload = on_bosuns_branch(example(name))
    del payload[drop[0]][drop[1]]
    with pytest.raises(UnknownShape) as e:
        decide("github", event, payload, cfg)
    assert f"field {drop[0]}.{drop[1]}" in str(e.value)
