"""AgentWorkflow: one agent run. Deterministic orchestration only: every model call and tool call is an activity.

The loop: model call -> the turn's tool calls (read-only ones concurrently, writes serialized per file) -> their
results go into the next model call. The transcript lives in the artifact store; history holds refs and previews.

Errors by class: tool errors (InvalidArguments, ToolFailed, Timeout) are results the model sees and are counted;
ProviderError is retried with backoff by the activity's retry policy, then the next model of the role is tried;
UnexpectedEnvironment is retried by the activity on a fresh sandbox. Steering messages (signal ``steer``) reach the
model with its next call. Continue-as-new when Temporal suggests it; the sandbox lives on across it.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.models import (
        AgentWorkspaceInput,
        ApplyWorkInput,
        CollectInput,
        EscalationInput,
        InitAgentInput,
        ModelCallInput,
        ReleaseInput,
        ResultPointer,
        SubagentOutcome,
        SubagentResultsInput,
        SubagentRun,
        SubagentsInput,
        ToolCallInput,
        ToolResultRef,
        Usage,
    )
    from activities.workspace import WorkspaceActivities
    from agents.budget import Budget, BudgetTracker, Spent
    from agents.tools.escalation import NAME as ESCALATION
    from agents.tools.scheduling import ANY_FILE, plan_batches
    from agents.tools.subagents import NAME as SPAWN
    from infra.errors import ProviderError, ToolFailed
    from workflows import policies
    from workflows.models import AgentInput, AgentResult, AgentState, ModelSwitch

ESCALATION_WAIT = timedelta(hours=1)


async def _answered(result: ToolResultRef) -> ToolResultRef:
    return result


def _capped(budget: dict, cap: dict) -> dict:
    """The role's budget with every limit of ``cap`` applied on top (the smaller one wins)."""
    out = dict(budget)
    for resource, limit in cap.items():
        out[resource] = limit if out.get(resource) is None else min(out[resource], limit)
    return out


