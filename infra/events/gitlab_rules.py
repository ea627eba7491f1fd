"""The GitLab trigger rules: a label (Issue Hook, Merge Request Hook), a mention (Note Hook), a failed pipeline on a
bosun branch (Pipeline Hook), and what happens on a merge request bosun opened (its conversation). Pure, like
every rule (infra/events/triggers.py)."""

from __future__ import annotations

import re
from typing import Any, Literal

from infra.events import payloads as p
from infra.events.config import EventsConfig
from infra.events.conversation import PREvent, conversation_id
from infra.events.decision import MARKER_PREFIX, Decision, Origin, gitlab_id, ignore, issue_task, mentions, parse_as

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
    ev: p.GLMergeRequestEvent = parse_as(p.GLMergeRequestEvent, payload, f"GitLab {event}")
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
    ev = parse_as(p.GLMergeRequestEvent if mr else p.GLIssueEvent, payload, f"GitLab {event}")
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
        task=issue_task(attrs.title, attrs.description, where, attrs.url), repo=mapped,
        ref=attrs.last_commit.id if mr and attrs.last_commit else "HEAD", origin=origin,
        summary=f"{path}{sign}{attrs.iid}: {attrs.title}"[:200])


def _gitlab_mention(event: str, payload: dict[str, Any], cfg: EventsConfig) -> Decision:
    rules = cfg.triggers
    ev: p.GLNoteEvent = parse_as(p.GLNoteEvent, payload, f"GitLab {event}")
    note, user = ev.object_attributes, ev.user
    if note.system or note.action not in (None, "create"):
        return ignore(f"a {'system note' if note.system else 'note ' + str(note.action)}: only new notes by people "
                      "act")
    if rules.ignore_bots and (BOT_USERNAME.search(user.username or "") or MARKER_PREFIX in note.note):
        return ignore(f"note by bot {user.username} or carrying a bosun marker")
    if not mentions(note.note, rules.gitlab_mention):
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
    task = issue_task(target.title, target.description, where, target.url)
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
    ev: p.GLPipelineEvent = parse_as(p.GLPipelineEvent, payload, f"GitLab {event}")
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
