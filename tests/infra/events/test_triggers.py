"""Trigger rules and ids (pure), and the configuration loader."""

from __future__ import annotations

import json
import subprocess

import pytest

from infra.errors import ConfigError
from infra.events.config import load_events_config
from infra.events.triggers import UnknownShape, decide, parse_workflow_id
from tests.infra.events.conftest import make_cfg
from tests.infra.events.samples import (
    REPO,
    check_run_completed,
    issue_comment,
    issues_labeled,
    linear_agent_session,
    linear_issue_labelled,
    workflow_run_completed,
)
from workflows.models import branch_name


@pytest.fixture
def cfg():
    return make_cfg(repos={REPO: "/srv/hello"}, linear_repos={"ENG": REPO}, linear_default_repo=None)


def test_issue_labelled_bosun_starts_a_task(cfg):
    d = decide("github", "issues", issues_labeled(7), cfg)
    assert d.kind == "start" and d.workflow_id == f"gh:{REPO}:issue:7"
    assert d.repo == "/srv/hello" and d.ref == "HEAD"
    assert d.task.startswith("Median of an even list is wrong\n\nmedian([1,2,3,4]) gives 3")
    assert f"GitHub issue {REPO}#7: https://github.com/{REPO}/issues/7" in d.task
    assert d.origin.repo == REPO and d.origin.number == 7


def test_other_labels_and_actions_are_ignored(cfg):
    assert decide("github", "issues", issues_labeled(label="bug"), cfg).kind == "ignore"
    assert decide("github", "issues", {**issues_labeled(), "action": "opened"}, cfg).kind == "ignore"
    assert decide("github", "issues", issues_labeled(label="BOSUN"), cfg).kind == "start"  # labels are case-blind


def test_unmapped_repository_is_ignored_with_the_fix(cfg):
    d = decide("github", "issues", issues_labeled(repo="someone/else"), cfg)
    assert d.kind == "ignore" and "BOSUN_EVENTS_REPOS" in d.reason and "someone/else" in d.reason


@pytest.mark.parametrize("association", ["OWNER", "MEMBER", "COLLABORATOR"])
def test_mention_by_a_writer_follows_up(cfg, association):
    d = decide("github", "issue_comment", issue_comment("@bosun please fix it", association=association), cfg)
    assert d.kind == "follow_up" and d.workflow_id == f"gh:{REPO}:issue:7"
    assert d.follow_up == "@bosun please fix it"
    assert "@octocat asked:\n@bosun please fix it" in d.task
    assert d.origin.comment_id == 5001


@pytest.mark.parametrize("association", ["CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", "NONE", "MANNEQUIN"])
def test_mention_by_someone_without_write_access_is_ignored(cfg, association):
    d = decide("github", "issue_comment", issue_comment("@bosun fix", association=association), cfg)
    assert d.kind == "ignore" and association in d.reason


@pytest.mark.parametrize("body", ["please fix", "mail bosun@example.com", "@bosunbot fix", "ping @bosun-team"])
def test_no_mention_no_trigger(cfg, body):
    assert decide("github", "issue_comment", issue_comment(body), cfg).kind == "ignore"


def test_bots_and_our_own_comments_are_ignored(cfg):
    assert decide("github", "issue_comment", issue_comment("@bosun hi", kind="Bot"), cfg).kind == "ignore"
    own = issue_comment("@bosun is on it\n\n<!-- bosun:gh:x:issue:1:started -->")
    assert decide("github", "issue_comment", own, cfg).kind == "ignore"


def test_comment_on_a_pull_request_targets_the_pr(cfg):
    d = decide("github", "issue_comment", issue_comment("@Bosun rebase this", on_pr=True, number=12), cfg)
    assert d.kind == "follow_up" and d.workflow_id == f"gh:{REPO}:pr:12"
    assert d.pull_request == 12 and d.ref == "HEAD"  # the starter looks the head up
    on_issue = decide("github", "issue_comment", issue_comment("@bosun go", number=12), cfg)
    assert on_issue.pull_request is None


def test_failed_check_on_a_bosun_branch_starts_a_debugger(cfg):
    cr = decide("github", "check_run", check_run_completed(), cfg)
    wr = decide("github", "workflow_run", workflow_run_completed(), cfg)
    assert cr.kind == wr.kind == "start"
    assert cr.workflow_id == wr.workflow_id == f"gh:{REPO}:ci:d6fde92930d4715a2b49857d24b940956b26d2d3"
    assert cr.ref == "d6fde92930d4715a2b49857d24b940956b26d2d3"
    assert "CI failed on branch bosun/" in cr.task and "'tests' concluded failure" in cr.task
    assert cr.origin.head_branch.startswith("bosun/")


def test_passing_or_foreign_checks_are_ignored(cfg):
    assert decide("github", "check_run", check_run_completed("success"), cfg).kind == "ignore"
    assert decide("github", "check_run", check_run_completed(branch="main"), cfg).kind == "ignore"
    assert decide("github", "workflow_run", {**workflow_run_completed(), "action": "requested"}, cfg).kind == "ignore"


def test_linear_agent_session_lifecycle(cfg):
    created = decide("linear", "AgentSessionEvent", linear_agent_session("created", "s-9"), cfg)
    assert created.kind == "start" and created.workflow_id == "linear:session:s-9"
    assert created.repo == "/srv/hello"  # ENG -> octo-org/hello-world -> its path
    assert created.task.startswith('<issue identifier="ENG-42">')
    assert created.origin.agent_session_id == "s-9"
    prompted = decide("linear", "AgentSessionEvent", linear_agent_session("prompted", "s-9", text="also add docs"),
                      cfg)
    assert prompted.kind == "follow_up" and prompted.follow_up == "also add docs"
    assert prompted.workflow_id == "linear:session:s-9"
    stop = decide("linear", "AgentSessionEvent", linear_agent_session("prompted", "s-9", text="", signal="stop"), cfg)
    assert stop.kind == "cancel" and stop.workflow_id == "linear:session:s-9"


