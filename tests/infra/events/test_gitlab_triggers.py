"""GitLab's trigger rules over GitLab's own documented example payloads (tests/infra/events/gitlab/): each is
parsed, what it asks for is decided, and a bot, a system note, an edit or a pipeline on someone else's branch
starts nothing."""

from __future__ import annotations

import pytest

from infra.events.triggers import UnknownShape, decide, parse_workflow_id
from infra.events.verify import Rejected, require_gitlab_event
from tests.infra.events.conftest import make_cfg
from tests.infra.events.samples import (
    GITLAB_EVENTS,
    GL_PROJECT,
    gitlab_example,
    gitlab_labelled,
    gitlab_note,
    gitlab_pipeline,
)


@pytest.fixture(scope="module")
def cfg():
    return make_cfg(gitlab_repos={GL_PROJECT: "/srv/gitlab-test", "gitlabhq/gitlab-test": "/srv/gitlabhq"})


def gl(event_header: str, payload: dict, cfg):
    return decide("gitlab", require_gitlab_event(event_header), payload, cfg)


@pytest.mark.parametrize("name", sorted(GITLAB_EVENTS))
def test_every_documented_example_is_parsed_and_asks_for_nothing_as_it_stands(name, cfg):
    """The examples add no bosun label, mention nobody and report a pipeline that passed on master."""
    d = gl(GITLAB_EVENTS[name], gitlab_example(name), cfg)
    assert d.kind == "ignore", d
    expected = {"issue_hook": "does not add the label 'bosun'", "merge_request_hook": "does not add the label",
                "pipeline_hook": "pipeline 31 is success"}.get(name, "does not mention @bosun")
    assert expected in d.reason


def test_the_event_header_becomes_one_subject_token():
    assert require_gitlab_event("Issue Hook") == "issue_hook"
    assert require_gitlab_event(" Confidential  Note Hook ") == "confidential_note_hook"
    for bad in (None, "", "Issue.Hook", "Note Hook >", "x" * 65, "Ünïcode Hook"):
        with pytest.raises(Rejected) as e:
            require_gitlab_event(bad)
        assert e.value.status == 400 and e.value.field == "X-Gitlab-Event"


def test_a_label_added_to_an_issue_starts_a_task(cfg):
    d = gl("Issue Hook", gitlab_labelled("issue_hook", iid=23), cfg)
    assert d.kind == "start" and d.workflow_id == f"gl:{GL_PROJECT}:issue:23"
    assert d.repo == "/srv/gitlab-test" and d.ref == "HEAD"
    assert d.task.startswith("New API: create/update/delete file\n\nCreate new API")
    assert d.origin.source == "gitlab" and d.origin.noteable == "issue" and d.origin.number == 23
    assert d.origin.project_id == 1 and d.origin.repo == GL_PROJECT


def test_a_label_that_was_already_there_starts_nothing(cfg):
    payload = gitlab_labelled("issue_hook")
    payload["changes"]["labels"]["previous"] = payload["changes"]["labels"]["current"]
    assert gl("Issue Hook", payload, cfg).kind == "ignore"
    # removed: nothing either
    payload["changes"]["labels"]["current"] = []
    assert gl("Issue Hook", payload, cfg).kind == "ignore"


def test_an_issue_opened_with_the_label_starts_a_task(cfg):
    payload = gitlab_example("issue_hook")
    payload["object_attributes"]["action"] = "open"
    payload["labels"] = [{"id": 1, "title": "Bosun"}]
    payload.pop("changes")
    assert gl("Issue Hook", payload, cfg).kind == "start"
    payload["object_attributes"]["action"] = "close"
    assert gl("Issue Hook", payload, cfg).kind == "ignore"


def test_a_labelled_merge_request_works_on_its_branch_at_its_head(cfg):
    payload = gitlab_labelled("merge_request_hook", iid=1)
    d = gl("Merge Request Hook", payload, cfg)
    assert d.kind == "start" and d.workflow_id == f"gl:{GL_PROJECT}:mr:1"
    assert d.ref == payload["object_attributes"]["last_commit"]["id"]
    assert d.origin.noteable == "merge_request" and d.origin.head_branch == "ms-viewport"
    assert "branch ms-viewport" in d.task


