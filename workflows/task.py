"""TaskWorkflow: the coordinator of one task. Deterministic orchestration only.

team mode: bind to a worker host -> prepare the task repository -> tests before -> planner agent -> a typed plan ->
fast-edit agents in parallel (bounded), each on a fresh workspace of its own -> their work imported as commits and
stitched with real 3-way merges (a conflicting subtask is re-run once on the merged tree; a failed one is retried
once on a fresh workspace with the failure in its prompt) -> verify (tests on a fresh checkout of the branch) ->
debugger agent until green or out of rounds -> messages nobody has read yet get a follow-up agent -> the branch
``bosun/<workflow id>`` holds the result.
solo mode: one agent on a fresh workspace (the tests before run alongside it), its work imported onto the branch, then
verify and deliver.

A failing agent is a result, not a crash: the task ends ``succeeded``, ``partial`` (the branch holds what merged;
the result says what did not and why), ``failed``, ``no_changes`` or ``cancelled``, and every end reports back to
where the task came from (GitHub, Linear) and releases every sandbox of the task.

Messages from people (``steer``, ``follow_up``) are queued here and each is delivered exactly once: to every agent
running when it arrives, else to the next agent that starts (``messages`` query). ``switch_model`` changes the
model of the running agents and of every agent started afterwards. Queries: ``status``, ``plan``, ``agents``,
``messages``, ``placement``."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, CancelledError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.hosts import HostActivities
    from activities.models import (
        AgentWorkspaceInput,
        Attachment,
        BindResult,
        BranchInput,
        ChecksInput,
        ChecksResult,
        CleanupInput,
        CollectInput,
        DiffInput,
        EnvironmentInput,
        EnvironmentState,
        FinalizeInput,
        MergeInput,
        PlanInfo,
        PrepareInput,
        ReleaseInput,
        RouteInput,
        SlotGrant,
        TerminateInput,
    )
    from activities.report import ReportActivities, ReportInput
    from activities.workspace import WorkspaceActivities
    from agents.budget import Budget, BudgetTracker
    from agents.roles import debugger_brief, follow_up_brief
    from workflows import policies
    from workflows.agent import AgentWorkflow
    from workflows.models import (
        AgentInput,
        AgentResult,
        HostMove,
        Message,
        ModelSwitch,
        SubtaskOutcome,
        TaskInput,
        TaskResult,
        branch_name,
    )
    from workflows.placement import HostGone, TaskPlacement, build_minutes, drop
    from workflows.team import TeamPhase


def _with_trailer(message: str) -> str:
    """A commit message with the ``Bosun-Task`` trailer naming the task (Keep Rate groups commits by it)."""
    return f"{message}\n\nBosun-Task: {workflow.info().workflow_id}"


def _verdict(files_changed: list[str], green: bool, problems: list[str]) -> str:
    """The task's status from what it delivered, its tests after, and what was not done."""
    if not files_changed:
        return "failed" if problems else "no_changes"
    if green and not problems:
        return "succeeded"
    return "partial" if problems else "failed"


