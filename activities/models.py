"""Inputs and outputs of bosun's activities and workflows (one pydantic model per activity input).

History carries these; they hold references into the artifact store and short previews, never whole
transcripts, file contents or tool outputs.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.messages import Usage

PREVIEW = 300


def preview(text: str, limit: int = PREVIEW) -> str:
    text = " ".join(text.split()) if "\n" in text[:limit] else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def branch_name(workflow_id: str, prefix: str = "bosun/") -> str:
    """A valid git branch name for a workflow id (``:`` and other characters git refuses become ``-``)."""
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", workflow_id)
    name = re.sub(r"/+", "/", name)
    name = "/".join(part.lstrip(".").removesuffix(".lock") or "_" for part in name.split("/"))
    name = re.sub(r"\.\.+", ".", name).strip("/.-")
    return prefix + (name or "task")


class PrepareInput(BaseModel):
    workflow_id: str
    repo: str
    """Host path (or URL) of the git repository to work on."""
    ref: str = "HEAD"


class PrepareResult(BaseModel):
    repository: str
    """Host path of the task's authoritative repository (host-owned, bare; sandbox/hostrepo.py)."""
    base_commit: str


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


class AgentResume(BaseModel):
    transcript_ref: str
    turn: int
    tool_calls: int
    results: list[ResultPointer] = []
    errors: dict[str, int] = {}
    model: str
    budget: dict[str, Any] = {}
    spent: dict[str, Any] = {}
    started_at: float = 0.0
    pinned_ref: str | None = None


class AgentInput(BaseModel):
    """One agent run (a child workflow)."""

    agent_id: str
    role: str = "solo"
    task: str
    model: str
    """Model spec, e.g. `anthropic:claude-sonnet-4-5` or `scripted:PATH` (the test double)."""
    trajectory_ref: str | None = None
    """scripted: the trajectory's content in the artifact store (read once by the CLI, so runs are reproducible)."""
    workspace: str
    worker_queue: str
    tools: list[str] = []
    max_turns: int = 40
    agent_keys: list[str] = []
    """scripted only: which agent's lines of the trajectory this agent replays (first key with lines wins)."""
    fallback_models: list[str] = []
    """Next models for this role, tried in order when the provider keeps failing (ProviderError)."""
    attachments: list[Attachment] = []
    """Extra context for the first user message (test output, the current diff...), from the artifact store."""
    resume: AgentResume | None = None
    """Set by continue-as-new: where the loop left off."""


class RouteInput(BaseModel):
    """What the router knows when it picks a model for one agent (`--model auto`)."""

    role: str
    task_chars: int = 0
    plan_subtasks: int = 0
    files_in_scope: int = 0
    failures_so_far: int = 0


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


class ToolCallRef(BaseModel):
    id: str
    name: str
    arguments_ref: str
    arguments_preview: str
    write_key: str | None = None
    """None for read-only calls; the file path (or '*') for writing ones."""


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


class EscalationInput(BaseModel):
    agent_id: str
    workspace: str
    call_id: str
    arguments_ref: str
    approved: bool
    decided_by: str = ""
    """Who approved or denied (from the `approve` signal), for the record."""


class ReleaseInput(BaseModel):
    agent_id: str
    workspace: str = ""
    every_agent_of_task: bool = False
    """Release every sandbox whose agent id starts with ``agent_id + "/"`` (a task's agents), whatever state their
    workflows ended in."""


class AgentResult(BaseModel):
    agent_id: str
    status: Literal["done", "budget_exhausted", "failed", "cancelled"]
    turns: int
    tool_calls: int
    final_message: str
    transcript_ref: str
    usage: Usage = Field(default_factory=Usage)
    errors: dict[str, int] = {}
    """Tool and activity errors by class (InvalidArguments, ToolFailed, Timeout, ProviderError, Unknown)."""
    model: str = ""
    """The model that finished the run (differs from the input's after a fallback)."""
    cost_usd: float = 0.0
    stopped: str = ""
    """Why the run stopped when not done: which budget ran out (tokens, turns, wall clock, money)."""


class FinalizeInput(BaseModel):
    workflow_id: str
    base_commit: str
    branch: str


class FinalizeResult(BaseModel):
    diff_ref: str
    diff: str
    """The diff itself when small (<= 32 KB), else its head; the whole diff is at diff_ref."""
    files_changed: list[str]
    commit: str | None
    """The head of the task branch, or None when nothing changed."""
    workspace: str
    """A plain checkout of the branch for people to look at (made by the host; no sandbox ever saw it)."""


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


class BranchInput(BaseModel):
    workflow_id: str
    branch: str
    commit: str


class CleanupInput(BaseModel):
    workflow_id: str


class SubtaskOutcome(BaseModel):
    id: str
    status: Literal["merged", "no_changes", "conflict", "failed", "skipped"]
    attempts: int
    files: list[str] = []
    agent: AgentResult | None = None
    note: str = ""


class TaskInput(BaseModel):
    repo: str
    task: str
    model: str
    trajectory_ref: str | None = None
    ref: str = "HEAD"
    max_turns: int = 40
    mode: Literal["team", "solo"] = "team"
    """team: planner -> parallel fast-edit agents -> stitch -> verify -> debugger; solo: one agent."""
    max_parallel: int = 4
    """Fast-edit agents running at once."""
    max_debug_rounds: int = 2
    """Debugger runs after a red verify before the task is given up as failed."""
    budget: dict[str, Any] = {}
    """Task budget (agents.budget.Budget fields: tokens, usd, turns, wall_clock_s). Fan-out starts only the agents
    that fit in what is left (estimated from the agents so far); no debugger round starts once it is spent."""


class TaskResult(BaseModel):
    status: Literal["succeeded", "failed", "no_changes", "cancelled"]
    workspace: str
    branch: str
    commit: str | None
    diff: str
    diff_ref: str
    files_changed: list[str]
    tests_before: ChecksResult
    tests_after: ChecksResult
    agent: AgentResult | None = None
    """solo mode: the one agent."""
    plan: PlanInfo | None = None
    subtasks: list[SubtaskOutcome] = []
    debug_rounds: list[AgentResult] = []
    spent: dict[str, Any] = {}
    """What the whole task spent (tokens, turns, usd)."""
    budget_note: str = ""
    """Set when the task budget stopped work (what was skipped and why)."""


AgentInput.model_rebuild()
