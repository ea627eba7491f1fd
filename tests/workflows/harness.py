"""Stub activities for running the real TaskWorkflow and AgentWorkflow on a real Temporal dev server, in seconds.

Each stub is registered under the activity's name and takes and returns the real input and output types. A
:class:`World` says what the outside world does (the plan, what each agent does turn by turn, which merges conflict,
which test runs are green, which activity fails how) and records every call, so a test asserts on what the
workflows asked for, in which order and with what overlap.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.models import (
    AgentWorkspaceInput,
    ApplyWorkInput,
    ApplyWorkResult,
    BindResult,
    BranchInput,
    Checkpoint,
    ChecksInput,
    ChecksResult,
    CleanupInput,
    CollectInput,
    CollectResult,
    DiffInput,
    EscalationInput,
    FinalizeInput,
    FinalizeResult,
    HostLost,
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
    RestoreInput,
    RestoreResult,
    RouteInput,
    RouteResult,
    SlotGrant,
    SlotInput,
    SubagentResultsInput,
    SubagentRun,
    SubagentsInput,
    SubagentsPlan,
    SubtaskInfo,
    TerminateInput,
    ToolCallInput,
    ToolCallRef,
    ToolResultRef,
    Usage,
    WatchInput,
)
from activities.report import CIContextInput, CIContextResult, LabelInput, ReportInput, ReportResult
from agents.tools.subagents import ROLE_OF, SpawnArgs, SubagentSpec, refusal
from evaluation.activities import (
    EvalFetchInput,
    EvalFetchResult,
    EvalPrepareInput,
    EvalPrepareResult,
    EvalRunInput,
    EvalRunResult,
    KeepOutcomesInput,
    PredictionInput,
)
from evaluation.recipes import Recipe

REF = "sha256:" + "0" * 64


def ref(n: int | str) -> str:
    """A well-formed artifact ref (the stubs keep no store)."""
    return "sha256:" + f"{n}".encode().hex().rjust(64, "0")[-64:]


@dataclass
class Turn:
    """One model turn of a stub agent: its tool calls (names) or, with none, its final answer."""

    tools: list[str] = field(default_factory=list)
    tool_seconds: float = 0.0
    """How long each of its tool calls takes."""
    tokens: int = 100
    cost_usd: float = 0.0
    fail: str | None = None
    """Raise an ApplicationError of this type from the model call (e.g. ProviderError, ScriptDiverged)."""
    retryable: bool = False


def _call(call_id: str, tool: str) -> ToolCallRef:
    """A stub model's tool call; ``unoffered:<name>``: one to a tool it was not offered, answered by the call."""
    name = tool.removeprefix("unoffered:")
    refused = None if name == tool else ToolResultRef(call_id=call_id, name=name, result_ref=REF, is_error=True,
                                                      summary="InvalidArguments: not offered",
                                                      error_kind="InvalidArguments")
    return ToolCallRef(id=call_id, name=name, arguments_ref=REF, arguments_preview="{}", offered=refused is None,
                       refused=refused, write_key=None if name.startswith("read") else "*")


@dataclass
class AgentScript:
    turns: list[Turn] = field(default_factory=lambda: [Turn()])
    changes: bool = True
    """Whether collecting the agent's work gives a commit."""


@dataclass
class Call:
    name: str
    input: Any
    started: float
    ended: float = 0.0
    run_id: str = ""
    """The workflow run that called (a continued-as-new agent has several)."""
    result: Any = None
    host: str = ""
    """The stub host that ran it."""