@pytest.mark.parametrize("on,kind", [("issue", "issue"), ("merge_request", "mr")])
def test_a_mention_follows_up_and_names_its_author_for_the_access_check(on, kind, cfg):
    d = gl("Note Hook", gitlab_note(on, "@bosun please fix the flaky test", user_id=42), cfg)
    assert d.kind == "follow_up" and d.follow_up == "@bosun please fix the flaky test"
    assert d.workflow_id == f"gl:{GL_PROJECT}:{kind}:{17 if on == 'issue' else 1}"
    assert d.author_id == 42 and d.origin.comment_id == (1241 if on == "issue" else 1244)
    assert "@root asked:\n@bosun please fix the flaky test" in d.task
    if on == "merge_request":
        note = gitlab_example("note_hook_merge_request")
        assert d.ref == note["merge_request"]["last_commit"]["id"]
        assert d.origin.head_branch == note["merge_request"]["source_branch"]


def test_the_thread_of_a_mention_is_kept_for_the_answer(cfg):
    payload = gitlab_note("merge_request")
    payload["object_attributes"].update({"discussion_id": "6a9c1750b37d513a43987b574953fceb50b03ce7",
                                         "type": "DiffNote"})
    d = gl("Note Hook", payload, cfg)
    assert d.origin.discussion_id == "6a9c1750b37d513a43987b574953fceb50b03ce7"


@pytest.mark.parametrize("username", ["project_5_bot_3f1c2a", "group_9_bot", "service_account_group_12_abc",
                                      "support-bot", "GitLab-Alert-Bot", "ghost"])
def test_gitlab_bots_start_nothing(username, cfg):
    d = gl("Note Hook", gitlab_note("issue", "@bosun fix it", username=username), cfg)
    assert d.kind == "ignore" and "bot" in d.reason


@pytest.mark.parametrize("change,why", [
    ({"note": "@bosun fix it\n\n<!-- bosun:gl:x:result -->"}, "marker"),
    ({"system": True}, "system note"),
    ({"action": "update"}, "note update"),
    ({"note": "ping @bosun-team about it"}, "does not mention"),
    ({"note": "mail me at me@bosun.dev"}, "does not mention"),
])
def test_notes_that_are_not_a_person_asking_start_nothing(change, why, cfg):
    payload = gitlab_note("issue")
    payload["object_attributes"].update(change)
    d = gl("Note Hook", payload, cfg)
    assert d.kind == "ignore" and why in d.reason


@pytest.mark.parametrize("on", ["commit", "snippet"])
def test_a_mention_on_a_commit_or_a_snippet_is_not_acted_on(on, cfg):
    payload = gitlab_example(f"note_hook_{on}")
    payload["object_attributes"]["note"] = "@bosun look"
    d = gl("Note Hook", payload, cfg)
    assert d.kind == "ignore" and "issues and merge requests" in d.reason


def test_a_failed_pipeline_on_a_bosun_branch_starts_a_debugger_once_per_sha(cfg):
    payload = gitlab_pipeline("failed", ref="bosun/gl-issue-17")
    d = gl("Pipeline Hook", payload, cfg)
    sha = payload["object_attributes"]["sha"]
    assert d.kind == "start" and d.workflow_id == f"gl:{GL_PROJECT}:ci:{sha}" and d.ref == sha
    assert d.origin.head_branch == "bosun/gl-issue-17" and d.origin.number is None
    assert "failed jobs: production" in d.task and "pipeline 31 is failed" in d.task


@pytest.mark.parametrize("status,ref,tag,why", [
    ("failed", "master", False, "not a bosun/ branch"),
    ("failed", "bosun/x", True, "on tag"),
    ("success", "bosun/x", False, "is success"),
    ("running", "bosun/x", False, "is running"),
])
def test_other_pipelines_start_nothing(status, ref, tag, why, cfg):
    payload = gitlab_pipeline(status, ref=ref)
    payload["object_attributes"]["tag"] = tag
    d = gl("Pipeline Hook", payload, cfg)
    assert d.kind == "ignore" and why in d.reason


def test_an_unmapped_project_says_how_to_map_it(cfg):
    d = gl("Issue Hook", gitlab_labelled(project="acme/other"), cfg)
    assert d.kind == "ignore" and "BOSUN_EVENTS_GITLAB_REPOS" in d.reason and '"acme/other"' in d.reason


