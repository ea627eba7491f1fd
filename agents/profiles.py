"""Model profiles: what bosun needs to know about a model to drive it well and to count what it costs.

``profile_for(spec)`` looks the model up in ``FAMILIES``, a table of known model families (first match wins),
and falls back to a conservative default per provider kind for models it does not know. Every field can be
overridden, per model, from configuration: ``profile_for(spec, {"context_window": 65536})``.

Prices are list prices in USD per million tokens, as published on the providers' pricing pages
(openai.com/api/pricing, anthropic.com/pricing) and recorded here from public sources in 2025
(``PRICES_AS_OF``). They change: keep them current by editing ``FAMILIES`` or by passing overrides; a cost
computed with a stale table is an estimate, never a bill. Self-hosted ``openai-compatible`` models cost 0 per
token by default (you pay for the hardware); set prices through overrides when the endpoint is a paid router.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agents.messages import Usage
from agents.providers import ModelSpec
from infra.errors import ConfigError, describe_validation

PRICES_AS_OF = "2025-11"
"""When the figures in FAMILIES were last checked against the providers' public pricing pages."""

EditTool = Literal["apply_patch", "str_replace"]
PromptVariant = Literal["gpt", "claude", "open", "test"]


class ModelProfile(BaseModel):
    """What bosun knows about one model."""

    model_config = ConfigDict(extra="forbid")

    family: str
    """Family name from the table (e.g. ``gpt-5``, ``claude-4``), or ``unknown-<kind>`` for a model not in it."""
    known: bool = True
    """False when the model matched no row of the table and the defaults were used."""
    edit_tool: EditTool = "str_replace"
    """Edit tool offered to the model: ``apply_patch`` (OpenAI GPT/Codex, trained on it) or ``str_replace``
    (Anthropic Claude, and the default for everything else). Both run on the same edit engine."""
    prompt_variant: PromptVariant = "open"
    """Which flavour of a role prompt to use: ``agents/prompts/<role>.<variant>.md`` when that file exists."""
    context_window: int = Field(128_000, gt=0)
    """Total context window in tokens (prompt + output)."""
    max_output_tokens: int = Field(8_192, gt=0)
    """Most tokens one response may have."""
    input_usd_per_mtok: float = Field(0.0, ge=0)
    """USD per million uncached prompt tokens."""
    cached_input_usd_per_mtok: float = Field(0.0, ge=0)
    """USD per million prompt tokens read from the provider's cache."""
    cache_write_usd_per_mtok: float | None = Field(None, ge=0)
    """USD per million prompt tokens written to the cache (Anthropic: 1.25x input); None = the input price."""
    output_usd_per_mtok: float = Field(0.0, ge=0)
    """USD per million output tokens (reasoning tokens included)."""
    price_source: str = ""
    """Where the prices come from and when they were checked."""
    fallbacks: list[str] = Field(default_factory=list)
    """Model specs tried in order when this model's provider keeps failing (whatever picked the model: a fixed
    ``--model`` or the router). ``BOSUN_ROUTER_CONFIG``'s ``model_fallbacks`` overrides it."""

    @property
    def prompt_budget_tokens(self) -> int:
        """Tokens a prompt may fill while leaving room for one full response."""
        return max(1, self.context_window - self.max_output_tokens)


def cost_usd(profile: ModelProfile, usage: Usage) -> float:
    """The price of one call's usage. ``usage.input_tokens`` includes cached and cache-written tokens."""
    cached = max(0, usage.cached_input_tokens)
    written = max(0, usage.cache_creation_input_tokens)
    uncached = max(0, usage.input_tokens - cached - written)
    write_price = profile.input_usd_per_mtok if profile.cache_write_usd_per_mtok is None \
        else profile.cache_write_usd_per_mtok
    total = (uncached * profile.input_usd_per_mtok + cached * profile.cached_input_usd_per_mtok
             + written * write_price + max(0, usage.output_tokens) * profile.output_usd_per_mtok)
    return total / 1_000_000


@dataclass(frozen=True)
class Family:
    """One row of the table: which models it covers and the profile fields they get."""

    name: str
    kinds: tuple[str, ...]
    """Provider kinds the row applies to (``openai``, ``anthropic``, ``openai-compatible``, ``scripted``)."""
    pattern: str
    """Regular expression matched (case-insensitively, from the start) against the model name."""
    fields: dict[str, Any] = field(default_factory=dict)

    def matches(self, spec: ModelSpec) -> bool:
        if spec.kind not in self.kinds:
            return False
        name = spec.model.rsplit("/", 1)[-1] if spec.kind == "openai-compatible" else spec.model
        return re.match(self.pattern, name, re.IGNORECASE) is not None


