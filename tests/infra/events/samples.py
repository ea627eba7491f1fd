"""Webhook payloads shaped like GitHub's and Linear's documented examples (trimmed to realistic subsets), and GitLab's
documented examples themselves (tests/infra/events/gitlab/)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

from infra.events.verify import sign_github, sign_linear

GH_SECRET = "It's a Secret to Everybody"
LINEAR_SECRET = "lin_wh_test_secret"
REPO = "octo-org/hello-world"


def _repo(full_name: str = REPO) -> dict[str, Any]:
    owner, name = full_name.split("/")
    return {"id": 1296269, "name": name, "full_name": full_name, "private": False,
            "owner": {"login": owner, "id": 1, "type": "Organization"},
            "html_url": f"https://github.com/{full_name}", "clone_url": f"https://github.com/{full_name}.git",
            "default_branch": "main"}


def _user(login: str = "octocat", kind: str = "User") -> dict[str, Any]:
    return {"login": login, "id": 583231, "type": kind, "site_admin": False}


def issue(number: int = 7, title: str = "Median of an even list is wrong", body: str = "median([1,2,3,4]) gives 3",
          pull_request: bool = False) -> dict[str, Any]:
    out = {"id": 1000 + number, "number": number, "title": title, "body": body, "state": "open",
           "html_url": f"https://github.com/{REPO}/issues/{number}", "user": _user(), "labels": [],
           "author_association": "MEMBER"}
    if pull_request:
        out["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{number}"}
    return out


def issues_labeled(number: int = 7, label: str = "bosun", repo: str = REPO) -> dict[str, Any]:
    return {"action": "labeled", "issue": issue(number), "label": {"id": 208045946, "name": label,
                                                                   "color": "f29513", "default": False},
            "repository": _repo(repo), "sender": _user()}


def issue_comment(body: str, number: int = 7, association: str = "MEMBER", login: str = "octocat",
                  kind: str = "User", on_pr: bool = False, comment_id: int = 5001) -> dict[str, Any]:
    return {"action": "created", "issue": issue(number, pull_request=on_pr),
            "comment": {"id": comment_id, "body": body, "user": _user(login, kind), "author_association": association,
                        "html_url": f"https://github.com/{REPO}/issues/{number}#issuecomment-{comment_id}",
                        "created_at": "2026-11-02T10:00:00Z"},
            "repository": _repo(), "sender": _user(login, kind)}


def check_run_completed(conclusion: str = "failure", branch: str = "bosun/gh-octo-org-hello-world-issue-7",
                        sha: str = "d6fde92930d4715a2b49857d24b940956b26d2d3") -> dict[str, Any]:
    return {"action": "completed",
            "check_run": {"id": 128620228, "name": "tests", "head_sha": sha, "status": "completed",
                          "conclusion": conclusion, "html_url": f"https://github.com/{REPO}/runs/128620228",
                          "details_url": "https://example.com/ci/1",
                          "check_suite": {"id": 118578147, "head_branch": branch, "head_sha": sha}},
            "repository": _repo(), "sender": _user()}


def workflow_run_completed(conclusion: str = "failure", branch: str = "bosun/gh-octo-org-hello-world-issue-7",
                           sha: str = "d6fde92930d4715a2b49857d24b940956b26d2d3") -> dict[str, Any]:
    return {"action": "completed",
            "workflow_run": {"id": 30433642, "name": "CI", "head_branch": branch, "head_sha": sha,
                             "status": "completed", "conclusion": conclusion,
                             "html_url": f"https://github.com/{REPO}/actions/runs/30433642"},
            "repository": _repo(), "sender": _user()}


def linear_agent_session(action: str = "created", session_id: str = "sess-1", text: str | None = None,
                         signal: str | None = None, team: str = "ENG", ts_ms: int | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "type": "AgentSessionEvent", "action": action, "createdAt": "2026-11-02T10:00:00.000Z",
        "organizationId": "org-1", "oauthClientId": "oauth-1", "appUserId": "app-user-1",
        "agentSession": {"id": session_id, "status": "pending", "creatorId": "user-1",
                         "issue": {"id": "issue-uuid-1", "identifier": f"{team}-42", "title": "Fix the median",
                                   "description": "median of an even list is wrong",
                                   "url": f"https://linear.app/acme/issue/{team}-42", "team": {"key": team}},
                         "comment": {"id": "comment-1", "body": "@bosun please fix this"}},
        "webhookTimestamp": ts_ms if ts_ms is not None else int(time.time() * 1000),
        "webhookId": str(uuid.uuid4())}
    if action == "created":
        payload["promptContext"] = ('<issue identifier="ENG-42"><title>Fix the median</title>'
                                    "<description>median of an even list is wrong</description></issue>")
    if action == "prompted":
        payload["agentActivity"] = {"id": str(uuid.uuid4()), "agentSessionId": session_id,
                                    "content": {"type": "prompt", "body": text or ""}, "signal": signal}
    return payload


def linear_issue_labelled(issue_id: str = "issue-uuid-9", label_id: str = "label-bosun",
                          before: list[str] | None = None, team: str = "ENG") -> dict[str, Any]:
    return {"action": "update", "type": "Issue", "createdAt": "2026-11-02T10:00:00.000Z",
            "data": {"id": issue_id, "identifier": f"{team}-9", "title": "Add a mode() function",
                     "description": "calc needs mode()", "url": f"https://linear.app/acme/issue/{team}-9",
                     "team": {"id": "team-1", "key": team},
                     "labelIds": [label_id, "label-other"],
                     "labels": [{"id": label_id, "name": "bosun"}, {"id": "label-other", "name": "backend"}]},
            "updatedFrom": {"labelIds": before if before is not None else ["label-other"],
                            "updatedAt": "2026-11-02T09:00:00.000Z"},
            "url": f"https://linear.app/acme/issue/{team}-9",
            "webhookTimestamp": int(time.time() * 1000), "webhookId": str(uuid.uuid4())}


def github_request(event: str, payload: dict[str, Any] | bytes, delivery: str | None = None,
                   secret: str = GH_SECRET) -> tuple[bytes, dict[str, str]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": event,
               "X-GitHub-Delivery": delivery or str(uuid.uuid4()), "X-Hub-Signature-256": sign_github(secret, body),
               "User-Agent": "GitHub-Hookshot/044aadd"}
    return body, headers


def linear_request(payload: dict[str, Any] | bytes, delivery: str | None = None, event: str | None = None,
                   secret: str = LINEAR_SECRET) -> tuple[bytes, dict[str, str]]:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    if event is None:
        event = payload.get("type", "Issue") if isinstance(payload, dict) else "Issue"
    headers = {"Content-Type": "application/json; charset=utf-8", "Linear-Event": event,
               "Linear-Delivery": delivery or str(uuid.uuid4()), "Linear-Signature": sign_linear(secret, body),
               "User-Agent": "Linear-Webhook"}
    return body, headers


# ---------------------------------------------------------------- GitLab (the documented example payloads, changed
# only where a test needs a label, a mention or a failure: tests/infra/events/gitlab/README.md says where each is from)

GL_SECRET = "gitlab-secret-token"
GL_PROJECT = "gitlab-org/gitlab-test"
GITLAB_DIR = Path(__file__).parent / "gitlab"
GITLAB_EVENTS = {"issue_hook": "Issue Hook", "note_hook_issue": "Note Hook", "note_hook_merge_request": "Note Hook",
                 "note_hook_commit": "Note Hook", "note_hook_snippet": "Note Hook",
                 "merge_request_hook": "Merge Request Hook", "pipeline_hook": "Pipeline Hook"}
"""Each fixture file and the X-Gitlab-Event GitLab sends with it."""


def gitlab_example(name: str) -> dict[str, Any]:
    return json.loads((GITLAB_DIR / f"{name}.json").read_text())


def _label(title: str) -> dict[str, Any]:
    return {"id": 901, "title": title, "color": "#428BCA", "project_id": 5, "type": "ProjectLabel"}


def gitlab_labelled(kind: str = "issue_hook", iid: int | None = None, label: str = "bosun",
                    project: str = GL_PROJECT) -> dict[str, Any]:
    """The documented Issue/Merge Request Hook with ``label`` added by an update."""
    payload = gitlab_example(kind)
    payload["project"]["path_with_namespace"] = project
    if iid is not None:
        payload["object_attributes"]["iid"] = iid
    payload["object_attributes"]["action"] = "update"
    before = list(payload.get("labels") or [])
    payload["labels"] = [*before, _label(label)]
    payload["changes"] = {**payload.get("changes", {}), "labels": {"previous": before, "current": payload["labels"]}}
    return payload


def gitlab_note(on: str = "issue", text: str = "@bosun please fix this", iid: int | None = None,
                username: str = "root", user_id: int = 1, project: str = GL_PROJECT) -> dict[str, Any]:
    """The documented Note Hook on an issue or a merge request, saying ``text``."""
    payload = gitlab_example(f"note_hook_{on}")
    payload["project"]["path_with_namespace"] = project
    payload["object_attributes"]["note"] = text
    payload["user"].update({"username": username, "id": user_id})
    if iid is not None:
        payload["issue" if on == "issue" else "merge_request"]["iid"] = iid
    return payload


def gitlab_pipeline(status: str = "failed", ref: str = "bosun/gl-gitlab-org-gitlab-test-issue-17",
                    sha: str | None = None, project: str = GL_PROJECT) -> dict[str, Any]:
    """The documented Pipeline Hook, finished with ``status`` on ``ref``; one of its jobs failed."""
    payload = gitlab_example("pipeline_hook")
    payload["project"]["path_with_namespace"] = project
    payload["object_attributes"].update({"status": status, "ref": ref})
    if sha:
        payload["object_attributes"]["sha"] = sha
    if status == "failed":
        payload["builds"][0]["status"] = "failed"
    return payload


def gitlab_request(event: str, payload: dict[str, Any] | bytes, delivery: str | None = None,
                   token: str | None = GL_SECRET, idempotency_key: str | None = None) -> tuple[bytes, dict[str, str]]:
    """A delivery with the headers GitLab documents ("Delivery headers"); ``delivery`` is its Event-UUID and, unless
    given apart, its Idempotency-Key (a retry keeps both)."""
    delivery = delivery or str(uuid.uuid4())
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "GitLab/17.6.0", "X-Gitlab-Event": event,
               "X-Gitlab-Instance": "https://gitlab.example.com", "X-Gitlab-Webhook-UUID": str(uuid.uuid4()),
               "X-Gitlab-Event-UUID": delivery, "Idempotency-Key": idempotency_key or delivery}
    if token is not None:
        headers["X-Gitlab-Token"] = token
    return body, headers
