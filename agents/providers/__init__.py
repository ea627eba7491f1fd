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
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from infra.errors import ConfigError, ProviderError
from infra.settings import parse_endpoints

if TYPE_CHECKING:  # the providers are imported where one is made: a spec's parsing (bosun run) needs none of them
    from agents.providers.base import Provider

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
VENDOR_URLS = (OPENAI_URL, ANTHROPIC_URL)
"""The vendors' own endpoints, which need a key (a gateway set by BOSUN_*_BASE_URL may not)."""


def _key(explicit: object, *env_names: str) -> str | None:
    if explicit is not None and explicit.get_secret_value():  # type: ignore[attr-defined]
        return explicit.get_secret_value()  # type: ignore[attr-defined]
    for name in env_names:
        if os.environ.get(name):
            return os.environ[name]
    return None


KEYS = {"anthropic": ("BOSUN_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
        "openai": ("BOSUN_OPENAI_API_KEY", "OPENAI_API_KEY")}
"""The providers that need an API key, and where a process finds it (bosun's setting first, then the vendor's own
variable)."""


def keyed(settings=None) -> list[str]:
    """The providers of ``KEYS`` this process has a key for (names only: what a worker tells about itself)."""
    return [kind for kind in KEYS if _key(getattr(settings, f"{kind}_api_key", None), KEYS[kind][1])]


def missing_key(kind: str, where: str = "this worker") -> ProviderError:
    """The error of a provider used without its key: which variables, and that the key is read at start. Final
    (never retried), and a ProviderError: a fallback model of another provider is tried next."""
    names = " or ".join(KEYS[kind])
    return ProviderError(f"no {kind} API key on {where}: set {names} in the environment the worker starts in and "
                         "restart it (`bosun down && bosun up` for the stack, or the `bosun worker` process)",
                         retryable=False)


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


@dataclass(frozen=True)
class Endpoint:
    """Where and as whom a spec's HTTP provider connects: its model, URL and credentials (the pool's key)."""

    kind: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    headers: tuple[tuple[str, str], ...] = field(default=(), repr=False)


def endpoint_for(spec: ModelSpec, settings=None) -> Endpoint:
    """The endpoint of an ``openai``, ``anthropic`` or ``openai-compatible`` spec, with the key, base URL and headers
    the settings (or the providers' own environment variables) give."""
    if spec.kind == "anthropic":
        return Endpoint(spec.kind, spec.model, getattr(settings, "anthropic_base_url", None) or ANTHROPIC_URL,
                        _key(getattr(settings, "anthropic_api_key", None), "ANTHROPIC_API_KEY"))
    if spec.kind == "openai":
        return Endpoint(spec.kind, spec.model, getattr(settings, "openai_base_url", None) or OPENAI_URL,
                        _key(getattr(settings, "openai_api_key", None), "OPENAI_API_KEY"))
    if spec.kind == "openai-compatible":
        key, headers = endpoint_auth(settings, spec.base_url or "")
        return Endpoint(spec.kind, spec.model, spec.base_url or "", key, tuple(sorted(headers.items())))
    raise ConfigError(f"model spec {spec} has no HTTP endpoint")


def _http_provider(endpoint: Endpoint) -> Provider:
    from agents.providers.anthropic import AnthropicProvider  # lazy: a spec's parsing (bosun run) needs none
    from agents.providers.openai_compat import OpenAICompatProvider  # lazy: as above
    if endpoint.kind in KEYS and not endpoint.api_key and endpoint.base_url in VENDOR_URLS:
        raise missing_key(endpoint.kind)  # (a 401 after the round trip says less, or nothing offline)
    if endpoint.kind == "anthropic":
        return AnthropicProvider(endpoint.model, endpoint.api_key, base_url=endpoint.base_url)
    return OpenAICompatProvider(endpoint.base_url, endpoint.model, endpoint.api_key,
                                extra_headers=dict(endpoint.headers))


def _scripted(spec: ModelSpec, trajectory_text: str | None, agent_keys: list[str] | None,
              fetch: Callable[[str], str] | None) -> Provider:
    from agents.providers.scripted import (  # lazy: as above
        ScriptedProvider,
        load_trajectory,
        parse_trajectory,
        turns_for,
    )
    turns = parse_trajectory(trajectory_text, spec.model) if trajectory_text is not None \
        else load_trajectory(spec.model)[1]
    return ScriptedProvider(turns_for(turns, agent_keys or []), spec.model, fetch)


def make_provider(spec: ModelSpec, *, trajectory_text: str | None = None, settings=None,
                  agent_keys: list[str] | None = None, fetch: Callable[[str], str] | None = None) -> Provider:
    """A new provider for a spec, with the keys, base URLs and headers the settings give; the caller closes it. A
    worker keeps its providers in a :class:`ProviderPool` instead. ``trajectory_text`` is the scripted trajectory's
    content; ``agent_keys`` pick which agent's lines a scripted provider replays (first key with lines wins);
    ``fetch`` reads the artifact store, where a scripted provider finds the full text of what compaction
    replaced."""
    if spec.kind == "scripted":
        return _scripted(spec, trajectory_text, agent_keys, fetch)
    return _http_provider(endpoint_for(spec, settings))


class ProviderPool:
    """A worker's model clients: one provider per endpoint (spec and credentials), built at its first call and kept,
    with its pooled httpx client (keep-alive; HTTP/2 where the server offers it), until :meth:`aclose` at the
    worker's shutdown. So every turn after an agent's first, and every agent calling the same endpoint, reuses the
    open connection instead of paying a TCP and TLS handshake.

    The endpoint is looked up on every call, so a model switch (a fallback, a steer) or other credentials take
    effect on the next turn: they are another endpoint. A scripted provider (the test double) has no connection:
    it is made for each call from the trajectory and agent keys that call gives."""

    def __init__(self, settings=None) -> None:
        self.settings = settings
        self._providers: dict[Endpoint, Provider] = {}

    def get(self, spec: ModelSpec, *, trajectory_text: str | None = None, agent_keys: list[str] | None = None,
            fetch: Callable[[str], str] | None = None) -> Provider:
        """The provider of ``spec``; the pool closes it, the caller does not. (``fetch``: as for make_provider.)"""
        if spec.kind == "scripted":
            return _scripted(spec, trajectory_text, agent_keys, fetch)
        endpoint = endpoint_for(spec, self.settings)
        provider = self._providers.get(endpoint)
        if provider is None:
            provider = self._providers[endpoint] = _http_provider(endpoint)
        return provider

    def __len__(self) -> int:
        return len(self._providers)

    async def aclose(self) -> None:
        """Close every provider's connections (the worker's shutdown)."""
        providers, self._providers = list(self._providers.values()), {}
        for provider in providers:
            await provider.aclose()