_OPENAI_SRC = f"openai.com/api/pricing, checked {PRICES_AS_OF}"
_ANTHROPIC_SRC = f"anthropic.com/pricing, checked {PRICES_AS_OF}"
_SELF_HOSTED = "self-hosted: no per-token price (override for a paid endpoint)"


SMALL_OPENAI = "openai:gpt-5-mini"
SMALL_ANTHROPIC = "anthropic:claude-haiku-4-5"


def _gpt(window: int, out: int, inp: float, cached: float, output: float, **extra: Any) -> dict[str, Any]:
    return {"edit_tool": "apply_patch", "prompt_variant": "gpt", "context_window": window,
            "max_output_tokens": out, "input_usd_per_mtok": inp, "cached_input_usd_per_mtok": cached,
            "output_usd_per_mtok": output, "price_source": _OPENAI_SRC, "fallbacks": [SMALL_OPENAI], **extra}


def _claude(out: int, inp: float, output: float, window: int = 200_000) -> dict[str, Any]:
    # Anthropic: cache reads cost 0.1x input, 5-minute cache writes 1.25x input.
    return {"edit_tool": "str_replace", "prompt_variant": "claude", "context_window": window,
            "max_output_tokens": out, "input_usd_per_mtok": inp, "cached_input_usd_per_mtok": round(inp * 0.1, 4),
            "cache_write_usd_per_mtok": round(inp * 1.25, 4), "output_usd_per_mtok": output,
            "price_source": _ANTHROPIC_SRC, "fallbacks": [SMALL_ANTHROPIC]}


def _open(window: int, out: int) -> dict[str, Any]:
    return {"edit_tool": "str_replace", "prompt_variant": "open", "context_window": window,
            "max_output_tokens": out, "price_source": _SELF_HOSTED}


