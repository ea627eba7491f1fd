"""AgentWorkflow: one agent run. Deterministic orchestration only: every model call and tool call is an activity.

The loop: model call -> the turn's tool calls (read-only ones concurrently, writes serialized per file) -> their
results go into the next model call. The transcript lives in the artifact store; history holds refs and previews.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from activities.core import Activities
    from activities.models import (
        AgentInput,
        AgentResult,
        InitAgentInput,
        ModelCallInput,
        ReleaseInput,
        ToolCallInput,
        ToolResultRef,
        Usage,
    )
    from agents.tools.scheduling import plan_batches

MODEL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=2), backoff_coefficient=2.0,
                          maximum_interval=timedelta(seconds=60), maximum_attempts=6,
                          non_retryable_error_types=["ScriptDiverged", "ConfigError", "InvalidArguments"])
TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=10),
                         maximum_attempts=4, non_retryable_error_types=["ConfigError"])


@workflow.defn
class AgentWorkflow:
    def __init__(self) -> None:
        self.turn = 0
        self.status = "starting"
        self.steps: list[str] = []

    @workflow.query
    def progress(self) -> dict:
        return {"turn": self.turn, "status": self.status, "recent": self.steps[-20:]}

    @workflow.run
    async def run(self, inp: AgentInput) -> AgentResult:
        queue = inp.worker_queue
        transcript = await workflow.execute_activity_method(
            Activities.init_agent, InitAgentInput(agent_id=inp.agent_id, role=inp.role, task=inp.task,
                                                  workspace=inp.workspace),
            task_queue=queue, start_to_close_timeout=timedelta(seconds=30), summary=f"init {inp.role} agent")
        results: list[ToolResultRef] = []
        usage = Usage()
        n_calls = 0
        final = ""
        status = "budget_exhausted"
        try:
            for turn in range(1, inp.max_turns + 1):
                self.turn, self.status = turn, "thinking"
                resp = await workflow.execute_activity_method(
                    Activities.model_call,
                    ModelCallInput(agent_id=inp.agent_id, turn=turn, model=inp.model,
                                   trajectory_ref=inp.trajectory_ref, transcript_ref=transcript,
                                   tool_results=results, tools=inp.tools),
                    task_queue=queue, start_to_close_timeout=timedelta(minutes=10),
                    retry_policy=MODEL_RETRY, summary=f"model turn {turn}")
                transcript = resp.transcript_ref
                usage = Usage(input_tokens=usage.input_tokens + resp.usage.input_tokens,
                              output_tokens=usage.output_tokens + resp.usage.output_tokens,
                              cached_input_tokens=usage.cached_input_tokens + resp.usage.cached_input_tokens)
                self.steps.append(f"turn {turn}: {resp.text_preview[:100]} ({len(resp.tool_calls)} tool calls)")
                if not resp.tool_calls:
                    final, status = resp.text_preview, "done"
                    break
                self.status = "running tools"
                results = [None] * len(resp.tool_calls)  # type: ignore[list-item]
                for batch in plan_batches([c.write_key for c in resp.tool_calls]):
                    outs = await asyncio.gather(*[
                        workflow.execute_activity_method(
                            Activities.tool_call,
                            ToolCallInput(agent_id=inp.agent_id, workspace=inp.workspace, call=resp.tool_calls[i]),
                            task_queue=queue, start_to_close_timeout=timedelta(minutes=70),
                            heartbeat_timeout=timedelta(seconds=10), retry_policy=TOOL_RETRY,
                            summary=f"{resp.tool_calls[i].name} {resp.tool_calls[i].arguments_preview[:80]}")
                        for i in batch])
                    for i, out in zip(batch, outs, strict=True):
                        results[i] = out
                        self.steps.append(f"  {out.name}: {out.summary[:100]}")
                n_calls += len(resp.tool_calls)
        finally:
            self.status = status
            await workflow.execute_activity_method(
                Activities.release_sandbox, ReleaseInput(agent_id=inp.agent_id), task_queue=queue,
                start_to_close_timeout=timedelta(seconds=60), summary="release sandbox")
        return AgentResult(agent_id=inp.agent_id, status=status, turns=self.turn, tool_calls=n_calls,
                           final_message=final, transcript_ref=transcript, usage=usage)
