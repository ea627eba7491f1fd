"""Status back to where a task came from (GitHub issue/PR, GitLab issue/merge request, Linear agent session), at
the end of a run.

Thin adapter over infra/events' GitHub, GitLab and Linear clients. Every side effect carries an idempotency key derived
from the workflow id (comment marker, pull request per branch, Linear activity id), so a retried activity never
posts twice.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from typing import Any, Literal

from pydantic import BaseModel
from temporalio import activity

from infra.events.config import load_events_config
from infra.events.github_api import ExternalServiceError, GitHubClient
from infra.events.gitlab_api import GitLabClient
from infra.events.linear_api import LinearClient
from infra.events.triggers import Origin, Reply
from sandbox.hostgit import GitError
from sandbox.hostrepo import TaskRepo


class ReportInput(BaseModel):
    workflow_id: str
    origin: dict[str, Any]
    """The workflow memo's ``origin`` (infra.events.triggers.Origin)."""
    status: str
    """TaskResult.status: succeeded, partial, failed, no_changes, cancelled."""
    summary: str
    """A few lines for people: tests before/after, files changed, how to inspect the run."""
    branch: str
    commit: str | None = None
    """The commit to push (from the task's authoritative repository on this host, sandbox/hostrepo.py)."""
    remote: str
    """Where to push the branch: the task's repository (URL or path)."""


class ReportResult(BaseModel):
    actions: list[str] = []


async def report_status(settings: Any, inp: ReportInput) -> ReportResult:

    cfg = load_events_config(settings)
    origin = Origin.model_validate(inp.origin)
    done: list[str] = []
    deliver = inp.status in ("succeeded", "partial") and inp.commit  # a branch with work on it: push, PR
    state = {"succeeded": "done", "partial": "partial"}.get(inp.status, "blocked")
    if origin.source == "github" and origin.push_to_head and origin.repo and origin.number and \
            cfg.secret("github_token"):
        done += await _report_round(settings, cfg, origin, inp, bool(deliver), state)
    elif origin.source == "github" and origin.repo and origin.number and cfg.secret("github_token"):
        async with GitHubClient.from_config(cfg) as gh:
            body = inp.summary
            if deliver:
                await push(settings, inp, cfg.secret("github_token"))
                done.append(f"pushed {inp.branch}")
                what = "changes" if inp.status == "succeeded" else "part of the changes"
                if origin.head_branch:  # a pull request's task: the changes go into that pull request's branch
                    title, intro = f"bosun: {what} for #{origin.number}", \
                        f"Changes for #{origin.number}, into its branch `{origin.head_branch}`."
                else:
                    title = f"bosun: fix #{origin.number}" if inp.status == "succeeded" else \
                        f"bosun: partial fix for #{origin.number}"
                    intro = f"Closes #{origin.number}." if inp.status == "succeeded" else \
                        f"Part of #{origin.number}: what did not get done is listed below."
                pr = await gh.open_pull_request(origin.repo, inp.branch, title, f"{intro}\n\n{inp.summary}",
                                                base=origin.head_branch, key=inp.workflow_id)
                done.append(f"pull request #{pr.number}")
                body = f"Opened pull request #{pr.number}.\n\n{inp.summary}"
            await gh.upsert_comment(origin.repo, origin.number, f"{inp.workflow_id}:result", body)
            done.append("comment")
            await gh.set_state(origin.repo, origin.number, state)
            done.append(f"label bosun:{state}")
    if origin.source == "gitlab" and origin.push_to_head and origin.repo and origin.number and \
            cfg.secret("gitlab_token"):
        done += await _report_round(settings, cfg, origin, inp, bool(deliver), state)
    elif origin.source == "gitlab" and origin.repo and cfg.secret("gitlab_token"):
        done += await _report_gitlab(settings, cfg, origin, inp, deliver, state)
    if origin.source == "linear" and origin.issue_id and cfg.secret("linear_api_key"):
        async with LinearClient.from_config(cfg) as lin:
            await lin.set_state(origin.issue_id, state)
            done.append(f"linear label bosun:{state}")
    if origin.source == "linear" and origin.agent_session_id and cfg.secret("linear_api_key"):
        async with LinearClient.from_config(cfg) as lin:
            key = f"{inp.workflow_id}:final"
            if inp.status in ("succeeded", "partial", "no_changes"):
                await lin.response(origin.agent_session_id, inp.summary, key=key)
                done.append("linear response")
            else:
                await lin.error(origin.agent_session_id, inp.summary, key=key)
                done.append("linear error")
    return ReportResult(actions=done)