@workflow.defn
class TaskWorkflow(TeamPhase):
    def __init__(self) -> None:
        self.phase = "starting"
        self.plan_info: PlanInfo | None = None
        self.running: dict[str, workflow.ChildWorkflowHandle] = {}
        """Agent workflow id -> handle, for the agents running now."""
        self.agent_status: dict[str, str] = {}
        self.inbox: list[Message] = []
        self.model_override: ModelSwitch | None = None
        """Set by ``switch_model``: the model every agent uses from now on."""
        self.failures = 0
        """Red verifications and failed agent runs so far (a router signal)."""
        self.budget: BudgetTracker | None = None
        self.agents_run = 0
        self.budget_note = ""
        self.checked: dict[str, ChecksResult] = {}
        """The tests' result per commit: a commit tested already (a debug round or follow-up that changed nothing,
        a team whose agents changed nothing) is not tested again: same tree, same environment, same command."""
        self.place = TaskPlacement(self._enter)
        """Where the task runs: its home host, slot claims, host watches, checkpoints, moves."""

    def _enter(self, phase: str) -> None:
        self.phase = phase
        workflow.set_current_details(f"phase: {phase}")

    # -- queries and signals ---------------------------------------------------------------------------------

    @workflow.query
    def status(self) -> str:
        return self.phase

    @workflow.query
    def plan(self) -> PlanInfo | None:
        return self.plan_info

    @workflow.query
    def agents(self) -> dict[str, str]:
        """Each agent of the task and where it stands (running, done, budget_exhausted, failed...)."""
        return self.agent_status

    @workflow.query
    def messages(self) -> list[Message]:
        """Every message from people, with the agents it was delivered to (empty: still queued)."""
        return self.inbox

    @workflow.query
    def placement(self) -> dict:
        """Where the task runs: its home host, the hosts that held its repository, the lost ones, the moves."""
        return self.place.view()

    @workflow.signal
    def slot_granted(self, grant: SlotGrant) -> None:
        """A host took one of the task's slot claims (activities/hosts.py: hold_slot)."""
        self.place.granted(grant)

    @workflow.signal
    async def steer(self, text: str, by: str = "") -> None:
        """A person's message: to every agent running now, else to the next agent that starts."""
        await self._receive(text, "steer", by)

    @workflow.signal
    async def follow_up(self, text: str) -> None:
        """A follow-up from the event source (a new comment, a Linear prompt): delivered like ``steer``."""
        await self._receive(text, "follow_up", "")

    @workflow.signal
    async def switch_model(self, model: str, by: str = "", reason: str = "") -> None:
        """Every running agent switches to ``model`` at its next turn, and every agent started later uses it."""
        self.model_override = ModelSwitch(turn=0, previous="", model=model, by=by or "someone", reason=reason)
        for handle in list(self.running.values()):
            await handle.signal(AgentWorkflow.switch_model, args=[model, by, reason])

    async def _receive(self, text: str, kind: str, by: str) -> None:
        msg = Message(id=len(self.inbox) + 1, kind=kind, text=text, by=by, received=workflow.now().isoformat())
        self.inbox.append(msg)
        for agent_id, handle in list(self.running.items()):
            try:
                await handle.signal(AgentWorkflow.steer, text)
            except Exception:  # noqa: BLE001 - the agent ended meanwhile: the message waits for the next one
                continue
            msg.delivered_to.append(agent_id)

    def _take_queued(self, agent_id: str) -> list[str]:
        """The messages nobody has received yet, now delivered to ``agent_id`` (as it starts)."""
        out = []
        for msg in self.inbox:
            if not msg.delivered_to:
                msg.delivered_to.append(agent_id)
                out.append(msg.text)
        return out

    async def _caught_up(self, agent_id: str, handle, wanted: str) -> None:
        """What arrived while ``agent_id`` was starting (a message, a model switch) reaches it now: the signal
        handlers found no running agent then, and its input was already made."""
        for msg in self.inbox:
            if not msg.delivered_to:
                try:
                    await handle.signal(AgentWorkflow.steer, msg.text)
                except Exception:  # noqa: BLE001 - it ended meanwhile: the message waits for the next one
                    return
                msg.delivered_to.append(agent_id)
        switch = self.model_override
        if switch and switch.model != wanted:
            try:
                await handle.signal(AgentWorkflow.switch_model, args=[switch.model, switch.by, switch.reason])
            except Exception:  # noqa: BLE001 - it ended meanwhile
                return

    # -- placement: agents on the hosts that take their slots -----------------------------------------------

    async def _placed(self, inp: TaskInput, name: str, role: str, task: str, commit: str, keys: list[str], *,
                      attachments: list[Attachment] | None = None, files_in_scope: int = 0,
                      collect: str | None = None) -> tuple[AgentResult, object]:
        """One agent on the host that takes its slot: its workspace checked out there (the repository restored
        first when the host lacks checkpoints), the agent, and (``collect``: the commit message) its work read back
        there as a commit. An agent whose host is lost is ended and runs again, on a fresh workspace at the same
        commit, on another host (``NAME.mN``); one that finished is not run again. Returns the agent's result and
        what collecting gave (_NoWork when nothing was collected)."""
        attempt = 0
        while True:
            policies.stop_if_cancelled()  # (no new claim, no new agent once the task is cancelled)
            attempt += 1
            run = name if attempt == 1 else f"{name}.m{attempt}"
            grant, lease = await self.place.claim(run)
            host = BindResult(queue=grant.queue, worker_id=grant.worker_id, shared=self.place.shared)
            try:
                await self.place.sync(host)
                workspace = await self.place.on(host.worker_id, self._workspace(host.queue, run, commit))
                result = await self._agent(inp, run, role, task, workspace, commit, host.queue, keys,
                                           attachments=attachments, files_in_scope=files_in_scope, host=host)
                got: object = _NoWork()
                if collect is not None and result.status not in ("failed", "cancelled"):
                    got = await self.place.on(host.worker_id, self._collect(host.queue, run, commit, collect))
                    self.place.checkpointed(got.checkpoint, host.worker_id)
                return result, got
            except HostGone as gone:
                self.place.moves.append(HostMove(what=run, from_worker=host.worker_id, to_worker=None,
                                           at=workflow.now().isoformat(), why=gone.lost.why))
                self._enter(f"{run}: host {host.worker_id} lost ({gone.lost.why}); running it again elsewhere")
            finally:
                drop(lease)

    # -- agents ------------------------------------------------------------------------------------------------

    async def _agent(self, inp: TaskInput, name: str, role: str, task: str, workspace: str, commit: str, queue: str,
                     keys: list[str], tools: list[str] | None = None,
                     attachments: list[Attachment] | None = None, files_in_scope: int = 0,
                     host: BindResult | None = None) -> AgentResult:
        """Run one agent as a child workflow. Never raises for the agent's own failure: a failed, timed-out or
        terminated agent is an AgentResult with status ``failed`` (its error class and reason) and its sandbox is
        released here. Only the task's own cancellation propagates, and (``host``: the agent's placement) the loss
        of its host: HostGone, the agent's workflow ended."""
        policies.stop_if_cancelled()  # (no new agent once the task is cancelled)
        wf_id = f"{workflow.info().workflow_id}/{name}"
        plan = len(self.plan_info.subtasks) if self.plan_info else 0
        wanted = self.model_override.model if self.model_override else inp.model
        routing = workflow.execute_activity_method(
            AgentActivities.route_model,
            RouteInput(role=role, model=wanted, task_chars=len(task), plan_subtasks=plan,
                       files_in_scope=files_in_scope, failures_so_far=self.failures, router=inp.harness.router),
            summary=f"model for {name}", task_queue=queue, **policies.ROUTE)
        decision = await (routing if host is None else self.place.on(host.worker_id, routing))  # (lost: moved)
        self.agent_status[name] = "running"
        try:
            handle = await workflow.start_child_workflow(
                AgentWorkflow.run,
                AgentInput(agent_id=wf_id, role=role, task=task, model=decision.model,
                           trajectory_ref=inp.trajectory_ref, fallback_models=decision.fallbacks,
                           workspace=workspace, worker_queue=queue, max_turns=inp.max_turns, agent_keys=keys,
                           tools=tools or [], attachments=attachments or [], messages=self._take_queued(wf_id),
                           task_id=workflow.info().workflow_id, base_commit=commit, name=name,
                           harness=inp.harness.without_router()),
                # On the host's own queue, like its activities: the server hands each activity to the worker in
                # the same round trip that schedules it (eager execution) - several times less latency per step.
                id=wf_id, task_queue=queue, static_summary=f"{role} agent: {task[:120]}")
            self.running[wf_id] = handle
            await self._caught_up(wf_id, handle, wanted)
            try:
                if host is None:
                    result = await handle
                else:
                    try:
                        result = await self.place.on(host.worker_id, handle, cancel=False)
                    except HostGone as gone:
                        await self._end_agent(wf_id, gone)
                        raise
            finally:
                self.running.pop(wf_id, None)
        except ChildWorkflowError as e:
            if policies.cancelling(e):  # the task itself is cancelled, not just this agent: stop here
                raise asyncio.CancelledError() from None
            kind, why = policies.failure(e)
            cancelled = isinstance(e.cause, CancelledError)
            result = AgentResult(agent_id=wf_id, status="cancelled" if cancelled else "failed", turns=0,
                                 tool_calls=0, final_message="", transcript_ref="", model=decision.model,
                                 error_kind=None if cancelled else kind, reason=why[:2000])
            # A child that failed, timed out or was terminated never ran its own release: do it here.
            release = workflow.execute_activity_method(
                AgentActivities.release_sandbox, ReleaseInput(agent_id=wf_id, workspace=workspace),
                summary=f"release sandbox of {name}", task_queue=queue, **policies.RELEASE)
            try:
                await (release if host is None else self.place.on(host.worker_id, release))
            except HostGone:
                pass  # (its host is lost: the host's reaper removes the sandbox when it comes back)
        self.agent_status[name] = result.status
        if result.status == "failed":
            self.failures += 1
        self.agents_run += 1
        if self.budget is not None:
            self.budget.charge(result.usage, result.cost_usd, turns=result.turns)
        return result

    async def _end_agent(self, agent_id: str, gone: HostGone) -> None:
        """End the workflow of an agent whose host is lost (it could never run there again); its sandbox goes when
        the host comes back (the reaper)."""
        self.agent_status[agent_id.rsplit("/", 1)[-1]] = "moved"
        await workflow.execute_activity_method(
            HostActivities.terminate_agent,
            TerminateInput(workflow_id=agent_id, reason=f"its host {gone.lost.worker_id} was lost: {gone.lost.why}"),
            task_queue=workflow.info().task_queue, summary=f"end {agent_id} (host {gone.lost.worker_id} lost)",
            **policies.END_AGENT)
        try:
            await gone.step
        except ChildWorkflowError:
            pass

    def _fits(self, wanted: int, what: str) -> int:
        """How many of ``wanted`` more agents fit in the task budget (estimated from the agents so far)."""
        if self.budget is None or wanted == 0:
            return wanted
        spent, n = self.budget.spent, max(self.agents_run, 1)
        estimate = Budget(tokens=spent.tokens // n or None, turns=spent.turns // n or None,
                          usd=spent.usd / n or None)
        fits = min(wanted, self.budget.max_agents(estimate, workflow.time()))
        if fits < wanted:
            note = (f"task budget: {wanted - fits} of {wanted} {what} not started "
                    f"(spent so far: {spent.tokens} tokens, {spent.turns} turns, ${spent.usd:.4f})")
            self.budget_note = f"{self.budget_note}; {note}" if self.budget_note else note
            workflow.set_current_details(note)
        return fits

    # -- workspace steps ---------------------------------------------------------------------------------------

    async def _checks(self, queue: str, commit: str, label: str) -> ChecksResult:
        if commit in self.checked:
            return self.checked[commit]
        result = await self.place.act(WorkspaceActivities.run_checks,
                                      ChecksInput(workflow_id=workflow.info().workflow_id, commit=commit, label=label),
                                      summary=f"tests {label}", config=policies.LONG_STEP)
        self.checked[commit] = result
        return result

    async def _workspace(self, queue: str, name: str, commit: str) -> str:
        """A fresh workspace for one agent run, checked out by the host at ``commit``."""
        return await workflow.execute_activity_method(
            WorkspaceActivities.prepare_agent_workspace,
            AgentWorkspaceInput(workflow_id=workflow.info().workflow_id, name=name, commit=commit),
            summary=f"workspace for {name} at {commit[:10]}", task_queue=queue, **policies.WORKSPACE_STEP)

    async def _collect(self, queue: str, name: str, parent: str, message: str):
        """The run's work, read by the host as data, as a commit on top of ``parent``."""
        return await workflow.execute_activity_method(
            WorkspaceActivities.collect_agent_work,
            CollectInput(workflow_id=workflow.info().workflow_id, name=name, parent=parent,
                         message=_with_trailer(message)),
            summary=f"collect {name}", task_queue=queue, **policies.WORKSPACE_STEP)

    async def _merge(self, queue: str, branch: str, commit: str, label: str, message: str,
                     fast_forward: bool = False):
        merged = await self.place.act(
            WorkspaceActivities.merge_agent_work,
            MergeInput(workflow_id=workflow.info().workflow_id, branch=branch, commit=commit, label=label,
                       message=_with_trailer(message), fast_forward=fast_forward),
            summary=f"merge {label}")
        if self.place.shared and merged.merged:
            self.place.checkpointed(merged.checkpoint, self.place.home.worker_id)
            self.place.head = self.place.branch_at[self.place.home.worker_id] = merged.head
        return merged

    # -- the run -----------------------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        wf_id = workflow.info().workflow_id
        branch = branch_name(wf_id)
        if inp.budget:
            self.budget = BudgetTracker(budget=Budget.model_validate(inp.budget), started_at=workflow.time(),
                                        scope="task")
        self._enter("binding a worker host")
        self.place.repo, self.place.ref = inp.repo, inp.ref
        self.place.home = await self.place.bind()
        self.place.shared = self.place.home.shared
        queue = self.place.home.queue
        # Whatever happens (not when a worker merely evicts this run from its cache): every end reports back, no
        # sandbox of this task outlives it, and its run workspaces go (their work is in the repository).
        try:
            result = await self._run(inp, queue, wf_id, branch)
        except asyncio.CancelledError:
            await self._cancelled(inp, queue, wf_id, branch)
            raise
        except Exception as e:
            if policies.cancelling(e):  # one of the coordinator's own steps, cancelled with the task
                await self._cancelled(inp, queue, wf_id, branch)
                raise asyncio.CancelledError() from None
            kind, why = policies.failure(e)
            await self._report(inp, queue, wf_id, branch, "failed", f"The run failed: {kind}: {why[:1500]}", None)
            await self._cleanup(queue, wf_id)
            raise
        await self._cleanup(queue, wf_id)
        return result

    async def _cancelled(self, inp: TaskInput, queue: str, wf_id: str, branch: str) -> None:
        """The run is cancelled: its sandboxes and workspaces go first (within seconds), then the status goes back
        (which may be retried for minutes)."""
        self._enter("cancelled")
        if policies.stopping():
            await self._cleanup(queue, wf_id)
            await self._report(inp, queue, wf_id, branch, "cancelled", "The run was cancelled.", None)
            return
        await self._report(inp, queue, wf_id, branch, "cancelled", "The run was cancelled.", None)
        await self._cleanup(queue, wf_id)

    async def _cleanup(self, queue: str, wf_id: str) -> None:
        await self.place.act(WorkspaceActivities.cleanup_task, CleanupInput(workflow_id=wf_id),
                             summary="release sandboxes, clean up", config=policies.TIDY)
        if self.place.shared:  # the other hosts that held a copy of the task's repository for its agents
            for worker_id, queue_of in sorted(self.place.hosts.items()):
                if worker_id != self.place.home.worker_id and worker_id not in self.place.lost:
                    try:
                        await workflow.execute_activity_method(
                            WorkspaceActivities.cleanup_task, CleanupInput(workflow_id=wf_id, drop_repository=True),
                            summary=f"clean up on {worker_id}", task_queue=queue_of,
                            schedule_to_start_timeout=timedelta(minutes=1), **policies.TIDY)
                    except ActivityError:  # that host is away: its reaper removes what the task left there
                        workflow.logger.warning("could not clean up task %s on host %s", wf_id, worker_id)
            self.place.stop_watching()

    async def _report(self, inp: TaskInput, queue: str, wf_id: str, branch: str, status: str, summary: str,
                      commit: str | None) -> None:
        """Status back to where the task came from (nothing for a run started from the command line)."""
        origin = workflow.memo_value("origin", None)
        if not origin:
            return
        self._enter("reporting back")
        await self.place.act(
            ReportActivities.report_status,
            ReportInput(workflow_id=wf_id, origin=origin, status=status, summary=summary, branch=branch,
                        commit=commit, remote=inp.repo),
            summary=f"status back ({status})", config=policies.REPORT_BACK)

    async def _run(self, inp: TaskInput, queue: str, wf_id: str, branch: str) -> TaskResult:
        self._enter("preparing workspace")
        prep = await self.place.act(WorkspaceActivities.prepare_workspace,
                                    PrepareInput(workflow_id=wf_id, repo=inp.repo, ref=inp.ref, env_id=inp.env_id),
                                    summary=f"clone {inp.repo}@{inp.ref}")
        base = prep.base_commit
        if self.place.shared:
            self.place.prepared, self.place.environment_state = prep, prep.environment
            self.place.checkpointed(prep.checkpoint, self.place.home.worker_id)
        env = await self._environment(queue, wf_id, prep.environment)
        if self.place.shared:
            self.place.environment_state = env
        if env is not None and env.status == "failed":
            return await self._environment_failed(inp, queue, wf_id, branch, env)
        head = await self.place.act(WorkspaceActivities.start_branch,
                                    BranchInput(workflow_id=wf_id, branch=branch, commit=base),
                                    summary=f"branch {branch}")
        self.place.head = head
        if self.place.shared:
            self.place.branch_at[self.place.home.worker_id] = head
        solo: AgentResult | None = None
        outcomes: list[SubtaskOutcome] = []
        problems: list[str] = []
        if inp.mode == "solo":  # the tests before run alongside the agent, which does not read them
            self._enter("agent working (and the tests before)")
            checking = asyncio.ensure_future(self._checks(queue, head, "before"))
            try:
                solo, head = await self._run_on_branch(inp, queue, branch, head, "agent-1", "solo", inp.task,
                                                       ["solo"])
                before = await checking
            finally:
                if not checking.done():
                    drop(checking)
            if solo.status == "failed":
                problems.append(f"the agent failed: {solo.error_kind}: {solo.reason[:300]}")
            elif solo.status == "budget_exhausted":
                problems.append(f"the agent ran out of budget before it finished ({solo.stopped or 'budget'})")
        else:  # the planner reads the tests before
            self._enter("tests before")
            before = await self._checks(queue, head, "before")
            outcomes, head = await self._team(inp, queue, base, head, branch, before)
            problems += [f"subtask {o.id}: {o.status}" + (f" ({o.note})" if o.note else "") for o in outcomes
                         if o.status in ("failed", "conflict", "skipped")]

        self._enter("verifying")
        after = await self._checks(queue, head, "after")
        rounds, head, after = await self._debug_rounds(inp, queue, wf_id, base, branch, head, after, problems)
        follow_ups, head, after = await self._follow_ups(inp, queue, branch, head, after)

        self._enter("delivering")
        fin = await self.place.act(WorkspaceActivities.finalize,
                                   FinalizeInput(workflow_id=wf_id, base_commit=base, branch=branch, head=head,
                                                 deliver_to=inp.repo if inp.local_branch else "",
                                                 deliver_host=inp.local_host),
                                   summary=f"deliver {branch}", config=policies.DELIVER)

        status = _verdict(fin.files_changed, after.green, problems)
        lines = [f"bosun run `{wf_id}`: **{status}**", "", f"- tests before: {before.summary}",
                 f"- tests after: {after.summary}", f"- files changed: {', '.join(fin.files_changed) or 'none'}"]
        lines += [f"- not done: {p}" for p in problems]
        lines.append(f"- every step: `bosun history {wf_id}`")
        await self._report(inp, queue, wf_id, branch, status, "\n".join(lines), fin.commit)
        self._enter(f"done: {status}")
        workflow.upsert_memo({"result": status})
        return TaskResult(status=status, workspace=fin.workspace, branch=branch, commit=fin.commit, diff=fin.diff,
                          diff_ref=fin.diff_ref, files_changed=fin.files_changed, tests_before=before,
                          tests_after=after, agent=solo, plan=self.plan_info, subtasks=outcomes,
                          debug_rounds=rounds, follow_ups=follow_ups, problems=problems, messages=self.inbox,
                          budget_note=self.budget_note, spent=self.budget.spent.model_dump() if self.budget else {},
                          environment=env, moves=self.place.moves, local_branch=fin.local_branch,
                          local_note=fin.local_note)

    async def _debug_rounds(self, inp: TaskInput, queue: str, wf_id: str, base: str, branch: str, head: str,
                            after: ChecksResult, problems: list[str]) -> tuple[list[AgentResult], str, ChecksResult]:
        """Team mode, tests still red: debugger agents on the branch, each with the failures and the diff so far,
        until the tests are green, the rounds are used up or the budget does not fit another."""
        rounds: list[AgentResult] = []
        while inp.mode == "team" and not after.green and len(rounds) < inp.max_debug_rounds:
            if not self._fits(1, "debugger rounds"):
                break
            self.failures += 1
            n = len(rounds) + 1
            self._enter(f"debugging (round {n})")
            diff_ref = await self.place.act(WorkspaceActivities.diff_since,
                                            DiffInput(workflow_id=wf_id, base_commit=base, head=head),
                                            summary="current diff")
            task = debugger_brief(inp.task, after.failed[:30], after.summary, problems)
            attach = [Attachment(title="Test output", ref=after.output_ref)] if after.output_ref else []
            attach.append(Attachment(title="The changes so far (diff against the starting commit)", ref=diff_ref))
            result, head = await self._run_on_branch(inp, queue, branch, head, f"debugger-{n}", "debugger", task,
                                                     [f"debugger#{n}", "debugger"], attachments=attach)
            rounds.append(result)
            self._enter(f"verifying (after debug round {n})")
            after = await self._checks(queue, head, f"after debug round {n}")
        return rounds, head, after

    async def _follow_ups(self, inp: TaskInput, queue: str, branch: str, head: str,
                          after: ChecksResult) -> tuple[list[AgentResult], str, ChecksResult]:
        """Messages that arrived when no agent was running and none started afterwards: nobody read them yet. An
        agent on the branch gets them (at most 3 rounds), so no message is ever lost."""
        follow_ups: list[AgentResult] = []
        while any(not m.delivered_to for m in self.inbox) and len(follow_ups) < 3:
            n = len(follow_ups) + 1
            self._enter(f"follow-up (round {n})")
            result, head = await self._run_on_branch(inp, queue, branch, head, f"follow-up-{n}", "solo",
                                                     follow_up_brief(inp.task), [f"follow_up#{n}", "follow_up"])
            follow_ups.append(result)
            after = await self._checks(queue, head, f"after follow-up {n}")
        return follow_ups, head, after

    async def _environment(self, queue: str, wf_id: str, env: EnvironmentState | None) -> EnvironmentState | None:
        """The base commit's environment: as the prepare step found it, or built now (an activity that
        heartbeats its progress; the log goes to the artifact store)."""
        if env is None or env.status != "needed":
            return env
        self._enter(f"building the environment {env.env_id} (python {env.python})")
        return await self.place.act(WorkspaceActivities.build_environment, EnvironmentInput(workflow_id=wf_id),
                                    summary=f"environment {env.env_id}: python {env.python}, tests: "
                                            f"{env.test_command[:80]}",
                                    config=policies.longer(policies.LONG_STEP, build_minutes(env)))

    async def _environment_failed(self, inp: TaskInput, queue: str, wf_id: str, branch: str,
                                  env: EnvironmentState) -> TaskResult:
        """The repository's environment cannot be built: nothing runs; the result says which step failed and
        shows the log's tail."""
        self._enter("done: environment_failed")
        workflow.upsert_memo({"result": "environment_failed"})
        why = f"the environment could not be built: {env.reason}"
        skipped = ChecksResult(green=False, exit_code=None, summary=f"not run: {why[:300]}")
        lines = [f"bosun run `{wf_id}`: **environment_failed**", "", f"- {why}"]
        if env.tail:
            lines += ["", "```", env.tail[-3000:], "```"]
        lines.append(f"- every step: `bosun history {wf_id}`")
        await self._report(inp, queue, wf_id, branch, "environment_failed", "\n".join(lines), None)
        return TaskResult(status="environment_failed", workspace="", branch=branch, commit=None, diff="",
                          diff_ref="", files_changed=[], tests_before=skipped, tests_after=skipped,
                          problems=[why] + ([f"log tail:\n{env.tail[-2000:]}"] if env.tail else []),
                          messages=self.inbox, environment=env, moves=self.place.moves)

    async def _run_on_branch(self, inp: TaskInput, queue: str, branch: str, head: str, name: str, role: str,
                             task: str, keys: list[str], attachments: list[Attachment] | None = None
                             ) -> tuple[AgentResult, str]:
        """One agent on a fresh workspace at the branch head; its work goes onto the branch. Returns the agent's
        result and the new head. The work of a failed agent is not kept."""
        message = f"bosun {role} ({name}): {inp.task[:60]}"
        result, collect = await self._placed(inp, name, role, task, head, keys, attachments=attachments,
                                             collect=message)
        if result.status in ("failed", "cancelled"):
            return result, head
        if collect.commit:
            moved = await self._merge(queue, branch, collect.commit, f"{role} run {name}", f"bosun: {role} {name}",
                                      fast_forward=True)
            head = moved.head
        return result, head


class _NoWork:
    """What collecting a failed agent's work gives: nothing (its workspace is not read)."""

    commit = None
    files: list[str] = []
    notes: list[str] = []