@dataclass
class World:
    """What the stubs answer (configure before starting the workflow) and what they saw (assert after)."""

    queue: str = "stub-queue"
    plan: PlanInfo = field(default_factory=lambda: PlanInfo(subtasks=[SubtaskInfo(id="task", goal="g")],
                                                            waves=[["task"]]))
    agents: dict[str, AgentScript] = field(default_factory=dict)
    """By agent name (``planner``, ``fast_edit-<id>-<attempt>``, ``debugger-<n>``, ``agent-1``)."""
    checks: Callable[[str], bool] = lambda label: label != "before"
    """Green or red, by the label of the test run (``before``, ``after``, ``after debug round 1``...)."""
    check_seconds: dict[str, float] = field(default_factory=dict)
    """How long a test run takes, by label."""
    merge_seconds: float = 0.0
    """How long a merge takes."""
    collect_seconds: float = 0.0
    """How long collecting an agent's work takes."""
    conflicts: Callable[[str], list[str]] = lambda label: []
    """Conflicting files when merging, by merge label (``subtask a (attempt 1)``)."""
    fallbacks: dict[str, list[str]] = field(default_factory=dict)
    """The fallback chain route_model answers, by model."""
    subagents: list[str] = field(default_factory=lambda: ["explorer", "explorer"])
    """What a spawn_subagents call asks for (kinds: explorer, editor)."""
    unmergeable: set[str] = field(default_factory=set)
    """Subagent run names whose work does not apply to the parent's workspace."""
    model_gate: asyncio.Event | None = None
    """When set, model calls wait for it (to send signals while an agent runs)."""
    slots: int = 64
    """Slots of the stub host (its slots worker's activity slots)."""
    shared: bool = False
    """Whether the stub hosts share their state (checkpoints, host watches: workflows/task.py)."""
    lost: dict[str, asyncio.Event] = field(default_factory=dict)
    """Worker id -> set when that host is lost (its watch returns)."""
    hang: set[str] = field(default_factory=set)
    """Agents (names) whose model calls never return, and hosts whose test runs (and evaluation judging) never
    return (the host is about to be lost)."""
    judge_seconds: float = 0.0
    ci_context: dict[str, CIContextResult] = field(default_factory=dict)
    """What ci_context answers, by check name (default: nothing known)."""
    """How long judging an evaluation instance takes."""
    binds: list[str] = field(default_factory=list)
    """The hosts bind_host answers with, in turn (``<queue>@<host>``); empty: the host that runs it."""
    calls: list[Call] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    """Slot claims whose hold ended (the task cancelled it: its agent was done)."""
    commits: int = 0
    branches: dict[str, str] = field(default_factory=dict)
    """Host -> where its copy of the task branch is (start_branch, a merge or a restore there set it)."""

    def named(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.name == name]

    def script(self, agent_id: str) -> AgentScript:
        return self.agents.get(agent_id.split("/")[-1], AgentScript())

    def _commit(self) -> str:
        self.commits += 1
        return f"{self.commits:040x}"


