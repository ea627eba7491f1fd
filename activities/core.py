"""bosun's activities: thin adapters from Temporal to the agents, tools, sandboxes and workspaces.

One ``Activities`` object per worker process holds what activities share: settings, the artifact store, the
sandboxes of the agent runs on this host, and the tool registry. Errors are translated by class
(docs/ARCHITECTURE.md, "Errors"): ProviderError -> retry honouring retry-after (non-retryable for 4xx);
ScriptDiverged and ConfigError -> non-retryable; UnexpectedEnvironment -> retry on a fresh sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from importlib import resources
from pathlib import Path

from temporalio import activity

from activities.models import (
    DATA_INLINE_MAX,
    AgentWorkspaceInput,
    BranchInput,
    ChecksInput,
    ChecksResult,
    CleanupInput,
    CollectInput,
    CollectResult,
    Compaction,
    DiffInput,
    EscalationInput,
    FinalizeInput,
    FinalizeResult,
    InitAgentInput,
    InitAgentResult,
    MergeInput,
    MergeResult,
    ModelCallInput,
    ModelCallResult,
    PlanInfo,
    PrepareInput,
    PrepareResult,
    ReadPlanInput,
    ReleaseInput,
    RouteInput,
    RouteResult,
    SubtaskInfo,
    ToolCallInput,
    ToolCallRef,
    ToolResultRef,
    preview,
)
from activities.report import ReportInput, ReportResult
from agents.messages import Message
from agents.profiles import cost_usd, profile_for
from agents.providers import make_provider, parse_spec
from agents.tools.builtin import PYTEST, TEST_ENV, default_registry
from agents.tools.once import CallLedger
from agents.tools.pytest_report import parse_pytest_output
from agents.tools.registry import ToolContext
from infra.artifacts import ArtifactStore
from infra.errors import (
    ConfigError,
    UnexpectedEnvironment,
    describe_validation,
)
from infra.settings import Settings
from sandbox.base import Sandbox
from sandbox.hostrepo import TaskRepo
from sandbox.snapshot import SnapshotRefused

PINNED_FILES = ("AGENTS.md", "CLAUDE.md", "CONTRIBUTING.md", ".bosun/instructions.md")
"""Project instruction files pinned into every agent's context (and re-injected after compaction)."""


def load_role_or_none(name: str):
    """The role defined in agents/roles/<name>.toml, or None for `solo` (every tool, prompts/solo.md)."""
    from agents.roles import load_role, role_names

    if name in role_names():
        return load_role(name)
    if name == "solo":
        return None
    raise ConfigError(f"unknown agent role {name!r}; roles: solo, {', '.join(role_names())}")


def load_router_config(settings: Settings):
    """The router configuration from BOSUN_ROUTER_CONFIG (a JSON file), or the defaults."""
    from pydantic import ValidationError

    from agents.router import RouterConfig

    if settings.router_config is None:
        return RouterConfig()
    try:
        return RouterConfig.model_validate_json(Path(settings.router_config).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"BOSUN_ROUTER_CONFIG={settings.router_config}: cannot read it ({e.strerror})") from None
    except ValidationError as e:
        raise ConfigError(f"BOSUN_ROUTER_CONFIG={settings.router_config}: "
                          f"{describe_validation(e, where='(file)', first_only=True)}") from None


def _profile(model: str):
    return profile_for(parse_spec(model)) if model else None


