"""The agent's activities: thin adapters from Temporal to the agent turn (agents/turn.py), the tools and the
sandbox of each agent run.

``model_call`` is load -> prepare -> complete -> settle -> store; ``tool_call`` runs one call in the agent's
sandbox through the tool-call ledger (one effect per call). Errors are raised as bosun's classes and mapped to
Temporal failures by the worker's interceptor (activities/interceptor.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time

from pydantic import ValidationError
from temporalio import activity

from activities.heartbeat import heartbeating
from activities.models import (
    DATA_INLINE_MAX,
    ApplyWorkInput,
    ApplyWorkResult,
    EscalationInput,
    InitAgentInput,
    InitAgentResult,
    ModelCallInput,
    ModelCallResult,
    PlanInfo,
    ReadPlanInput,
    ReleaseInput,
    RouteInput,
    RouteResult,
    SubagentResultsInput,
    SubagentRun,
    SubagentsInput,
    SubagentsPlan,
    SubtaskInfo,
    ToolCallInput,
    ToolCallRef,
    ToolResultRef,
    preview,
)
from agents.context.compaction import compaction_summary
from agents.context.static import PINNED_FILES, build_static_context, environment_facts
from agents.messages import Message
from agents.plan import PlanError, plan_from_transcript, topological_waves
from agents.providers import ProviderPool, parse_spec
from agents.providers.base import MAX_TOKENS
from agents.router import RouteRequest, fallbacks, load_config, model_fallbacks, route
from agents.tools.builtin import default_registry
from agents.tools.escalation import NAME as ESCALATION
from agents.tools.escalation import EscalationArgs
from agents.tools.once import CallLedger
from agents.tools.registry import Registry, ToolContext
from agents.tools.subagents import NAME as SPAWN
from agents.tools.subagents import ROLE_OF as SUBAGENT_ROLES
from agents.tools.subagents import SpawnArgs, SubagentReport
from agents.tools.subagents import brief as subagent_brief
from agents.tools.subagents import refusal as subagent_refusal
from agents.tools.subagents import render as render_subagents
from agents.turn import Attached, first_messages, load_role_or_none, prepare, settle
from environments.runtime import resolve
from infra.artifacts import ArtifactStore
from infra.errors import (
    BosunError,
    ConfigError,
    EscalationRefused,
    InvalidArguments,
    ToolFailed,
    UnexpectedEnvironment,
    describe_validation,
)
from infra.names import show_text
from infra.objectstore import open_store
from infra.settings import Settings
from sandbox.escalation import run_escalated
from sandbox.hostrepo import TaskRepo
from sandbox.hostview import drop_mirror
from sandbox.manager import SandboxManager


def sandbox_user(settings: Settings) -> tuple[int, int] | None:
    """Who sandboxes (and approved escalations) run as: the sandbox uid when the worker is root."""
    return (settings.sandbox_uid, settings.sandbox_uid) if os.geteuid() == 0 else None


class AgentActivities:
    """Given: the settings, the artifact store, this worker's sandboxes, the tool registry and the ledger."""

    def __init__(self, settings: Settings, store: ArtifactStore, sandboxes: SandboxManager, registry: Registry,
                 calls: CallLedger) -> None:
        self.settings = settings
        self.store = store
        self.sandboxes = sandboxes
        self.registry = registry
        self.calls = calls
        """Tool calls' records, and each agent's checklist (the todo tool), so a worker restart keeps it."""
        self.providers = ProviderPool(settings)
        """This worker's model clients, one per endpoint, kept open between turns; closed by :meth:`close`."""

    async def close(self) -> None:
        """Close the model clients' connections (the worker's shutdown)."""
        await self.providers.aclose()

    @classmethod
    def standalone(cls, settings: Settings) -> AgentActivities:
        """With a store, sandboxes, registry and ledger of its own (tests, benchmarks); the worker shares them."""

        store = open_store(settings)
        return cls(settings, store, SandboxManager(settings.sandbox_backend, settings.sandbox_image, resolve),
                   default_registry(), CallLedger(settings.data_dir / "tool-calls", store))

    def all(self) -> list:
        return [self.route_model, self.init_agent, self.model_call, self.tool_call, self.run_escalated,
                self.release_sandbox, self.read_plan, self.plan_subagents, self.apply_work, self.subagent_results]

    @activity.defn
    async def route_model(self, inp: RouteInput) -> RouteResult:
        """The model for one agent and its fallback chain, with the reason (recorded in history): the router's
        pick under ``auto``, else the given spec."""
        config = inp.router or load_config(self.settings.router_config)
        whose = " (the task's router settings)" if inp.router is not None else ""
        if inp.model != "auto":
            chain = model_fallbacks(inp.model, config)
            return RouteResult(model=inp.model, score=0.0, fallbacks=chain, reason=f"{inp.role}: {inp.model} as "
                               f"given; fallbacks: {', '.join(chain) or 'none'}{whose}")
        decision = route(inp.role, RouteRequest(task_chars=inp.task_chars, plan_subtasks=inp.plan_subtasks,
                                                files_in_scope=inp.files_in_scope,
                                                failures_so_far=inp.failures_so_far), config)
        chain = [m for m in dict.fromkeys(fallbacks(inp.role, config) + model_fallbacks(decision.model, config))
                 if m != decision.model]
        return RouteResult(model=decision.model, score=decision.score, tier=decision.tier,
                           reason=decision.reason + whose, fallbacks=chain)

    @activity.defn
    async def init_agent(self, inp: InitAgentInput) -> InitAgentResult:
        """The agent's first messages (role prompt, static context gathered in its sandbox, task, attachments)."""
        role = load_role_or_none(inp.role)
        static, pinned = await self._static_context(inp)
        attached = [Attached(a.title, self.store.get_text(a.ref), a.max_chars) for a in inp.attachments]
        messages = first_messages(inp.role, inp.model, inp.task, self.registry, static_context=static,
                                  attachments=attached, harness=inp.harness)
        budget = role.budget.model_dump(exclude_none=True) if role is not None else {}
        return InitAgentResult(transcript_ref=self.store.put_json([m.model_dump(mode="json") for m in messages]),
                               budget=budget, pinned_ref=self.store.put_text(pinned) if pinned else None)

    async def _static_context(self, inp: InitAgentInput) -> tuple[str, str]:
        """What the agent should know before its first turn, gathered inside its sandbox: environment, git status,
        a repo map ranked for the task, and the project's pinned instructions (AGENTS.md, CONTRIBUTING.md...)."""
        box = await self.sandboxes.get(inp.agent_id, inp.workspace)
        status = await box.exec(["git", "status", "--short"], timeout_s=60, output_cap=20_000)
        branch = await box.exec(["git", "rev-parse", "--abbrev-ref", "HEAD"], timeout_s=30, output_cap=1000)
        repo_map = await self.registry.execute("repo_map", {"query": inp.task[:4000]}, ToolContext(sandbox=box))
        instructions: dict[str, str] = {}
        for name in PINNED_FILES:
            try:
                instructions[name] = (await box.read(name)).text
            except ToolFailed:
                continue
        ctx = build_static_context(
            os_name="Linux, inside bosun's sandbox (no network; writes only in the repository and /tmp)",
            branch=branch.stdout.strip() if branch.exit_code == 0 else None,
            git_status=status.stdout if status.exit_code == 0 else "",
            repo_map="" if repo_map.is_error else repo_map.text, instructions=instructions,
            extra=environment_facts(box.environment))
        return ctx.text, ctx.pinned

    @activity.defn
    async def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        """One model turn: load the transcript, prepare the request, call the provider, settle and store."""
        async with heartbeating():  # (a cancel reaches it, and ends a request its model holds open)
            return await self._model_call(inp)

    async def _model_call(self, inp: ModelCallInput) -> ModelCallResult:
        transcript = [Message.model_validate(m) for m in self.store.get_json(inp.transcript_ref)]
        results = [Message(role="tool", content=self.store.get_text(r.result_ref), tool_call_id=r.call_id, name=r.name,
                           is_error=r.is_error) for r in inp.tool_results]
        request = prepare(transcript, results, inp.user_messages, role_name=inp.role, model=inp.model,
                          base=self.registry, store_put=self.store.put_text,
                          pinned=self.store.get_text(inp.pinned_ref) if inp.pinned_ref else None,
                          explicit_tools=inp.tools, harness=inp.harness)
        trajectory = self.store.get_text(inp.trajectory_ref) if inp.trajectory_ref else None
        provider = self.providers.get(parse_spec(inp.model), trajectory_text=trajectory, agent_keys=inp.agent_keys,
                                      fetch=self.store.get_text)
        response = await provider.complete(request.messages, request.tools,
                                           max_tokens=min(MAX_TOKENS, request.profile.max_output_tokens))
        out = settle(request, response, inp.model)
        compaction = None
        if request.compaction is not None:
            ev = request.compaction
            compaction = {"summary": compaction_summary(ev), "event_ref": self.store.put_text(ev.model_dump_json()),
                          "before_tokens": ev.before_tokens, "after_tokens": ev.after_tokens}
        calls = [ToolCallRef(id=c.id, name=show_text(c.name), arguments_ref=self.store.put_json(c.arguments),
                             arguments_preview=preview(json.dumps(c.arguments, ensure_ascii=False, sort_keys=True)),
                             write_key=key, offered=c.id not in out.not_offered,
                             refused=self._not_offered(c.id, show_text(c.name), inp.role)
                             if c.id in out.not_offered else None) for c, key in out.calls]
        return ModelCallResult(cost_usd=out.cost_usd, transcript_ref=self.store.put_json(
            [m.model_dump(mode="json") for m in out.transcript]), text_preview=preview(out.text), tool_calls=calls,
            stop_reason=out.stop_reason, model=out.model, compaction=compaction, usage=out.usage)

    @activity.defn
    async def tool_call(self, inp: ToolCallInput) -> ToolResultRef:
        """Run one tool call in the agent's sandbox, once: a repeated attempt returns the recorded result, or puts
        back the files a cut-off attempt had begun to change before running again (agents/tools/once.py)."""
        started = time.monotonic()
        if not inp.call.offered:  # (the workflow answers these with the model call's refusal; never run one)
            return self._not_offered(inp.call.id, inp.call.name, inp.role)
        args = self.store.get_json(inp.call.arguments_ref)
        role = load_role_or_none(inp.role)
        registry = role.registry(self.registry) if role else self.registry

        async def execute(sandbox) -> dict:
            is_todo = inp.call.name == "todo"  # only the todo tool uses the checklist (its calls run one at a time)
            ctx = ToolContext(sandbox=sandbox, command_timeout_s=self.settings.tool_timeout_s,
                              output_cap=self.settings.tool_output_cap, artifacts=self.store.get_text,
                              todo=self.calls.load_state(inp.agent_id, "todo", []) if is_todo else [])
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
        started = time.monotonic()
        try:
            args = EscalationArgs.model_validate(self.store.get_json(inp.arguments_ref))
        except ValidationError as e:
            return self._refused(inp.call_id, ESCALATION, InvalidArguments(e.errors()[0]['msg']), started)
        try:
            res = await run_escalated(args.command, args.justification, lambda *_: inp.approved,
                                      cwd=inp.workspace, timeout_s=self.settings.tool_timeout_s,
                                      output_cap=self.settings.tool_output_cap, user=sandbox_user(self.settings))
        except EscalationRefused as e:
            return self._refused(inp.call_id, ESCALATION, EscalationRefused(
                f"{e} (decided by {inp.decided_by or 'nobody in time'})"), started)
        text = (f"approved by {inp.decided_by or 'a person'}; ran outside the sandbox (as the sandbox's user, with "
                f"network, none of the worker's environment).\n"
                f"exit code: {res.exit_code}\nstdout:\n{res.stdout}\nstderr:\n{res.stderr}")
        return ToolResultRef(call_id=inp.call_id, name=ESCALATION, result_ref=self.store.put_text(text),
                             summary=preview(text, 200), duration_s=round(time.monotonic() - started, 4))

    def _not_offered(self, call_id: str, name: str, role: str) -> ToolResultRef:
        return self._refused(call_id, name, InvalidArguments(f"tool {name!r} was not offered to this agent ({role}); "
                                                             "call only the tools you were given"))

    def _refused(self, call_id: str, name: str, e: BosunError, started: float | None = None) -> ToolResultRef:
        """A tool call answered with ``e`` (the model reads ``<kind>: <message>``)."""
        text = f"{e.kind}: {e}"
        return ToolResultRef(call_id=call_id, name=name, result_ref=self.store.put_text(text),
                             summary=preview(text, 200), is_error=True, error_kind=e.kind,
                             duration_s=round(time.monotonic() - started, 4) if started is not None else 0.0)

    @activity.defn
    async def plan_subagents(self, inp: SubagentsInput) -> SubagentsPlan:
        """A spawn_subagents call checked (arguments, depth, count, role): the subagents to run, or the refusal the
        model gets as the tool's result."""

        def refuse(e: BosunError) -> SubagentsPlan:
            return SubagentsPlan(refused=self._refused(inp.call.id, SPAWN, e))
        try:
            args = SpawnArgs.model_validate(self.store.get_json(inp.call.arguments_ref))
        except ValidationError as e:
            return refuse(InvalidArguments(describe_validation(e, where="(arguments)")))
        role = load_role_or_none(inp.role)
        why = subagent_refusal(args, depth=inp.depth, spawned=inp.spawned,
                               read_only_role=bool(role and role.read_only), editors_possible=inp.editors_possible)
        if why:
            return refuse(ToolFailed(why))
        return SubagentsPlan(runs=[SubagentRun(kind=a.kind, role=SUBAGENT_ROLES[a.kind],
                                               task=subagent_brief(a, inp.role), files=a.files)
                                   for a in args.agents])

    @activity.defn
    async def apply_work(self, inp: ApplyWorkInput) -> ApplyWorkResult:
        """A subagent's diff (from the task repository, read by the host) applied to its parent's workspace by
        ``git apply`` inside the parent's sandbox; when it does not apply, nothing changes and the note says why."""
        repo = TaskRepo(self.settings.workspaces_dir, inp.task_id)
        patch, files = await asyncio.to_thread(repo.patch, inp.base, inp.commit)
        if not files:
            return ApplyWorkResult(applied=False, note="no changes")
        try:
            text = patch.decode("utf-8")
        except UnicodeDecodeError:
            return ApplyWorkResult(applied=False, files=files, note="its diff is not UTF-8 text; not applied")
        ref = self.store.put_text(text)
        box = await self.sandboxes.get(inp.agent_id, inp.workspace)
        name = f".git/bosun-subagent-{inp.commit[:12]}.patch"
        await box.write(name, text)
        try:
            res = await box.exec(["git", "apply", "--whitespace=nowarn", name], timeout_s=120, output_cap=20_000)
        finally:
            await box.delete(name)
        if res.exit_code != 0:
            return ApplyWorkResult(applied=False, files=files, patch_ref=ref,
                                   note=f"it conflicts with your changes ({(res.stderr or res.stdout).strip()[:500]});"
                                        f" read the diff with read_output('{ref}') and apply what you need")
        return ApplyWorkResult(applied=True, files=files, patch_ref=ref)

    @activity.defn
    async def subagent_results(self, inp: SubagentResultsInput) -> ToolResultRef:
        """The spawn_subagents result: each subagent's status and its final answer (from its transcript)."""
        reports = []
        for o in inp.outcomes:
            answer = ""
            if o.transcript_ref:
                messages = [Message.model_validate(m) for m in self.store.get_json(o.transcript_ref)]
                answer = next((m.content for m in reversed(messages) if m.role == "assistant"), "")
            reports.append(SubagentReport(**o.model_dump(exclude={"transcript_ref", "answer"}), answer=answer))
        text = render_subagents(reports)
        ok = sum(1 for r in reports if r.status == "done")
        return ToolResultRef(call_id=inp.call_id, name=SPAWN, result_ref=self.store.put_text(text),
                             summary=f"{ok} of {len(reports)} subagents done", is_error=ok == 0,
                             error_kind=ToolFailed.kind if ok == 0 else None)

    @activity.defn
    async def release_sandbox(self, inp: ReleaseInput) -> list[str]:
        """Destroy an agent's sandbox (or, with ``every_agent_of_task``, those of all agents of a task) and drop its
        tool-call records and search mirror. Idempotent; returns the sandboxes released."""
        if inp.every_agent_of_task:
            return await self.sandboxes.release_prefix(f"{inp.agent_id}/")
        self.calls.forget(inp.agent_id)
        workspace = inp.workspace
        # off the agent's path: what follows (its work collected) reads the workspace, never the sandbox
        released = self.sandboxes.release_later(inp.agent_id, then=(lambda: drop_mirror(workspace)) if workspace
                                                else None)
        return [inp.agent_id] if released else []

    @activity.defn
    async def read_plan(self, inp: ReadPlanInput) -> PlanInfo:
        """The planner's plan; an unusable plan becomes one subtask holding the whole task (recorded, never lost)."""
        messages = [Message.model_validate(m) for m in self.store.get_json(inp.transcript_ref)]
        try:
            plan = plan_from_transcript(messages)
        except PlanError as e:
            return PlanInfo(subtasks=[SubtaskInfo(id="task", goal=inp.task)], waves=[["task"]], source="fallback",
                            note=f"the planner's plan was unusable ({str(e)[:300]}); running the whole task as one "
                                 "subtask")
        subs = [SubtaskInfo(id=s.id, goal=s.goal, files=list(s.files), depends_on=list(s.depends_on),
                            acceptance=s.acceptance.command or "tests pass: " + " ".join(s.acceptance.tests))
                for s in plan.subtasks]
        waves = topological_waves(plan)
        if inp.workflow_id and waves:
            self._wave_ahead(inp.workflow_id, min(len(waves[0]), max(1, inp.max_parallel)))
        return PlanInfo(subtasks=subs, waves=waves)

    def _wave_ahead(self, workflow_id: str, count: int) -> None:
        """Start the sandboxes of a wave of ``count`` agents in the task's environment while their workspaces are
        made (agents started at once otherwise queue behind the one spare the pool keeps). Best effort: on a host
        that cannot, they start when acquired."""
        found = TaskRepo.environment_for(TaskRepo(self.settings.workspaces_dir, workflow_id).run_dir("wave"))
        if found is not None:
            with contextlib.suppress(UnexpectedEnvironment, ConfigError):
                self.sandboxes.prestart(*found, sandbox_user(self.settings) or (os.geteuid(), os.getegid()),
                                        count=count)
