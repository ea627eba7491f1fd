"""What the trigger rules decide (``Decision``, ``Origin``, ``Reply``), the workflow ids of the business keys
(infra/events/triggers.py has their table) and the helpers every forge's rules share."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from infra.events.conversation import PREvent

MARKER_PREFIX = "<!-- bosun:"


class UnknownShape(Exception):
    """A payload of a known event type that does not have the documented fields."""


class Reply(BaseModel):
    """One thing a round answers."""

    kind: Literal["review", "review_comment", "comment"]
    comment_id: int | None = None
    author: str = ""
    id: str = ""
    discussion_id: str | None = None
    """GitLab: the thread to answer in."""


class Origin(BaseModel):
    """Where the task came from, so status can be reported back there. Stored in the workflow memo (``origin``)."""

    source: Literal["github", "gitlab", "linear"]
    repo: str | None = None
    """GitHub ``owner/repo``; GitLab the project's ``path_with_namespace``."""
    number: int | None = None
    """GitHub issue or pull request number; GitLab the issue's or merge request's iid."""
    noteable: Literal["issue", "merge_request"] | None = None
    """GitLab: whether ``number`` is an issue or a merge request (they have separate APIs)."""
    project_id: int | None = None
    """GitLab: the project's numeric id."""
    discussion_id: str | None = None
    """GitLab: the thread of the note that triggered (the answer goes there)."""
    head_branch: str | None = None
    """GitHub: the branch of a failed check / the pull request head."""
    base_branch: str | None = None
    """GitHub: the branch a pull request goes into."""
    url: str | None = None
    agent_session_id: str | None = None
    """Linear agent session (activities go there)."""
    issue_id: str | None = None
    """Linear issue id."""
    issue_identifier: str | None = None
    comment_id: int | None = None
    """GitHub: the comment that triggered (the starter reacts to it); GitLab: the note."""
    push_to_head: bool = False
    """A pull request conversation's round: its commit goes onto ``head_branch`` itself, no new pull request."""
    conversation: str | None = None
    """The conversation's workflow id (its one status comment is keyed by it)."""
    round: int | None = None
    replies: list[Reply] = []
    """What the round answers: review comments in their threads, reviews and comments in one comment."""
    notes: list[str] = []
    """What the conversation set aside and why (shown in the status comment)."""


class Decision(BaseModel):
    """What the starter does with one event."""

    kind: Literal["start", "follow_up", "cancel", "ignore", "converse"]
    reason: str
    workflow_id: str | None = None
    task: str | None = None
    """The task text when a workflow is started (also by a follow-up that finds none running)."""
    follow_up: str | None = None
    """The ``follow_up`` signal's payload: the follow-up text as the person wrote it."""
    repo: str | None = None
    """Repository path or clone URL (already mapped through the configuration)."""
    ref: str = "HEAD"
    pull_request: int | None = None
    """A pull request whose head the task starts from, to be looked up by the starter (a comment event does not
    carry the head)."""
    origin: Origin | None = None
    summary: str = ""
    event: PREvent | None = None
    """``converse``: what the pull request's workflow receives (signal-with-start of PullRequestWorkflow). On a
    ``follow_up`` of a pull request comment: the event its conversation would receive, if the starter finds the
    pull request is bosun's (``bosun_head``)."""
    author_id: int | None = None
    """GitLab: the note's author, whose access level to the project the starter checks before acting (a note
    carries no role, unlike GitHub's author_association)."""


def ignore(reason: str) -> Decision:
    return Decision(kind="ignore", reason=reason)


# ---------------------------------------------------------------- ids and names

def github_id(repo: str, kind: Literal["issue", "pr", "ci"], key: str | int) -> str:
    return f"gh:{repo}:{kind}:{key}"


def gitlab_id(project: str, kind: Literal["issue", "mr", "ci"], key: str | int) -> str:
    return f"gl:{project}:{kind}:{key}"


def linear_session_id(session_id: str) -> str:
    return f"linear:session:{session_id}"


def linear_issue_id(issue_id: str) -> str:
    return f"linear:issue:{issue_id}"


def parse_workflow_id(workflow_id: str) -> dict[str, str] | None:
    """The business key of an event-started workflow id, e.g. ``{"source": "github", "repo": "acme/api",
    "kind": "issue", "key": "7"}``; None for other ids."""
    m = re.fullmatch(r"gh:([^:/]+/[^:]+):(issue|pr|ci|conversation):(.+)", workflow_id)
    if m:
        return {"source": "github", "repo": m.group(1), "kind": m.group(2), "key": m.group(3)}
    m = re.fullmatch(r"gl:([^:/]+(?:/[^:/]+)+):(issue|mr|ci|conversation):(.+)", workflow_id)
    if m:
        return {"source": "gitlab", "repo": m.group(1), "kind": m.group(2), "key": m.group(3)}
    m = re.fullmatch(r"linear:(session|issue):(.+)", workflow_id)
    if m:
        return {"source": "linear", "kind": m.group(1), "key": m.group(2)}
    return None


# ---------------------------------------------------------------- helpers

def parse_as(model: type[BaseModel], payload: dict[str, Any], what: str) -> Any:
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UnknownShape(f"{what}: field {where}: {err['msg']}") from None


def mentions(text: str | None, mention: str) -> bool:
    if not text or not mention:
        return False
    return re.search(rf"(?<![\w@]){re.escape(mention)}(?![\w-])", text, re.IGNORECASE) is not None








def issue_task(title: str, body: str | None, where: str, url: str | None) -> str:
    text = title.strip()
    if body and body.strip():
        text += "\n\n" + body.strip()
    return f"{text}\n\n({where}{': ' + url if url else ''})"