def test_linear_team_without_a_repository_is_ignored(cfg):
    d = decide("linear", "AgentSessionEvent", linear_agent_session(team="OPS"), cfg)
    assert d.kind == "ignore" and "'OPS'" in d.reason and "BOSUN_EVENTS_LINEAR_REPOS" in d.reason


def test_linear_issue_newly_labelled_bosun_starts(cfg):
    d = decide("linear", "Issue", linear_issue_labelled(), cfg)
    assert d.kind == "start" and d.workflow_id == "linear:issue:issue-uuid-9"
    already = decide("linear", "Issue", linear_issue_labelled(before=["label-bosun", "label-other"]), cfg)
    assert already.kind == "ignore"
    created = decide("linear", "Issue", {**linear_issue_labelled(), "action": "create", "updatedFrom": None}, cfg)
    assert created.kind == "start"


def test_unknown_shapes_raise(cfg):
    with pytest.raises(UnknownShape, match="field issue"):
        decide("github", "issues", {"action": "labeled", "repository": {"full_name": REPO}}, cfg)
    with pytest.raises(UnknownShape, match="agentSession"):
        decide("linear", "AgentSessionEvent", {"action": "created"}, cfg)


def test_events_without_rules_are_ignored(cfg):
    assert decide("github", "ping", {"zen": "Keep it logically awesome."}, cfg).kind == "ignore"
    assert decide("linear", "Reaction", {"action": "create"}, cfg).kind == "ignore"


@pytest.mark.parametrize("wf_id", [f"gh:{REPO}:issue:7", "gh:acme/.github:pr:3", "linear:session:abc-1",
                                   "gh:a/b.lock:ci:d6fde929", "weird id with spaces..and~^:?*["])
def test_branch_names_are_valid_git_refs(wf_id):
    name = branch_name(wf_id)
    assert name.startswith("bosun/")
    assert subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0, name


def test_workflow_ids_parse_back():
    assert parse_workflow_id(f"gh:{REPO}:issue:7") == {"source": "github", "repo": REPO, "kind": "issue", "key": "7"}
    assert parse_workflow_id("linear:session:s-1") == {"source": "linear", "kind": "session", "key": "s-1"}
    assert parse_workflow_id("task-20260101-abc") is None


def test_config_precedence_env_over_file(tmp_path, monkeypatch):
    f = tmp_path / "events.json"
    f.write_text(json.dumps({"repos": {"a/b": "/from/file"}, "model": "scripted:/x.jsonl", "poison_after": 7}))
    monkeypatch.setenv("BOSUN_EVENTS_CONFIG", str(f))
    monkeypatch.setenv("BOSUN_EVENTS_POISON_AFTER", "9")
    monkeypatch.setenv("BOSUN_GITHUB_WEBHOOK_SECRET", "from-env")
    monkeypatch.setenv("GITHUB_TOKEN", "must-not-be-read")
    cfg = load_events_config()
    assert cfg.repos == {"a/b": "/from/file"} and cfg.poison_after == 9 and cfg.model == "scripted:/x.jsonl"
    assert cfg.secret("github_webhook_secret") == "from-env" and cfg.settings.github_token is None
    assert load_events_config(repos={}).repos == {}  # explicit overrides win, dicts are not merged


def test_config_errors_name_the_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("BOSUN_EVENTS_POISON_AFTER", "many")
    with pytest.raises(ConfigError, match="BOSUN_EVENTS_POISON_AFTER"):
        load_events_config()
    monkeypatch.delenv("BOSUN_EVENTS_POISON_AFTER")
    monkeypatch.setenv("BOSUN_EVENTS_REPOS", "a/b=/x")
    with pytest.raises(ConfigError, match="BOSUN_EVENTS_REPOS must be JSON"):
        load_events_config()
    monkeypatch.delenv("BOSUN_EVENTS_REPOS")
    (tmp_path / "c.json").write_text('{"repoz": {}}')
    monkeypatch.setenv("BOSUN_EVENTS_CONFIG", str(tmp_path / "c.json"))
    with pytest.raises(ConfigError, match="unknown field"):
        load_events_config()


def test_shared_settings_come_from_settings_then_the_file(tmp_path, monkeypatch):
    """Secrets and API URLs are bosun Settings; the events file may set them below the environment."""
    from infra.settings import load_settings

    f = tmp_path / "events.json"
    f.write_text(json.dumps({"github_token": "from-file", "github_api_url": "http://file.example",
                             "ingress_port": 9001}))
    monkeypatch.setenv("BOSUN_EVENTS_CONFIG", str(f))
    monkeypatch.setenv("BOSUN_GITHUB_API_URL", "http://env.example")
    cfg = load_events_config()
    assert cfg.secret("github_token") == "from-file" and cfg.settings.github_api_url == "http://env.example"
    assert cfg.settings.ingress_port == 9001
    explicit = load_settings().model_copy(update={"ingress_port": 9100})
    assert load_events_config(explicit).settings.ingress_port == 9100  # set by the caller: the file does not win
    assert load_events_config(explicit, ingress_port=9200).settings.ingress_port == 9200
    assert "settings" not in load_events_config(repos={}).model_dump()  # never serialized (secrets live there)
    f.write_text(json.dumps({"ingress_port": "eighty"}))
    with pytest.raises(ConfigError, match="ingress_port='eighty' is invalid"):
        load_events_config()
