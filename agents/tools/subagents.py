"""spawn_subagents: an agent starts 1-N child agents with their own context, in parallel, and gets their results
back as this tool's result.

The AgentWorkflow handles the call itself (like ``request_escalation``); this module holds what is pure: the
arguments, the limits, the task text each subagent gets, and how their results are shown to the parent.

- ``explorer`` (role ``explorer``, read-only tools): reads the parent's workspace as it is now and answers with a
  summary. Cheap, safe to run many at once.
- ``editor`` (role ``fast_edit``): works on a fresh workspace of its own at the commit the parent started from; its
  changes are read back by the host as data and applied to the parent's workspace with a 3-way merge inside the
  parent's sandbox, like a fast-edit agent's work is merged into the task branch. Read-only roles may not start
  editors.

Limits: at most ``MAX_PER_CALL`` subagents per call and ``MAX_PER_AGENT`` per agent run; subagents can start
subagents down to ``MAX_DEPTH``. Their budgets come out of the parent's: each gets at most an equal share of what
the parent has left, and what they spend is charged to the parent.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agents.tools.registry import ANY_FILE, Args, Tool, ToolContext, ToolOutput
from infra.errors import ToolFailed

NAME = "spawn_subagents"
MAX_PER_CALL = 6
MAX_PER_AGENT = 12
MAX_DEPTH = 2
"""Agents the coordinator starts are at depth 0; their subagents at 1; those may start subagents at 2, no deeper."""
ROLE_OF = {"explorer": "explorer", "editor": "fast_edit"}
"""Subagent kind -> the role (agents/roles/<role>.toml) it runs as."""


class SubagentSpec(BaseModel):
    kind: Literal["explorer", "editor"] = Field(
        description="explorer: reads your workspace as it is now and answers with a summary (read-only). "
                    "editor: makes a change on its own copy of the repository; its diff is merged into your "
                    "workspace when it finishes.")
    task: str = Field(min_length=1, max_length=20_000,
                      description="What this subagent should do or find out, self-contained: it does not see your "
                                  "conversation.")
    files: list[str] = Field(default_factory=list, max_length=50,
                             description="editor only: the files it may change (empty: any).")


class SpawnArgs(Args):
    agents: list[SubagentSpec] = Field(min_length=1, max_length=MAX_PER_CALL,
                                       description=f"The subagents to run in parallel (1-{MAX_PER_CALL}).")


async def _not_here(ctx: ToolContext, args: SpawnArgs) -> ToolOutput:
    raise ToolFailed("spawn_subagents is run by the agent's workflow, not as a tool in the sandbox")


SPAWN_TOOL = Tool(NAME, "Start subagents that work in parallel with their own context and return their results: "
                        "explorers read the repository and answer with a summary (use them to look in several "
                        "places at once); editors make a change on their own copy, merged into your workspace "
                        "when done. Give each a self-contained task.",
                  SpawnArgs, _not_here, read_only=True, key=lambda _args: ANY_FILE)


def refusal(args: SpawnArgs, *, depth: int, spawned: int, read_only_role: bool, editors_possible: bool
            ) -> str | None:
    """Why this call cannot run (the model sees it as the tool's error), or None."""
    if depth >= MAX_DEPTH:
        return (f"subagents cannot start subagents beyond depth {MAX_DEPTH} (this agent is at depth {depth}); "
                "do the work yourself")
    if spawned + len(args.agents) > MAX_PER_AGENT:
        return (f"at most {MAX_PER_AGENT} subagents per agent run; {spawned} already ran, "
                f"{len(args.agents)} more asked for")
    editors = sum(1 for a in args.agents if a.kind == "editor")
    if editors and read_only_role:
        return "this role only reads: it may start explorers, not editors"
    if editors and not editors_possible:
        return "editors need a workspace of their own, which this agent cannot make: start explorers only"
    return None


def brief(spec: SubagentSpec, parent_role: str) -> str:
    """The task text a subagent gets."""
    if spec.kind == "explorer":
        return (f"A {parent_role} agent asks you to explore the repository (its workspace, as it is now) and "
                f"report back. Its question:\n\n{spec.task}\n\nAnswer with a summary it can act on: the files, "
                "functions and line numbers that matter, and what you found. Change nothing.")
    lines = [f"A {parent_role} agent hands you this change (you work on your own copy of the repository; your diff "
             f"is merged into its workspace when you finish):\n\n{spec.task}"]
    if spec.files:
        lines.append("\nFiles in scope (edit only these): " + ", ".join(spec.files))
    lines.append("\nWhen done, answer with a short summary of what you changed.")
    return "\n".join(lines)


class SubagentReport(BaseModel):
    """One subagent's outcome, as the parent sees it."""

    name: str
    kind: str
    status: str
    turns: int = 0
    answer: str = ""
    """Its final message (explorers: the summary)."""
    error: str = ""
    files: list[str] = Field(default_factory=list)
    """editor: files its diff changed."""
    merged: bool | None = None
    """editor: whether its diff was applied to the parent's workspace (None: nothing to apply)."""
    merge_note: str = ""


def render(reports: list[SubagentReport], max_answer_chars: int = 6000) -> str:
    """The text of the spawn_subagents result."""
    out = []
    for n, r in enumerate(reports, 1):
        head = f"## subagent {n} ({r.kind}, {r.name}): {r.status} after {r.turns} turns"
        out.append(head)
        if r.error:
            out.append(f"error: {r.error}")
        if r.kind == "editor":
            if r.merged:
                out.append(f"its changes are now in your workspace: {', '.join(r.files)}")
            elif r.merged is False:
                out.append(f"its changes were NOT applied: {r.merge_note}")
            else:
                out.append("it changed nothing")
        answer = r.answer.strip()
        if len(answer) > max_answer_chars:
            answer = answer[:max_answer_chars] + "\n[... cut ...]"
        if answer:
            out.append(answer)
        out.append("")
    return "\n".join(out).strip()
