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
    from workflows.models import AgentInput, AgentResult, AgentResume, ModelSwitch

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
        self.turn = 0
        self.status = "starting"
        self.model = ""
        self.steps: list[str] = []
        self.pending_user: list[str] = []
        self.errors: dict[str, int] = {}
        self.escalations: dict[str, dict] = {}
        """request id -> {command, justification}: waiting for a person's decision."""
        self.decisions: dict[str, tuple[bool, str]] = {}
        self.switch_to: ModelSwitch | None = None
        """A model switch asked for, applied before the next model call."""
        self.switches: list[ModelSwitch] = []
        self.spawned = 0
        """Subagents this run has started (spawn_subagents)."""
        self.tracker: BudgetTracker | None = None

    @workflow.signal
    def steer(self, text: str) -> None:
        """A person's message to the agent; it reaches the model with its next call."""
        self.pending_user.append(text)

    @workflow.signal
    def switch_model(self, model: str, by: str = "", reason: str = "") -> None:
        """Use ``model`` from the next turn on (``bosun model``); recorded with who asked and why."""
        self.switch_to = ModelSwitch(turn=self.turn + 1, previous=self.model, model=model, by=by or "someone",
                                     reason=reason)

    def _apply_switch(self) -> None:
        sw = self.switch_to
        if sw is None or sw.model == self.model:
            self.switch_to = None
            return
        sw = sw.model_copy(update={"turn": self.turn + 1, "previous": self.model})
        self.switches.append(sw)
        self.steps.append(f"turn {sw.turn}: model {sw.previous} -> {sw.model} (by {sw.by}"
                          + (f": {sw.reason})" if sw.reason else ")"))
        self.model, self.switch_to = sw.model, None

    @workflow.signal
    def approve(self, request_id: str, approved: bool, decided_by: str = "") -> None:
        """A person's decision on a request_escalation call (request ids are in the progress query)."""
        self.decisions[request_id] = (approved, decided_by)

    @workflow.query
    def progress(self) -> dict:
        """Turn, status, model, error counts, escalations waiting for a decision and the last steps."""
        return {"turn": self.turn, "status": self.status, "model": self.model, "errors": self.errors,
                "pending_escalations": self.escalations, "switches": [s.model_dump() for s in self.switches],
                "recent": self.steps[-20:]}

    def _count(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentResult:
        queue = inp.worker_queue
        r = inp.resume
        if r is None:
            init = await workflow.execute_activity_method(
                AgentActivities.init_agent, InitAgentInput(agent_id=inp.agent_id, role=inp.role, task=inp.task,
                                                           workspace=inp.workspace, attachments=inp.attachments,
                                                           model=inp.model, harness=inp.harness),
                task_queue=queue, summary=f"init {inp.role} agent", **policies.AGENT_STEP)
            r = AgentResume(transcript_ref=init.transcript_ref, turn=0, tool_calls=0, model=inp.model,
                            budget=_capped(init.budget, inp.budget_cap), started_at=workflow.time(),
                            pinned_ref=init.pinned_ref)
            self.pending_user = list(inp.messages) + self.pending_user
        tracker = BudgetTracker(budget=Budget.model_validate(r.budget), started_at=r.started_at,
                                scope=inp.agent_id, spent=Spent.model_validate(r.spent))
        self.tracker = tracker
        self.turn, self.model, self.errors, self.switches = r.turn, r.model, dict(r.errors), list(r.switches)
        self.spawned = r.spawned
        transcript, results, n_calls = r.transcript_ref, list(r.results), r.tool_calls
        fallbacks = [m for m in inp.fallback_models if m != r.model and m not in {s.model for s in self.switches}]
        final, status, stopped = "", "budget_exhausted", f"turn limit ({inp.max_turns})"
        error_kind, reason = None, ""
        try:
            while self.turn < inp.max_turns:
                if workflow.info().is_continue_as_new_suggested():  # the sandbox lives on across it
                    workflow.continue_as_new(inp.model_copy(update={"resume": AgentResume(
                        transcript_ref=transcript, turn=self.turn, tool_calls=n_calls, results=results,
                        errors=self.errors, model=self.model, budget=r.budget, spent=tracker.spent.model_dump(),
                        started_at=r.started_at, pinned_ref=r.pinned_ref, switches=self.switches,
                        spawned=self.spawned)}))
                policies.stop_if_cancelled()  # (no new model request once the run is cancelled)
                self._apply_switch()
                self.turn += 1
                self.status = "thinking"
                user, self.pending_user = self.pending_user, []
                try:
                    resp = await workflow.execute_activity_method(
                        AgentActivities.model_call,
                        ModelCallInput(agent_id=inp.agent_id, turn=self.turn, model=self.model,
                                       trajectory_ref=inp.trajectory_ref, transcript_ref=transcript,
                                       tool_results=results, user_messages=user, tools=inp.tools,
                                       agent_keys=inp.agent_keys, role=inp.role, pinned_ref=r.pinned_ref,
                                       harness=inp.harness),
                        task_queue=queue, summary=f"model turn {self.turn} ({self.model})",
                        **policies.MODEL_TURN)
                except ActivityError as e:
                    if policies.cancelling(e):  # the run is cancelled: stop, never take it as the model failing
                        raise asyncio.CancelledError() from None
                    kind, why = policies.failure(e)
                    self._count(kind)
                    self.pending_user = user + self.pending_user  # not seen by any model: keep them
                    self.turn -= 1
                    if kind == ProviderError.kind and fallbacks:
                        self.switch_to = ModelSwitch(turn=self.turn + 1, previous=self.model, model=fallbacks.pop(0),
                                                     by="router", reason=f"{self.model} kept failing: "
                                                                         f"{why[:200]}")
                        continue
                    status, error_kind, reason = "failed", kind, why
                    self.steps.append(f"failed: {kind}: {reason[:200]}")
                    break
                transcript = resp.transcript_ref
                self.steps.append(f"turn {self.turn}: {resp.text_preview[:100]} ({len(resp.tool_calls)} tool calls)")
                tracker.charge(resp.usage, resp.cost_usd)
                if not resp.tool_calls:
                    if self.pending_user:  # a person wrote while this turn ran: answer them before finishing
                        continue
                    final, status, stopped = resp.text_preview, "done", ""
                    break
                over = tracker.exhausted(workflow.time())
                if over is not None:
                    final, stopped = resp.text_preview, str(over)
                    self.steps.append(f"stopped: {stopped}")
                    break
                self.status = "running tools"
                results = await self._run_tools(inp, resp.tool_calls)
                n_calls += len(resp.tool_calls)
        except asyncio.CancelledError:
            self.status = "cancelled"
            await self._release(inp)
            raise
        except Exception as e:  # not continue-as-new, nor a worker evicting this run from its cache: no release then
            self.status = "cancelled" if policies.cancelling(e) else "failed"
            await self._release(inp)
            if self.status == "cancelled":  # a tool call cancelled with the run
                raise asyncio.CancelledError() from None
            raise
        self.status = status
        await self._release(inp)
        spent = tracker.spent
        usage = Usage(input_tokens=spent.input_tokens, output_tokens=spent.output_tokens,
                      cached_input_tokens=spent.cached_input_tokens)
        return AgentResult(agent_id=inp.agent_id, status=status, turns=self.turn, tool_calls=n_calls,
                           final_message=final, transcript_ref=transcript, usage=usage, errors=self.errors,
                           model=self.model, cost_usd=round(tracker.spent.usd, 6), stopped=stopped,
                           error_kind=error_kind, reason=reason, switches=self.switches)

    async def _release(self, inp: AgentInput) -> None:
        await workflow.execute_activity_method(
            AgentActivities.release_sandbox, ReleaseInput(agent_id=inp.agent_id, workspace=inp.workspace),
            task_queue=inp.worker_queue, summary="release sandbox", **policies.RELEASE)

    async def _escalate(self, inp: AgentInput, call) -> ToolResultRef:
        """Wait for a person to approve or deny running this command outside the sandbox (at most an hour)."""
        request_id = f"{inp.agent_id}#{call.id}"
        self.escalations[request_id] = {"call": call.arguments_preview}
        self.status = "waiting for approval"
        workflow.set_current_details(f"escalation {request_id} waiting: {call.arguments_preview[:200]}")
        try:
            await workflow.wait_condition(lambda: request_id in self.decisions, timeout=ESCALATION_WAIT)
        except TimeoutError:
            self.decisions[request_id] = (False, "")
        finally:
            self.escalations.pop(request_id, None)
        approved, who = self.decisions[request_id]
        self.steps.append(f"  escalation {request_id}: {'approved' if approved else 'denied'} {who}".rstrip())
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
            SubagentsInput(agent_id=inp.agent_id, call=call, role=inp.role, depth=inp.depth, spawned=self.spawned,
                           editors_possible=bool(inp.task_id and inp.base_commit and inp.name)),
            task_queue=inp.worker_queue, summary=f"check {call.arguments_preview[:80]}", **policies.AGENT_STEP)
        if plan.refused is not None:
            return plan.refused
        first, self.spawned = self.spawned + 1, self.spawned + len(plan.runs)
        share = self._share(len(plan.runs))
        self.steps.append(f"  spawning {len(plan.runs)} subagents: {', '.join(r.kind for r in plan.runs)}")
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
        child = AgentInput(agent_id=wf_id, role=run.role, task=run.task, model=self.model,
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
                                   model=self.model)
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
                    self._count(out.error_kind or ToolFailed.kind)
                self.steps.append(f"  {out.name}: {out.summary[:100]}")
        return [ResultPointer(call_id=r.call_id, name=r.name, result_ref=r.result_ref, is_error=r.is_error)
                for r in results if r is not None]
