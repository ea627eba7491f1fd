"""Inputs and outputs of bosun's activities and workflows (one pydantic model per activity input).

History carries these; they hold references into the artifact store and short previews, never whole
transcripts, file contents or tool outputs.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.harness_settings import HarnessSettings
from agents.messages import Usage
from agents.router import RouterConfig
from agents.tools.subagents import SubagentReport
from infra.names import show_text

PREVIEW = 300


def preview(text: str, limit: int = PREVIEW) -> str:
    text = show_text(text)  # a model may send a lone surrogate (a JSON escape): it could not cross the activity
    text = " ".join(text.split()) if "\n" in text[:limit] else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


class PrepareInput(BaseModel):
    workflow_id: str
    repo: str
    """Host path (or URL) of the git repository to work on."""
    ref: str = "HEAD"
    env_id: str | None = None
    """The environment to use when this host has it (TaskInput.env_id)."""


class EnvironmentState(BaseModel):
    """The task's environment (environments/): what the prepare step found, or what its build gave."""

    status: Literal["ready", "needed", "failed", "unavailable", "off"]
    """ready: built (or cached), the task's sandboxes run in it; needed: build_environment builds it; failed: the
    repository's environment cannot be built (the task ends ``environment_failed``); unavailable: this host cannot
    build environments (no Docker engine, not root), the task runs on the plain sandbox image; off:
    BOSUN_ENVIRONMENTS=false."""
    env_id: str = ""
    python: str = ""
    test_command: str = ""
    origin: str = ""
    """detected, declared (.bosun/environment.toml) or override (BOSUN_ENV_OVERRIDES)."""
    cached: bool = False
    build_s: float = 0.0
    log_ref: str | None = None
    """The build log in the artifact store."""
    build_timeout_s: float = 0.0
    """needed: how long the build activity may run on the worker that found it so (its BOSUN_ENV_BUILD_TIMEOUT_S,
    with the base's build and a wait for a concurrent build of the same environment); 0: not said (older worker)."""
    step: str = ""
    """failed: the step that failed."""
    reason: str = ""
    """failed or unavailable: why, in one line."""
    tail: str = ""
    """failed: the build log's last lines."""


class EnvironmentInput(BaseModel):
    workflow_id: str


class Checkpoint(BaseModel):
    """What a step added to the task's repository, as a git bundle in the shared artifact store: any host restores
    the repository from the task's checkpoints in order (sandbox/hostrepo.TaskRepo.checkpoint and restore)."""

    ref: str
    """The bundle (an artifact ref)."""
    tips: list[str]
    """The commits it brings."""


class BindResult(BaseModel):
    """The worker host a task (or an agent) is bound to."""

    queue: str
    """The host's own task queue, where the task's activities go."""
    worker_id: str
    shared: bool = False
    """Whether the host shares its state (BOSUN_ARTIFACT_STORE=nats): then the task checkpoints its repository,
    watches the hosts it uses and moves to another when one is lost."""


class PrepareResult(BaseModel):
    repository: str
    """Host path of the task's authoritative repository (host-owned, bare; sandbox/hostrepo.py)."""
    base_commit: str
    environment: EnvironmentState | None = None
    """The environment of the base commit (None: a worker from before environments)."""
    checkpoint: Checkpoint | None = None
    """The clone in the shared store (a host that shares its state)."""


class RestoreInput(BaseModel):
    """Make a host's copy of a task's repository current: its checkpoints applied, the branch at ``head``, the
    environment found or built there."""

    workflow_id: str
    source: str
    ref: str
    base_commit: str
    checkpoints: list[Checkpoint]
    branch: str | None = None
    head: str | None = None
    environment: EnvironmentState | None = None


class RestoreResult(BaseModel):
    applied: int
    """Checkpoints this host lacked and applied."""
    environment: EnvironmentState | None = None


class SlotInput(BaseModel):
    workflow_id: str
    """The task that asks: the host that takes the slot signals it ``slot_granted``."""
    claim: str
    """The claim's name in the task (unique), given back with the grant."""


class SlotGrant(BaseModel):
    claim: str
    queue: str
    worker_id: str


class WatchInput(BaseModel):
    worker_id: str


class HostLost(BaseModel):
    """A host's heartbeat has been absent for BOSUN_HOST_LOSS_S."""

    worker_id: str
    last_seen: float | None = None
    """When its last heartbeat was written (epoch seconds); None when it has none."""
    why: str = ""


class TerminateInput(BaseModel):
    workflow_id: str
    reason: str


class ChecksInput(BaseModel):
    workflow_id: str
    commit: str
    """The tests run on a fresh checkout of this commit."""
    label: str = "tests"


class ChecksResult(BaseModel):
    green: bool
    exit_code: int | None
    summary: str
    failed: list[str] = []
    passed_count: int = 0
    output_ref: str | None = None


class Attachment(BaseModel):
    title: str
    ref: str
    max_chars: int = 20_000


