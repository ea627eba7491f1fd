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

from typing import Any, Literal

from infra.events import payloads as p
from infra.events.config import EventsConfig
from infra.events.conversation import PREvent, conversation_id
from infra.events.decision import (
    MARKER_PREFIX,
    Decision,
    Origin,
    Reply,
    UnknownShape,
    github_id,
    gitlab_id,
    ignore,
    issue_task,
    linear_issue_id,
    linear_session_id,
    mentions,
    parse_as,
    parse_workflow_id,
)
from infra.events.gitlab_rules import decide_gitlab

__all__ = ["Decision", "Origin", "Reply", "UnknownShape", "bosun_head", "decide", "decide_github", "decide_gitlab",
           "decide_linear", "github_id", "gitlab_id", "linear_issue_id", "linear_session_id", "parse_workflow_id"]


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
    ev: p.GHIssuesEvent = parse_as(p.GHIssuesEvent, payload, "issues event")
    if ev.action != "labeled" or not ev.label or ev.label.name.lower() != rules.github_label.lower():
        return ignore(f"issues.{ev.action} without the label {rules.github_label!r}")
    repo = ev.repository.full_name
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    kind: Literal["issue", "pr"] = "pr" if ev.issue.pull_request is not None else "issue"
    return Decision(
        kind="start", reason=f"{kind} labelled {ev.label.name}", workflow_id=github_id(repo, kind, ev.issue.number),
        task=issue_task(ev.issue.title, ev.issue.body, f"GitHub {kind} {repo}#{ev.issue.number}",
                         ev.issue.html_url),
        repo=mapped, origin=Origin(source="github", repo=repo, number=ev.issue.number, url=ev.issue.html_url),
        summary=f"{repo}#{ev.issue.number}: {ev.issue.title}"[:200])


def _github_pull_request_labelled(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    pr_ev: p.GHPullRequestEvent = parse_as(p.GHPullRequestEvent, payload, "pull_request event")
    if pr_ev.action != "labeled" or not pr_ev.label or pr_ev.label.name.lower() != rules.github_label.lower():
        return ignore(f"pull_request.{pr_ev.action} without the label {rules.github_label!r}")
    repo, pr = pr_ev.repository.full_name, pr_ev.pull_request
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    return Decision(
        kind="start", reason=f"pull request labelled {pr_ev.label.name}",
        workflow_id=github_id(repo, "pr", pr.number),
        task=issue_task(pr.title, pr.body, f"GitHub pull request {repo}#{pr.number}, branch {pr.head.ref}",
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
        task=issue_task(title, body, f"GitHub pull request {repo}#{number}", url) if title else None,
        ref=head.sha if head else "HEAD", pull_request=None if head else number,
        origin=Origin(source="github", repo=repo, number=number, url=url, head_branch=head.ref if head else None,
                      base_branch=base.ref if base else None),
        summary=f"{repo}#{number}: {title}"[:200] if title else f"{repo}#{number}")


def _github_review(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    ev: p.GHPullRequestReviewEvent = parse_as(p.GHPullRequestReviewEvent, payload, "pull_request_review event")
    review, pr = ev.review, ev.pull_request
    if ev.action != "submitted":
        return ignore(f"pull_request_review.{ev.action}")
    if not _bosuns(pr, ev.repository.full_name, cfg):
        return ignore(f"a review of #{pr.number}, a pull request bosun did not open")
    if why := _not_a_person_asking(review.user, review.author_association, review.body, cfg):
        return ignore(f"review {why}")
    state = review.state.lower()
    mentioned = mentions(review.body, cfg.triggers.github_mention)
    return _converse(
        ev.repository.full_name, pr.number, PREvent(
            id=f"review:{review.id}", kind="review", author=review.user.login, body=(review.body or "").strip(),
            actionable=state == "changes_requested" or mentioned, review_id=review.id, review_state=state,
            sha=review.commit_id,
            head_branch=pr.head.ref, base_branch=pr.base.ref),
        cfg, title=pr.title, body=pr.body, url=pr.html_url, head=pr.head, base=pr.base,
        reason=f"{review.user.login} submitted a review ({state})")


def _github_review_comment(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    ev: p.GHPullRequestReviewCommentEvent = parse_as(p.GHPullRequestReviewCommentEvent, payload,
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
            actionable=mentions(c.body, cfg.triggers.github_mention), review_id=c.pull_request_review_id,
            comment_id=c.in_reply_to_id or c.id, path=c.path, line=c.line, sha=c.commit_id,
            head_branch=pr.head.ref, base_branch=pr.base.ref),
        cfg, title=pr.title, body=pr.body, url=pr.html_url, head=pr.head, base=pr.base,
        reason=f"{c.user.login} commented on {c.path}")


def _github_pull_request(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    """A label starts a task (any pull request); the closing of one bosun opened, or a push to it, reaches its
    conversation."""
    ev: p.GHPullRequestEvent = parse_as(p.GHPullRequestEvent, payload, "pull_request event")
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
    c_ev: p.GHIssueCommentEvent = parse_as(p.GHIssueCommentEvent, payload, "issue_comment event")
    comment = c_ev.comment
    if c_ev.action != "created":
        return ignore(f"issue_comment.{c_ev.action}")
    if not mentions(comment.body, rules.github_mention):
        return ignore(f"comment does not mention {rules.github_mention}")
    if why := _not_a_person_asking(comment.user, comment.author_association, comment.body, cfg):
        return ignore(f"comment {why}")
    repo = c_ev.repository.full_name
    mapped = _repo_for_github(cfg, repo)
    if mapped is None:
        return _no_repo(repo)
    kind = "pr" if c_ev.issue.pull_request is not None else "issue"
    issue = c_ev.issue
    task = issue_task(issue.title, issue.body, f"GitHub {kind} {repo}#{issue.number}", issue.html_url)
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
        cr: p.GHCheckRunEvent = parse_as(p.GHCheckRunEvent, payload, "check_run event")
        action, conclusion, sha = cr.action, cr.check_run.conclusion, cr.check_run.head_sha
        branch = cr.check_run.check_suite.head_branch if cr.check_run.check_suite else None
        name, url, repo = cr.check_run.name, cr.check_run.html_url or cr.check_run.details_url, \
            cr.repository.full_name
    else:
        wr: p.GHWorkflowRunEvent = parse_as(p.GHWorkflowRunEvent, payload, "workflow_run event")
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


def decide_linear(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    if event == "AgentSessionEvent":
        if not rules.linear_agent_sessions:
            return ignore("Linear agent sessions are disabled (triggers.linear_agent_sessions)")
        ev: p.LinearAgentSessionEvent = parse_as(p.LinearAgentSessionEvent, payload, "AgentSessionEvent")
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
            task = issue_task(issue.title or "", issue.description, f"Linear issue {issue.identifier}", issue.url) \
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
        iv: p.LinearIssueEvent = parse_as(p.LinearIssueEvent, payload, "Issue event")
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
                        task=issue_task(d.title or "", d.description, f"Linear issue {d.identifier}", d.url or iv.url),
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
