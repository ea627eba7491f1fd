"""Trigger rules: from one webhook event to a decision (start a task, follow up, cancel, or ignore).

Pure functions over the parsed payload and the configuration, so every rule is testable without NATS or Temporal.

Workflow ids come from the business key, so every event about the same thing reaches the same workflow:

====================================  =========================================================
``gh:<owner>/<repo>:issue:<n>``       issue labelled, or a comment mentioning bosun on an issue
``gh:<owner>/<repo>:pr:<n>``          pull request labelled, or a comment mentioning bosun on it
``gh:<owner>/<repo>:ci:<head sha>``   a failed check_run / workflow_run on a ``bosun/`` branch of no pull request
``gh:<owner>/<repo>:conversation:<n>`` what happens on a pull request bosun opened: reviews, review comments,
                                      mentions, failed checks on its head, pushes, its closing (one long-lived
                                      PullRequestWorkflow, infra/events/conversation.py)
``gl:<group>/<project>:issue:<iid>``  GitLab issue labelled, or a note mentioning bosun on it
``gl:<group>/<project>:mr:<iid>``     GitLab merge request labelled, or a note mentioning bosun on it
``gl:<group>/<project>:ci:<sha>``     a failed GitLab pipeline on a ``bosun/`` branch
``linear:session:<id>``               a Linear agent session (created, prompted, stopped)
``linear:issue:<id>``                 a Linear issue labelled bosun
====================================  =========================================================
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from infra.events import payloads as p
from infra.events.config import EventsConfig
from infra.events.conversation import PREvent, conversation_id

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

def _parse(model: type[BaseModel], payload: dict[str, Any], what: str) -> Any:
    try:
        return model.model_validate(payload)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise UnknownShape(f"{what}: field {where}: {err['msg']}") from None


def _mentions(text: str | None, mention: str) -> bool:
    if not text or not mention:
        return False
    return re.search(rf"(?<![\w@]){re.escape(mention)}(?![\w-])", text, re.IGNORECASE) is not None


def _repo_for_github(cfg: EventsConfig, full_name: str) -> str | None:
    return cfg.repos.get(full_name) or cfg.repos.get(full_name.lower())


def _repo_for_linear(cfg: EventsConfig, issue: p.LinearIssue | None) -> str | None:
    team = issue.team_key if issue else None
    target = (cfg.linear_repos.get(team) if team else None) or cfg.linear_default_repo
    if target is None:
        return None
    return cfg.repos.get(target, target)


def _no_repo(full_name: str) -> Decision:
    return ignore(f"no repository mapping for {full_name}: add it to BOSUN_EVENTS_REPOS "
                  f"(e.g. {{\"{full_name}\": \"/path/or/clone-url\"}})")


def _issue_task(title: str, body: str | None, where: str, url: str | None) -> str:
    text = title.strip()
    if body and body.strip():
        text += "\n\n" + body.strip()
    return f"{text}\n\n({where}{': ' + url if url else ''})"


# ---------------------------------------------------------------- GitHub rules

def decide_github(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """What a GitHub delivery starts or asks for, by its event: a label (issues, pull_request), a mention
    (issue_comment), a failed check on a bosun branch (check_run, workflow_run); anything else is ignored."""
    rule = GITHUB_RULES.get(event)
    if rule is None:
        return ignore(f"GitHub event {event} has no trigger rule")
    return rule(event, payload, cfg)


def _github_issue_labelled(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    ev: p.GHIssuesEvent = _parse(p.GHIssuesEvent, payload, "issues event")
    if ev.action != "labeled" or not ev.label or ev.label.name.lower() != rules.github_label.lower():
        return ignore(f"issues.{ev.action} without the label {rules.github_label!r}")
    repo = ev.repository.full_name
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    kind: Literal["issue", "pr"] = "pr" if ev.issue.pull_request is not None else "issue"
    return Decision(
        kind="start", reason=f"{kind} labelled {ev.label.name}", workflow_id=github_id(repo, kind, ev.issue.number),
        task=_issue_task(ev.issue.title, ev.issue.body, f"GitHub {kind} {repo}#{ev.issue.number}",
                         ev.issue.html_url),
        repo=mapped, origin=Origin(source="github", repo=repo, number=ev.issue.number, url=ev.issue.html_url),
        summary=f"{repo}#{ev.issue.number}: {ev.issue.title}"[:200])


def _github_pull_request_labelled(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    pr_ev: p.GHPullRequestEvent = _parse(p.GHPullRequestEvent, payload, "pull_request event")
    if pr_ev.action != "labeled" or not pr_ev.label or pr_ev.label.name.lower() != rules.github_label.lower():
        return ignore(f"pull_request.{pr_ev.action} without the label {rules.github_label!r}")
    repo, pr = pr_ev.repository.full_name, pr_ev.pull_request
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    return Decision(
        kind="start", reason=f"pull request labelled {pr_ev.label.name}",
        workflow_id=github_id(repo, "pr", pr.number),
        task=_issue_task(pr.title, pr.body, f"GitHub pull request {repo}#{pr.number}, branch {pr.head.ref}",
                         pr.html_url),
        repo=mapped, ref=pr.head.sha,
        origin=Origin(source="github", repo=repo, number=pr.number, head_branch=pr.head.ref, url=pr.html_url),
        summary=f"{repo}#{pr.number}: {pr.title}"[:200])


def _not_a_person_asking(user: p.GHUser, association: str, body: str | None, cfg: EventsConfig) -> str | None:
    """Why a comment or review does not count as a person with write access speaking (None: it does)."""
    rules = cfg.triggers
    if rules.ignore_bots and (user.type == "Bot" or MARKER_PREFIX in (body or "")):
        return f"written by bot {user.login} or carrying a bosun marker"
    if association not in rules.github_associations:
        return (f"{user.login} has author_association {association}, not one of "
                f"{', '.join(rules.github_associations)}")
    return None


def _bosuns(pr: p.GHPullRequest, repo: str, cfg: EventsConfig) -> bool:
    """A pull request bosun opened: from a bosun branch of the repository itself (not a fork's branch that happens
    to have the name; anyone can write bosun's marker into a body, so the marker alone proves nothing)."""
    head = pr.head
    return bosun_head(head.ref, head.repo.full_name if head.repo else None, repo, cfg)


def bosun_head(head_ref: str, head_repo: str | None, repo: str, cfg: EventsConfig) -> bool:
    """The same test on a pull request read from the API (the starter's check of a comment's pull request)."""
    return head_ref.startswith(cfg.triggers.github_debug_branch_prefix) and \
        (head_repo is None or head_repo.lower() == repo.lower())


def _converse(repo: str, number: int, event: PREvent, cfg: EventsConfig, *, title: str = "", body: str | None = None,
              url: str | None = None, head: p.GHBranchRef | None = None, base: p.GHBranchRef | None = None,
              reason: str) -> Decision:
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    return Decision(
        kind="converse", reason=reason, workflow_id=conversation_id(repo, number), event=event, repo=mapped,
        task=_issue_task(title, body, f"GitHub pull request {repo}#{number}", url) if title else None,
        ref=head.sha if head else "HEAD", pull_request=None if head else number,
        origin=Origin(source="github", repo=repo, number=number, url=url, head_branch=head.ref if head else None,
                      base_branch=base.ref if base else None),
        summary=f"{repo}#{number}: {title}"[:200] if title else f"{repo}#{number}")


def _github_review(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    ev: p.GHPullRequestReviewEvent = _parse(p.GHPullRequestReviewEvent, payload, "pull_request_review event")
    review, pr = ev.review, ev.pull_request
    if ev.action != "submitted":
        return ignore(f"pull_request_review.{ev.action}")
    if not _bosuns(pr, ev.repository.full_name, cfg):
        return ignore(f"a review of #{pr.number}, a pull request bosun did not open")
    if why := _not_a_person_asking(review.user, review.author_association, review.body, cfg):
        return ignore(f"review {why}")
    state = review.state.lower()
    mentioned = _mentions(review.body, cfg.triggers.github_mention)
    return _converse(
        ev.repository.full_name, pr.number, PREvent(
            id=f"review:{review.id}", kind="review", author=review.user.login, body=(review.body or "").strip(),
            actionable=state == "changes_requested" or mentioned, review_id=review.id, review_state=state,
            sha=review.commit_id,
            head_branch=pr.head.ref, base_branch=pr.base.ref),
        cfg, title=pr.title, body=pr.body, url=pr.html_url, head=pr.head, base=pr.base,
        reason=f"{review.user.login} submitted a review ({state})")


def _github_review_comment(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    ev: p.GHPullRequestReviewCommentEvent = _parse(p.GHPullRequestReviewCommentEvent, payload,
                                                   "pull_request_review_comment event")
    c, pr = ev.comment, ev.pull_request
    if ev.action != "created":
        return ignore(f"pull_request_review_comment.{ev.action}")
    if not _bosuns(pr, ev.repository.full_name, cfg):
        return ignore(f"a review comment on #{pr.number}, a pull request bosun did not open")
    if why := _not_a_person_asking(c.user, c.author_association, c.body, cfg):
        return ignore(f"review comment {why}")
    return _converse(
        ev.repository.full_name, pr.number, PREvent(
            id=f"review_comment:{c.id}", kind="review_comment", author=c.user.login, body=(c.body or "").strip(),
            actionable=_mentions(c.body, cfg.triggers.github_mention), review_id=c.pull_request_review_id,
            comment_id=c.in_reply_to_id or c.id, path=c.path, line=c.line, sha=c.commit_id,
            head_branch=pr.head.ref, base_branch=pr.base.ref),
        cfg, title=pr.title, body=pr.body, url=pr.html_url, head=pr.head, base=pr.base,
        reason=f"{c.user.login} commented on {c.path}")


def _github_pull_request(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """A label starts a task (any pull request); the closing of one bosun opened, or a push to it, reaches its
    conversation."""
    ev: p.GHPullRequestEvent = _parse(p.GHPullRequestEvent, payload, "pull_request event")
    pr = ev.pull_request
    if ev.action in ("closed", "synchronize") and _bosuns(pr, ev.repository.full_name, cfg):
        if ev.action == "closed":
            pr_event = PREvent(id="closed", kind="closed", merged=bool(pr.merged),
                               author=ev.sender.login if ev.sender else "")
        else:
            sha = ev.after or pr.head.sha
            pr_event = PREvent(id=f"push:{sha}", kind="push", sha=sha, author=ev.sender.login if ev.sender else "",
                               head_branch=pr.head.ref)
        return _converse(ev.repository.full_name, pr.number, pr_event, cfg, title=pr.title, body=pr.body,
                         url=pr.html_url, head=pr.head, base=pr.base, reason=f"pull request {ev.action}")
    return _github_pull_request_labelled(event, payload, cfg)


def _github_mention(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    c_ev: p.GHIssueCommentEvent = _parse(p.GHIssueCommentEvent, payload, "issue_comment event")
    comment = c_ev.comment
    if c_ev.action != "created":
        return ignore(f"issue_comment.{c_ev.action}")
    if not _mentions(comment.body, rules.github_mention):
        return ignore(f"comment does not mention {rules.github_mention}")
    if why := _not_a_person_asking(comment.user, comment.author_association, comment.body, cfg):
        return ignore(f"comment {why}")
    repo = c_ev.repository.full_name
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    kind = "pr" if c_ev.issue.pull_request is not None else "issue"
    issue = c_ev.issue
    task = _issue_task(issue.title, issue.body, f"GitHub {kind} {repo}#{issue.number}", issue.html_url)
    task += f"\n\n@{comment.user.login} asked:\n{(comment.body or '').strip()}"
    return Decision(
        kind="follow_up", reason=f"{comment.user.login} ({comment.author_association}) mentioned "
                                 f"{rules.github_mention}",
        workflow_id=github_id(repo, kind, issue.number), task=task, follow_up=(comment.body or "").strip(),
        repo=mapped, pull_request=issue.number if kind == "pr" else None,
        origin=Origin(source="github", repo=repo, number=issue.number, url=issue.html_url, comment_id=comment.id),
        summary=f"{repo}#{issue.number}: {issue.title}"[:200],
        # maybe bosun's own pull request (its marker is in the body, but anyone can write it there): the starter
        # reads the head and, when it is a bosun branch of this repository, takes it to the conversation instead
        event=PREvent(id=f"comment:{comment.id}", kind="comment", author=comment.user.login,
                      body=(comment.body or "").strip(), actionable=True, comment_id=comment.id)
        if kind == "pr" and MARKER_PREFIX in (issue.body or "") else None)


def _github_check_failed(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    if event == "check_run":
        cr: p.GHCheckRunEvent = _parse(p.GHCheckRunEvent, payload, "check_run event")
        action, conclusion, sha = cr.action, cr.check_run.conclusion, cr.check_run.head_sha
        branch = cr.check_run.check_suite.head_branch if cr.check_run.check_suite else None
        name, url, repo = cr.check_run.name, cr.check_run.html_url or cr.check_run.details_url, \
            cr.repository.full_name
    else:
        wr: p.GHWorkflowRunEvent = _parse(p.GHWorkflowRunEvent, payload, "workflow_run event")
        action, conclusion, sha = wr.action, wr.workflow_run.conclusion, wr.workflow_run.head_sha
        branch, url = wr.workflow_run.head_branch, wr.workflow_run.html_url
        name = wr.workflow_run.name or "workflow"
        repo = wr.repository.full_name
    if action != "completed" or conclusion not in rules.github_failed_conclusions:
        return ignore(f"{event}.{action} with conclusion {conclusion}")
    if not branch or not branch.startswith(rules.github_debug_branch_prefix):
        return ignore(f"{event} failed on branch {branch!r}, not a {rules.github_debug_branch_prefix} branch")
    prs = cr.check_run.pull_requests if event == "check_run" else wr.workflow_run.pull_requests
    if prs:  # the head of a pull request: its conversation weighs it (loop guards)
        pr_ref = prs[0]
        job = cr.check_run.id if event == "check_run" else None
        return _converse(repo, pr_ref.number, PREvent(
            id=f"check:{sha}:{name}", kind="check_failed", actionable=True, sha=sha, check=name, check_url=url,
            job_id=job, head_branch=branch, base_branch=pr_ref.base.ref if pr_ref.base else None), cfg,
            head=pr_ref.head, base=pr_ref.base, reason=f"{event} {name!r} {conclusion} on {branch}")
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    task = (f"CI failed on branch {branch} at commit {sha[:12]}: {event.replace('_', ' ')} {name!r} concluded "
            f"{conclusion}{' (' + url + ')' if url else ''}. Reproduce the failure, find the cause and fix it on "
            "this branch.")
    return Decision(kind="start", reason=f"{event} {name!r} {conclusion} on {branch}",
                    workflow_id=github_id(repo, "ci", sha), task=task, repo=mapped, ref=sha,
                    origin=Origin(source="github", repo=repo, head_branch=branch, url=url),
                    summary=f"debug CI {repo}@{branch}"[:200])


GITHUB_RULES = {"issues": _github_issue_labelled, "pull_request": _github_pull_request,
                 "issue_comment": _github_mention, "check_run": _github_check_failed,
                 "workflow_run": _github_check_failed, "pull_request_review": _github_review,
                 "pull_request_review_comment": _github_review_comment}
"""The rule of each GitHub event bosun acts on."""


# ---------------------------------------------------------------- GitLab rules

BOT_USERNAME = re.compile(r"^(?:project|group)_\d+_bot(?:_[0-9a-f]+)?$|^service_account_|^ghost$|-bot$",
                          re.IGNORECASE)
"""GitLab's own bot users: project and group access tokens (``project_<id>_bot_<hash>``), service accounts,
the ghost user. A note's user object carries no bot flag."""


def decide_gitlab(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """What a GitLab delivery starts or asks for, by its X-Gitlab-Event (as ``issue_hook``, ``note_hook``, ...):
    a label (Issue Hook, Merge Request Hook), a mention (Note Hook), a failed pipeline on a bosun branch
    (Pipeline Hook); anything else is ignored."""
    rule = GITLAB_RULES.get(event)
    if rule is None:
        return ignore(f"GitLab event {event} has no trigger rule")
    return rule(event, payload, cfg)


def _repo_for_gitlab(cfg: EventsConfig, path: str) -> str | None:
    return cfg.gitlab_repos.get(path) or cfg.gitlab_repos.get(path.lower())


def _no_gitlab_repo(path: str) -> Decision:
    return ignore(f"no repository mapping for GitLab project {path}: add it to BOSUN_EVENTS_GITLAB_REPOS "
                  f"(e.g. {{\"{path}\": \"/path/or/clone-url\"}})")


def _label_added(labels: list[p.GLLabel], changes: p.GLChanges, action: str | None, wanted: str) -> bool:
    """The label is there now and was not before: added by an update, or there from the start (``open``)."""
    def has(items: list[p.GLLabel]) -> bool:
        return any(lb.title.lower() == wanted.lower() for lb in items)

    if changes.labels is not None:
        return has(changes.labels.current) and not has(changes.labels.previous)
    return action == "open" and has(labels)


def _gitlab_bosuns(source_branch: str | None, source_project: int | None, target_project: int | None,
                   cfg: EventsConfig) -> bool:
    """A merge request bosun opened: from a bosun branch of the project itself (not a fork's)."""
    return bool(source_branch and source_branch.startswith(cfg.triggers.gitlab_debug_branch_prefix)) and \
        (source_project is None or target_project is None or source_project == target_project)


def _gitlab_converse(path: str, project_id: int, iid: int, event: PREvent, cfg: EventsConfig, *, reason: str,
                     head: str | None, base: str | None, url: str | None, sha: str | None = None,
                     author_id: int | None = None, title: str = "") -> Decision:
    mapped = _repo_for_gitlab(cfg, path)
    if mapped is None:
        return _no_gitlab_repo(path)
    return Decision(
        kind="converse", reason=reason, workflow_id=conversation_id(path, iid, "gitlab"), event=event, repo=mapped,
        ref=sha or "HEAD", author_id=author_id, summary=f"{path}!{iid}: {title}"[:200] if title else f"{path}!{iid}",
        origin=Origin(source="gitlab", repo=path, project_id=project_id, number=iid, noteable="merge_request",
                      url=url, head_branch=head, base_branch=base))


def _gitlab_merge_request(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """The closing or merging of a merge request bosun opened, or a push to it, reaches its conversation; a label
    starts a task (any merge request)."""
    ev: p.GLMergeRequestEvent = _parse(p.GLMergeRequestEvent, payload, f"GitLab {event}")
    a = ev.object_attributes
    if _gitlab_bosuns(a.source_branch, a.source_project_id, a.target_project_id, cfg) and \
            (a.action in ("close", "merge") or (a.action == "update" and a.oldrev)):
        who = ev.user.username if ev.user else ""
        sha = a.last_commit.id if a.last_commit else None
        pr_event = PREvent(id="closed", kind="closed", merged=a.action == "merge", author=who) \
            if a.action in ("close", "merge") else PREvent(id=f"push:{sha}", kind="push", sha=sha, author=who)
        return _gitlab_converse(ev.project.path_with_namespace, ev.project.id, a.iid, pr_event, cfg,
                                reason=f"merge request {a.action}", head=a.source_branch, base=a.target_branch,
                                url=a.url, title=a.title)
    return _gitlab_labelled(event, payload, cfg)


def _gitlab_labelled(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    wanted = cfg.triggers.gitlab_label
    mr = event == "merge_request_hook"
    ev = _parse(p.GLMergeRequestEvent if mr else p.GLIssueEvent, payload, f"GitLab {event}")
    attrs = ev.object_attributes
    if not _label_added(ev.labels or attrs.labels, ev.changes, attrs.action, wanted):
        return ignore(f"{event} ({attrs.action}) does not add the label {wanted!r}")
    path = ev.project.path_with_namespace
    mapped = _repo_for_gitlab(cfg, path)
    if mapped is None:
        return _no_gitlab_repo(path)
    kind: Literal["issue", "mr"] = "mr" if mr else "issue"
    what = "merge request" if mr else "issue"
    sign = "!" if mr else "#"
    where = f"GitLab {what} {path}{sign}{attrs.iid}" + (f", branch {attrs.source_branch}" if mr else "")
    origin = Origin(source="gitlab", repo=path, number=attrs.iid, project_id=ev.project.id, url=attrs.url,
                    noteable="merge_request" if mr else "issue",
                    head_branch=attrs.source_branch if mr else None)
    return Decision(
        kind="start", reason=f"{what} labelled {wanted}", workflow_id=gitlab_id(path, kind, attrs.iid),
        task=_issue_task(attrs.title, attrs.description, where, attrs.url), repo=mapped,
        ref=attrs.last_commit.id if mr and attrs.last_commit else "HEAD", origin=origin,
        summary=f"{path}{sign}{attrs.iid}: {attrs.title}"[:200])


def _gitlab_mention(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    ev: p.GLNoteEvent = _parse(p.GLNoteEvent, payload, f"GitLab {event}")
    note, user = ev.object_attributes, ev.user
    if note.system or note.action not in (None, "create"):
        return ignore(f"a {'system note' if note.system else 'note ' + str(note.action)}: only new notes by people "
                      "act")
    if rules.ignore_bots and (BOT_USERNAME.search(user.username or "") or MARKER_PREFIX in note.note):
        return ignore(f"note by bot {user.username} or carrying a bosun marker")
    if not _mentions(note.note, rules.gitlab_mention):
        return ignore(f"note does not mention {rules.gitlab_mention}")
    if note.noteable_type == "Issue" and ev.issue is not None:
        target: p.GLNoteIssue = ev.issue
        kind: Literal["issue", "mr"] = "issue"
    elif note.noteable_type == "MergeRequest" and ev.merge_request is not None:
        target, kind = ev.merge_request, "mr"
    else:
        return ignore(f"a note on a {note.noteable_type}: bosun acts on issues and merge requests")
    path = ev.project.path_with_namespace
    mapped = _repo_for_gitlab(cfg, path)
    if mapped is None:
        return _no_gitlab_repo(path)
    mr = ev.merge_request if kind == "mr" else None
    author = user.id if user.id is not None else note.author_id
    if mr is not None and _gitlab_bosuns(mr.source_branch, mr.source_project_id, mr.target_project_id, cfg):
        threaded = note.type in ("DiffNote", "DiscussionNote") and bool(note.discussion_id)
        return _gitlab_converse(path, ev.project.id, mr.iid, PREvent(
            id=f"note:{note.id}", kind="review_comment" if threaded else "comment", author=user.username,
            body=note.note.strip(), actionable=True, comment_id=note.id, discussion_id=note.discussion_id,
            head_branch=mr.source_branch, base_branch=mr.target_branch), cfg,
            reason=f"{user.username} mentioned {rules.gitlab_mention}", head=mr.source_branch,
            base=mr.target_branch, url=mr.url, sha=mr.last_commit.id if mr.last_commit else None, author_id=author,
            title=mr.title)
    sign, what = ("!", "merge request") if mr else ("#", "issue")
    where = f"GitLab {what} {path}{sign}{target.iid}" + (f", branch {mr.source_branch}" if mr else "")
    task = _issue_task(target.title, target.description, where, target.url)
    task += f"\n\n@{user.username} asked:\n{note.note.strip()}"
    origin = Origin(source="gitlab", repo=path, number=target.iid, project_id=ev.project.id, url=target.url,
                    noteable="merge_request" if mr else "issue", comment_id=note.id,
                    discussion_id=note.discussion_id, head_branch=mr.source_branch if mr else None)
    return Decision(
        kind="follow_up", reason=f"{user.username} mentioned {rules.gitlab_mention}",
        workflow_id=gitlab_id(path, kind, target.iid), task=task, follow_up=note.note.strip(), repo=mapped,
        ref=mr.last_commit.id if mr and mr.last_commit else "HEAD", origin=origin,
        author_id=user.id if user.id is not None else note.author_id,
        summary=f"{path}{sign}{target.iid}: {target.title}"[:200])


def _gitlab_pipeline_failed(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    ev: p.GLPipelineEvent = _parse(p.GLPipelineEvent, payload, f"GitLab {event}")
    run = ev.object_attributes
    if run.status not in rules.gitlab_failed_statuses:
        return ignore(f"pipeline {run.id} is {run.status}")
    path = ev.project.path_with_namespace
    mr = ev.merge_request
    failed_jobs = [b for b in ev.builds if b.status == "failed" and not b.allow_failure]
    if mr is not None and _gitlab_bosuns(mr.source_branch, mr.source_project_id, mr.target_project_id, cfg):
        return _gitlab_converse(path, ev.project.id, mr.iid, PREvent(
            id=f"check:{run.sha}:pipeline-{run.id}", kind="check_failed", actionable=True, sha=run.sha,
            check=f"pipeline {run.id}" + (f" ({', '.join(sorted(b.name for b in failed_jobs)[:5])})"
                                          if failed_jobs else ""),
            check_url=run.url, job_id=failed_jobs[0].id if failed_jobs else None, head_branch=mr.source_branch,
            base_branch=mr.target_branch), cfg, reason=f"pipeline {run.id} {run.status} on {run.ref}",
            head=mr.source_branch, base=mr.target_branch, url=mr.url, sha=run.sha)
    if run.tag or not run.ref or not run.ref.startswith(rules.gitlab_debug_branch_prefix):
        return ignore(f"pipeline {run.id} failed on {'tag' if run.tag else 'branch'} {run.ref!r}, not a "
                      f"{rules.gitlab_debug_branch_prefix} branch")
    mapped = _repo_for_gitlab(cfg, path)
    if mapped is None:
        return _no_gitlab_repo(path)
    failed = [b.name for b in failed_jobs]
    jobs = f" (failed jobs: {', '.join(sorted(failed)[:10])})" if failed else ""
    task = (f"CI failed on branch {run.ref} at commit {run.sha[:12]}: GitLab pipeline {run.id} is {run.status}"
            f"{jobs}{' (' + run.url + ')' if run.url else ''}. Reproduce the failure, find the cause and fix it on "
            "this branch.")
    return Decision(kind="start", reason=f"pipeline {run.id} {run.status} on {run.ref}",
                    workflow_id=gitlab_id(path, "ci", run.sha), task=task, repo=mapped, ref=run.sha,
                    origin=Origin(source="gitlab", repo=path, project_id=ev.project.id, head_branch=run.ref,
                                  url=run.url),
                    summary=f"debug CI {path}@{run.ref}"[:200])


GITLAB_RULES = {"issue_hook": _gitlab_labelled, "confidential_issue_hook": _gitlab_labelled,
                "merge_request_hook": _gitlab_merge_request, "note_hook": _gitlab_mention,
                "confidential_note_hook": _gitlab_mention, "pipeline_hook": _gitlab_pipeline_failed}
"""The rule of each GitLab event bosun acts on (X-Gitlab-Event, lower-cased, spaces as ``_``)."""


# ---------------------------------------------------------------- Linear rules

def decide_linear(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    if event == "AgentSessionEvent":
        if not rules.linear_agent_sessions:
            return ignore("Linear agent sessions are disabled (triggers.linear_agent_sessions)")
        ev: p.LinearAgentSessionEvent = _parse(p.LinearAgentSessionEvent, payload, "AgentSessionEvent")
        session = ev.agentSession
        wf_id = linear_session_id(session.id)
        issue = session.issue
        origin = Origin(source="linear", agent_session_id=session.id, issue_id=issue.id if issue else None,
                        issue_identifier=issue.identifier if issue else None, url=issue.url if issue else None)
        if ev.action == "prompted" and ev.agentActivity is not None and ev.agentActivity.signal == "stop":
            return Decision(kind="cancel", reason="stop signal on the agent session", workflow_id=wf_id,
                            origin=origin)
        if ev.action not in ("created", "prompted"):
            return ignore(f"AgentSessionEvent.{ev.action}")
        mapped = _repo_for_linear(cfg, issue)
        if mapped is None:
            team = issue.team_key if issue else None
            return ignore(f"no repository for Linear team {team!r}: add it to BOSUN_EVENTS_LINEAR_REPOS or set "
                          "BOSUN_EVENTS_LINEAR_DEFAULT_REPO")
        task = ev.promptContext or ""
        if not task.strip():
            task = _issue_task(issue.title or "", issue.description, f"Linear issue {issue.identifier}", issue.url) \
                if issue else ""
            if session.comment and session.comment.body:
                task += f"\n\n{session.comment.body.strip()}"
        summary = f"{issue.identifier}: {issue.title}" if issue else f"Linear session {session.id}"
        if ev.action == "created":
            return Decision(kind="start", reason="agent session created", workflow_id=wf_id, task=task.strip(),
                            repo=mapped, origin=origin, summary=summary[:200])
        text = ev.agentActivity.text if ev.agentActivity else ""
        return Decision(kind="follow_up", reason="agent session prompted", workflow_id=wf_id,
                        task=(task.strip() + ("\n\nFollow-up:\n" + text if text else "")).strip(),
                        follow_up=text, repo=mapped, origin=origin, summary=summary[:200])
    if event == "Issue":
        iv: p.LinearIssueEvent = _parse(p.LinearIssueEvent, payload, "Issue event")
        label = next((lb for lb in iv.data.labels if lb.name.lower() == rules.linear_label.lower()), None)
        if label is None or iv.action not in ("create", "update"):
            return ignore(f"Issue.{iv.action} without the label {rules.linear_label!r}")
        if iv.action == "update":
            before = (iv.updatedFrom or {}).get("labelIds")
            if before is None or (label.id is not None and label.id in before):
                return ignore(f"Issue.update: the label {rules.linear_label!r} was already there")
        mapped = _repo_for_linear(cfg, iv.data)
        if mapped is None:
            return ignore(f"no repository for Linear team {iv.data.team_key!r}: add it to BOSUN_EVENTS_LINEAR_REPOS "
                          "or set BOSUN_EVENTS_LINEAR_DEFAULT_REPO")
        d = iv.data
        return Decision(kind="start", reason=f"Linear issue labelled {label.name}", workflow_id=linear_issue_id(d.id),
                        task=_issue_task(d.title or "", d.description, f"Linear issue {d.identifier}", d.url or iv.url),
                        repo=mapped, summary=f"{d.identifier}: {d.title}"[:200],
                        origin=Origin(source="linear", issue_id=d.id, issue_identifier=d.identifier,
                                      url=d.url or iv.url))
    return ignore(f"Linear event {event} has no trigger rule")


def decide(source: str, event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """The decision for one event. Raises UnknownShape when a known event lacks documented fields."""
    if source == "github":
        return decide_github(event, payload, cfg)
    if source == "gitlab":
        return decide_gitlab(event, payload, cfg)
    if source == "linear":
        return decide_linear(event, payload, cfg)
    return ignore(f"unknown source {source!r}")
