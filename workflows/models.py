"""The workflows' public contract: what TaskWorkflow and AgentWorkflow take and return.

The CLI, the event starter and the web view start and read workflows with these; activity inputs and outputs
stay in activities/models.py (some appear in these results: test runs, the plan).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from activities.models import Attachment, ChecksResult, PlanInfo, ResultPointer
from agents.messages import Usage


def branch_name(workflow_id: str, prefix: str = "bosun/") -> str:
    """A valid git branch name for a workflow id (``:`` and other characters git refuses become ``-``)."""
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", workflow_id)
    name = re.sub(r"/+", "/", name)
    name = "/".join(part.lstrip(".").removesuffix(".lock") or "_" for part in name.split("/"))
    name = re.sub(r"\.\.+", ".", name).strip("/.-")
    return prefix + (name or "task")


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


class SubtaskOutcome(BaseModel):
    id: str
    status: Literal["merged", "no_changes", "conflict", "failed", "skipped"]
    attempts: int
    files: list[str] = []
    agent: AgentResult | None = None
    note: str = ""


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



AgentInput.model_rebuild()