class Stubs:
    """The activities, answering from a World, as the host ``host`` (its own queue: ``queue``)."""

    def __init__(self, world: World, host: str = "stub", queue: str | None = None) -> None:
        self.w = world
        self.host = host
        self.queue = queue or world.queue

    def all(self) -> list:
        return [getattr(self, n) for n in dir(self) if hasattr(getattr(self, n), "__temporal_activity_definition")]

    async def _record(self, name: str, inp: Any, seconds: float = 0.0) -> Call:
        call = Call(name, inp, time.monotonic(), run_id=activity.info().workflow_run_id or "", host=self.host)
        self.w.calls.append(call)
        if seconds:
            await asyncio.sleep(seconds)
        call.ended = time.monotonic()
        return call

    @activity.defn(name="bind_worker")
    async def bind_worker(self) -> str:
        await self._record("bind_worker", None)
        return self.w.queue

    @activity.defn(name="bind_host")
    async def bind_host(self) -> BindResult:
        await self._record("bind_host", None)
        if self.w.binds:
            host = self.w.binds.pop(0)
            return BindResult(queue=f"{self.w.queue}@{host}", worker_id=host, shared=self.w.shared)
        return BindResult(queue=self.queue, worker_id=self.host, shared=self.w.shared)

    @activity.defn(name="hold_slot")
    async def hold_slot(self, inp: SlotInput) -> None:
        await self._record("hold_slot", inp)
        grant = SlotGrant(claim=inp.claim, queue=self.queue, worker_id=self.host)
        await activity.client().get_workflow_handle(inp.workflow_id).signal("slot_granted", grant)
        try:
            while True:
                activity.heartbeat()
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            self.w.released.append(inp.claim)

    @activity.defn(name="watch_host")
    async def watch_host(self, inp: WatchInput) -> HostLost:
        await self._record("watch_host", inp)
        gone = self.w.lost.setdefault(inp.worker_id, asyncio.Event())
        while not gone.is_set():
            activity.heartbeat()
            await asyncio.sleep(0.1)
        return HostLost(worker_id=inp.worker_id, last_seen=0.0, why="stub: no heartbeat")

    @activity.defn(name="terminate_agent")
    async def terminate_agent(self, inp: TerminateInput) -> bool:
        await self._record("terminate_agent", inp)
        await activity.client().get_workflow_handle(inp.workflow_id).terminate(reason=inp.reason)
        return True

    @activity.defn(name="restore_task")
    async def restore_task(self, inp: RestoreInput) -> RestoreResult:
        await self._record("restore_task", inp)
        if inp.branch and inp.head:
            self.w.branches[self.host] = inp.head
        return RestoreResult(applied=len(inp.checkpoints), environment=inp.environment)

    @activity.defn(name="route_model")
    async def route_model(self, inp: RouteInput) -> RouteResult:
        await self._record("route_model", inp)
        model = f"stub:{inp.role}" if inp.model == "auto" else inp.model
        return RouteResult(model=model, score=0.5, reason="stub", fallbacks=self.w.fallbacks.get(model, []))

    @activity.defn(name="prepare_workspace")
    async def prepare_workspace(self, inp: PrepareInput) -> PrepareResult:
        await self._record("prepare_workspace", inp)
        checkpoint = Checkpoint(ref=ref("clone"), tips=["b" * 40]) if self.w.shared else None
        return PrepareResult(repository="/nonexistent/repo.git", base_commit="b" * 40, checkpoint=checkpoint)

    @activity.defn(name="start_branch")
    async def start_branch(self, inp: BranchInput) -> str:
        await self._record("start_branch", inp)
        self.w.branches.setdefault(self.host, inp.commit)
        return self.w.branches[self.host]

    @activity.defn(name="run_checks")
    async def run_checks(self, inp: ChecksInput) -> ChecksResult:
        await self._record("run_checks", inp, self.w.check_seconds.get(inp.label, 0.0))
        while self.host in self.w.hang:
            activity.heartbeat()
            await asyncio.sleep(0.1)
        green = self.w.checks(inp.label)
        return ChecksResult(green=green, exit_code=0 if green else 1, summary="7 passed" if green else "1 failed",
                            failed=[] if green else ["tests/test_x.py::test_y"], output_ref=REF)

    @activity.defn(name="prepare_agent_workspace")
    async def prepare_agent_workspace(self, inp: AgentWorkspaceInput) -> str:
        await self._record("prepare_agent_workspace", inp)
        return f"/nonexistent/runs/{inp.name}"

    @activity.defn(name="init_agent")
    async def init_agent(self, inp: InitAgentInput) -> InitAgentResult:
        await self._record("init_agent", inp)
        return InitAgentResult(transcript_ref=REF)

    @activity.defn(name="model_call")
    async def model_call(self, inp: ModelCallInput) -> ModelCallResult:
        await self._record("model_call", inp)
        if self.w.model_gate is not None:
            await self.w.model_gate.wait()
        while inp.agent_id.split("/")[-1] in self.w.hang:  # its host is about to be lost: nothing more happens
            activity.heartbeat()
            await asyncio.sleep(0.1)
        turns = self.w.script(inp.agent_id).turns
        turn = turns[min(inp.turn, len(turns)) - 1]
        if turn.fail:
            raise ApplicationError(f"stub {turn.fail}", type=turn.fail, non_retryable=not turn.retryable)
        calls = [_call(f"c{inp.turn}_{i}", t) for i, t in enumerate(turn.tools)]
        return ModelCallResult(transcript_ref=ref(f"{inp.agent_id}#{inp.turn}"), text_preview=f"turn {inp.turn}",
                               tool_calls=calls, usage=Usage(input_tokens=turn.tokens, output_tokens=turn.tokens // 10),
                               cost_usd=turn.cost_usd, model=inp.model)

    @activity.defn(name="tool_call")
    async def tool_call(self, inp: ToolCallInput) -> ToolResultRef:
        turns = self.w.script(inp.agent_id).turns
        n = int(inp.call.id[1:].split("_")[0])
        await self._record("tool_call", inp, turns[min(n, len(turns)) - 1].tool_seconds)
        return ToolResultRef(call_id=inp.call.id, name=inp.call.name, result_ref=REF, summary="ok")

    @activity.defn(name="run_escalated")
    async def run_escalated(self, inp: EscalationInput) -> ToolResultRef:
        await self._record("run_escalated", inp)
        return ToolResultRef(call_id=inp.call_id, name="request_escalation", result_ref=REF, summary="ran")

    @activity.defn(name="plan_subagents")
    async def plan_subagents(self, inp: SubagentsInput) -> SubagentsPlan:
        await self._record("plan_subagents", inp)
        args = SpawnArgs(agents=[SubagentSpec(kind=k, task=f"look into part {i}")  # type: ignore[arg-type]
                                 for i, k in enumerate(self.w.subagents)])
        why = refusal(args, depth=inp.depth, spawned=inp.spawned, read_only_role=inp.role == "planner",
                      editors_possible=inp.editors_possible)
        if why:
            return SubagentsPlan(refused=ToolResultRef(call_id=inp.call.id, name="spawn_subagents", result_ref=REF,
                                                       summary=why, is_error=True, error_kind="ToolFailed"))
        return SubagentsPlan(runs=[SubagentRun(kind=a.kind, role=ROLE_OF[a.kind], task=a.task) for a in args.agents])

    @activity.defn(name="apply_work")
    async def apply_work(self, inp: ApplyWorkInput) -> ApplyWorkResult:
        await self._record("apply_work", inp)
        name = next(c.input.name for c in self.w.named("collect_agent_work") if c.result == inp.commit)
        if name in self.w.unmergeable:
            return ApplyWorkResult(applied=False, files=[f"{name}.py"], note="conflicts", patch_ref=REF)
        return ApplyWorkResult(applied=True, files=[f"{name}.py"], patch_ref=REF)

    @activity.defn(name="subagent_results")
    async def subagent_results(self, inp: SubagentResultsInput) -> ToolResultRef:
        await self._record("subagent_results", inp)
        done = sum(1 for o in inp.outcomes if o.status == "done")
        return ToolResultRef(call_id=inp.call_id, name="spawn_subagents", result_ref=REF,
                             summary=f"{done} of {len(inp.outcomes)} subagents done")

    @activity.defn(name="release_sandbox")
    async def release_sandbox(self, inp: ReleaseInput) -> list[str]:
        await self._record("release_sandbox", inp)
        return [inp.agent_id]

    @activity.defn(name="read_plan")
    async def read_plan(self, inp: ReadPlanInput) -> PlanInfo:
        await self._record("read_plan", inp)
        return self.w.plan

    @activity.defn(name="collect_agent_work")
    async def collect_agent_work(self, inp: CollectInput) -> CollectResult:
        call = await self._record("collect_agent_work", inp, self.w.collect_seconds)
        if not self.w.agents.get(inp.name, AgentScript()).changes:
            return CollectResult(commit=None, files=[])
        call.result = self.w._commit()
        checkpoint = Checkpoint(ref=ref(call.result), tips=[call.result]) if self.w.shared else None
        return CollectResult(commit=call.result, files=[f"{inp.name}.py"], checkpoint=checkpoint)

    @activity.defn(name="merge_agent_work")
    async def merge_agent_work(self, inp: MergeInput) -> MergeResult:
        call = await self._record("merge_agent_work", inp, self.w.merge_seconds)
        conflicts = self.w.conflicts(inp.label)
        if conflicts:
            call.result = MergeResult(merged=False, conflicts=conflicts, head="h" * 40)
        else:
            call.result = MergeResult(merged=True, head=self.w._commit())
            self.w.branches[self.host] = call.result.head
        return call.result

    @activity.defn(name="diff_since")
    async def diff_since(self, inp: DiffInput) -> str:
        await self._record("diff_since", inp)
        return REF

    @activity.defn(name="finalize")
    async def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        await self._record("finalize", inp)
        changed = [c.input.name for c in self.w.named("collect_agent_work")
                   if self.w.agents.get(c.input.name, AgentScript()).changes and ".sub" not in c.input.name]
        if self.w.shared and self.w.branches.get(self.host, "b" * 40) == "b" * 40:
            changed = []  # this host's copy of the branch holds none of the merged work: nothing to deliver
        return FinalizeResult(diff_ref=REF, diff="", files_changed=[f"{n}.py" for n in changed],
                              commit="c" * 40 if changed else None, workspace="/nonexistent/view")

    @activity.defn(name="set_label")
    async def set_label(self, inp: LabelInput) -> bool:
        await self._record("set_label", inp)
        return True

    @activity.defn(name="ci_context")
    async def ci_context(self, inp: CIContextInput) -> CIContextResult:
        await self._record("ci_context", inp)
        return self.w.ci_context.get(inp.check, CIContextResult())

    @activity.defn(name="report_status")
    async def report_status(self, inp: ReportInput) -> ReportResult:
        await self._record("report_status", inp)
        return ReportResult(actions=["stub"])

    @activity.defn(name="cleanup_task")
    async def cleanup_task(self, inp: CleanupInput) -> None:
        await self._record("cleanup_task", inp)

    # -- evaluation ---------------------------------------------------------------------------------------------

    @activity.defn(name="eval_fetch")
    async def eval_fetch(self, inp: EvalFetchInput) -> EvalFetchResult:
        await self._record("eval_fetch", inp)
        return EvalFetchResult(fetched=len(inp.commits))

    @activity.defn(name="eval_prepare")
    async def eval_prepare(self, inp: EvalPrepareInput) -> EvalPrepareResult:
        await self._record("eval_prepare", inp)
        recipe = Recipe(repo=inp.repo, version="1.0", test_cmd="pytest", parser="pytest", harness_python="3.11",
                        python="3.11")
        return EvalPrepareResult(env_id="env-stub", recipe=recipe)

    @activity.defn(name="eval_instance")
    async def eval_instance(self, inp: EvalRunInput) -> EvalRunResult:
        call = await self._record("eval_instance", inp, self.w.judge_seconds)
        while self.host in self.w.hang:
            activity.heartbeat()
            await asyncio.sleep(0.1)
        call.ended = time.monotonic()
        return EvalRunResult(instance_id=inp.key.rsplit("/", 1)[-1], report_ref=REF, resolved=True, applied=True)

    @activity.defn(name="eval_prediction")
    async def eval_prediction(self, inp: PredictionInput) -> str:
        await self._record("eval_prediction", inp)
        return REF

    @activity.defn(name="eval_keep_outcomes")
    async def eval_keep_outcomes(self, inp: KeepOutcomesInput) -> str:
        call = await self._record("eval_keep_outcomes", inp)
        call.result = inp.outcomes
        return REF