class SandboxManager:
    """The live sandboxes of this worker, one per agent run, created on first use and after a crash."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._boxes: dict[str, Sandbox] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._provider = None

    def provider(self):
        if self._provider is None:
            from sandbox import get_provider

            self._provider = get_provider(self.settings.sandbox_backend, image=self.settings.sandbox_image)
        return self._provider

    async def get(self, key: str, workspace: str) -> Sandbox:
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            box = self._boxes.get(key)
            if box is not None and box.alive:
                return box
            if box is not None:
                await box.close()
            # A run workspace's scratch .git borrows the task repository's objects (read-only in the sandbox);
            # which store is derived from the path bosun chose, never from the workspace's content.
            box = await self.provider().acquire(Path(workspace), objects=TaskRepo.objects_for(workspace))
            self._boxes[key] = box
            return box

    async def release(self, key: str) -> None:
        box = self._boxes.pop(key, None)
        self._locks.pop(key, None)
        if box is not None:
            await box.close()

    async def release_prefix(self, prefix: str) -> list[str]:
        """Release every sandbox whose key starts with ``prefix``; returns their keys."""
        keys = [k for k in list(self._boxes) if k.startswith(prefix)]
        for key in keys:
            await self.release(key)
        return keys

    def keys(self) -> list[str]:
        return list(self._boxes)

    async def close_all(self) -> None:
        for key in list(self._boxes):
            await self.release(key)


@contextlib.asynccontextmanager
async def heartbeating(every_s: float = 2.0):
    """Heartbeat while a long step runs, so a dead worker is noticed within the heartbeat timeout."""

    async def beat() -> None:
        if activity.info().is_local:
            return  # local activities (file tool calls) have no heartbeat; their timeout is short
        while True:  # the first beat after every_s: a quick step sends none
            await asyncio.sleep(every_s)
            activity.heartbeat()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class Activities:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = ArtifactStore(settings.artifacts_dir)
        self.sandboxes = SandboxManager(settings)
        self.registry = default_registry()
        self.calls = CallLedger(settings.data_dir / "tool-calls", self.store)
        """Tool calls' records, and each agent's checklist (the todo tool), so a worker restart keeps it."""

    def all(self) -> list:
        return [self.route_model, self.prepare_workspace, self.run_checks, self.init_agent, self.model_call,
                self.tool_call, self.run_escalated, self.release_sandbox, self.finalize, self.read_plan,
                self.prepare_agent_workspace, self.collect_agent_work, self.merge_agent_work, self.start_branch,
                self.diff_since, self.report_status, self.cleanup_task]

    @activity.defn
    async def route_model(self, inp: RouteInput) -> RouteResult:
        """`--model auto`: the router's pick for one agent, with its score and reason (recorded in history)."""
        from agents.router import RouteRequest, fallbacks, route

        config = load_router_config(self.settings)
        decision = route(inp.role, RouteRequest(task_chars=inp.task_chars, plan_subtasks=inp.plan_subtasks,
                                                files_in_scope=inp.files_in_scope,
                                                failures_so_far=inp.failures_so_far), config)
        return RouteResult(model=decision.model, score=decision.score, tier=decision.tier, reason=decision.reason,
                           fallbacks=[m for m in fallbacks(inp.role, config) if m != decision.model])

    @activity.defn
    async def bind_worker(self) -> str:
        """Runs on the shared queue; answers with this host's own queue, where the task's activities go."""
        return self.settings.worker_queue

    def repo(self, workflow_id: str) -> TaskRepo:
        """The task's authoritative repository and run workspaces on this host (sandbox/hostrepo.py)."""
        return TaskRepo(self.settings.workspaces_dir, workflow_id)

    def _run_owner(self) -> tuple[int, int] | None:
        """Who owns run workspaces: the sandbox uid when the worker is root (else the worker itself)."""
        import os

        return (self.settings.sandbox_uid, self.settings.sandbox_uid) if os.geteuid() == 0 else None

    async def _materialize(self, workflow_id: str, name: str, commit: str) -> Path:
        return await asyncio.to_thread(self.repo(workflow_id).materialize, name, commit, owner=self._run_owner(),
                                       quota_mb=self.settings.sandbox_disk_mb)

    @activity.defn
    async def prepare_workspace(self, inp: PrepareInput) -> PrepareResult:
        repo = self.repo(inp.workflow_id)
        base = await asyncio.to_thread(repo.prepare, inp.repo, inp.ref)
        return PrepareResult(repository=str(repo.git_dir), base_commit=base)

    @activity.defn
    async def run_checks(self, inp: ChecksInput) -> ChecksResult:
        """The tests on a fresh checkout of ``inp.commit``, in a sandbox (the checkout is dropped afterwards)."""
        info = activity.info()
        key = f"checks:{info.workflow_id}:{info.activity_id}"
        name = f"checks-{info.activity_id}"
        async with heartbeating():
            workspace = await self._materialize(inp.workflow_id, name, inp.commit)
            try:
                box = await self.sandboxes.get(key, str(workspace))
                try:
                    res = await box.exec(PYTEST, timeout_s=self.settings.tool_timeout_s,
                                         output_cap=self.settings.tool_output_cap, env=TEST_ENV)
                finally:
                    await self.sandboxes.release(key)
            finally:
                await asyncio.to_thread(self.repo(inp.workflow_id).drop_run, name)
        output = res.stdout + ("\n" + res.stderr if res.stderr else "")
        report = parse_pytest_output(output, None if res.timed_out else res.exit_code)
        return ChecksResult(green=report.green, exit_code=report.exit_code, summary=report.headline(),
                            failed=report.failed, passed_count=report.counts.get("passed", len(report.passed)),
                            output_ref=self.store.put_text(output))

    @activity.defn
    async def init_agent(self, inp: InitAgentInput) -> InitAgentResult:
        role = load_role_or_none(inp.role)
        if role is None:
            system = resources.files("agents").joinpath("prompts", "solo.md").read_text(encoding="utf-8")
        else:
            system = role.system_prompt(_profile(inp.model), role.registry(self.registry).tools)
        static, pinned = await self._static_context(inp)
        task = f"{static}\n\n# Task\n\n{inp.task}" if static else inp.task
        for att in inp.attachments:
            body = self.store.get_text(att.ref)
            if len(body) > att.max_chars:
                body = body[: att.max_chars // 2] + "\n[... cut ...]\n" + body[-att.max_chars // 2:]
            task += f"\n\n## {att.title}\n\n{body}"
        messages = [Message(role="system", content=system), Message(role="user", content=task)]
        budget = role.budget.model_dump(exclude_none=True) if role is not None else {}
        return InitAgentResult(transcript_ref=self.store.put_json([m.model_dump(mode="json") for m in messages]),
                               budget=budget, pinned_ref=self.store.put_text(pinned) if pinned else None)

    async def _static_context(self, inp: InitAgentInput) -> tuple[str, str]:
        """What the agent should know before its first turn, gathered inside its sandbox: environment, git status,
        a repo map ranked for the task, and the project's pinned instructions (AGENTS.md, CONTRIBUTING.md...)."""
        from agents.context.static import build_static_context
        from infra.errors import ToolFailed

        box = await self.sandboxes.get(inp.agent_id, inp.workspace)
        status = await box.exec(["git", "status", "--short"], timeout_s=60, output_cap=20_000)
        branch = await box.exec(["git", "rev-parse", "--abbrev-ref", "HEAD"], timeout_s=30, output_cap=1000)
        ctx = ToolContext(sandbox=box)
        repo_map = await self.registry.execute("repo_map", {"query": inp.task[:4000]}, ctx)
        instructions: dict[str, str] = {}
        for name in PINNED_FILES:
            try:
                instructions[name] = (await box.request("read", {"path": name}))["text"]
            except ToolFailed:
                continue
        ctx_ = build_static_context(
            os_name="Linux, inside bosun's sandbox (no network; writes only in the repository and /tmp)",
            branch=branch.stdout.strip() if branch.exit_code == 0 else None,
            git_status=status.stdout if status.exit_code == 0 else "",
            repo_map="" if repo_map.is_error else repo_map.text, instructions=instructions)
        return ctx_.text, ctx_.pinned

    @activity.defn
    async def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        messages = [Message.model_validate(m) for m in self.store.get_json(inp.transcript_ref)]
        for r in inp.tool_results:
            messages.append(Message(role="tool", content=self.store.get_text(r.result_ref), tool_call_id=r.call_id,
                                    name=r.name, is_error=r.is_error))
        for text in inp.user_messages:
            messages.append(Message(role="user", content=text))
        spec = parse_spec(inp.model)
        pinned = self.store.get_text(inp.pinned_ref) if inp.pinned_ref else None
        messages, compaction = self._compact(messages, spec, pinned)
        trajectory = self.store.get_text(inp.trajectory_ref) if inp.trajectory_ref else None
        provider = make_provider(spec, trajectory_text=trajectory, settings=self.settings, agent_keys=inp.agent_keys)
        role = load_role_or_none(inp.role)
        registry = role.registry(self.registry) if role else self.registry
        if inp.tools:
            specs = registry.specs(inp.tools)
        elif role:
            specs = role.tool_specs(self.registry, _profile(inp.model))
        else:
            specs = registry.specs()
        try:
            resp = await provider.complete(messages, specs)
        finally:
            await provider.aclose()
        messages.append(resp.message)
        transcript_ref = self.store.put_json([m.model_dump(mode="json") for m in messages])
        calls = [ToolCallRef(id=c.id, name=c.name, arguments_ref=self.store.put_json(c.arguments),
                             arguments_preview=preview(_args_text(c.arguments)),
                             write_key=registry.write_key(c.name, c.arguments))
                 for c in resp.message.tool_calls]
        u = resp.usage
        cost = cost_usd(_profile(inp.model), u)
        return ModelCallResult(cost_usd=round(cost, 6), transcript_ref=transcript_ref,
                               text_preview=preview(resp.message.content),
                               tool_calls=calls, stop_reason=resp.stop_reason, model=resp.model or inp.model,
                               compaction=compaction, usage=u)

    def _compact(self, messages: list[Message], spec, pinned: str | None) -> tuple[list[Message], Compaction | None]:
        """Past 70% of the model's window, old tool outputs become summaries; raw outputs stay in the store."""
        from agents.context.compaction import compact, compaction_summary
        from agents.profiles import profile_for

        profile = profile_for(spec)
        res = compact(messages, window_tokens=profile.context_window, store_put=self.store.put_text, pinned=pinned)
        if not res.compacted or res.event is None:
            return messages, None
        return res.messages, Compaction(summary=compaction_summary(res.event),
                                        event_ref=self.store.put_text(res.event.model_dump_json()),
                                        before_tokens=res.event.before_tokens, after_tokens=res.event.after_tokens)

    @activity.defn
    async def tool_call(self, inp: ToolCallInput) -> ToolResultRef:
        """Run one tool call in the agent's sandbox, once: a repeated attempt returns the recorded result, or puts
        back the files a cut-off attempt had begun to change before running again (agents/tools/once.py)."""
        started = time.monotonic()
        args = self.store.get_json(inp.call.arguments_ref)

        async def execute(sandbox) -> dict:
            is_todo = inp.call.name == "todo"  # only the todo tool uses the checklist (its calls run one at a time)
            ctx = ToolContext(sandbox=sandbox, command_timeout_s=self.settings.tool_timeout_s,
                              output_cap=self.settings.tool_output_cap, artifacts=self.store.get_text,
                              todo=self.calls.load_state(inp.agent_id, "todo", []) if is_todo else [])
            role = load_role_or_none(inp.role)
            registry = role.registry(self.registry) if role else self.registry
            out = await registry.execute(inp.call.name, args, ctx)
            if is_todo and not out.is_error:
                self.calls.save_state(inp.agent_id, "todo", ctx.todo)
            small = len(json.dumps(out.data, default=str)) <= DATA_INLINE_MAX
            return ToolResultRef(call_id=inp.call.id, name=inp.call.name, result_ref=self.store.put_text(out.text),
                                 summary=preview(out.summary or out.text, 200), is_error=out.is_error,
                                 error_kind=out.error_kind, duration_s=round(time.monotonic() - started, 4),
                                 data=out.data if small else {},
                                 data_ref=None if small else self.store.put_json(out.data)).model_dump(mode="json")

        try:
            async with heartbeating():
                result, replayed = await self.calls.run(
                    inp.agent_id, f"{activity.info().workflow_run_id}:{inp.call.id}",
                    lambda: self.sandboxes.get(inp.agent_id, inp.workspace), execute)
        except UnexpectedEnvironment:
            await self.sandboxes.release(inp.agent_id)  # the next attempt starts a fresh sandbox
            raise
        return ToolResultRef.model_validate({**result, "replayed": replayed})

    @activity.defn
    async def run_escalated(self, inp: EscalationInput) -> ToolResultRef:
        """A person decided on a request_escalation call: run the exact command on the host if approved."""
        from pydantic import ValidationError

        from agents.tools.escalation import NAME, EscalationArgs
        from infra.errors import EscalationRefused
        from sandbox.escalation import run_escalated

        started = time.monotonic()
        try:
            args = EscalationArgs.model_validate(self.store.get_json(inp.arguments_ref))
        except ValidationError as e:
            text, kind = f"InvalidArguments: {e.errors()[0]['msg']}", "InvalidArguments"
        else:
            try:
                res = await run_escalated(args.command, args.justification, lambda *_: inp.approved,
                                          cwd=inp.workspace, timeout_s=self.settings.tool_timeout_s,
                                          output_cap=self.settings.tool_output_cap, user=self._run_owner())
                text = (f"approved by {inp.decided_by or 'a person'}; ran outside the sandbox (as the sandbox's "
                        f"user, with network, none of the worker's environment).\n"
                        f"exit code: {res.exit_code}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}")
                kind = None
            except EscalationRefused as e:
                text, kind = f"EscalationRefused: {e} (decided by {inp.decided_by or 'nobody in time'})", \
                    "EscalationRefused"
        return ToolResultRef(call_id=inp.call_id, name=NAME, result_ref=self.store.put_text(text),
                             summary=preview(text, 200), is_error=kind is not None, error_kind=kind,
                             duration_s=round(time.monotonic() - started, 4))

    @activity.defn
    async def report_status(self, inp: ReportInput) -> ReportResult:
        """Comment, labels, branch and pull request on GitHub; the final response or error on Linear."""
        from activities.report import report_status

        return await report_status(self.settings, inp)

    @activity.defn
    async def release_sandbox(self, inp: ReleaseInput) -> list[str]:
        """Destroy an agent's sandbox (or, with ``every_agent_of_task``, those of all agents of a task) and drop its
        tool-call records and search mirror. Idempotent; returns the sandboxes released."""
        from agents.tools.hostview import drop_mirror

        if inp.every_agent_of_task:
            return await self.sandboxes.release_prefix(f"{inp.agent_id}/")
        released = [inp.agent_id] if inp.agent_id in self.sandboxes.keys() else []
        await self.sandboxes.release(inp.agent_id)
        self.calls.forget(inp.agent_id)
        if inp.workspace:
            drop_mirror(Path(inp.workspace))
        return released

    @activity.defn
    async def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        """The task's result: the diff from the base to the branch head, and a checkout of the branch for people."""
        repo = self.repo(inp.workflow_id)

        def work() -> tuple[str, list[str], str | None, str]:
            head = repo.head(inp.branch) or inp.base_commit
            diff, files = repo.diff(inp.base_commit, head)
            view = repo.deliver_view(inp.branch)
            return diff, files, (head if head != inp.base_commit else None), str(view)

        diff, files, commit, view = await asyncio.to_thread(work)
        limit = 32_000
        return FinalizeResult(diff_ref=self.store.put_text(diff), files_changed=files, commit=commit, workspace=view,
                              diff=diff if len(diff) <= limit else diff[:limit] + "\n[... diff truncated ...]\n")

    @activity.defn
    async def cleanup_task(self, inp: CleanupInput) -> None:
        """At the end of a task, whatever its outcome: release every sandbox of its agents and remove its run
        workspaces (their work is in the task repository as commits)."""
        await self.sandboxes.release_prefix(f"{inp.workflow_id}/")
        await self.sandboxes.release_prefix(f"checks:{inp.workflow_id}:")
        await asyncio.to_thread(self.repo(inp.workflow_id).drop_runs)

    # ------------------------------------------------------------------ team mode: plan, clones, stitching

    @activity.defn
    async def read_plan(self, inp: ReadPlanInput) -> PlanInfo:
        """The planner's plan from its last message; an unusable plan becomes one subtask holding the whole task."""
        messages = [Message.model_validate(m) for m in self.store.get_json(inp.transcript_ref)]
        # The plan of the last accepted submit_plan call; else the final message's JSON.
        calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}
        for m in reversed(messages):
            if m.role == "tool" and m.name == "submit_plan" and not m.is_error and m.tool_call_id in calls:
                return plan_from_text(json.dumps(calls[m.tool_call_id].arguments), inp.task)
        last = next((m.content for m in reversed(messages) if m.role == "assistant"), "")
        return plan_from_text(last, inp.task)

    @activity.defn
    async def prepare_agent_workspace(self, inp: AgentWorkspaceInput) -> str:
        """A fresh workspace for one agent run: a checkout of ``inp.commit`` made by the host before any sandbox
        sees it, owned by the sandbox user, on its own size-capped file system where the host allows it."""
        return str(await self._materialize(inp.workflow_id, inp.name, inp.commit))

    @activity.defn
    async def collect_agent_work(self, inp: CollectInput) -> CollectResult:
        """Import what an agent left in its run workspace as a commit, reading the files as data (no git runs
        there; sandbox/snapshot.py)."""
        try:
            imported = await asyncio.to_thread(self.repo(inp.workflow_id).import_run, inp.name, inp.parent,
                                               inp.message)
        except SnapshotRefused as e:
            return CollectResult(commit=None, files=[], notes=[f"the work could not be imported: {e}"])
        return CollectResult(commit=imported.commit, files=imported.files, notes=imported.notes[:50])

    @activity.defn
    async def merge_agent_work(self, inp: MergeInput) -> MergeResult:
        """3-way merge of a run's commit into the task branch, inside the task repository (no work tree)."""
        repo = self.repo(inp.workflow_id)

        def work():
            head = repo.head(inp.branch)
            if inp.fast_forward and head is not None and repo.is_ancestor(head, inp.commit):
                repo.set_branch(inp.branch, inp.commit, expect=head if head != inp.commit else None)
                return MergeResult(merged=True, head=inp.commit)
            m = repo.merge(inp.branch, inp.commit, inp.message)
            return MergeResult(merged=m.merged, conflicts=m.conflicts, head=m.head)

        return await asyncio.to_thread(work)

    @activity.defn
    async def start_branch(self, inp: BranchInput) -> str:
        """The task branch at ``inp.commit`` unless it exists; returns its head."""
        return await asyncio.to_thread(self.repo(inp.workflow_id).start_branch, inp.branch, inp.commit)

    @activity.defn
    async def diff_since(self, inp: DiffInput) -> str:
        """The changes from the base to ``inp.head`` as an artifact ref (for the debugger)."""
        diff, _ = await asyncio.to_thread(self.repo(inp.workflow_id).diff, inp.base_commit, inp.head)
        return self.store.put_text(diff or "(no changes yet)")


def plan_from_text(text: str, task: str) -> PlanInfo:
    """Parse a planner's final message into the coordinator's plan, or fall back to one subtask (never lose work)."""
    from agents.plan import PlanError, parse_plan, topological_waves

    try:
        plan = parse_plan(text)
    except PlanError as e:
        return PlanInfo(subtasks=[SubtaskInfo(id="task", goal=task)], waves=[["task"]], source="fallback",
                        note=f"the planner's plan was unusable ({str(e)[:300]}); running the whole task as one subtask")
    def check(a) -> str:
        return a.command or "tests pass: " + " ".join(a.tests)

    subs = [SubtaskInfo(id=s.id, goal=s.goal, files=list(s.files), depends_on=list(s.depends_on),
                        acceptance=check(s.acceptance)) for s in plan.subtasks]
    return PlanInfo(subtasks=subs, waves=topological_waves(plan))


def _args_text(arguments: dict) -> str:
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True)