class RouteInput(BaseModel):
    """What the router knows when it picks a model for one agent."""

    role: str
    model: str = "auto"
    """The task's model spec: ``auto`` lets the router pick; any other spec is used as is, with its fallbacks."""
    task_chars: int = 0
    plan_subtasks: int = 0
    files_in_scope: int = 0
    failures_so_far: int = 0
    router: RouterConfig | None = None
    """The task's router configuration (its harness settings); None: the worker's ``BOSUN_ROUTER_CONFIG``."""


class RouteResult(BaseModel):
    model: str
    fallbacks: list[str] = []
    score: float
    tier: str | None = None
    reason: str


class InitAgentResult(BaseModel):
    transcript_ref: str
    pinned_ref: str | None = None
    """Pinned project instructions (AGENTS.md, CONTRIBUTING.md...), re-injected after every compaction."""
    budget: dict[str, Any] = {}
    """The role's per-agent budget (agents.budget.Budget fields: tokens, turns, wall_clock_s, usd)."""


class InitAgentInput(BaseModel):
    agent_id: str
    role: str
    task: str
    workspace: str
    attachments: list[Attachment] = []
    model: str = ""
    """The model spec: its profile picks the prompt variant and the edit tool named in the prompt."""
    harness: HarnessSettings = HarnessSettings()
    """The task's harness settings (their edit tool and prompt flavour over the profile's)."""


class ToolCallRef(BaseModel):
    id: str
    name: str
    arguments_ref: str
    arguments_preview: str
    write_key: str | None = None
    """None for read-only calls; the file path (or '*') for writing ones."""
    offered: bool = True
    """False: the model named a tool its request did not offer; the call is refused, not run."""
    refused: ToolResultRef | None = None
    """When not offered: its answer, made by the model call that returned it (no activity runs for it)."""


DATA_INLINE_MAX = 1024
"""Largest structured tool result (JSON bytes) kept in history; larger ones go to the artifact store."""


class ToolResultRef(BaseModel):
    call_id: str
    name: str
    result_ref: str
    summary: str
    is_error: bool = False
    error_kind: str | None = None
    duration_s: float = 0.0
    data: dict[str, Any] = {}
    """The tool's structured result when it is small (<= DATA_INLINE_MAX bytes as JSON); else empty, and the
    result is in the artifact store at ``data_ref``. History stays small either way."""
    data_ref: str | None = None
    replayed: bool = False
    """The call had already run (an earlier attempt finished it): this is its recorded result, nothing re-ran."""


class ResultPointer(BaseModel):
    """A tool result as the next model call needs it: where its text is, and whether it failed (the full
    ToolResultRef, with summary and data, is already in history as the tool call's result)."""

    call_id: str
    name: str
    result_ref: str
    is_error: bool = False


class ModelCallInput(BaseModel):
    agent_id: str
    turn: int
    model: str
    trajectory_ref: str | None = None
    transcript_ref: str
    tool_results: list[ResultPointer] = []
    """Results of the previous turn's tool calls, appended to the transcript before the call."""
    user_messages: list[str] = []
    """Steering messages from a person (the `steer` signal), appended after the tool results."""
    tools: list[str] = []
    """Explicit tool names; empty: the role's tool set (agents/roles/<role>.toml), or every tool for `solo`."""
    agent_keys: list[str] = []
    role: str = "solo"
    pinned_ref: str | None = None
    harness: HarnessSettings = HarnessSettings()
    """The task's harness settings: tool shape, prompt flavour, compaction (the router's part left out)."""


class Compaction(BaseModel):
    """A compaction of the transcript before a model call (recorded in history)."""

    summary: str
    event_ref: str
    """The full CompactionEvent (what was stored, what was kept) in the artifact store."""
    before_tokens: int
    after_tokens: int


class ModelCallResult(BaseModel):
    transcript_ref: str
    text_preview: str
    tool_calls: list[ToolCallRef] = []
    usage: Usage = Field(default_factory=Usage)
    stop_reason: str | None = None
    model: str = ""
    compaction: Compaction | None = None
    cost_usd: float = 0.0
    """This call's price from the model profile's token prices (0 for the scripted test double)."""


class ToolCallInput(BaseModel):
    agent_id: str
    workspace: str
    call: ToolCallRef
    role: str = "solo"
    model: str = ""
    """The agent's model at this call (for error rates per tool and model)."""


class EscalationInput(BaseModel):
    agent_id: str
    workspace: str
    call_id: str
    arguments_ref: str
    approved: bool
    decided_by: str = ""
    """Who approved or denied (from the `approve` signal), for the record."""


class SubagentsInput(BaseModel):
    """A spawn_subagents call to check and turn into subagent runs."""

    agent_id: str
    call: ToolCallRef
    role: str
    depth: int
    spawned: int
    """Subagents this agent already ran."""
    editors_possible: bool
    """The agent knows its task and starting commit (editors need a workspace of their own)."""


