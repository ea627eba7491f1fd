"""Model specs and provider construction.

A spec string selects the provider:

- ``openai:MODEL`` — OpenAI Chat Completions (key: BOSUN_OPENAI_API_KEY or OPENAI_API_KEY)
- ``anthropic:MODEL`` — Anthropic Messages (key: BOSUN_ANTHROPIC_API_KEY or ANTHROPIC_API_KEY)
- ``openai-compatible:http://host:port/v1#MODEL`` — vLLM, Ollama, llama.cpp server, OpenRouter... (key and
  headers: BOSUN_OPENAI_COMPATIBLE_API_KEY, BOSUN_OPENAI_COMPATIBLE_ENDPOINTS)
- ``scripted:PATH`` — THE TEST DOUBLE: replays a recorded trajectory (JSONL), no language model involved.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlparse

from agents.providers.anthropic import AnthropicProvider
from agents.providers.base import Provider
from agents.providers.openai_compat import OpenAICompatProvider
from agents.providers.scripted import ScriptedProvider, load_trajectory, parse_trajectory, turns_for
from infra.errors import ConfigError
from infra.settings import parse_endpoints

KINDS = ("openai", "anthropic", "openai-compatible", "scripted")


@dataclass(frozen=True)
class ModelSpec:
    kind: str
    model: str
    """Model name; for scripted, the trajectory path."""
    base_url: str | None = None

    def __str__(self) -> str:
        if self.kind == "openai-compatible":
            return f"{self.kind}:{self.base_url}#{self.model}"
        return f"{self.kind}:{self.model}"

    @property
    def is_test_double(self) -> bool:
        return self.kind == "scripted"


def parse_spec(spec: str) -> ModelSpec:
    """Parse a model spec; raises ConfigError with the accepted forms when it is not one."""
    forms = ("openai:MODEL, anthropic:MODEL, openai-compatible:http://host:port/v1#MODEL, "
             "scripted:PATH (test double)")
    if not spec or ":" not in spec:
        raise ConfigError(f"model spec {spec!r} is not of the form KIND:NAME; use one of {forms}")
    kind, _, rest = spec.partition(":")
    if kind not in KINDS:
        raise ConfigError(f"unknown model spec {spec!r}: provider {kind!r} is not one of {', '.join(KINDS)}; "
                          f"use one of {forms}")
    if not rest:
        raise ConfigError(f"model spec {spec!r} names no model; use one of {forms}")
    if kind == "openai-compatible":
        url, sep, model = rest.rpartition("#")
        parsed = urlparse(url)
        if not sep or not model or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigError(f"model spec {spec!r}: expected openai-compatible:http://host:port/v1#MODEL")
        return ModelSpec(kind, model, url.rstrip("/"))
    return ModelSpec(kind, rest)


OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"


def _key(explicit: object, *env_names: str) -> str | None:
    if explicit is not None and explicit.get_secret_value():  # type: ignore[attr-defined]
        return explicit.get_secret_value()  # type: ignore[attr-defined]
    for name in env_names:
        if os.environ.get(name):
            return os.environ[name]
    return None


def endpoint_auth(settings, base_url: str) -> tuple[str | None, dict[str, str]]:
    """The key and extra headers for an ``openai-compatible:`` endpoint: the longest entry of
    BOSUN_OPENAI_COMPATIBLE_ENDPOINTS that is ``base_url`` or a prefix of it (at a path boundary), else
    BOSUN_OPENAI_COMPATIBLE_API_KEY with no extra headers."""
    url = base_url.rstrip("/")
    raw = getattr(settings, "openai_compatible_endpoints", None)
    entries = parse_endpoints(raw.get_secret_value()) if raw is not None and raw.get_secret_value().strip() else {}
    matches = [u for u in entries if url == u or url.startswith(u + "/")]
    if matches:
        entry = entries[max(matches, key=len)]
        return entry["api_key"], entry["headers"]
    return _key(getattr(settings, "openai_compatible_api_key", None)), {}


def make_provider(spec: ModelSpec, *, trajectory_text: str | None = None, settings=None,
                  agent_keys: list[str] | None = None, fetch: Callable[[str], str] | None = None) -> Provider:
    """Build the provider a spec names, with the keys, base URLs and headers the settings give. ``trajectory_text``
    is the scripted trajectory's content; ``agent_keys`` pick which agent's lines a scripted provider replays
    (first key with lines wins); ``fetch`` reads the artifact store, where a scripted provider finds the full text
    of what compaction replaced."""
    if spec.kind == "scripted":
        if trajectory_text is not None:
            turns = parse_trajectory(trajectory_text, spec.model)
        else:
            _, turns = load_trajectory(spec.model)
        return ScriptedProvider(turns_for(turns, agent_keys or []), spec.model, fetch)
    if spec.kind == "anthropic":
        key = _key(getattr(settings, "anthropic_api_key", None), "ANTHROPIC_API_KEY")
        return AnthropicProvider(spec.model, key,
                                 base_url=getattr(settings, "anthropic_base_url", None) or ANTHROPIC_URL)
    if spec.kind == "openai":
        key = _key(getattr(settings, "openai_api_key", None), "OPENAI_API_KEY")
        return OpenAICompatProvider(getattr(settings, "openai_base_url", None) or OPENAI_URL, spec.model, key)
    key, headers = endpoint_auth(settings, spec.base_url or "")
    return OpenAICompatProvider(spec.base_url or "", spec.model, key, extra_headers=headers)
