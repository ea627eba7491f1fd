"""Agent roles as data: ``agents/roles/<name>.toml`` names a prompt, a tool set, a budget and an output.

Roles shipped: ``planner`` (read-only tools, returns a Plan via ``submit_plan`` or as JSON in its final message),
``fast_edit`` (one subtask in its own workspace: read, edit, run), ``debugger`` (failing tests + output + diff
-> green tests).

Tool names in a role file must be tools of ``agents/tools/builtin.py`` (``BUILTIN_TOOLS``), tools defined here
(``ROLE_TOOLS``: submit_plan), or ``@edit``: the edit tools the model's profile asks for (``EDIT_SETS``:
``apply_patch`` for OpenAI GPT/Codex; ``str_replace`` + ``write_file`` for Claude and the rest; the
str_replace set when the registry has no ``apply_patch``).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.budget import Budget
from agents.messages import ToolSpec
from agents.plan import Plan, topological_waves
from agents.profiles import ModelProfile
from agents.tools.builtin import default_registry
from agents.tools.registry import Registry, Tool, ToolContext, ToolOutput
from infra.errors import ConfigError, describe_validation

EDIT_SLOT = "@edit"
"""Placeholder in a role's tool list for the profile's edit tools."""
EDIT_SETS: dict[str, list[str]] = {"apply_patch": ["apply_patch"], "str_replace": ["str_replace", "write_file"]}
"""What ``@edit`` becomes, per profile edit tool (apply_patch adds, deletes and moves files itself)."""
Output = Literal["plan", "patch", "report"]


class SubmitPlanArgs(Plan):
    """Arguments of ``submit_plan``: the Plan itself (subtasks and notes), validated like any plan."""


async def _submit_plan(ctx: ToolContext, plan: SubmitPlanArgs) -> ToolOutput:
    waves = topological_waves(plan)
    return ToolOutput(text=f"plan accepted: {len(plan.subtasks)} subtasks in {len(waves)} waves. "
                           "Stop here: answer with a one-line summary and make no further tool calls.",
                      summary=f"plan: {len(plan.subtasks)} subtasks, {len(waves)} waves",
                      data={"plan": Plan.model_validate(plan.model_dump()).model_dump(mode="json"),
                            "waves": waves})


ROLE_TOOLS: dict[str, Tool] = {
    "submit_plan": Tool("submit_plan", "Submit the finished plan: subtasks with goal, file scope, dependencies and "
                        "acceptance check. Invalid plans come back with the list of problems.",
                        SubmitPlanArgs, _submit_plan, read_only=True),
}
"""Tools defined by roles rather than by the built-in registry."""



@cache
def builtin_tools() -> dict[str, bool]:
    """Built-in tool names -> read-only flag (imported on first use: the tools pull in code search)."""

    return {name: t.read_only for name, t in default_registry().tools.items()}


def known_tools() -> dict[str, bool]:
    """Every tool a role may name (built-in and role-defined) -> read-only flag."""
    return {**builtin_tools(), **{n: t.read_only for n, t in ROLE_TOOLS.items()}}

EDIT_GUIDANCE = {
    "str_replace": (
        "   str_replace replaces one exact snippet: old_str must appear exactly once in the file, with its\n"
        "   exact indentation; include enough surrounding lines to make it unique. Read the file again\n"
        "   after an edit fails: your view of it may be stale."),
    "apply_patch": (
        "   apply_patch takes a patch between '*** Begin Patch' and '*** End Patch' with '*** Update File:',\n"
        "   '*** Add File:' or '*** Delete File:' sections; in an update, '@@' lines name the enclosing\n"
        "   function or class and changed lines start with ' ', '-' or '+', with 3 lines of context.\n"
        "   Every chunk must match exactly one place in the file."),
}
"""Lines put in place of ``{{edit_guidance}}`` in a prompt, per edit tool."""


class Role(BaseModel):
    """One role, as read from ``agents/roles/<name>.toml``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    prompt: str
    """Prompt file stem in ``agents/prompts`` (``<prompt>.<variant>.md`` is used when it exists)."""
    tools: list[str] = Field(min_length=1)
    """Tool names, ``@edit`` for the profile's edit tool."""
    read_only: bool = False
    """The role may only use tools that do not write (checked at load)."""
    output: Output
    """``plan`` (a Plan), ``patch`` (the workspace diff) or ``report`` (the final message)."""
    final_tool: str | None = None
    """A tool whose successful call ends the run and carries the output (``submit_plan``)."""
    budget: Budget = Field(default_factory=Budget)
    """Per-agent budget for one run of this role."""

    def tool_names(self, profile: ModelProfile | None = None, available: Iterable[str] | None = None) -> list[str]:
        """The concrete tool list: ``@edit`` replaced by the profile's edit tools (the str_replace set when the
        registry in ``available`` lacks the profile's tool); tools missing from ``available`` are left out."""
        have = set(available) if available is not None else set(known_tools())
        shape = profile.edit_tool if profile is not None and profile.edit_tool in have else "str_replace"
        out: list[str] = []
        for t in self.tools:
            out += EDIT_SETS[shape] if t == EDIT_SLOT else [t]
        return [t for t in dict.fromkeys(out) if t in have]

    def registry(self, base: Registry) -> Registry:
        """``base`` plus this role's own tools (submit_plan), for executing this role's calls."""
        extra = [ROLE_TOOLS[t] for t in self.tools if t in ROLE_TOOLS]
        return Registry(list(base.tools.values()) + extra)

    def tool_specs(self, base: Registry, profile: ModelProfile | None = None) -> list[ToolSpec]:
        reg = self.registry(base)
        return reg.specs(self.tool_names(profile, reg.tools))

    def output_schema(self) -> dict[str, Any] | None:
        """JSON Schema of the structured output (the Plan for the planner), None for free text / patches."""
        return Plan.model_json_schema() if self.output == "plan" else None

    def system_prompt(self, profile: ModelProfile | None = None, available: Iterable[str] | None = None) -> str:
        """The prompt file for the profile's variant, with the edit tool's name and guidance filled in."""
        base = resources.files("agents").joinpath("prompts")
        variant = profile.prompt_variant if profile is not None else None
        path = base.joinpath(f"{self.prompt}.{variant}.md") if variant else None
        if path is None or not path.is_file():
            path = base.joinpath(f"{self.prompt}.md")
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"role {self.name!r}: prompt file agents/prompts/{self.prompt}.md is missing") from None
        names = self.tool_names(profile, available)
        edit = next((n for n in names if n in EDIT_GUIDANCE), "str_replace")
        return text.replace("{{edit_tool}}", edit).replace("{{edit_guidance}}", EDIT_GUIDANCE[edit])


