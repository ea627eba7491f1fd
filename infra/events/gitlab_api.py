"""GitLab REST v4 (over httpx) for status back: notes, replies in threads, state labels, merge requests, award
emoji, and the access level a trigger's author has.

Every side effect is idempotent, as on GitHub (infra/events/github_api.py), so an activity retry never posts twice:

* a note carries the hidden marker ``<!-- bosun:<key> -->``; ``upsert_note`` looks for it first and edits that note;
* state labels go in one ``PUT`` with ``add_labels`` and ``remove_labels`` (GitLab applies both at once);
* ``open_merge_request`` returns the open merge request of the source branch if there is one.

A project is addressed by its numeric id or its URL-encoded path (``group%2Fproject``). The token is a project or
group access token (or a personal one), sent as ``PRIVATE-TOKEN``.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

import httpx

from infra.events.github_api import (
    STATE_PREFIX,
    STATES,
    Comment,
    ExternalServiceError,
    PullRequest,
    RestClient,
    marked,
    marker,
)

Noteable = Literal["issue", "merge_request"]

DEVELOPER = 30
"""GitLab's access level of the Developer role (Reporter 20, Maintainer 40, Owner 50)."""


def project_path(project: int | str) -> str:
    """``/projects/<id or URL-encoded path>``."""
    if isinstance(project, int) or str(project).isdigit():
        return f"/projects/{int(project)}"
    text = str(project).strip("/")
    if not text or "//" in text or ".." in text.split("/"):
        raise ValueError(f"GitLab project {project!r} is neither an id nor a path group/project")
    return f"/projects/{quote(text, safe='')}"


def _collection(noteable: Noteable) -> str:
    if noteable not in ("issue", "merge_request"):
        raise ValueError(f"noteable {noteable!r} is not 'issue' or 'merge_request'")
    return "issues" if noteable == "issue" else "merge_requests"


