"""TaskWorkflow: the coordinator of one task. Deterministic orchestration only.

team mode: bind to a worker host -> prepare the task repository -> tests before -> planner agent -> a typed plan ->
fast-edit agents in parallel (bounded), each on a fresh workspace of its own -> their work imported as commits and
stitched with real 3-way merges (a conflicting subtask is re-run once on the merged tree) -> verify (tests in a
sandbox, on a fresh checkout of the branch) -> debugger agent until green or out of rounds -> the branch
``bosun/<workflow id>`` holds the result.
solo mode: one agent on a fresh workspace, its work imported onto the branch, then verify and deliver.

Every workspace an agent touches is read back by the host as data (sandbox/hostrepo.py); the task ends by releasing
every sandbox of its agents and removing the run workspaces, whatever its outcome.

Each phase shows as the workflow's current details (Web UI) and through the ``status`` query; ``plan`` and
``agents`` queries show the plan and each agent's progress; ``steer`` forwards a person's message to the agents
that are running.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.models import (
        AgentWorkspaceInput,
        Attachment,
        BranchInput,
        ChecksInput,
        ChecksResult,
        CleanupInput,
        CollectInput,
        DiffInput,
        FinalizeInput,
        MergeInput,
        PlanInfo,
        PrepareInput,
        ReadPlanInput,
        ReleaseInput,
        RouteInput,
        SubtaskInfo,
    )
    from activities.report import ReportActivities, ReportInput
    from activities.workspace import WorkspaceActivities
    from agents.budget import Budget, BudgetTracker
    from workflows.agent import AgentWorkflow
    from workflows.models import AgentInput, AgentResult, SubtaskOutcome, TaskInput, TaskResult, branch_name

SETUP_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=["ConfigError"])


def _activity_opts(queue: str, minutes: float = 10, heartbeat: bool = False) -> dict:
    opts: dict = {"task_queue": queue, "start_to_close_timeout": timedelta(minutes=minutes),
                  "retry_policy": SETUP_RETRY}
    if heartbeat:
        opts["heartbeat_timeout"] = timedelta(seconds=10)
    return opts


@workflow.defn
class TaskWorkflow:
    def __init__(self) -> None:
        self.phase = "starting"
        self.plan_info: PlanInfo | None = None
        self.running_agents: set[str] = set()
        self.agent_status: dict[str, str] = {}
        self.follow_ups: list[str] = []
        self.failures = 0
        """Red verifications and failed agent runs so far (a router signal)."""
        self.budget: BudgetTracker | None = None
        self.agents_run = 0
        self.budget_note = ""

    def _enter(self, phase: str) -> None:
        self.phase = phase
        workflow.set_current_details(f"phase: {phase}")

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

    @workflow.signal
    async def steer(self, text: str) -> None:
        """Forward a person's message to every agent that is running now."""
        for child in sorted(self.running_agents):
            await workflow.get_external_workflow_handle(child).signal(AgentWorkflow.steer, text)

    @workflow.signal
    async def follow_up(self, text: str) -> None:
        """A follow-up from the event source (a new comment, a Linear prompt): reaches the running agents."""
        self.follow_ups.append(text)
        await self.steer(text)

    async def _agent(self, inp: TaskInput, name: str, role: str, task: str, workspace: str, queue: str,
                     keys: list[str], tools: list[str] | None = None,
                     attachments: list[Attachment] | None = None, files_in_scope: int = 0) -> AgentResult:
        wf_id = f"{workflow.info().workflow_id}/{name}"
        model, fallback_models = inp.model, []
        if inp.model == "auto":
            plan = len(self.plan_info.subtasks) if self.plan_info else 0
            decision = await workflow.execute_activity_method(
                AgentActivities.route_model,
                RouteInput(role=role, task_chars=len(task), plan_subtasks=plan, files_in_scope=files_in_scope,
                           failures_so_far=self.failures),
                summary=f"route {name}", **_activity_opts(queue))
            model, fallback_models = decision.model, decision.fallbacks
        self.running_agents.add(wf_id)
        self.agent_status[name] = "running"
        try:
            result = await workflow.execute_child_workflow(
                AgentWorkflow.run,
                AgentInput(agent_id=wf_id, role=role, task=task, model=model, trajectory_ref=inp.trajectory_ref,
                           fallback_models=fallback_models,
                           workspace=workspace, worker_queue=queue, max_turns=inp.max_turns, agent_keys=keys,
                           tools=tools or [], attachments=attachments or []),
                # On the host's own queue, like its activities: the server hands each activity to the worker in
                # the same round trip that schedules it (eager execution) - several times less latency per step.
                id=wf_id, task_queue=queue, static_summary=f"{role} agent: {task[:120]}")
        except Exception:
            self.agent_status[name] = "failed"
            self.failures += 1
            # A child that failed, timed out or was terminated never ran its own release: do it here.
            await workflow.execute_activity_method(
                AgentActivities.release_sandbox, ReleaseInput(agent_id=wf_id, workspace=workspace),
                summary=f"release sandbox of {name}", **_activity_opts(queue, 1))
            raise
        finally:
            self.running_agents.discard(wf_id)
        self.agent_status[name] = result.status
        self.agents_run += 1
        if self.budget is not None:
            self.budget.charge(result.usage, result.cost_usd, turns=result.turns)
        return result

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

    async def _checks(self, queue: str, commit: str, label: str) -> ChecksResult:
        return await workflow.execute_activity_method(
            WorkspaceActivities.run_checks,
            ChecksInput(workflow_id=workflow.info().workflow_id, commit=commit, label=label),
            summary=f"tests {label}", **_activity_opts(queue, 70, heartbeat=True))

    async def _workspace(self, queue: str, name: str, commit: str) -> str:
        """A fresh workspace for one agent run, checked out by the host at ``commit``."""
        return await workflow.execute_activity_method(
            WorkspaceActivities.prepare_agent_workspace,
            AgentWorkspaceInput(workflow_id=workflow.info().workflow_id, name=name, commit=commit),
            summary=f"workspace for {name} at {commit[:10]}", **_activity_opts(queue))

    async def _collect(self, queue: str, name: str, parent: str, message: str):
        """The run's work, read by the host as data, as a commit on top of ``parent``."""
        return await workflow.execute_activity_method(
            WorkspaceActivities.collect_agent_work,
            CollectInput(workflow_id=workflow.info().workflow_id, name=name, parent=parent, message=message),
            summary=f"collect {name}", **_activity_opts(queue))

    async def _onto_branch(self, queue: str, branch: str, commit: str, label: str):
        """A run that started at the branch head: the branch moves to its commit (merged if the head moved)."""
        return await workflow.execute_activity_method(
            WorkspaceActivities.merge_agent_work,
            MergeInput(workflow_id=workflow.info().workflow_id, branch=branch, commit=commit, label=label,
                       message=f"bosun: {label}", fast_forward=True),
            summary=f"onto {branch}: {label}", **_activity_opts(queue))

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        wf_id = workflow.info().workflow_id
        branch = branch_name(wf_id)
        if inp.budget:
            self.budget = BudgetTracker(budget=Budget.model_validate(inp.budget), started_at=workflow.time(),
                                        scope="task")
        self._enter("binding a worker host")
        queue = await workflow.execute_activity_method(
            WorkspaceActivities.bind_worker, start_to_close_timeout=timedelta(seconds=30), summary="bind worker host")
        # Whatever happens (not when a worker merely evicts this run from its cache): no sandbox of this task
        # outlives it, and its run workspaces go (their work is in the task repository as commits).
        try:
            result = await self._run(inp, queue, wf_id, branch)
        except (Exception, asyncio.CancelledError):
            await self._cleanup(queue, wf_id)
            raise
        await self._cleanup(queue, wf_id)
        return result

    async def _cleanup(self, queue: str, wf_id: str) -> None:
        await workflow.execute_activity_method(
            WorkspaceActivities.cleanup_task, CleanupInput(workflow_id=wf_id),
            summary="release sandboxes, clean up", **_activity_opts(queue, 5))

    async def _run(self, inp: TaskInput, queue: str, wf_id: str, branch: str) -> TaskResult:
        self._enter("preparing workspace")
        prep = await workflow.execute_activity_method(
            WorkspaceActivities.prepare_workspace, PrepareInput(workflow_id=wf_id, repo=inp.repo, ref=inp.ref),
            summary=f"clone {inp.repo}@{inp.ref}", **_activity_opts(queue))
        base = prep.base_commit
        head = await workflow.execute_activity_method(
            WorkspaceActivities.start_branch, BranchInput(workflow_id=wf_id, branch=branch, commit=base),
            summary=f"branch {branch}", **_activity_opts(queue))
        self._enter("tests before")
        before = await self._checks(queue, base, "before")

        solo: AgentResult | None = None
        outcomes: list[SubtaskOutcome] = []
        if inp.mode == "solo":
            self._enter("agent working")
            solo, head = await self._run_on_branch(inp, queue, branch, head, "agent-1", "solo", inp.task, ["solo"])
        else:
            outcomes, head = await self._team(inp, queue, base, head, branch, before)

        self._enter("verifying")
        after = await self._checks(queue, head, "after")
        rounds: list[AgentResult] = []
        while inp.mode == "team" and not after.green and len(rounds) < inp.max_debug_rounds:
            if not self._fits(1, "debugger rounds"):
                break
            self.failures += 1
            n = len(rounds) + 1
            self._enter(f"debugging (round {n})")
            diff_ref = await workflow.execute_activity_method(
                WorkspaceActivities.diff_since, DiffInput(workflow_id=wf_id, base_commit=base, head=head),
                summary="current diff", **_activity_opts(queue))
            failing = ", ".join(after.failed[:30]) or after.summary
            task = (f"The task was: {inp.task}\n\nAfter the changes, these tests fail: {failing}\n"
                    f"({after.summary}). Make them pass without weakening the tests.")
            attach = [Attachment(title="Test output", ref=after.output_ref)] if after.output_ref else []
            attach.append(Attachment(title="The changes so far (diff against the starting commit)", ref=diff_ref))
            result, head = await self._run_on_branch(inp, queue, branch, head, f"debugger-{n}", "debugger", task,
                                                     [f"debugger#{n}", "debugger"], attachments=attach)
            rounds.append(result)
            self._enter(f"verifying (after debug round {n})")
            after = await self._checks(queue, head, f"after debug round {n}")

        self._enter("delivering")
        fin = await workflow.execute_activity_method(
            WorkspaceActivities.finalize, FinalizeInput(workflow_id=wf_id, base_commit=base, branch=branch),
            summary=f"deliver {branch}", **_activity_opts(queue, 5))

        status = "no_changes" if not fin.files_changed else ("succeeded" if after.green else "failed")
        origin = workflow.memo_value("origin", None)
        if origin:
            self._enter("reporting back")
            summary = (f"bosun run `{wf_id}`: **{status}**\n\n- tests before: {before.summary}\n"
                       f"- tests after: {after.summary}\n- files changed: {', '.join(fin.files_changed) or 'none'}\n"
                       f"- every step: `bosun history {wf_id}`")
            await workflow.execute_activity_method(
                ReportActivities.report_status,
                ReportInput(workflow_id=wf_id, origin=origin, status=status, summary=summary, branch=branch,
                            commit=fin.commit, remote=inp.repo),
                summary="status back to the issue / session", **_activity_opts(queue, 5))
        self._enter(f"done: {status}")
        return TaskResult(status=status, workspace=fin.workspace, branch=branch, commit=fin.commit, diff=fin.diff,
                          diff_ref=fin.diff_ref, files_changed=fin.files_changed, tests_before=before,
                          tests_after=after, agent=solo, plan=self.plan_info, subtasks=outcomes,
                          debug_rounds=rounds, budget_note=self.budget_note,
                          spent=self.budget.spent.model_dump() if self.budget else {})

    async def _run_on_branch(self, inp: TaskInput, queue: str, branch: str, head: str, name: str, role: str,
                             task: str, keys: list[str], attachments: list[Attachment] | None = None
                             ) -> tuple[AgentResult, str]:
        """One agent on a fresh workspace at the branch head; its work goes onto the branch. Returns the agent's
        result and the new head."""
        workspace = await self._workspace(queue, name, head)
        result = await self._agent(inp, name, role, task, workspace, queue, keys, attachments=attachments)
        collect = await self._collect(queue, name, head, f"bosun {role} ({name}): {inp.task[:60]}")
        if collect.commit:
            moved = await self._onto_branch(queue, branch, collect.commit, f"{role} run {name}")
            head = moved.head
        return result, head

    async def _team(self, inp: TaskInput, queue: str, base: str, head: str, branch: str,
                    before: ChecksResult) -> tuple[list[SubtaskOutcome], str]:
        self._enter("planning")
        attach = [Attachment(title="Test results before any change", ref=before.output_ref)] \
            if before.output_ref else []
        workspace = await self._workspace(queue, "planner", base)
        planner = await self._agent(inp, "planner", "planner", inp.task, workspace, queue, ["planner"],
                                    attachments=attach)
        self.plan_info = await workflow.execute_activity_method(
            AgentActivities.read_plan, ReadPlanInput(transcript_ref=planner.transcript_ref, task=inp.task),
            summary="read the plan", **_activity_opts(queue))
        by_id = {s.id: s for s in self.plan_info.subtasks}
        outcomes: dict[str, SubtaskOutcome] = {}
        limit = asyncio.Semaphore(max(1, inp.max_parallel))
        for w, wave in enumerate(self.plan_info.waves, 1):
            self._enter(f"editing: wave {w}/{len(self.plan_info.waves)}, {len(wave)} agents")
            wave_base = head

            async def bounded(sid: str, start: str = wave_base) -> tuple:
                async with limit:
                    return await self._subtask(inp, queue, by_id[sid], start, 1, "")

            fits = self._fits(len(wave), "fast-edit agents")
            for sid in wave[fits:]:
                outcomes[sid] = SubtaskOutcome(id=sid, status="skipped", attempts=0, note=self.budget_note)
            wave = wave[:fits]
            done = await asyncio.gather(*[bounded(sid) for sid in wave])
            self._enter(f"stitching: wave {w}")
            for sid, (collect, result) in zip(wave, done, strict=True):
                sub = by_id[sid]
                if not collect.commit:
                    outcomes[sid] = SubtaskOutcome(id=sid, status="no_changes", attempts=1, agent=result,
                                                   note="; ".join(collect.notes[:5]))
                    continue
                merged = await self._merge(queue, branch, collect.commit, sub, 1)
                if merged.merged:
                    head = merged.head
                    outcomes[sid] = SubtaskOutcome(id=sid, status="merged", attempts=1, files=collect.files,
                                                   agent=result)
                    continue
                note = (f"Your earlier attempt at this subtask conflicted with other agents' changes in "
                        f"{', '.join(merged.conflicts)}. The tree now holds their changes; redo the subtask on it.")
                collect, result = await self._subtask(inp, queue, sub, head, 2, note)
                again = await self._merge(queue, branch, collect.commit, sub, 2) if collect.commit else None
                if again is not None and again.merged:
                    head = again.head
                    outcomes[sid] = SubtaskOutcome(id=sid, status="merged", attempts=2, files=collect.files,
                                                   agent=result, note=f"re-run after a conflict in "
                                                                      f"{', '.join(merged.conflicts)}")
                else:
                    outcomes[sid] = SubtaskOutcome(id=sid, status="conflict", attempts=2, agent=result,
                                                   note=f"conflicts in {', '.join(merged.conflicts)}")
        return [outcomes[s.id] for s in self.plan_info.subtasks if s.id in outcomes], head

    async def _subtask(self, inp: TaskInput, queue: str, sub: SubtaskInfo, start: str, attempt: int,
                       note: str) -> tuple:
        name = f"fast_edit-{sub.id}-{attempt}"
        workspace = await self._workspace(queue, name, start)
        task = f"Overall task: {inp.task}\n\nYour subtask ({sub.id}): {sub.goal}"
        if sub.files:
            task += f"\nFiles in scope: {', '.join(sub.files)}"
        if sub.acceptance:
            task += f"\nDone when: {sub.acceptance}"
        if note:
            task += f"\n\n{note}"
        keys = [f"fast_edit:{sub.id}#{attempt}", f"fast_edit:{sub.id}"]
        result = await self._agent(inp, name, "fast_edit", task, workspace, queue, keys,
                                   files_in_scope=len(sub.files))
        collect = await self._collect(queue, name, start, f"bosun subtask {sub.id}: {sub.goal[:60]}")
        return collect, result

    async def _merge(self, queue: str, branch: str, commit: str, sub: SubtaskInfo, attempt: int):
        return await workflow.execute_activity_method(
            WorkspaceActivities.merge_agent_work,
            MergeInput(workflow_id=workflow.info().workflow_id, branch=branch, commit=commit,
                       label=f"subtask {sub.id} (attempt {attempt})",
                       message=f"bosun: merge subtask {sub.id} (attempt {attempt}): {sub.goal[:60]}"),
            summary=f"merge {sub.id}", **_activity_opts(queue))
