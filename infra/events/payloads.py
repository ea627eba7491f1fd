"""The parts of GitHub's, GitLab's and Linear's webhook payloads that the trigger rules read (everything else is
ignored).

Shapes follow the public documentation: GitHub "Webhook events and payloads" (issues, pull_request,
issue_comment, check_run, workflow_run), GitLab "Webhook events" (Issue Hook, Note Hook, Merge Request Hook,
Pipeline Hook), Linear's data-change webhooks (``type``/``action``/``data``/``updatedFrom``) and agent session
webhooks (``AgentSessionEvent`` with ``agentSession``, ``agentActivity``, ``promptContext``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


# ---------------------------------------------------------------- GitHub

class GHUser(_Model):
    login: str
    type: str = "User"


class GHRepository(_Model):
    full_name: str
    clone_url: str | None = None
    html_url: str | None = None
    default_branch: str | None = None


class GHLabel(_Model):
    name: str


class GHIssue(_Model):
    number: int
    title: str = ""
    body: str | None = None
    html_url: str | None = None
    pull_request: dict[str, Any] | None = None
    """Present when the "issue" is a pull request (issue_comment on a PR)."""


class GHComment(_Model):
    id: int
    body: str | None = None
    user: GHUser
    author_association: str = "NONE"
    html_url: str | None = None


class GHIssuesEvent(_Model):
    action: str
    issue: GHIssue
    label: GHLabel | None = None
    repository: GHRepository
    sender: GHUser | None = None


class GHRepoRef(_Model):
    """A repository as a branch names it (check runs list only its id, url and name)."""

    full_name: str | None = None
    name: str | None = None


class GHBranchRef(_Model):
    ref: str
    sha: str
    repo: GHRepoRef | None = None
    """The repository the branch is in (a fork's, for a pull request from a fork)."""


class GHPullRequest(_Model):
    number: int
    title: str = ""
    body: str | None = None
    html_url: str | None = None
    head: GHBranchRef
    base: GHBranchRef
    merged: bool | None = None
    user: GHUser | None = None


class GHPullRequestEvent(_Model):
    action: str
    pull_request: GHPullRequest
    label: GHLabel | None = None
    repository: GHRepository
    sender: GHUser | None = None
    after: str | None = None
    """synchronize: the new head."""


class GHReview(_Model):
    id: int
    user: GHUser
    body: str | None = None
    state: str = ""
    """approved, changes_requested, commented (lower case in webhooks)."""
    author_association: str = "NONE"
    html_url: str | None = None
    commit_id: str | None = None


class GHPullRequestReviewEvent(_Model):
    action: str
    review: GHReview
    pull_request: GHPullRequest
    repository: GHRepository


class GHReviewComment(_Model):
    id: int
    pull_request_review_id: int | None = None
    in_reply_to_id: int | None = None
    user: GHUser
    body: str | None = None
    path: str | None = None
    line: int | None = None
    author_association: str = "NONE"
    html_url: str | None = None
    commit_id: str | None = None


class GHPullRequestReviewCommentEvent(_Model):
    action: str
    comment: GHReviewComment
    pull_request: GHPullRequest
    repository: GHRepository


class GHPullRef(_Model):
    """A pull request as check runs and workflow runs list it."""

    number: int
    head: GHBranchRef | None = None
    base: GHBranchRef | None = None


class GHIssueCommentEvent(_Model):
    action: str
    issue: GHIssue
    comment: GHComment
    repository: GHRepository


class GHCheckSuiteRef(_Model):
    head_branch: str | None = None


class GHCheckRun(_Model):
    id: int | None = None
    name: str
    head_sha: str
    conclusion: str | None = None
    html_url: str | None = None
    details_url: str | None = None
    check_suite: GHCheckSuiteRef | None = None
    pull_requests: list[GHPullRef] = []


class GHCheckRunEvent(_Model):
    action: str
    check_run: GHCheckRun
    repository: GHRepository


class GHWorkflowRun(_Model):
    name: str | None = None
    head_branch: str | None = None
    head_sha: str
    conclusion: str | None = None
    html_url: str | None = None
    pull_requests: list[GHPullRef] = []


class GHWorkflowRunEvent(_Model):
    action: str
    workflow_run: GHWorkflowRun
    repository: GHRepository


# ---------------------------------------------------------------- GitLab

class GLUser(_Model):
    id: int | None = None
    username: str = ""
    name: str | None = None


class GLProject(_Model):
    id: int
    path_with_namespace: str
    web_url: str | None = None
    git_http_url: str | None = None
    default_branch: str | None = None


class GLLabel(_Model):
    title: str


class GLLabelChange(_Model):
    previous: list[GLLabel] = []
    current: list[GLLabel] = []


class GLChanges(_Model):
    labels: GLLabelChange | None = None


class GLCommit(_Model):
    id: str


class GLIssueAttrs(_Model):
    iid: int
    title: str = ""
    description: str | None = None
    url: str | None = None
    action: str | None = None
    state: str | None = None
    labels: list[GLLabel] = []


class GLMergeRequestAttrs(GLIssueAttrs):
    source_branch: str
    target_branch: str
    source_project_id: int | None = None
    target_project_id: int | None = None
    last_commit: GLCommit | None = None
    oldrev: str | None = None
    """Set on an ``update`` that pushed commits (the head before)."""


class GLIssueEvent(_Model):
    object_kind: str
    user: GLUser | None = None
    project: GLProject
    object_attributes: GLIssueAttrs
    labels: list[GLLabel] = []
    changes: GLChanges = GLChanges()


class GLMergeRequestEvent(GLIssueEvent):
    object_attributes: GLMergeRequestAttrs


class GLNoteAttrs(_Model):
    id: int
    note: str = ""
    noteable_type: str
    author_id: int | None = None
    discussion_id: str | None = None
    type: str | None = None
    """None (a plain comment), "DiscussionNote" or "DiffNote" (a thread, on a diff line)."""
    url: str | None = None
    system: bool = False
    """GitLab's own notes ("added label ~bosun", "mentioned in ...")."""
    action: str | None = None
    """"create" or "update" (an edited note)."""


class GLNoteIssue(_Model):
    iid: int
    title: str = ""
    description: str | None = None
    url: str | None = None


class GLNoteMergeRequest(GLNoteIssue):
    source_branch: str
    target_branch: str | None = None
    source_project_id: int | None = None
    target_project_id: int | None = None
    last_commit: GLCommit | None = None


class GLNoteEvent(_Model):
    object_kind: str
    user: GLUser
    project: GLProject
    object_attributes: GLNoteAttrs
    issue: GLNoteIssue | None = None
    merge_request: GLNoteMergeRequest | None = None


class GLPipelineAttrs(_Model):
    id: int
    ref: str | None = None
    tag: bool = False
    sha: str
    status: str
    source: str | None = None
    url: str | None = None


class GLBuild(_Model):
    id: int
    name: str = ""
    stage: str | None = None
    status: str | None = None
    allow_failure: bool = False


class GLPipelineMR(_Model):
    """The merge request a merge request pipeline ran for."""

    iid: int
    source_branch: str | None = None
    target_branch: str | None = None
    source_project_id: int | None = None
    target_project_id: int | None = None
    url: str | None = None


class GLPipelineEvent(_Model):
    object_kind: str
    project: GLProject
    object_attributes: GLPipelineAttrs
    builds: list[GLBuild] = []
    merge_request: GLPipelineMR | None = None
    user: GLUser | None = None


# ---------------------------------------------------------------- Linear

class LinearTeam(_Model):
    key: str | None = None


class LinearIssue(_Model):
    id: str
    identifier: str | None = None
    title: str | None = None
    description: str | None = None
    url: str | None = None
    team: LinearTeam | None = None

    @property
    def team_key(self) -> str | None:
        if self.team and self.team.key:
            return self.team.key
        if self.identifier and "-" in self.identifier:
            return self.identifier.rsplit("-", 1)[0]
        return None


class LinearComment(_Model):
    id: str | None = None
    body: str | None = None


class LinearAgentSession(_Model):
    id: str
    issue: LinearIssue | None = None
    comment: LinearComment | None = None


class LinearActivityContent(_Model):
    type: str | None = None
    body: str | None = None


class LinearAgentActivity(_Model):
    id: str | None = None
    content: LinearActivityContent | None = None
    body: str | None = None
    signal: str | None = None

    @property
    def text(self) -> str:
        return (self.content.body if self.content and self.content.body else self.body) or ""


class LinearAgentSessionEvent(_Model):
    type: str = "AgentSessionEvent"
    action: str
    agentSession: LinearAgentSession  # noqa: N815 - Linear's field name
    agentActivity: LinearAgentActivity | None = None  # noqa: N815
    promptContext: str | None = None  # noqa: N815
    guidance: Any = None


class LinearLabel(_Model):
    id: str | None = None
    name: str


class LinearIssueData(LinearIssue):
    labels: list[LinearLabel] = []
    labelIds: list[str] = []  # noqa: N815


class LinearIssueEvent(_Model):
    type: str = "Issue"
    action: str
    data: LinearIssueData
    updatedFrom: dict[str, Any] | None = None  # noqa: N815
    url: str | None = None