FAMILIES: list[Family] = [
    # --- OpenAI (Chat Completions). GPT and Codex models were trained on apply_patch. ---------------------
    Family("gpt-5-codex-mini", ("openai",), r"gpt-5(\.\d+)?-codex-mini", _gpt(400_000, 128_000, 0.25, 0.025, 2.0)),
    Family("gpt-5-codex", ("openai",), r"gpt-5(\.\d+)?-codex", _gpt(400_000, 128_000, 1.25, 0.125, 10.0)),
    Family("gpt-5-pro", ("openai",), r"gpt-5(\.\d+)?-pro", _gpt(400_000, 272_000, 15.0, 15.0, 120.0)),
    Family("gpt-5-mini", ("openai",), r"gpt-5(\.\d+)?-mini", _gpt(400_000, 128_000, 0.25, 0.025, 2.0)),
    Family("gpt-5-nano", ("openai",), r"gpt-5(\.\d+)?-nano", _gpt(400_000, 128_000, 0.05, 0.005, 0.40)),
    Family("gpt-5", ("openai",), r"gpt-5", _gpt(400_000, 128_000, 1.25, 0.125, 10.0)),
    Family("gpt-4.1-mini", ("openai",), r"gpt-4\.1-mini", _gpt(1_047_576, 32_768, 0.40, 0.10, 1.60)),
    Family("gpt-4.1-nano", ("openai",), r"gpt-4\.1-nano", _gpt(1_047_576, 32_768, 0.10, 0.025, 0.40)),
    Family("gpt-4.1", ("openai",), r"gpt-4\.1", _gpt(1_047_576, 32_768, 2.0, 0.50, 8.0)),
    Family("codex-mini", ("openai",), r"codex-mini", _gpt(200_000, 100_000, 1.50, 0.375, 6.0)),
    Family("o4-mini", ("openai",), r"o4-mini", _gpt(200_000, 100_000, 1.10, 0.275, 4.40)),
    Family("o3-mini", ("openai",), r"o3-mini", _gpt(200_000, 100_000, 1.10, 0.55, 4.40)),
    Family("o3-pro", ("openai",), r"o3-pro", _gpt(200_000, 100_000, 20.0, 20.0, 80.0)),
    Family("o3", ("openai",), r"o3", _gpt(200_000, 100_000, 2.0, 0.50, 8.0)),
    Family("o1", ("openai",), r"o1", _gpt(200_000, 100_000, 15.0, 7.50, 60.0)),
    Family("gpt-4o-mini", ("openai",), r"gpt-4o-mini", _gpt(128_000, 16_384, 0.15, 0.075, 0.60)),
    Family("gpt-4o", ("openai",), r"gpt-4o", _gpt(128_000, 16_384, 2.50, 1.25, 10.0)),
    # --- Anthropic (Messages API). Claude was trained on the str_replace text editor tool. ------------------
    Family("claude-opus-4.5", ("anthropic",), r"claude-opus-4-5", _claude(64_000, 5.0, 25.0)),
    Family("claude-opus-4", ("anthropic",), r"claude-opus-4", _claude(32_000, 15.0, 75.0)),
    Family("claude-sonnet-4", ("anthropic",), r"claude-sonnet-4", _claude(64_000, 3.0, 15.0)),
    Family("claude-haiku-4", ("anthropic",), r"claude-haiku-4", _claude(64_000, 1.0, 5.0)),
    Family("claude-3-7-sonnet", ("anthropic",), r"claude-3-7-sonnet", _claude(64_000, 3.0, 15.0)),
    Family("claude-3-5-haiku", ("anthropic",), r"claude-3-5-haiku", _claude(8_192, 0.80, 4.0)),
    Family("claude-3-5-sonnet", ("anthropic",), r"claude-3-5-sonnet", _claude(8_192, 3.0, 15.0)),
    # --- Open-weight models behind an OpenAI-compatible server (vLLM, Ollama, llama.cpp, OpenRouter). --------
    # The model name's last path segment is matched ("Qwen/Qwen3-Coder-30B-A3B-Instruct" -> "Qwen3-Coder...").
    # Windows are the models' native ones; a server may be started with a smaller --max-model-len: override.
    Family("qwen3-coder", ("openai-compatible",), r"qwen3-coder", _open(262_144, 65_536)),
    Family("qwen3", ("openai-compatible",), r"qwen3", _open(131_072, 32_768)),
    Family("qwen2.5-coder", ("openai-compatible",), r"qwen2\.5-coder", _open(32_768, 8_192)),
    Family("qwen", ("openai-compatible",), r"qwen", _open(32_768, 8_192)),
    Family("deepseek", ("openai-compatible",), r"deepseek", _open(131_072, 8_192)),
    Family("llama", ("openai-compatible",), r"(meta-)?llama", _open(131_072, 8_192)),
    # --- The test double: a tiny fake window so compaction is exercised by short scripted runs. -------------
    Family("scripted", ("scripted",), r".", {"edit_tool": "str_replace", "prompt_variant": "test",
                                              "context_window": 4_096, "max_output_tokens": 512,
                                              "price_source": "test double: free"}),
]
"""Known model families, first match wins: put specific patterns (``gpt-5-mini``) before general ones."""

DEFAULTS: dict[str, dict[str, Any]] = {
    # Unknown OpenAI / Anthropic models are priced like the current flagship, so budgets err on the safe side.
    "openai": _gpt(128_000, 16_384, 2.50, 1.25, 10.0),
    "anthropic": _claude(32_000, 3.0, 15.0),
    # An unknown self-hosted model: a small window, so compaction fires early rather than never.
    "openai-compatible": _open(32_768, 4_096),
    "scripted": FAMILIES[-1].fields,
}
"""Profile fields for a model the table does not know, per provider kind."""


def profile_for(spec: ModelSpec, overrides: dict[str, Any] | None = None) -> ModelProfile:
    """The profile of the model a spec names: its table row (or the kind's defaults), then ``overrides``.

    Raises ConfigError when an override names an unknown field or has a bad value.
    """
    row = next((f for f in FAMILIES if f.matches(spec)), None)
    if row is not None:
        values: dict[str, Any] = {"family": row.name, "known": True, **row.fields}
    else:
        if spec.kind not in DEFAULTS:
            raise ConfigError(f"no model profile for provider kind {spec.kind!r}; known: {', '.join(DEFAULTS)}")
        values = {"family": f"unknown-{spec.kind}", "known": False, **DEFAULTS[spec.kind]}
    values.update(overrides or {})
    try:
        return ModelProfile.model_validate(values)
    except ValidationError as e:
        raise ConfigError(f"bad model profile override for {spec}: {describe_validation(e, where='(profile)')}"
                          ) from None
