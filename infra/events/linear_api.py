"""Linear GraphQL (over httpx) for reporting to an agent session: activities and the session's external link; and
the state labels (``bosun:working``, ``bosun:blocked``, ``bosun:partial``, ``bosun:done``) on its issue.

Activities are created with ``agentActivityCreate``; content is one of
``{"type": "thought", "body"}``, ``{"type": "action", "action", "parameter", "result"?}``,
``{"type": "elicitation", "body"}``, ``{"type": "response", "body"}``, ``{"type": "error", "body"}``.

Idempotency: every activity gets an id derived from ``(session id, key)`` (UUID v5), passed as the input's ``id``
(Linear accepts a client-chosen UUID). A retry sends the same id; when Linear refuses it because it exists,
the activity is looked up by id and returned as is, so a retry never posts twice.

Usage from an activity::

    async with LinearClient.from_config(cfg) as linear:
        await linear.thought(session_id, "Reading the repository", key=f"{wf_id}:thought:1")
        await linear.response(session_id, "Opened PR #12", key=f"{wf_id}:response")
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from infra.events.github_api import STATE_PREFIX, STATES, ExternalServiceError

_ACTIVITY_NS = uuid.UUID("0b6f7f0e-3c3e-4d0e-8f55-6c1f1b9a2d11")

CREATE_ACTIVITY = """
mutation BosunAgentActivityCreate($input: AgentActivityCreateInput!) {
  agentActivityCreate(input: $input) { success agentActivity { id } }
}"""

GET_ACTIVITY = """
query BosunAgentActivity($id: String!) { agentActivity(id: $id) { id } }"""

UPDATE_SESSION = """
mutation BosunAgentSessionUpdate($id: String!, $input: AgentSessionUpdateInput!) {
  agentSessionUpdate(id: $id, input: $input) { success }
}"""


GET_ISSUE_LABELS = """
query BosunIssueLabels($id: String!) {
  issue(id: $id) { id team { id } labels { nodes { id name } } }
}"""

FIND_LABEL = """
query BosunFindLabel($name: String!) {
  issueLabels(filter: {name: {eq: $name}}) { nodes { id name team { id } } }
}"""

CREATE_LABEL = """
mutation BosunLabelCreate($input: IssueLabelCreateInput!) {
  issueLabelCreate(input: $input) { success issueLabel { id } }
}"""

UPDATE_ISSUE_LABELS = """
mutation BosunIssueLabels($id: String!, $input: IssueUpdateInput!) {
  issueUpdate(id: $id, input: $input) { success issue { labels { nodes { name } } } }
}"""

STATE_COLORS = {"working": "#5e6ad2", "blocked": "#eb5757", "partial": "#f2c94c", "done": "#4cb782"}


def activity_id(session_id: str, key: str) -> str:
    """The deterministic activity id for ``key`` in a session."""
    return str(uuid.uuid5(_ACTIVITY_NS, f"{session_id}\0{key}"))


@dataclass(frozen=True)
class Activity:
    id: str
    created: bool
    """False when the activity already existed (a retry)."""


class LinearClient:
    """A small async Linear GraphQL client. Use as an async context manager (or call ``aclose``)."""

    def __init__(self, api_key: str | None, url: str = "https://api.linear.app/graphql", *, timeout: float = 10.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        headers = {"Content-Type": "application/json", "User-Agent": "bosun"}
        if api_key:
            # Personal API keys go as-is; OAuth access tokens (agent apps) as Bearer tokens.
            headers["Authorization"] = api_key if api_key.startswith("lin_api_") else f"Bearer {api_key}"
        self.url = url
        self.http = httpx.AsyncClient(headers=headers, timeout=timeout, transport=transport)

    @classmethod
    def from_config(cls, cfg: Any, **kw: Any) -> LinearClient:
        """From an EventsConfig (its settings: key BOSUN_LINEAR_API_KEY, endpoint BOSUN_LINEAR_API_URL)."""
        return cls(cfg.secret("linear_api_key"), cfg.settings.linear_api_url, **kw)

    async def __aenter__(self) -> LinearClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def graphql(self, query: str, variables: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict]]:
        """POST one operation; returns (data, errors). Transport and HTTP failures raise ExternalServiceError."""
        try:
            r = await self.http.post(self.url, json={"query": query, "variables": variables})
        except httpx.HTTPError as e:
            raise ExternalServiceError(f"Linear: {type(e).__name__}: {e}", retryable=True) from None
        if r.status_code >= 500 or r.status_code in (408, 429):
            raise ExternalServiceError(f"Linear answered {r.status_code}", status=r.status_code, retryable=True)
        try:
            body = r.json()
        except ValueError:
            raise ExternalServiceError(f"Linear answered {r.status_code} with non-JSON: {r.text[:200]}",
                                       status=r.status_code) from None
        errors = body.get("errors") or []
        if r.status_code >= 400 and not errors:
            raise ExternalServiceError(f"Linear answered {r.status_code}: {r.text[:200]}", status=r.status_code)
        if any((e.get("extensions") or {}).get("code") == "RATELIMITED" for e in errors):
            raise ExternalServiceError("Linear rate limit reached", status=r.status_code, retryable=True)
        return body.get("data"), errors

    async def create_activity(self, session_id: str, content: dict[str, Any], *, key: str,
                              ephemeral: bool = False) -> Activity:
        """Create an activity once per ``key`` (see the module docstring)."""
        aid = activity_id(session_id, key)
        inp: dict[str, Any] = {"id": aid, "agentSessionId": session_id, "content": content}
        if ephemeral:
            inp["ephemeral"] = True
        data, errors = await self.graphql(CREATE_ACTIVITY, {"input": inp})
        result = (data or {}).get("agentActivityCreate") or {}
        if not errors and result.get("success"):
            return Activity((result.get("agentActivity") or {}).get("id") or aid, created=True)
        # Refused: if the activity exists (a retry of a request that went through), that is success.
        found, _ = await self.graphql(GET_ACTIVITY, {"id": aid})
        if found and (found.get("agentActivity") or {}).get("id") == aid:
            return Activity(aid, created=False)
        message = "; ".join(e.get("message", "?") for e in errors) or "success=false"
        raise ExternalServiceError(f"Linear agentActivityCreate for session {session_id} failed: {message}")

    async def thought(self, session_id: str, body: str, *, key: str, ephemeral: bool = False) -> Activity:
        return await self.create_activity(session_id, {"type": "thought", "body": body}, key=key, ephemeral=ephemeral)

    async def action(self, session_id: str, action: str, parameter: str, *, key: str, result: str | None = None,
                     ephemeral: bool = False) -> Activity:
        content: dict[str, Any] = {"type": "action", "action": action, "parameter": parameter}
        if result is not None:
            content["result"] = result
        return await self.create_activity(session_id, content, key=key, ephemeral=ephemeral)

    async def elicitation(self, session_id: str, body: str, *, key: str) -> Activity:
        return await self.create_activity(session_id, {"type": "elicitation", "body": body}, key=key)

    async def response(self, session_id: str, body: str, *, key: str) -> Activity:
        return await self.create_activity(session_id, {"type": "response", "body": body}, key=key)

    async def error(self, session_id: str, body: str, *, key: str) -> Activity:
        return await self.create_activity(session_id, {"type": "error", "body": body}, key=key)

    async def _ok(self, query: str, variables: dict[str, Any], field: str) -> dict[str, Any]:
        data, errors = await self.graphql(query, variables)
        result = (data or {}).get(field)
        if errors or result is None:
            message = "; ".join(e.get("message", "?") for e in errors) or f"no {field}"
            raise ExternalServiceError(f"Linear {field} failed: {message}")
        return result

    async def set_state(self, issue_id: str, state: str) -> list[str]:
        """Make ``bosun:<state>`` the issue's only bosun state label (the label made in the issue's team when it
        does not exist yet). Returns the issue's label names afterwards."""
        if state not in STATES:
            raise ValueError(f"state {state!r} is not one of {', '.join(STATES)}")
        issue = await self._ok(GET_ISSUE_LABELS, {"id": issue_id}, "issue")
        team = (issue.get("team") or {}).get("id")
        wanted = STATE_PREFIX + state
        labels = [lb for lb in (issue.get("labels") or {}).get("nodes") or [] if isinstance(lb, dict)]
        found = await self._ok(FIND_LABEL, {"name": wanted}, "issueLabels")
        usable = [lb for lb in found.get("nodes") or [] if isinstance(lb, dict) and
                  ((lb.get("team") or {}).get("id") in (None, team))]
        if usable:
            label_id = usable[0]["id"]
        else:
            made = await self._ok(CREATE_LABEL, {"input": {"name": wanted, "color": STATE_COLORS[state],
                                                           **({"teamId": team} if team else {})}},
                                  "issueLabelCreate")
            label_id = (made.get("issueLabel") or {}).get("id")
        others = {STATE_PREFIX + s for s in STATES} - {wanted}
        ids = [lb["id"] for lb in labels if lb.get("name") not in others and lb.get("id") != label_id] + [label_id]
        done = await self._ok(UPDATE_ISSUE_LABELS, {"id": issue_id, "input": {"labelIds": ids}}, "issueUpdate")
        return [lb.get("name") for lb in ((done.get("issue") or {}).get("labels") or {}).get("nodes") or []]

    async def set_external_url(self, session_id: str, label: str, url: str) -> None:
        """Link the session to the run (``externalUrls``; also keeps a new session from being shown unresponsive).
        Idempotent: it sets the same value again."""
        data, errors = await self.graphql(UPDATE_SESSION, {"id": session_id,
                                                           "input": {"externalUrls": [{"label": label, "url": url}]}})
        if errors or not ((data or {}).get("agentSessionUpdate") or {}).get("success"):
            message = "; ".join(e.get("message", "?") for e in errors) or "success=false"
            raise ExternalServiceError(f"Linear agentSessionUpdate for session {session_id} failed: {message}")