class GitLabClient(RestClient):
    """A small async GitLab REST client (v4). Use as an async context manager (or call ``aclose``)."""

    service = "GitLab"

    def __init__(self, token: str | None, base_url: str = "https://gitlab.com/api/v4", *, timeout: float = 15.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        super().__init__(base_url, {"PRIVATE-TOKEN": token} if token else {}, timeout=timeout, transport=transport)

    @classmethod
    def from_config(cls, cfg: Any, **kw: Any) -> GitLabClient:
        """From an EventsConfig (its settings: token BOSUN_GITLAB_TOKEN, base URL BOSUN_GITLAB_API_URL)."""
        return cls(cfg.secret("gitlab_token"), cfg.settings.gitlab_api_url, **kw)

    # ---------------------------------------------------------------- notes

    async def upsert_note(self, project: int | str, noteable: Noteable, iid: int, key: str, body: str) -> Comment:
        """Post ``body`` on the issue or merge request once per ``key``: a retry finds the marker and edits that note
        (only when the text changed) instead of posting a second one."""
        base = f"{project_path(project)}/{_collection(noteable)}/{int(iid)}/notes"
        return await self._upsert(base, "PUT", base + "/{id}", key, body, {"sort": "asc", "order_by": "created_at"})

    async def reply(self, project: int | str, noteable: Noteable, iid: int, discussion_id: str, key: str,
                    body: str) -> Comment:
        """Answer in a thread (a discussion), once per ``key``."""
        mark = marker(key)
        if not discussion_id or not discussion_id.isalnum():
            raise ValueError(f"discussion id {discussion_id[:80]!r} is not a GitLab discussion id")
        base = f"{project_path(project)}/{_collection(noteable)}/{int(iid)}/discussions/{discussion_id}"
        thread = (await self._request("GET", base)).json()
        for n in thread.get("notes") or []:
            if mark in (n.get("body") or ""):
                return Comment.of(n, created=False)
        return Comment.of((await self._request("POST", f"{base}/notes", json={"body": marked(body, key)})).json(),
                          created=True)

    async def award(self, project: int | str, noteable: Noteable, iid: int, note_id: int, name: str = "eyes") -> None:
        """An award emoji on a note (GitLab refuses a second one of the same name with 404/400: idempotent)."""
        await self._request("POST", f"{project_path(project)}/{_collection(noteable)}/{int(iid)}/notes/"
                                    f"{int(note_id)}/award_emoji", json={"name": name}, ok=(200, 201, 400, 404))

    # ---------------------------------------------------------------- labels

    async def set_state(self, project: int | str, noteable: Noteable, iid: int,
                        state: Literal["working", "blocked", "partial", "done"]) -> list[str]:
        """Make ``bosun:<state>`` the only bosun state label (one request). Returns the labels afterwards."""
        if state not in STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(STATES)}")
        others = [STATE_PREFIX + s for s in STATES if s != state]
        r = await self._request("PUT", f"{project_path(project)}/{_collection(noteable)}/{int(iid)}",
                                json={"add_labels": STATE_PREFIX + state, "remove_labels": ",".join(others)})
        return [str(x) for x in r.json().get("labels") or []]

    # ---------------------------------------------------------------- people

    async def access_level(self, project: int | str, user_id: int) -> int:
        """The user's access level to the project, inherited ones included (0: not a member)."""
        try:
            r = await self._request("GET", f"{project_path(project)}/members/all/{int(user_id)}")
        except ExternalServiceError as e:
            if e.status == 404:
                return 0
            raise
        level = r.json().get("access_level")
        return level if isinstance(level, int) and not isinstance(level, bool) else 0

    # ---------------------------------------------------------------- pipelines

    async def latest_pipeline_status(self, project: int | str, ref: str) -> str | None:
        """The status of the newest pipeline on ``ref`` (a branch), or None when it has none."""
        r = await self._request("GET", f"{project_path(project)}/pipelines",
                                params={"ref": ref, "per_page": 1, "order_by": "id", "sort": "desc"})
        items = r.json()
        return str(items[0].get("status")) if isinstance(items, list) and items and isinstance(items[0], dict) \
            else None

    async def job_log_tail(self, project: int | str, job_id: int, cap: int = 20_000) -> str:
        """The last ``cap`` characters of a job's log (``GET /projects/:id/jobs/:job_id/trace``)."""
        return await self._tail(f"{project_path(project)}/jobs/{int(job_id)}/trace", cap)

    # ---------------------------------------------------------------- merge requests

    async def find_merge_request(self, project: int | str, source_branch: str) -> PullRequest | None:
        r = await self._request("GET", f"{project_path(project)}/merge_requests",
                                params={"source_branch": source_branch, "state": "opened", "per_page": 10})
        for mr in r.json():
            if mr.get("source_branch") == source_branch:
                return PullRequest(mr["iid"], mr.get("web_url"), mr["source_branch"], mr.get("target_branch", ""),
                                   False)
        return None

    async def default_branch(self, project: int | str) -> str:
        return (await self._request("GET", project_path(project))).json()["default_branch"]

    async def open_merge_request(self, project: int | str, source_branch: str, title: str, body: str, *,
                                 target: str | None = None, key: str | None = None) -> PullRequest:
        """Open a merge request from ``source_branch`` (idempotent: the open one of that branch is returned)."""
        existing = await self.find_merge_request(project, source_branch)
        if existing:
            return existing
        target = target or await self.default_branch(project)
        text = marked(body, key) if key else body
        try:
            r = await self._request("POST", f"{project_path(project)}/merge_requests",
                                    json={"source_branch": source_branch, "target_branch": target, "title": title,
                                          "description": text, "remove_source_branch": False})
        except ExternalServiceError as e:
            if e.status == 409:  # "Another open merge request already exists for this source branch"
                found = await self.find_merge_request(project, source_branch)
                if found:
                    return found
            raise
        mr = r.json()
        return PullRequest(mr["iid"], mr.get("web_url"), mr["source_branch"], mr.get("target_branch", target), True)
