"""Harness settings: the knobs of bosun's agent loop that a task may set for itself instead of taking bosun's
defaults -- the shape of the edit tool and the prompt's flavour, when the transcript is compacted and what it
keeps, and the router's configuration.

They are what an A/B evaluation varies besides the model (``bosun eval run --variant NAME=SETTINGS.json`` with
``{"harness": {...}}``; ``bosun run --harness FILE`` for one task). A task carries them (``TaskInput.harness``)
to every agent it starts, subagents included, and each agent's activities apply them: the router
(``route_model``), the first messages (``init_agent``) and every model call (``model_call``). A field left unset
keeps the default, so the empty settings change nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.profiles import EditTool, ModelProfile, PromptVariant, profile_for
from agents.providers import parse_spec
from agents.router import RouterConfig
from infra.cliargs import read_json_file
from infra.errors import ConfigError, describe_validation

COMPACT_AT = 0.7
"""Share of the model's context window past which the transcript is compacted before a call (the default)."""
KEEP_RECENT_TURNS = 2
"""Assistant turns whose tool outputs compaction leaves whole, when it can (the default)."""


class HarnessSettings(BaseModel):
    """Harness knobs of one task; every field unset (None) keeps bosun's default."""

    model_config = ConfigDict(extra="forbid")

    edit_tool: EditTool | None = None
    """The edit tools offered to every model: ``apply_patch`` or ``str_replace`` (with ``write_file``). Default:
    each model's profile (agents/profiles.py). A solo agent, which is offered every tool, is offered only this
    edit set when it is given."""
    prompt_variant: PromptVariant | None = None
    """The flavour of the role prompts (``agents/prompts/<role>.<variant>.md``): ``gpt``, ``claude``, ``open``
    or ``test``. Default: each model's profile."""
    compact_at: float | None = Field(None, gt=0, le=1)
    """Share of the model's context window past which the transcript is compacted before a model call, in
    (0, 1]. Default 0.7."""
    keep_recent_turns: int | None = Field(None, ge=0, le=50)
    """Assistant turns whose tool outputs compaction leaves whole when it can (0-50). Default 2."""
    context_window: int | None = Field(None, ge=2048)
    """The model's context window in tokens (prompt and response), instead of its profile's: for a local server
    started with less than the model's native window (vLLM ``--max-model-len``, Ollama ``num_ctx``, llama.cpp
    ``-c``). A response is then asked for at most a quarter of it unless the profile asks for less. Default: the
    profile's (agents/profiles.py)."""
    router: RouterConfig | None = None
    """The router's configuration (tiers, per-role routing, fallback chains; the format of
    ``BOSUN_ROUTER_CONFIG``'s file), used instead of that file. Default: the worker's ``BOSUN_ROUTER_CONFIG``."""

    def profile(self, model: str) -> ModelProfile:
        """The model's profile with these settings' edit tool and prompt flavour over its own."""
        overrides = {k: v for k, v in (("edit_tool", self.edit_tool), ("prompt_variant", self.prompt_variant))
                     if v is not None}
        profile = profile_for(parse_spec(model), overrides)
        if self.context_window is None:
            return profile
        return profile.model_copy(update={"context_window": self.context_window,
                                          "max_output_tokens": min(profile.max_output_tokens,
                                                                   self.context_window // 4)})

    @property
    def threshold(self) -> float:
        return COMPACT_AT if self.compact_at is None else self.compact_at

    @property
    def keep_turns(self) -> int:
        return KEEP_RECENT_TURNS if self.keep_recent_turns is None else self.keep_recent_turns

    def without_router(self) -> HarnessSettings:
        """These settings less the router's (what an agent's model calls need; routing happens before)."""
        return self.model_copy(update={"router": None})


def parse_harness(value: Any, where: str) -> HarnessSettings:
    """Harness settings from a JSON value; ConfigError naming ``where``, each bad field and what it takes."""
    try:
        return HarnessSettings.model_validate(value)
    except ValidationError as e:
        raise ConfigError(f"{where}: bad harness settings: {describe_validation(e, where='(settings)')} (fields: "
                          f"{', '.join(HarnessSettings.model_fields)}; docs/models.md, 'Harness settings')") from None


def load_harness(path: Path, flag: str) -> HarnessSettings:
    """Harness settings from a JSON file given with ``flag``; ConfigError saying what is wrong with it."""
    return parse_harness(read_json_file(path, f"{flag} {path}"), f"{flag} {path}")
