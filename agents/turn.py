"""One agent turn, as pure functions: what a model call sends, and what its answer means.

The model-call activity is load -> :func:`prepare` -> ``provider.complete`` -> :func:`settle` -> store; the
first turn's messages come from :func:`first_messages`. Nothing here touches Temporal, a sandbox or the network,
so a turn is tested with plain values (tests/agents/test_turn.py).

- :func:`prepare`: the transcript so far, the previous turn's tool results and any steering messages become the
  request: messages (compacted past 70% of the model's window, pinned instructions re-injected) and the tools the
  role may use, shaped for the model's profile (``apply_patch`` or ``str_replace``).
- :func:`settle`: the answer becomes the outcome: the assistant message, each tool call with its write key (how
  calls of a turn may run together) and whether it was offered, usage and cost priced by the profile.

The task's harness settings (agents/harness_settings.py) may change the tool shape, the prompt's flavour and
when and how much the transcript is compacted; without them, the defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources

from agents.context.compaction import CompactionEvent, compact
from agents.harness_settings import HarnessSettings
from agents.messages import Message, ModelResponse, ToolCall, ToolSpec, Usage
from agents.profiles import ModelProfile, cost_usd
from agents.roles import EDIT_SETS, Role, load_role, role_names
from agents.tools.registry import Registry
from infra.errors import ConfigError


def load_role_or_none(name: str) -> Role | None:
    """The role defined in agents/roles/<name>.toml, or None for ``solo`` (every tool, prompts/solo.md)."""
    if name in role_names():
        return load_role(name)
    if name == "solo":
        return None
    raise ConfigError(f"unknown agent role {name!r}; roles: solo, {', '.join(role_names())}")


def profile_of(model: str, harness: HarnessSettings | None = None) -> ModelProfile | None:
    """The profile of a model spec (prices, window, tool shape), with the harness settings' tool shape and prompt
    flavour over its own; None when no model is named."""
    return (harness or HarnessSettings()).profile(model) if model else None


def toolset(role: Role | None, base: Registry, profile: ModelProfile | None, explicit: list[str] = (),
            edit_tool: str | None = None) -> tuple[Registry, list[ToolSpec]]:
    """The registry that executes this role's calls, and the tool specs the model is offered: ``explicit`` names
    when given, else the role's tools shaped for the profile, else (solo) every tool -- less the other edit sets
    when the harness settings name an ``edit_tool``."""
    registry = role.registry(base) if role else base
    if explicit:
        return registry, registry.specs(list(explicit))
    if role:
        return registry, role.tool_specs(base, profile)
    if edit_tool:
        others = {t for shape, tools in EDIT_SETS.items() if shape != edit_tool for t in tools}
        return registry, registry.specs([t for t in registry.tools if t not in others])
    return registry, registry.specs()


@dataclass
class Attached:
    """A document attached to the first message (test output, the diff so far), already read."""

    title: str
    body: str
    max_chars: int = 20_000


def first_messages(role_name: str, model: str, task: str, base: Registry, *, static_context: str = "",
                   attachments: list[Attached] = (), harness: HarnessSettings | None = None) -> list[Message]:
    """The system prompt of the role (for the model's profile and the harness settings) and the first user
    message: static context, the task, and the attachments (each held to its size: head and tail)."""
    role = load_role_or_none(role_name)
    if role is None:
        system = resources.files("agents").joinpath("prompts", "solo.md").read_text(encoding="utf-8")
    else:
        system = role.system_prompt(profile_of(model, harness), role.registry(base).tools)
    text = f"{static_context}\n\n# Task\n\n{task}" if static_context else task
    for att in attachments:
        body = att.body
        if len(body) > att.max_chars:
            body = body[: att.max_chars // 2] + "\n[... cut ...]\n" + body[-att.max_chars // 2:]
        text += f"\n\n## {att.title}\n\n{body}"
    return [Message(role="system", content=system), Message(role="user", content=text)]


@dataclass
class Request:
    """What one model call sends."""

    messages: list[Message]
    tools: list[ToolSpec]
    registry: Registry
    profile: ModelProfile
    compaction: CompactionEvent | None = None


def prepare(transcript: list[Message], results: list[Message], user_messages: list[str], *, role_name: str,
            model: str, base: Registry, store_put: Callable[[str], str], pinned: str | None = None,
            explicit_tools: list[str] = (), harness: HarnessSettings | None = None) -> Request:
    """The request of the next model call (see the module docstring): ``results`` are the previous turn's tool
    results (``role="tool"`` messages). ``store_put`` keeps the raw outputs that compaction replaces by summaries
    (the agent reads them back with ``read_output``)."""
    harness = harness or HarnessSettings()
    messages = [*transcript, *results]
    messages += [Message(role="user", content=text) for text in user_messages]
    profile = harness.profile(model)
    res = compact(messages, window_tokens=profile.context_window, threshold=harness.threshold,
                  keep_recent_turns=harness.keep_turns, store_put=store_put, pinned=pinned)
    event = res.event if res.compacted else None
    registry, specs = toolset(load_role_or_none(role_name), base, profile, explicit_tools, harness.edit_tool)
    return Request(messages=res.messages if res.compacted else messages, tools=specs, registry=registry,
                   profile=profile, compaction=event)


@dataclass
class Outcome:
    """What a model call's answer means for the agent loop."""

    transcript: list[Message]
    """The request's messages and the answer: the next turn's transcript."""
    calls: list[tuple[ToolCall, str | None]] = field(default_factory=list)
    """Each tool call with its write key (None: read-only; a path; ``*``: anything)."""
    not_offered: list[str] = field(default_factory=list)
    """Ids of the calls to tools the request did not offer (refused, not run: a read-only role's model that
    names an edit tool, or a model that names the edit set its harness settings left out)."""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    text: str = ""
    stop_reason: str | None = None
    model: str = ""


def settle(request: Request, response: ModelResponse, model: str) -> Outcome:
    """The outcome of ``response`` to ``request`` (see the module docstring)."""
    calls = [(c, request.registry.write_key(c.name, c.arguments)) for c in response.message.tool_calls]
    offered = {t.name for t in request.tools}
    return Outcome(transcript=[*request.messages, response.message], calls=calls,
                   not_offered=[c.id for c in response.message.tool_calls if c.name not in offered],
                   usage=response.usage,
                   cost_usd=round(cost_usd(request.profile, response.usage), 6), text=response.message.content,
                   stop_reason=response.stop_reason, model=response.model or model)
