"""GitHub REST (over httpx) for reporting status back: comments, state labels, pull requests, and pushing branches.

Every side effect is idempotent, so an activity retry never posts twice:

* a comment carries a hidden marker ``<!-- bosun:<key> -->`` (key e.g. ``<workflow id>:<kind>``); ``upsert_comment``
  looks for it first and edits that comment instead of posting another one;
* state labels (``bosun:working``, ``bosun:blocked``, ``bosun:done``) are set by replacing the other state labels;
* ``open_pull_request`` returns the existing pull request for the head branch if there is one;

Usage from an activity::

    async with GitHubClient.from_config(cfg) as gh:
        await gh.upsert_comment("acme/api", 7, f"{wf_id}:started", f"Working on it: {url}")
        await gh.set_state("acme/api", 7, "working")
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

import httpx

from infra.errors import BosunError

STATES = ("working", "blocked", "partial", "done")
STATE_PREFIX = "bosun:"
API_VERSION = "2022-11-28"


class ExternalServiceError(BosunError):
    """GitHub or Linear refused or failed a request. ``retryable`` for 408/429/5xx, rate limits and network errors."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


def marker(key: str) -> str:
    """The hidden idempotency marker of a comment (``--`` cannot appear inside an HTML comment)."""
    return f"<!-- bosun:{key.replace('--', '-')} -->"


def marked(body: str, key: str) -> str:
    """``body`` as posted once per ``key``: its marker below it."""
    return f"{body.rstrip()}\n\n{marker(key)}"


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    html_url: str | None
    created: bool
    """False when the marker was found (the existing comment was kept or edited)."""

    @classmethod
    def of(cls, c: dict[str, Any], *, created: bool) -> Comment:
        """From a comment (GitHub) or a note (GitLab) as the API answers it."""
        return cls(c["id"], c.get("body") or "", c.get("html_url"), created=created)


@dataclass(frozen=True)
class PullRequest:
    number: int
    html_url: str | None
    head: str
    base: str
    created: bool


def _split(repo: str) -> tuple[str, str]:
    owner, sep, name = repo.partition("/")
    if not sep or not owner or not name or "/" in name:
        raise ValueError(f"repository {repo!r} is not of the form owner/name")
    return owner, name


def _path_repo(repo: str) -> str:
    owner, name = _split(repo)
    return f"/repos/{quote(owner, safe='')}/{quote(name, safe='')}"