async def _report_round(settings: Any, cfg: Any, origin: Origin, inp: ReportInput, deliver: bool,
                        state: str) -> list[str]:
    """A pull request conversation's round: the commit onto the pull request's own branch (fast-forward only: a
    branch someone moved meanwhile is left alone, and said so), one reply in each review comment's thread, one
    comment answering the reviews and conversation comments, the conversation's one status comment edited, the
    state label."""
    done: list[str] = []
    assert origin.repo and origin.number and origin.head_branch
    gitlab = origin.source == "gitlab"
    token = cfg.secret("gitlab_token" if gitlab else "github_token")
    outcome = f"not changed ({inp.status})"
    if deliver:
        try:
            await push(settings, inp.model_copy(update={"branch": origin.head_branch}), token,
                       **({"user": "oauth2"} if gitlab else {}))
            done.append(f"pushed {origin.head_branch}")
            outcome = f"changed in {inp.commit}"
        except ExternalServiceError as e:
            if e.retryable:
                raise
            outcome = f"not pushed: `{origin.head_branch}` moved meanwhile ({str(e)[:200]})"
    answer = f"{outcome[:1].upper()}{outcome[1:]}.\n\n{inp.summary}"
    key = f"{inp.workflow_id}:reply"
    async with (GitLabClient if gitlab else GitHubClient).from_config(cfg) as api:
        if isinstance(api, GitLabClient):
            project, iid = origin.project_id or origin.repo, origin.number

            def threaded(r: Reply) -> Awaitable[Any] | None:
                return api.reply(project, "merge_request", iid, r.discussion_id, f"{key}:{r.comment_id}",
                                 answer) if r.discussion_id else None

            def post(k: str, body: str) -> Awaitable[Any]:
                return api.upsert_note(project, "merge_request", iid, k, body)

            def label() -> Awaitable[Any]:
                return api.set_state(project, "merge_request", iid, state)

            posted, what = "note", "merge request"
        else:
            gh, repo = api, origin.repo

            def threaded(r: Reply) -> Awaitable[Any] | None:
                return gh.reply_in_thread(repo, origin.number, r.comment_id, f"{key}:{r.comment_id}", answer) \
                    if r.kind == "review_comment" and r.comment_id is not None else None

            def post(k: str, body: str) -> Awaitable[Any]:
                return gh.upsert_comment(repo, origin.number, k, body)

            def label() -> Awaitable[Any]:
                return gh.set_state(repo, origin.number, state)

            posted, what = "comment", "pull request"
        others = []
        for r in origin.replies:
            if (answering := threaded(r)) is not None:
                await answering
                done.append(f"reply {r.comment_id}")
            elif r.author and f"@{r.author}" not in others:
                others.append(f"@{r.author}")
        if others:
            await post(key, f"{', '.join(others)}: {answer}")
            done.append(posted)
        notes = "".join(f"\n- {n}" for n in origin.notes)
        await post(f"{origin.conversation or inp.workflow_id}:status",
                   f"bosun on this {what}: round {origin.round} {inp.status}, {outcome}."
                   + (f"\n\nSet aside:{notes}" if notes else ""))
        done.append("status")
        await label()
        done.append(f"label bosun:{state}")
    return done


async def _report_gitlab(settings: Any, cfg: Any, origin: Origin, inp: ReportInput, deliver: Any,
                         state: str) -> list[str]:
    """GitLab: push, the merge request (into the merge request's branch when the task came from one), the result
    note where the task came from (in the thread it was asked in, if any), the state label."""
    done: list[str] = []
    project = origin.project_id or origin.repo or ""
    async with GitLabClient.from_config(cfg) as gl:
        body = inp.summary
        if deliver and origin.number:  # (a failed pipeline's task has nowhere to report: as on GitHub, no push)
            await push(settings, inp, cfg.secret("gitlab_token"), user="oauth2")
            done.append(f"pushed {inp.branch}")
            what = "changes" if inp.status == "succeeded" else "part of the changes"
            ref = f"!{origin.number}" if origin.noteable == "merge_request" else f"#{origin.number}"
            if origin.head_branch:
                title, intro = f"bosun: {what} for {ref}", f"Changes for {ref}, into its branch `{origin.head_branch}`."
            elif inp.status == "succeeded":
                title, intro = f"bosun: fix {ref}", f"Closes {ref}."
            else:
                title, intro = f"bosun: partial fix for {ref}", f"Part of {ref}: what did not get done is listed below."
            mr = await gl.open_merge_request(project, inp.branch, title, f"{intro}\n\n{inp.summary}",
                                             target=origin.head_branch, key=inp.workflow_id)
            done.append(f"merge request !{mr.number}")
            body = f"Opened merge request !{mr.number}.\n\n{inp.summary}"
        if origin.number and origin.noteable:
            if origin.discussion_id:
                await gl.reply(project, origin.noteable, origin.number, origin.discussion_id,
                               f"{inp.workflow_id}:result", body)
                done.append("reply")
            else:
                await gl.upsert_note(project, origin.noteable, origin.number, f"{inp.workflow_id}:result", body)
                done.append("note")
            await gl.set_state(project, origin.noteable, origin.number, state)
            done.append(f"label bosun:{state}")
    return done


