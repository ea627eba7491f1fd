"""The workflows' public contract: what TaskWorkflow, AgentWorkflow and PullRequestWorkflow take and return.

The CLI, the event starter and the web view start and read workflows with these; activity inputs and outputs
stay in activities/models.py (some appear in these results: test runs, the plan).
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, ValidationError

from activities.models import Attachment, ChecksResult, EnvironmentState, PlanInfo, ResultPointer
from agents.budget import Budget
from agents.harness_settings import HarnessSettings
from agents.messages import Usage
from infra.errors import ConfigError, describe_validation
from workflows.conversation import ConversationState, Limits


def branch_name(workflow_id: str, prefix: str = "bosun/") -> str:
    """A valid git branch name for a workflow id (``:`` and other characters git refuses become ``-``)."""
    name = re.sub(r"[^A-Za-z0-9._/-]+", "-", workflow_id)
    name = re.sub(r"/+", "/", name)
    name = "/".join(part.lstrip(".").removesuffix(".lock") or "_" for part in name.split("/"))
    name = re.sub(r"\.\.+", ".", name).strip("/.-")
    return prefix + (name or "task")


class Message(BaseModel):
    """A message from a person to a running task (``bosun steer``, a follow-up comment), delivered exactly once."""

    id: int
    kind: Literal["steer", "follow_up"]
    text: str
    by: str = ""
    received: str = ""
    """When the task received it (ISO 8601, workflow time)."""
    delivered_to: list[str] = []
    """The agents it reached: every agent running when it arrived, else the next one that started."""


class TaskInput(BaseModel):
    repo: str
    task: str
    model: str
    trajectory_ref: str | None = None
    ref: str = "HEAD"
    max_turns: int = Field(40, ge=1)
    mode: Literal["team", "solo"] = "team"
    """team: planner -> parallel fast-edit agents -> stitch -> verify -> debugger; solo: one agent."""
    max_parallel: int = Field(4, ge=1)
    """Fast-edit agents running at once."""
    max_debug_rounds: int = Field(2, ge=0)
    """Debugger runs after a red verify before the task is given up as failed."""
    budget: dict[str, Any] = {}
    """Task budget (agents.budget.Budget fields: tokens, usd, turns, wall_clock_s). Fan-out starts only the agents
    that fit in what is left (estimated from the agents so far); no debugger round starts once it is spent."""
    env_id: str | None = None
    """An environment already built on the worker host (``bosun env list``) to run the task's sandboxes in,
    instead of the one detected for the base commit: an evaluation gives its agents the instance's environment.
    When the host does not have it, the detected one is used."""
    harness: HarnessSettings = HarnessSettings()
    """Harness settings for every agent of the task (tool shape, prompt flavour, compaction, router;
    agents/harness_settings.py): what an evaluation's variants vary besides the model. Unset: the defaults."""
    local_branch: bool = False
    """When the task ends with changes, create its branch ``bosun/<id>`` in ``repo`` (a local repository) as a
    ref, leaving its working tree, index and checked-out branch as they are. ``bosun run`` sets it (unless
    ``--no-branch``); tasks from events and evaluations do not."""
    local_host: str = ""
    """The host name of the machine ``repo`` is on (``bosun run``'s): only a worker there creates the branch."""


def checked_task(fields: dict[str, Any], where: str, *, allowed: tuple[str, ...] | None = None,
                 base: dict[str, Any] | None = None) -> TaskInput:
    """TaskInput from ``base`` and ``fields`` over it, checked as the task will take them: ConfigError naming
    ``where`` and the field for a field of ``fields`` TaskInput does not have (or, given ``allowed``, one not in
    it), a value it does not take, or a budget ``agents.budget.Budget`` does not take."""
    known = allowed if allowed is not None else tuple(TaskInput.model_fields)
    unknown = sorted(set(fields) - set(known))
    if unknown:
        raise ConfigError(f"{where} sets {', '.join(map(repr, unknown))}, which it cannot set; it may "
                          f"set {', '.join(known)}")
    try:
        task = TaskInput.model_validate({**(base or {}), **fields})
    except ValidationError as e:
        raise ConfigError(f"{where}: {describe_validation(e, where='(settings)')}") from None
    try:
        Budget.model_validate(task.budget)
    except ValidationError as e:
        raise ConfigError(f"{where}: budget.{describe_validation(e, first_only=True)} (it takes "
                          f"{', '.join(Budget.model_fields)})") from None
    return task


class HostMove(BaseModel):
    """A host lost during a task, and what moved off it."""

    what: str
    """``task`` (the coordinator's steps), or the agent run that started again elsewhere."""
    from_worker: str
    to_worker: str | None = None
    """The task's new host (an agent's new host is wherever its next slot is)."""
    at: str
    why: str