class RestClient:
    """What GitHub's and GitLab's REST clients share: an httpx client, the refusal mapped to ExternalServiceError
    (retryable on 408, 429, 5xx, a rate limit and network errors; ``Retry-After`` kept), and Link-header paging.
    Use as an async context manager (or call ``aclose``)."""

    service = "GitHub"

    def __init__(self, base_url: str, headers: dict[str, str], *, timeout: float = 15.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.http = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers={"User-Agent": "bosun", **headers},
                                      timeout=timeout, transport=transport)

    async def __aenter__(self):  # noqa: ANN204 - the subclass
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def _request(self, method: str, path: str, *, ok: tuple[int, ...] = (200, 201), **kw: Any) -> httpx.Response:
        try:
            r = await self.http.request(method, path, **kw)
        except httpx.HTTPError as e:
            raise ExternalServiceError(f"{self.service} {method} {path}: {type(e).__name__}: {e}",
                                       retryable=True) from None
        if r.status_code in ok:
            return r
        retry_after = r.headers.get("retry-after")
        spent = r.headers.get("x-ratelimit-remaining") == "0" or r.headers.get("ratelimit-remaining") == "0"
        limited = r.status_code in (403, 429) and (spent or retry_after)
        retryable = r.status_code in (408, 429) or r.status_code >= 500 or bool(limited)
        try:
            answer = r.json()
            detail = answer.get("message", "") or answer.get("error", "") if isinstance(answer, dict) else ""
        except ValueError:
            detail = r.text[:200]
        raise ExternalServiceError(f"{self.service} {method} {path} answered {r.status_code}: {str(detail)[:300]}",
                                   status=r.status_code, retryable=retryable,
                                   retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None)

    async def _tail(self, path: str, cap: int, read_at_most: int = 4_000_000) -> str:
        """The last ``cap`` characters of a text download (a CI job's log), redirects followed: at most
        ``read_at_most`` bytes are read; the text is hostile: undecodable bytes replaced, control characters but
        newlines and tabs dropped."""
        try:
            async with self.http.stream("GET", path, follow_redirects=True) as r:
                if r.status_code != 200:
                    await r.aread()
                    raise ExternalServiceError(f"{self.service} GET {path} answered {r.status_code}",
                                               status=r.status_code,
                                               retryable=r.status_code in (408, 429) or r.status_code >= 500)
                tail = bytearray()
                async for chunk in r.aiter_bytes():
                    tail += chunk
                    if len(tail) > 8 * cap:
                        del tail[:len(tail) - 4 * cap]
                    read_at_most -= len(chunk)
                    if read_at_most <= 0:
                        break
        except httpx.HTTPError as e:
            raise ExternalServiceError(f"{self.service} GET {path}: {type(e).__name__}: {e}", retryable=True) from None
        text = bytes(tail).decode("utf-8", "replace")
        return "".join(ch for ch in text if ch in "\n\t" or (ch >= " " and ch != "\x7f"))[-cap:]

    async def _upsert(self, listed: str, edit_method: str, edit_path: str, key: str, body: str,
                      params: dict[str, Any] | None = None) -> Comment:
        """Post ``body`` to ``listed`` once per ``key``: a retry finds the marker among the comments there and edits
        that one (``edit_method`` on ``edit_path``, formatted with its ``id``; only when the text changed) instead of
        posting a second one."""
        mark, full = marker(key), marked(body, key)
        for c in await self._pages(listed, params):
            if mark in (c.get("body") or ""):
                if c.get("body") != full:
                    c = (await self._request(edit_method, edit_path.format(id=int(c["id"])),
                                             json={"body": full})).json()
                return Comment.of(c, created=False)
        return Comment.of((await self._request("POST", listed, json={"body": full})).json(), created=True)

    async def _pages(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list endpoint (follows the Link: rel="next" header)."""
        items: list[dict[str, Any]] = []
        url: str | None = path
        query: dict[str, Any] | None = {"per_page": 100, **(params or {})}
        while url:
            r = await self._request("GET", url, params=query)
            items.extend(r.json())
            m = re.search(r'<([^>]+)>;\s*rel="next"', r.headers.get("link", ""))
            url, query = (m.group(1), None) if m else (None, None)
        return items


class GitHubClient(RestClient):
    """A small async GitHub REST client. Use as an async context manager (or call ``aclose``)."""

    def __init__(self, token: str | None, base_url: str = "https://api.github.com", *, timeout: float = 15.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": API_VERSION}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        super().__init__(base_url, headers, timeout=timeout, transport=transport)

    @classmethod
    def from_config(cls, cfg: Any, **kw: Any) -> GitHubClient:
        """From an EventsConfig (its settings: token BOSUN_GITHUB_TOKEN, base URL BOSUN_GITHUB_API_URL)."""
        return cls(cfg.secret("github_token"), cfg.settings.github_api_url, **kw)

    # ---------------------------------------------------------------- comments

    async def upsert_comment(self, repo: str, number: int, key: str, body: str) -> Comment:
        """Post ``body`` on issue/PR ``number`` once per ``key``: a retry finds the marker and edits that comment
        (only when the text changed) instead of posting a second one."""
        base = _path_repo(repo)
        return await self._upsert(f"{base}/issues/{number}/comments", "PATCH", f"{base}/issues/comments/{{id}}", key,
                                  body)

    async def reply_in_thread(self, repo: str, number: int, comment_id: int, key: str, body: str) -> Comment:
        """Answer a review comment in its thread, once per ``key`` (a retry finds its reply by the marker)."""
        mark = marker(key)
        base = _path_repo(repo)
        for c in await self._pages(f"{base}/pulls/{int(number)}/comments"):
            if c.get("in_reply_to_id") == comment_id and mark in (c.get("body") or ""):
                return Comment.of(c, created=False)
        r = await self._request("POST", f"{base}/pulls/{int(number)}/comments/{int(comment_id)}/replies",
                                json={"body": marked(body, key)})
        return Comment.of(r.json(), created=True)

    async def check_conclusions(self, repo: str, ref: str, name: str) -> list[str]:
        """The conclusions of the check runs named ``name`` on ``ref`` (a branch or a commit); completed ones only."""
        r = await self._request("GET", f"{_path_repo(repo)}/commits/{quote(ref, safe='')}/check-runs",
                                params={"check_name": name, "per_page": 20})
        answer = r.json()
        runs = answer.get("check_runs") if isinstance(answer, dict) else None
        return [str(c.get("conclusion")) for c in runs or [] if isinstance(c, dict) and c.get("status") == "completed"]

    async def job_log_tail(self, repo: str, job_id: int, cap: int = 20_000) -> str:
        """The last ``cap`` characters of a GitHub Actions job's log (``GET .../actions/jobs/{id}/logs`` answers with
        a redirect to the file; httpx does not send the token to the other host)."""
        return await self._tail(f"{_path_repo(repo)}/actions/jobs/{int(job_id)}/logs", cap)

    async def react(self, repo: str, comment_id: int, content: str = "eyes") -> None:
        """Add a reaction to an issue comment (GitHub answers 200 when it is already there: idempotent)."""
        await self._request("POST", f"{_path_repo(repo)}/issues/comments/{comment_id}/reactions",
                            json={"content": content})

    # ---------------------------------------------------------------- labels

    async def set_state(self, repo: str, number: int, state: Literal["working", "blocked", "partial", "done"]
                        ) -> list[str]:
        """Make ``bosun:<state>`` the only bosun state label on the issue/PR. Returns the labels afterwards."""
        if state not in STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(STATES)}")
        base = _path_repo(repo)
        wanted = STATE_PREFIX + state
        current = [lb["name"] for lb in await self._pages(f"{base}/issues/{number}/labels")]
        for name in current:
            if name != wanted and name in {STATE_PREFIX + s for s in STATES}:
                await self._request("DELETE", f"{base}/issues/{number}/labels/{quote(name, safe='')}", ok=(200, 404))
        if wanted not in current:
            r = await self._request("POST", f"{base}/issues/{number}/labels", json={"labels": [wanted]})
            return [lb["name"] for lb in r.json()]
        return [n for n in current if n == wanted or n not in {STATE_PREFIX + s for s in STATES}]

    # ---------------------------------------------------------------- repositories and pull requests

    async def default_branch(self, repo: str) -> str:
        r = await self._request("GET", _path_repo(repo))
        return r.json()["default_branch"]

    async def get_pull_request(self, repo: str, number: int) -> dict[str, Any]:
        return (await self._request("GET", f"{_path_repo(repo)}/pulls/{number}")).json()

    async def find_pull_request(self, repo: str, head_branch: str) -> PullRequest | None:
        owner, _ = _split(repo)
        r = await self._request("GET", f"{_path_repo(repo)}/pulls",
                                params={"head": f"{owner}:{head_branch}", "state": "all", "per_page": 10})
        for pr in r.json():
            if pr["head"]["ref"] == head_branch:
                return PullRequest(pr["number"], pr.get("html_url"), pr["head"]["ref"], pr["base"]["ref"], False)
        return None

    async def open_pull_request(self, repo: str, head_branch: str, title: str, body: str, *,
                                base: str | None = None, key: str | None = None) -> PullRequest:
        """Open a pull request from ``head_branch`` (idempotent: an existing one for that branch is returned)."""
        existing = await self.find_pull_request(repo, head_branch)
        if existing:
            return existing
        base = base or await self.default_branch(repo)
        text = marked(body, key) if key else body
        try:
            r = await self._request("POST", f"{_path_repo(repo)}/pulls",
                                    json={"title": title, "head": head_branch, "base": base, "body": text})
        except ExternalServiceError as e:
            if e.status == 422:  # e.g. "A pull request already exists" (a concurrent attempt won)
                found = await self.find_pull_request(repo, head_branch)
                if found:
                    return found
            raise
        pr = r.json()
        return PullRequest(pr["number"], pr.get("html_url"), pr["head"]["ref"], pr["base"]["ref"], True)