def test_events_without_a_rule_are_ignored_by_name(cfg):
    d = gl("Push Hook", {"object_kind": "push"}, cfg)
    assert d.kind == "ignore" and "push_hook has no trigger rule" in d.reason


@pytest.mark.parametrize("header,payload", [
    ("Issue Hook", {"object_kind": "issue", "object_attributes": {"iid": 1}}),
    ("Note Hook", {"object_kind": "note", "project": {"id": 1, "path_with_namespace": "a/b"}}),
    ("Pipeline Hook", {"object_kind": "pipeline", "project": {"id": "x", "path_with_namespace": "a/b"},
                       "object_attributes": {"id": 1, "sha": "a", "status": "failed"}}),
])
def test_a_known_event_without_its_documented_fields_is_an_unknown_shape(header, payload, cfg):
    with pytest.raises(UnknownShape) as e:
        gl(header, payload, cfg)
    assert "GitLab" in str(e.value) and "field" in str(e.value)


def test_gitlab_workflow_ids_are_business_keys_with_subgroups():
    assert parse_workflow_id("gl:acme/platform/api:mr:12") == {"source": "gitlab", "repo": "acme/platform/api",
                                                              "kind": "mr", "key": "12"}
    assert parse_workflow_id("gl:api:mr:12") is None  # a project always has a namespace


# ---------------------------------------------------------------- a merge request bosun opened: its conversation

def bosuns_mr_note(text: str = "@bosun please handle the empty list", **attrs) -> dict:
    payload = gitlab_note("merge_request", text)
    payload["merge_request"].update({"source_branch": "bosun/gl-gitlab-org-gitlab-test-issue-17",
                                     "source_project_id": 5, "target_project_id": 5})
    payload["object_attributes"].update(attrs)
    return payload


def test_a_mention_on_bosuns_merge_request_reaches_its_conversation(cfg):
    d = gl("Note Hook", bosuns_mr_note(), cfg)
    assert d.kind == "converse" and d.workflow_id == f"gl:{GL_PROJECT}:conversation:1"
    assert d.event.kind == "comment" and d.event.id == "note:1244" and d.event.actionable
    assert d.author_id == 1  # the starter still checks the author's access level
    assert d.origin.noteable == "merge_request" and d.origin.head_branch.startswith("bosun/")
    diff = gl("Note Hook", bosuns_mr_note(type="DiffNote", discussion_id="6a9c1750b37d513a"), cfg)
    assert diff.event.kind == "review_comment" and diff.event.discussion_id == "6a9c1750b37d513a"


def test_a_forks_merge_request_with_bosuns_branch_name_is_an_ordinary_follow_up(cfg):
    payload = bosuns_mr_note()
    payload["merge_request"]["source_project_id"] = 99
    d = gl("Note Hook", payload, cfg)
    assert d.kind == "follow_up" and d.workflow_id == f"gl:{GL_PROJECT}:mr:1"


@pytest.mark.parametrize("action,kind,merged", [("merge", "closed", True), ("close", "closed", False),
                                                ("update", "push", False)])
def test_the_merge_request_closing_or_a_push_reaches_the_conversation(action, kind, merged, cfg):
    payload = gitlab_example("merge_request_hook")
    payload["project"]["path_with_namespace"] = GL_PROJECT
    payload["object_attributes"].update({"action": action, "source_branch": "bosun/gl-x"})
    if action == "update":
        payload["object_attributes"]["oldrev"] = "0" * 40
    d = gl("Merge Request Hook", payload, cfg)
    assert d.kind == "converse" and d.event.kind == kind and d.event.merged is merged
    if kind == "push":
        assert d.event.sha == payload["object_attributes"]["last_commit"]["id"] and d.event.author == "root"


def test_a_failed_merge_request_pipeline_reaches_the_conversation_with_its_failed_job(cfg):
    payload = gitlab_pipeline("failed", ref="bosun/gl-x")
    payload["merge_request"]["source_branch"] = "bosun/gl-x"
    d = gl("Pipeline Hook", payload, cfg)
    assert d.kind == "converse" and d.workflow_id == f"gl:{GL_PROJECT}:conversation:1"
    assert d.event.kind == "check_failed" and d.event.job_id == 380  # the first failed job (samples fail 380 too)
    assert "test-build" in d.event.check and "production" in d.event.check
    assert d.event.id == f"check:{payload['object_attributes']['sha']}:pipeline-31"
    assert d.event.base_branch == "master"