class TaskResult(BaseModel):
    status: Literal["succeeded", "partial", "failed", "no_changes", "cancelled", "environment_failed"]
    """succeeded: every subtask merged and the tests pass; partial: some work merged, some did not (``problems``
    says which and why); failed: nothing usable delivered, or every agent finished but the tests stay red;
    no_changes: nothing to change; cancelled: a person cancelled it; environment_failed: the repository's
    environment could not be built (``environment`` has the step and the log's tail), nothing ran."""
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
    follow_ups: list[AgentResult] = []
    """Agents started for messages that no agent had read (nothing a person sends is lost)."""
    problems: list[str] = []
    """What was not done and why (failed, conflicting or skipped subtasks; a failed agent)."""
    messages: list[Message] = []
    """Every message people sent during the run, and which agents received it."""
    spent: dict[str, Any] = {}
    """What the whole task spent (tokens, turns, usd)."""
    budget_note: str = ""
    """Set when the task budget stopped work (what was skipped and why)."""
    environment: EnvironmentState | None = None
    """The environment the task's sandboxes ran in (interpreter, test command, build log), or why there was none."""
    moves: list[HostMove] = []
    """Hosts lost during the run and what moved (the task's coordinator, or an agent run again elsewhere)."""
    local_branch: str = ""
    """The branch created in your repository (TaskInput.local_branch), "" when none was."""
    local_note: str = ""
    """What creating it did, or why it was not created."""

    def all_agents(self) -> list[AgentResult]:
        """Every agent that worked on the result: the solo agent, each subtask's last agent, the debugger rounds and
        the follow-ups (the planner's spend is in ``spent``)."""
        found = [self.agent, *(s.agent for s in self.subtasks), *self.debug_rounds, *self.follow_ups]
        return [a for a in found if a is not None]


class SubtaskOutcome(BaseModel):
    id: str
    status: Literal["merged", "no_changes", "conflict", "failed", "skipped"]
    attempts: int
    files: list[str] = []
    agent: AgentResult | None = None
    note: str = ""


class ModelSwitch(BaseModel):
    """One change of an agent's model: by a person (``bosun model``) or by the router after repeated failures."""

    turn: int
    """The first turn on the new model."""
    previous: str
    model: str
    by: str
    reason: str = ""


class AgentState(BaseModel):
    """One agent run's state, in one place: what its ``progress`` query shows, what a continue-as-new carries on
    (``AgentInput.resume``), and the base of its result (``result``)."""

    transcript_ref: str = ""
    turn: int = 0
    tool_calls: int = 0
    results: list[ResultPointer] = []
    """The last turn's tool results, for the next model call."""
    errors: dict[str, int] = {}
    """Tool and activity errors by class."""
    model: str = ""
    budget: dict[str, Any] = {}
    spent: dict[str, Any] = {}
    """What the budget tracker has charged (kept here at a continue-as-new)."""
    started_at: float = 0.0
    pinned_ref: str | None = None
    switches: list[ModelSwitch] = []
    spawned: int = 0
    """Subagents this run has started (spawn_subagents)."""
    status: str = "starting"
    recent: list[str] = []
    """The last steps (at most ``RECENT``), for people watching."""

    RECENT: ClassVar[int] = 20

    def note(self, step: str) -> None:
        self.recent = [*self.recent[-(self.RECENT - 1):], step]

    def count(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def result(self, agent_id: str, status: str, usage: Usage, cost_usd: float, *, final_message: str = "",
               stopped: str = "", error_kind: str | None = None, reason: str = "") -> AgentResult:
        return AgentResult(agent_id=agent_id, status=status, turns=self.turn, tool_calls=self.tool_calls,
                           final_message=final_message, transcript_ref=self.transcript_ref, usage=usage,
                           errors=self.errors, model=self.model, cost_usd=cost_usd, stopped=stopped,
                           error_kind=error_kind, reason=reason, switches=self.switches)


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
    messages: list[str] = []
    """Messages from people queued for this agent (steering, follow-ups): they join its first model call."""
    depth: int = 0
    """How deep in a tree of subagents this agent is (0: started by the coordinator)."""
    task_id: str = ""
    """The task's workflow id (its repository); empty for agents that cannot make workspaces of their own."""
    base_commit: str = ""
    """The commit the agent's workspace was checked out at (editor subagents start there too)."""
    name: str = ""
    """The agent's run name within the task (its workspace directory)."""
    budget_cap: dict[str, Any] = {}
    """Limits on top of the role's budget (a subagent gets at most its share of what its parent has left)."""
    resume: AgentState | None = None
    """Set by continue-as-new: where the loop left off."""
    harness: HarnessSettings = HarnessSettings()
    """The task's harness settings, less the router's (the model was routed already); subagents inherit them."""


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
    error_kind: str | None = None
    """status ``failed``: the error class that ended the run (ProviderError, ScriptDiverged, Timeout...)."""
    reason: str = ""
    """status ``failed`` or ``cancelled``: what happened, for people and for the agent that retries the work."""
    switches: list[ModelSwitch] = []
    """Every change of model during the run, in order."""



AgentInput.model_rebuild()


class ConversationInput(BaseModel):
    """What PullRequestWorkflow takes: the pull (merge) request, the template of its rounds, its limits."""

    repo_name: str
    """GitHub ``owner/repo``; GitLab the project's path."""
    source: Literal["github", "gitlab"] = "github"
    project_id: int | None = None
    """GitLab: the project's numeric id."""
    number: int
    title: str = ""
    url: str | None = None
    head_branch: str | None = None
    base_branch: str | None = None
    task: TaskInput
    """The template of each round's task (repository, model, turns, the event defaults); its ``task`` text is the
    pull request's title and body."""
    limits: Limits = Limits()
    state: ConversationState | None = None
    """Carried over by continue-as-new."""