class SubagentRun(BaseModel):
    kind: str
    """explorer | editor"""
    role: str
    task: str
    files: list[str] = []


class SubagentsPlan(BaseModel):
    runs: list[SubagentRun] = []
    refused: ToolResultRef | None = None
    """Set when the call cannot run (bad arguments, a limit): the model gets this as the tool's result."""


class SubagentOutcome(SubagentReport):
    """What came of one subagent (its report, and where its transcript is: the answer is read from it)."""

    transcript_ref: str = ""


class SubagentResultsInput(BaseModel):
    agent_id: str
    call_id: str
    outcomes: list[SubagentOutcome]


class ApplyWorkInput(BaseModel):
    """Apply a subagent's commit (its diff from ``base``) to the parent's workspace, inside the parent's sandbox."""

    agent_id: str
    workspace: str
    task_id: str
    base: str
    commit: str


class ApplyWorkResult(BaseModel):
    applied: bool
    files: list[str] = []
    note: str = ""
    patch_ref: str | None = None
    """The diff in the artifact store (read_output), also when it could not be applied."""


class ReleaseInput(BaseModel):
    agent_id: str
    workspace: str = ""
    every_agent_of_task: bool = False
    """Release every sandbox whose agent id starts with ``agent_id + "/"`` (a task's agents), whatever state their
    workflows ended in."""


class FinalizeInput(BaseModel):
    workflow_id: str
    base_commit: str
    branch: str
    head: str | None = None
    """Where the coordinator last moved the branch (None: as this host's copy has it). A copy behind it is moved
    forward to it; one that cannot be is an error, never a smaller result."""
    deliver_to: str = ""
    """The repository the task came from (a local path), to create the branch in as a ref; "": not wanted."""
    deliver_host: str = ""
    """The host name of the machine that repository is on ("": this one)."""


class FinalizeResult(BaseModel):
    diff_ref: str
    diff: str
    """The diff itself when small (<= 32 KB), else its head; the whole diff is at diff_ref."""
    files_changed: list[str]
    commit: str | None
    """The head of the task branch, or None when nothing changed."""
    workspace: str
    """A plain checkout of the branch for people to look at (made by the host; no sandbox ever saw it)."""
    local_branch: str = ""
    """The branch created in the repository the task came from (``deliver_to``); "" when it was not."""
    local_note: str = ""
    """What delivering it there did, or why it did not."""


class DiffInput(BaseModel):
    workflow_id: str
    base_commit: str
    head: str


class SubtaskInfo(BaseModel):
    """One subtask of a plan, as the coordinator sees it."""

    id: str
    goal: str
    files: list[str] = []
    depends_on: list[str] = []
    acceptance: str = ""


class PlanInfo(BaseModel):
    subtasks: list[SubtaskInfo]
    waves: list[list[str]]
    """Subtask ids that can run in parallel, wave after wave (dependencies first)."""
    source: Literal["planner", "fallback"] = "planner"
    note: str = ""
    """Why a fallback plan was used, if it was."""


class ReadPlanInput(BaseModel):
    transcript_ref: str
    task: str
    workflow_id: str = ""
    """The task's: the sandboxes of the plan's first wave start ahead, in its environment ("": none do)."""
    max_parallel: int = 1
    """Fast-edit agents at once: how many of the first wave's sandboxes start ahead."""


class AgentWorkspaceInput(BaseModel):
    workflow_id: str
    name: str
    """The run's name (a directory name: letters, digits, '_', '.', '-')."""
    commit: str
    """The workspace is a fresh checkout of this commit."""


class CollectInput(BaseModel):
    workflow_id: str
    name: str
    """The run workspace whose files are imported."""
    parent: str
    """The commit the run started from (the new commit's parent)."""
    message: str


class CollectResult(BaseModel):
    commit: str | None
    files: list[str]
    notes: list[str] = []
    """What was left out of the import and why (special files, too-large files, nested repositories)."""
    checkpoint: Checkpoint | None = None
    """The commit in the shared store (a host that shares its state)."""


class MergeInput(BaseModel):
    workflow_id: str
    branch: str
    commit: str
    message: str
    label: str = ""
    """What is merged, for people (e.g. "subtask parse-args")."""
    fast_forward: bool = False
    """Move the branch to ``commit`` when it descends from the branch head (a debugger's or a solo agent's run);
    otherwise a merge commit."""


class MergeResult(BaseModel):
    merged: bool
    conflicts: list[str] = []
    head: str
    checkpoint: Checkpoint | None = None
    """A merge commit in the shared store (a host that shares its state)."""


class BranchInput(BaseModel):
    workflow_id: str
    branch: str
    commit: str


class CleanupInput(BaseModel):
    workflow_id: str
    drop_repository: bool = False
    """Also remove this host's copy of the task's repository (a host that only held it for the task's agents)."""
