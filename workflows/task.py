"""TaskWorkflow: the coordinator of one task. Deterministic orchestration only.

Walking skeleton: bind to a worker host -> prepare the workspace -> tests before -> one agent -> tests after ->
commit on branch ``bosun/<workflow id>``. (Planner, parallel fast-edit agents, stitching and the debugger loop hang
on this spine.)
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.core import Activities
    from activities.models import (
        AgentInput,
        ChecksInput,
        FinalizeInput,
        PrepareInput,
        TaskInput,
        TaskResult,
    )
    from workflows.agent import AgentWorkflow

SETUP_RETRY = RetryPolicy(maximum_attempts=3, non_retryable_error_types=["ConfigError"])


@workflow.defn
class TaskWorkflow:
    def __init__(self) -> None:
        self.phase = "starting"

    def _enter(self, phase: str) -> None:
        self.phase = phase
        workflow.set_current_details(f"phase: {phase}")

    @workflow.query
    def status(self) -> str:
        return self.phase

    @workflow.run
    async def run(self, inp: TaskInput) -> TaskResult:
        wf_id = workflow.info().workflow_id
        self._enter("binding a worker host")
        queue = await workflow.execute_activity_method(
            Activities.bind_worker, start_to_close_timeout=timedelta(seconds=30), summary="bind worker host")

        self._enter("preparing workspace")
        prep = await workflow.execute_activity_method(
            Activities.prepare_workspace, PrepareInput(workflow_id=wf_id, repo=inp.repo, ref=inp.ref),
            task_queue=queue, start_to_close_timeout=timedelta(minutes=10), retry_policy=SETUP_RETRY,
            summary=f"clone {inp.repo}@{inp.ref}")

        self._enter("tests before")
        before = await workflow.execute_activity_method(
            Activities.run_checks, ChecksInput(workspace=prep.workspace, label="before"), task_queue=queue,
            start_to_close_timeout=timedelta(minutes=70), heartbeat_timeout=timedelta(seconds=10),
            retry_policy=SETUP_RETRY, summary="tests before")

        self._enter("agent working")
        agent = await workflow.execute_child_workflow(
            AgentWorkflow.run,
            AgentInput(agent_id=f"{wf_id}/agent-1", task=inp.task, model=inp.model,
                       trajectory_ref=inp.trajectory_ref, workspace=prep.workspace, worker_queue=queue,
                       max_turns=inp.max_turns),
            id=f"{wf_id}/agent-1", static_summary=f"solo agent, model {inp.model}")

        self._enter("tests after")
        after = await workflow.execute_activity_method(
            Activities.run_checks, ChecksInput(workspace=prep.workspace, label="after"), task_queue=queue,
            start_to_close_timeout=timedelta(minutes=70), heartbeat_timeout=timedelta(seconds=10),
            retry_policy=SETUP_RETRY, summary="tests after")

        self._enter("delivering")
        branch = f"bosun/{wf_id}"
        fin = await workflow.execute_activity_method(
            Activities.finalize,
            FinalizeInput(workspace=prep.workspace, base_commit=prep.base_commit, branch=branch,
                          message=f"bosun: {inp.task[:60]}\n\nworkflow {wf_id}"),
            task_queue=queue, start_to_close_timeout=timedelta(minutes=5), retry_policy=SETUP_RETRY,
            summary=f"commit on {branch}")

        status = "no_changes" if not fin.files_changed else ("succeeded" if after.green else "failed")
        self._enter(f"done: {status}")
        return TaskResult(status=status, workspace=prep.workspace, branch=branch, commit=fin.commit, diff=fin.diff,
                          diff_ref=fin.diff_ref, files_changed=fin.files_changed, tests_before=before,
                          tests_after=after, agent=agent)