@workflow.defn
class AgentWorkflow:
    def __init__(self) -> None:
        self.s = AgentState()
        self.pending_user: list[str] = []
        self.escalations: dict[str, dict] = {}
        """request id -> {command, justification}: waiting for a person's decision."""
        self.decisions: dict[str, tuple[bool, str]] = {}
        self.switch_to: ModelSwitch | None = None
        """A model switch asked for, applied before the next model call."""
        self.tracker: BudgetTracker | None = None

    @workflow.signal
    def steer(self, text: str) -> None:
        """A person's message to the agent; it reaches the model with its next call."""
        self.pending_user.append(text)

    @workflow.signal
    def switch_model(self, model: str, by: str = "", reason: str = "") -> None:
        """Use ``model`` from the next turn on (``bosun model``); recorded with who asked and why."""
        self.switch_to = ModelSwitch(turn=self.s.turn + 1, previous=self.s.model, model=model, by=by or "someone",
                                     reason=reason)

    def _apply_switch(self) -> None:
        sw = self.switch_to
        if sw is None or sw.model == self.s.model:
            self.switch_to = None
            return
        sw = sw.model_copy(update={"turn": self.s.turn + 1, "previous": self.s.model})
        self.s.switches.append(sw)
        self.s.note(f"turn {sw.turn}: model {sw.previous} -> {sw.model} (by {sw.by}"
                          + (f": {sw.reason})" if sw.reason else ")"))
        self.s.model, self.switch_to = sw.model, None

    @workflow.signal
    def approve(self, request_id: str, approved: bool, decided_by: str = "") -> None:
        """A person's decision on a request_escalation call (request ids are in the progress query)."""
        self.decisions[request_id] = (approved, decided_by)

    @workflow.query
    def progress(self) -> dict:
        """Turn, status, model, error counts, escalations waiting for a decision and the last steps."""
        s = self.s
        return {"turn": s.turn, "status": s.status, "model": s.model, "errors": s.errors,
                "pending_escalations": self.escalations, "switches": [x.model_dump() for x in s.switches],
                "recent": s.recent}

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentResult:
        queue = inp.worker_queue
        s = self.s = await self._start(inp)
        tracker = BudgetTracker(budget=Budget.model_validate(s.budget), started_at=s.started_at,
                                scope=inp.agent_id, spent=Spent.model_validate(s.spent))
        self.tracker = tracker
        fallbacks = [m for m in inp.fallback_models if m != s.model and m not in {x.model for x in s.switches}]
        final, status, stopped = "", "budget_exhausted", f"turn limit ({inp.max_turns})"
        error_kind, reason = None, ""
        try:
            while s.turn < inp.max_turns:
                if workflow.info().is_continue_as_new_suggested():  # the sandbox lives on across it
                    s.spent = tracker.spent.model_dump()
                    workflow.continue_as_new(inp.model_copy(update={"resume": s}))
                policies.stop_if_cancelled()  # (no new model request once the run is cancelled)
                self._apply_switch()
                s.turn += 1
                s.status = "thinking"
                user, self.pending_user = self.pending_user, []
                try:
                    resp = await workflow.execute_activity_method(
                        AgentActivities.model_call,
                        ModelCallInput(agent_id=inp.agent_id, turn=s.turn, model=s.model,
                                       trajectory_ref=inp.trajectory_ref, transcript_ref=s.transcript_ref,
                                       tool_results=s.results, user_messages=user, tools=inp.tools,
                                       agent_keys=inp.agent_keys, role=inp.role, pinned_ref=s.pinned_ref,
                                       harness=inp.harness),
                        task_queue=queue, summary=f"model turn {s.turn} ({s.model})", **policies.MODEL_TURN)
                except ActivityError as e:
                    if policies.cancelling(e):  # the run is cancelled: stop, never take it as the model failing
                        raise asyncio.CancelledError() from None
                    kind, why = policies.failure(e)
                    s.count(kind)
                    self.pending_user = user + self.pending_user  # not seen by any model: keep them
                    s.turn -= 1
                    if kind == ProviderError.kind and fallbacks:
                        self.switch_to = ModelSwitch(turn=s.turn + 1, previous=s.model, model=fallbacks.pop(0),
                                                     by="router", reason=f"{s.model} kept failing: {why[:200]}")
                        continue
                    status, error_kind, reason = "failed", kind, why
                    s.note(f"failed: {kind}: {reason[:200]}")
                    break
                s.transcript_ref = resp.transcript_ref
                s.note(f"turn {s.turn}: {resp.text_preview[:100]} ({len(resp.tool_calls)} tool calls)")
                tracker.charge(resp.usage, resp.cost_usd)
                if not resp.tool_calls:
                    if self.pending_user:  # a person wrote while this turn ran: answer them before finishing
                        continue
                    final, status, stopped = resp.text_preview, "done", ""
                    break
                over = tracker.exhausted(workflow.time())
                if over is not None:
                    final, stopped = resp.text_preview, str(over)
                    s.note(f"stopped: {stopped}")
                    break
                s.status = "running tools"
                s.results = await self._run_tools(inp, resp.tool_calls)
                s.tool_calls += len(resp.tool_calls)
        except asyncio.CancelledError:
            s.status = "cancelled"
            await self._release(inp)
            raise
        except Exception as e:  # not continue-as-new, nor a worker evicting this run from its cache: no release then
            s.status = "cancelled" if policies.cancelling(e) else "failed"
            await self._release(inp)
            if s.status == "cancelled":  # a tool call cancelled with the run
                raise asyncio.CancelledError() from None
            raise
        s.status = status
        await self._release(inp)
        spent = tracker.spent
        usage = Usage(input_tokens=spent.input_tokens, output_tokens=spent.output_tokens,
                      cached_input_tokens=spent.cached_input_tokens)
        return s.result(inp.agent_id, status, usage, round(spent.usd, 6), final_message=final, stopped=stopped,
                        error_kind=error_kind, reason=reason)

    async def _start(self, inp: AgentInput) -> AgentState:
        """The state a run starts from: the one it continued as new with, or a fresh agent's (init_agent)."""
        if inp.resume is not None:
            return inp.resume
        init = await workflow.execute_activity_method(
            AgentActivities.init_agent, InitAgentInput(agent_id=inp.agent_id, role=inp.role, task=inp.task,
                                                       workspace=inp.workspace, attachments=inp.attachments,
                                                       model=inp.model, harness=inp.harness),
            task_queue=inp.worker_queue, summary=f"init {inp.role} agent", **policies.AGENT_STEP)
        self.pending_user = list(inp.messages) + self.pending_user
        return AgentState(transcript_ref=init.transcript_ref, model=inp.model, pinned_ref=init.pinned_ref,
                          budget=_capped(init.budget, inp.budget_cap), started_at=workflow.time())

    async def _release(self, inp: AgentInput) -> None:
        await workflow.execute_activity_method(
            AgentActivities.release_sandbox, ReleaseInput(agent_id=inp.agent_id, workspace=inp.workspace),
            task_queue=inp.worker_queue, summary="release sandbox", **policies.RELEASE)

    async def _escalate(self, inp: AgentInput, call) -> ToolResultRef:
        """Wait for a person to approve or deny running this command outside the sandbox (at most an hour)."""
        request_id = f"{inp.agent_id}#{call.id}"
        self.escalations[request_id] = {"call": call.arguments_preview}
        self.s.status = "waiting for approval"
        workflow.set_current_details(f"escalation {request_id} waiting: {call.arguments_preview[:200]}")
        try:
            await workflow.wait_condition(lambda: request_id in self.decisions, timeout=ESCALATION_WAIT)
        except TimeoutError:
            self.decisions[request_id] = (False, "")
        finally:
            self.escalations.pop(request_id, None)
        approved, who = self.decisions[request_id]
        self.s.note(f"  escalation {request_id}: {'approved' if approved else 'denied'} {who}".rstrip())
        return await workflow.execute_activity_method(
            AgentActivities.run_escalated,
            EscalationInput(agent_id=inp.agent_id, workspace=inp.workspace, call_id=call.id,
                            arguments_ref=call.arguments_ref, approved=approved, decided_by=who),
            task_queue=inp.worker_queue, **policies.ESCALATED,
            summary=f"escalation ({'approved' if approved else 'denied'}) {call.arguments_preview[:80]}")

    async def _spawn(self, inp: AgentInput, call) -> ToolResultRef:
        """spawn_subagents: check the call, run its subagents in parallel as child agents under this one, charge
        what they spent to this agent, merge editors' work into this workspace, and return their results."""
        plan = await workflow.execute_activity_method(
            AgentActivities.plan_subagents,
            SubagentsInput(agent_id=inp.agent_id, call=call, role=inp.role, depth=inp.depth, spawned=self.s.spawned,
                           editors_possible=bool(inp.task_id and inp.base_commit and inp.name)),
            task_queue=inp.worker_queue, summary=f"check {call.arguments_preview[:80]}", **policies.AGENT_STEP)
        if plan.refused is not None:
            return plan.refused
        first, self.s.spawned = self.s.spawned + 1, self.s.spawned + len(plan.runs)
        share = self._share(len(plan.runs))
        self.s.note(f"  spawning {len(plan.runs)} subagents: {', '.join(r.kind for r in plan.runs)}")
        outcomes = await policies.gather(*[self._subagent(inp, first + i, run, share)
                                          for i, run in enumerate(plan.runs)])
        return await workflow.execute_activity_method(
            AgentActivities.subagent_results,
            SubagentResultsInput(agent_id=inp.agent_id, call_id=call.id, outcomes=list(outcomes)),
            task_queue=inp.worker_queue, summary=f"results of {len(outcomes)} subagents", **policies.AGENT_STEP)

    def _share(self, n: int) -> dict:
        """Each of ``n`` subagents' budget: an equal share of the tokens and money this agent has left, and the
        wall-clock time it has left (they run at the same time)."""
        if self.tracker is None:
            return {}
        now, cap = workflow.time(), {}
        for resource in ("tokens", "usd", "wall_clock_s"):
            left = self.tracker.remaining(resource, now)  # type: ignore[arg-type]
            if left is not None:
                cap[resource] = left if resource == "wall_clock_s" else left / n
        if "tokens" in cap:
            cap["tokens"] = int(cap["tokens"])
        return cap

    async def _subagent(self, inp: AgentInput, n: int, run: SubagentRun, share: dict) -> SubagentOutcome:
        """One subagent as a child agent; never raises for the subagent's own failure."""
        wf_id, name = f"{inp.agent_id}/sub{n}", f"{inp.name or 'agent'}.sub{n}"
        queue = inp.worker_queue
        workspace = inp.workspace  # an explorer reads this agent's workspace as it is
        if run.kind == "editor":
            workspace = await workflow.execute_activity_method(
                WorkspaceActivities.prepare_agent_workspace,
                AgentWorkspaceInput(workflow_id=inp.task_id, name=name, commit=inp.base_commit),
                task_queue=queue, summary=f"workspace for subagent {name}", **policies.WORKSPACE_STEP)
        child = AgentInput(agent_id=wf_id, role=run.role, task=run.task, model=self.s.model,
                           trajectory_ref=inp.trajectory_ref, fallback_models=inp.fallback_models,
                           workspace=workspace, worker_queue=queue, max_turns=inp.max_turns,
                           agent_keys=[f"{k}/sub{n}" for k in inp.agent_keys], depth=inp.depth + 1,
                           task_id=inp.task_id, base_commit=inp.base_commit, name=name, budget_cap=share,
                           harness=inp.harness)
        try:
            result: AgentResult = await workflow.execute_child_workflow(
                AgentWorkflow.run, child, id=wf_id, task_queue=queue,
                static_summary=f"{run.kind} subagent of {inp.agent_id}: {run.task[:100]}")
        except ChildWorkflowError as e:
            if policies.cancelling(e):  # (the subagent released its own sandbox as it stopped)
                raise asyncio.CancelledError() from None
            await workflow.execute_activity_method(
                AgentActivities.release_sandbox, ReleaseInput(agent_id=wf_id, workspace=workspace),
                task_queue=queue, summary=f"release sandbox of {name}", **policies.RELEASE)
            return SubagentOutcome(name=name, kind=run.kind, status="failed", error=policies.failure(e).message[:500])
        if self.tracker is not None:
            self.tracker.charge(result.usage, result.cost_usd, turns=0)
        out = SubagentOutcome(name=name, kind=run.kind, status=result.status, turns=result.turns,
                              transcript_ref=result.transcript_ref,
                              error=f"{result.error_kind}: {result.reason}"[:500] if result.error_kind else "")
        if run.kind == "editor" and result.status in ("done", "budget_exhausted"):
            collect = await workflow.execute_activity_method(
                WorkspaceActivities.collect_agent_work,
                CollectInput(workflow_id=inp.task_id, name=name, parent=inp.base_commit,
                             message=f"bosun subagent {wf_id}"),
                task_queue=queue, summary=f"collect subagent {name}", **policies.WORKSPACE_STEP)
            if collect.commit:
                applied = await workflow.execute_activity_method(
                    AgentActivities.apply_work,
                    ApplyWorkInput(agent_id=inp.agent_id, workspace=inp.workspace, task_id=inp.task_id,
                                   base=inp.base_commit, commit=collect.commit),
                    task_queue=queue, summary=f"merge subagent {name} into {inp.agent_id}", **policies.MERGE)
                out.merged, out.files, out.merge_note = applied.applied, applied.files, applied.note
        return out

    def _tool(self, inp: AgentInput, call):
        if call.refused is not None:  # a tool the model was not offered: the model call answered it already
            return _answered(call.refused)
        if call.offered and call.name == ESCALATION:
            return self._escalate(inp, call)
        if call.offered and call.name == SPAWN:
            return self._spawn(inp, call)
        tool_input = ToolCallInput(agent_id=inp.agent_id, workspace=inp.workspace, call=call, role=inp.role,
                                   model=self.s.model)
        if call.write_key != ANY_FILE:
            # File tools (reads, searches, edits; not commands) run as local activities: in this worker, which
            # holds the sandbox (agents run on the host queue), with no round trip through the server. The result
            # is recorded as a marker when the workflow task completes; a call cut off before that runs again,
            # which the tool-call ledger makes harmless (agents/tools/once.py). Commands stay activities: they
            # can run for minutes and heartbeat.
            return workflow.execute_local_activity_method(
                AgentActivities.tool_call, tool_input, summary=f"{call.name} {call.arguments_preview[:80]}",
                **policies.FILE_TOOL)
        return workflow.execute_activity_method(
            AgentActivities.tool_call, tool_input, task_queue=inp.worker_queue,
            summary=f"{call.name} {call.arguments_preview[:80]}", **policies.COMMAND)

    async def _run_tools(self, inp: AgentInput, calls) -> list[ResultPointer]:
        results: list[ToolResultRef | None] = [None] * len(calls)
        for batch in plan_batches([c.write_key for c in calls]):
            outs = await policies.gather(*[self._tool(inp, calls[i]) for i in batch])
            for i, out in zip(batch, outs, strict=True):
                results[i] = out
                if out.is_error:
                    self.s.count(out.error_kind or ToolFailed.kind)
                self.s.note(f"  {out.name}: {out.summary[:100]}")
        return [ResultPointer(call_id=r.call_id, name=r.name, result_ref=r.result_ref, is_error=r.is_error)
                for r in results if r is not None]
