"""The pull request as a conversation: what one event on a pull request bosun opened means to its long-lived
workflow (``gh:<owner>/<repo>:conversation:<n>``; a GitLab merge request's ``gl:<group>/<project>:conversation:<iid>``;
workflows/pull_request.py).

Pure: the trigger rules (infra/events/triggers.py) turn a delivery into one :class:`PREvent`; the workflow keeps
them, batches them into rounds and applies the loop guards. Who may ask is decided here, from the payload:

* a submitted review is one unit. "Request changes" acts without a mention; a plain review ("commented",
  "approved") only when its text mentions bosun. Its inline comments arrive as events of their own, each naming
  the review: they join it;
* a loose inline comment (no submitted review yet) or a conversation comment acts only when it mentions bosun;
* only people with write access (author association OWNER, MEMBER, COLLABORATOR), never a bot, never text that
  carries bosun's marker (its own comments);
* a failed check on the head, a push, the closing: facts the workflow weighs (CI loop guards, a person's push).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, field_validator

CONVERSATION_SIGNAL = "pr_event"
"""The signal that carries one PREvent to the pull request's workflow."""
CONVERSATION_WORKFLOW = "PullRequestWorkflow"
MAX_BODY = 20_000
"""Characters of a comment an event carries into the workflow's state and history."""


def conversation_id(repo: str, number: int, source: str = "github") -> str:
    return f"{'gl' if source == 'gitlab' else 'gh'}:{repo}:conversation:{number}"


class PREvent(BaseModel):
    """One thing that happened on the pull request, as its workflow needs it. ``id`` is unique per thing (the same
    delivery sent twice, or a webhook redelivered days later, has the same id: it counts once)."""

    id: str
    """``review:<id>``, ``review_comment:<id>``, ``comment:<id>``, ``check:<sha>:<name>``, ``push:<sha>``,
    ``closed``."""
    kind: Literal["review", "review_comment", "comment", "check_failed", "push", "closed"]
    author: str = ""
    body: str = ""
    """What the person wrote (hostile text: it becomes task text, quoted, never a command); at most ``MAX_BODY``
    characters are kept (a GitLab note may hold a million)."""
    actionable: bool = False
    """Whether this alone asks bosun to act (a "Request changes" review, a mention, a failed check)."""
    review_id: int | None = None
    """A review comment's review; a review's own id."""
    review_state: str | None = None
    """A review's: approved, changes_requested, commented."""
    comment_id: int | None = None
    """The comment to answer in its thread (review comments) or to quote (conversation comments); GitLab: the
    note."""
    discussion_id: str | None = None
    """GitLab: the note's thread (the answer goes there)."""
    path: str | None = None
    line: int | None = None
    sha: str | None = None
    """The head commit the event is about (a check's, a push's ``after``)."""
    check: str | None = None
    """The failed check's or workflow's name."""
    check_url: str | None = None
    job_id: int | None = None
    """A failed check run's id (for GitHub Actions, the job whose log the round reads)."""
    merged: bool = False
    head_branch: str | None = None
    base_branch: str | None = None
    fails_on_base: bool | None = None
    """A failed check's: whether it fails on the base branch too (the workflow asks before the round; None: not
    asked yet)."""
    log: str = ""
    """A failed check's job log, its tail (hostile text)."""

    @field_validator("body")
    @classmethod
    def _bounded(cls, value: str) -> str:
        return value if len(value) <= MAX_BODY else value[:MAX_BODY] + " [cut]"