async def push(settings: Any, inp: ReportInput, token: str | None, *, user: str = "x-access-token") -> None:
    """Push the task's commit to ``inp.branch`` of the remote, from the task repository (host git, hardened).
    A network failure is an ExternalServiceError that is retried; a refusal is final."""
    import asyncio


    repo = TaskRepo(settings.workspaces_dir, inp.workflow_id)
    try:
        await asyncio.to_thread(repo.push, inp.branch, inp.remote, inp.commit, token=token, token_user=user)
    except GitError as e:
        text = str(e)
        # (HTTP statuses as words: a commit id or a path may hold the digits 502)
        transient = any(s in text for s in ("Could not resolve host", "timed out", "Connection refused",
                                            "Connection reset", "Failed to connect")) or \
            re.search(r"\b50[234]\b", text) is not None
        raise ExternalServiceError(f"pushing {inp.branch}: {text}", retryable=transient) from None


class CIContextInput(BaseModel):
    repo: str
    """GitHub ``owner/repo``; GitLab the project's path."""
    source: Literal["github", "gitlab"] = "github"
    project_id: int | None = None
    """GitLab: the project's numeric id."""
    check: str
    sha: str
    base_branch: str | None = None
    job_id: int | None = None
    """A GitHub Actions job (a check run's id): its log's tail goes into the round's task."""


class CIContextResult(BaseModel):
    fails_on_base: bool = False
    """The same check's latest run on the base branch failed too: not the pull request's doing."""
    log_tail: str = ""
    """The failing job's log, its last characters (hostile text: the round quotes it)."""
    note: str = ""
    """What could not be read, and why."""


LOG_TAIL = 12_000
"""Characters of a failing job's log a CI round gets."""


async def ci_context(settings: Any, inp: CIContextInput) -> CIContextResult:
    """Whether a failed check fails on the base branch too, and the failing job's log (bounded). A refusal is a note,
    not a failure: the round can go on without them; a transient error is retried."""
    cfg = load_events_config(settings)
    gitlab = inp.source == "gitlab"
    token = "gitlab_token" if gitlab else "github_token"
    if not cfg.secret(token):
        return CIContextResult(note=f"no BOSUN_{token.upper()}: the base branch's checks and the log were not read")
    out = CIContextResult()
    project = inp.project_id or inp.repo
    async with (GitLabClient if gitlab else GitHubClient).from_config(cfg) as api:
        if inp.base_branch:
            if gitlab:
                status = await _or_note(out, f"the pipelines of {inp.base_branch}",
                                        api.latest_pipeline_status(project, inp.base_branch))
                out.fails_on_base = status in cfg.triggers.gitlab_failed_statuses
            else:
                conclusions = await _or_note(out, f"the checks of {inp.base_branch}",
                                             api.check_conclusions(inp.repo, inp.base_branch, inp.check))
                out.fails_on_base = any(c in cfg.triggers.github_failed_conclusions for c in conclusions or [])
        if inp.job_id is not None and not out.fails_on_base:
            tail = await _or_note(out, "the job's log", api.job_log_tail(project if gitlab else inp.repo,
                                                                         inp.job_id, cap=LOG_TAIL))
            out.log_tail = tail or ""
    out.note = out.note.rstrip("; ")
    return out


async def _or_note(out: CIContextResult, what: str, call: Any) -> Any:
    """The call's answer; a refusal becomes a note (None), a transient failure is raised (retried)."""
    try:
        return await call
    except ExternalServiceError as e:
        if e.retryable:
            raise
        out.note += f"{what} could not be read ({str(e)[:200]}); "
        return None


class LabelInput(BaseModel):
    source: Literal["github", "gitlab"] = "github"
    repo: str
    project_id: int | None = None
    number: int
    state: Literal["working", "blocked", "partial", "done"]


async def set_label(settings: Any, inp: LabelInput) -> bool:
    """The state label of a pull (merge) request, e.g. ``bosun:working`` while a conversation's round runs. False
    when there is no token for it."""
    cfg = load_events_config(settings)
    if inp.source == "gitlab":
        if not cfg.secret("gitlab_token"):
            return False
        async with GitLabClient.from_config(cfg) as gl:
            await gl.set_state(inp.project_id or inp.repo, "merge_request", inp.number, inp.state)
        return True
    if not cfg.secret("github_token"):
        return False
    async with GitHubClient.from_config(cfg) as gh:
        await gh.set_state(inp.repo, inp.number, inp.state)
    return True


class ReportActivities:
    """Given: the settings (API URLs, tokens, where the task repositories live)."""

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    def all(self) -> list:
        return [self.report_status]

    @activity.defn
    async def set_label(self, inp: LabelInput) -> bool:
        """A pull (merge) request's state label (a conversation's round: ``bosun:working``)."""
        return await set_label(self.settings, inp)

    @activity.defn
    async def ci_context(self, inp: CIContextInput) -> CIContextResult:
        """A failed check's context for a pull request's conversation: does it fail on the base branch, its log."""
        return await ci_context(self.settings, inp)

    @activity.defn
    async def report_status(self, inp: ReportInput) -> ReportResult:
        """Comment, labels, branch and pull request on GitHub (note, thread reply, labels, branch and merge request
        on GitLab); the final response or error on Linear."""
        return await report_status(self.settings, inp)