def role_names() -> list[str]:
    """Names of the roles shipped in ``agents/roles``."""
    folder = resources.files("agents").joinpath("roles")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml"))


def parse_role(text: str, source: str = "<role>") -> Role:
    """A Role from TOML text; ConfigError naming the file and each problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{source}: not valid TOML: {e}") from None
    try:
        role = Role.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {describe_validation(e, where='(role)')}") from None
    tools = known_tools()
    known = set(tools) | {EDIT_SLOT}
    unknown = [t for t in role.tools if t not in known]
    if unknown:
        raise ConfigError(f"{source}: unknown tools {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    if role.read_only:
        writing = [t for t in role.tools if not tools.get(t, False)]
        if writing:
            raise ConfigError(f"{source}: role is read_only but lists writing tools {', '.join(writing)}")
    if role.final_tool is not None and role.final_tool not in role.tools:
        raise ConfigError(f"{source}: final_tool {role.final_tool!r} is not in the role's tools")
    return role


@cache
def load_role(name: str) -> Role:
    """The role ``agents/roles/<name>.toml``; ConfigError listing the known roles when there is none. Read once per
    process (the roles are files of the package): the same Role each time, so never change one."""
    path = resources.files("agents").joinpath("roles", f"{name}.toml")
    if not path.is_file():
        raise ConfigError(f"no role {name!r}; known roles: {', '.join(role_names())}")
    role = parse_role(path.read_text(encoding="utf-8"), f"agents/roles/{name}.toml")
    if role.name != name:
        raise ConfigError(f"agents/roles/{name}.toml names itself {role.name!r}")
    return role


def subtask_brief(task: str, subtask_id: str, goal: str, files: list[str], acceptance: str = "", *,
                  others: list[tuple[str, str]] = (), note: str = "") -> str:
    """The task text of a fast-edit agent: its subtask, in the context of the whole task and the other subtasks;
    ``note`` says what went wrong with an earlier attempt (a conflict, a failure)."""
    lines = [f"Your subtask ({subtask_id}): {goal}"]
    if files:
        lines.append("Files in scope (edit only these): " + ", ".join(files))
    if acceptance:
        lines.append(f"Done when: {acceptance}")
    if others:
        lines += ["", "Other agents do these subtasks (do not do their work):"]
        lines += [f"- {oid}: {ogoal.splitlines()[0][:200] if ogoal else ''}" for oid, ogoal in others]
    lines += ["", "The whole task, for context:", task]
    if note:
        lines += ["", note]
    return "\n".join(lines)


def debugger_brief(task: str, failing: list[str], summary: str, problems: list[str] = ()) -> str:
    """The task text of a debugger: what fails after the changes (the test output and the diff are attached)."""
    lines = [f"The task was: {task}", "",
             f"After the changes, these tests fail: {', '.join(failing) or summary}", f"({summary}).",
             "Make them pass without weakening the tests."]
    if problems:
        lines += ["", "What the other agents could not do:", *[f"- {p}" for p in problems]]
    return "\n".join(lines)


def follow_up_brief(task: str) -> str:
    """The task text of an agent started for messages no agent has read yet (they follow as user messages)."""
    return (f"The task was: {task}\n\nThe work so far is in the repository (see git log and git diff HEAD~). "
            "People sent the messages below while no agent was working; do what they ask, on top of the work "
            "so far, and keep the tests green.")
