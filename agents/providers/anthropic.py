"""The Anthropic Messages API provider (POST ``{base_url}/v1/messages``, over the ``anthropic`` SDK).

Translation:

* System messages (wherever they appear) become the top-level ``system`` (one text block, joined by
  blank lines).
* Assistant turns become ``text`` + ``tool_use`` blocks; tool results become ``tool_result`` blocks
  (``is_error`` carried) in a user message. Consecutive messages of the same wire role are merged, so
  the results of parallel tool calls travel in one user message, tool results first. Empty text
  blocks (which the API rejects) are left out.
* Tools become ``{"name", "description", "input_schema"}``.

Prompt caching (``prompt_caching=True``): ``cache_control: {"type": "ephemeral"}`` breakpoints on the
stable prefix, at most 4: the last tool definition, the system prompt, the last block of the final
message (so this turn's prefix is written to the cache) and, budget permitting, the last block of the
previous user message (where the previous call wrote its cache entry, so it is read back even when
more than ~20 blocks were added since).

Usage: Anthropic's ``input_tokens`` counts only the uncached part of the prompt. bosun's
``Usage.input_tokens`` is the whole prompt, so it is ``input_tokens + cache_read_input_tokens +
cache_creation_input_tokens``; ``cached_input_tokens`` is ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` is passed through. (Same meaning as the OpenAI provider: input includes
cached tokens.)

Streaming: ``message_start`` (model, initial usage), ``content_block_start`` / ``content_block_delta``
(``text_delta``, ``input_json_delta``) / ``content_block_stop``, ``message_delta`` (stop_reason,
cumulative usage), ``message_stop`` (terminal), ``ping``, ``error``. Unknown events and delta types
are ignored, as the API's versioning policy asks. A stream without ``message_stop`` is a retryable
ProviderError; an ``error`` event is a ProviderError, retryable unless it says the request was bad.

The SDK is built with ``max_retries=0`` (Temporal retries). The key goes as ``x-api-key``, with
``anthropic-version: 2023-06-01``, as the API documents them; an endpoint configured without a key gets no credential
of the SDK's finding (neither ``x-api-key`` nor ``Authorization``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import httpx2
from pydantic import SecretStr

from agents.messages import Message, ModelResponse, ToolCall, ToolSpec, Usage
from agents.providers.base import Provider
from agents.providers.sdk import Failures, checked_base_url, http_client, parse_tool_arguments, plain

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` the translation here is written for (sent over the SDK's own)."""
MAX_CACHE_BREAKPOINTS = 4
_EPHEMERAL = {"type": "ephemeral"}
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_-]")


class AnthropicProvider(Provider):
    """A Claude model behind the Anthropic Messages API.

    ``api_key`` is sent as ``x-api-key`` (omitted when None, e.g. behind a proxy that adds it).
    ``timeout_s`` bounds connecting and each read (a stream may take longer while tokens keep coming).
    """

    def __init__(self, model: str, api_key: str | SecretStr | None, *, base_url: str = "https://api.anthropic.com",
                 stream: bool = True, timeout_s: float = 120, prompt_caching: bool = True,
                 transport: httpx2.AsyncBaseTransport | None = None) -> None:
        import anthropic  # the SDK is imported at the first real provider: the test double never pays for it

        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self.model = model
        self.stream = stream
        self.prompt_caching = prompt_caching
        self.name = f"anthropic:{model}"
        self.base_url = checked_base_url(self.name, base_url)
        self._failures = Failures(label=self.name, url=self.base_url + "/v1/messages", timeout_s=timeout_s,
                                  sdk=anthropic, secrets=[key])
        # The Messages API as documented: the key as ``x-api-key`` (never as a bearer token: gateways and proxies
        # read the documented header), and the API version this module's translation is written for.
        headers = {"anthropic-version": ANTHROPIC_VERSION, "Authorization": anthropic.Omit(),
                   "X-Api-Key": key if key else anthropic.Omit()}
        self._client = anthropic.AsyncAnthropic(api_key="", base_url=self.base_url, max_retries=0,
                                                timeout=timeout_s, default_headers=headers,
                                                http_client=http_client(timeout_s, transport))

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r}, stream={self.stream})"

    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = 4096
                       ) -> ModelResponse:
        body = build_request(self.model, messages, tools, max_tokens=max_tokens, stream=self.stream,
                             prompt_caching=self.prompt_caching)
        answered, receiving, error = False, False, None
        try:
            answer = await self._client.messages.create(**body)
            answered = True
            if not self.stream:
                return self._message(plain(answer))
            async with answer as events:
                if "json" in events.response.headers.get("content-type", ""):
                    raise self._failures.json_instead_of_stream(await events.response.aread())
                receiving, state = True, StreamState()
                async for event in events:  # read to the end (message_stop is the last): the connection is reused
                    payload = plain(event)
                    state.feed(payload.get("type") or "", payload)
        except self._failures.errors as exc:
            if not answered and not isinstance(exc, self._failures.call_errors):
                raise  # (bosun's own bug, e.g. a request the SDK does not take)
            error = self._failures.error(exc, mid_stream=receiving)
        if error is not None:  # raised outside the handler: the SDK's exception (the request, its headers) is not
            raise error        # even its __context__
        if not state.done:
            raise self._failures.malformed("the stream ended before its terminal 'message_stop' event "
                                           "(connection cut or server error mid-generation)")
        return state.response(fallback_model=self.model)

    def _message(self, data: dict[str, Any]) -> ModelResponse:
        if data.get("type") == "error":
            raise self._failures.payload_error(data)
        if not isinstance(data.get("content"), list):
            raise self._failures.malformed("the message has no content list")
        return parse_message(data, fallback_model=self.model)

    async def aclose(self) -> None:
        await self._client.close()


# -- request ----------------------------------------------------------------------------------------


def build_request(model: str, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int,
                  stream: bool, prompt_caching: bool = True) -> dict[str, Any]:
    """The JSON body of a ``/v1/messages`` request, cache breakpoints included when asked for."""
    system, wire_messages = to_wire_messages(messages)
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": wire_messages}
    if system:
        body["system"] = system
    if tools:
        body["tools"] = [to_wire_tool(t) for t in tools]
    if stream:
        body["stream"] = True
    if prompt_caching:
        add_cache_breakpoints(body)
    return body


def to_wire_tool(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an Anthropic tool definition."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _tool_id(value: str | None) -> str:
    """Tool-use ids must match ``^[a-zA-Z0-9_-]+$``; ids from other providers are made to fit."""
    return _BAD_ID_CHARS.sub("_", value or "") or "toolu_unknown"


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": _tool_id(message.tool_call_id)}
        if message.content:
            block["content"] = message.content
        if message.is_error:
            block["is_error"] = True
        return [block]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    if message.role == "assistant":
        blocks.extend({"type": "tool_use", "id": _tool_id(call.id), "name": call.name, "input": call.arguments}
                      for call in message.tool_calls)
    return blocks


def to_wire_messages(messages: list[Message]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system blocks, messages) in Anthropic's shape; see the module docstring for the rules."""
    system_texts = [m.content for m in messages if m.role == "system" and m.content]
    system = [{"type": "text", "text": "\n\n".join(system_texts)}] if system_texts else []
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    for item in wire:
        if item["role"] == "user":  # tool_result blocks must open a user message
            item["content"].sort(key=lambda block: block["type"] != "tool_result")
    return system, wire


def add_cache_breakpoints(body: dict[str, Any]) -> int:
    """Mark the stable prefix with ``cache_control`` (at most 4 breakpoints); return how many were set."""
    marked = 0
    for key in ("tools", "system"):
        if body.get(key):
            body[key][-1]["cache_control"] = dict(_EPHEMERAL)
            marked += 1
    messages = body.get("messages") or []
    targets: list[int] = []
    if messages:
        targets.append(len(messages) - 1)
        previous_user = next((i for i in range(len(messages) - 2, -1, -1) if messages[i]["role"] == "user"), None)
        if previous_user is not None:
            targets.append(previous_user)
    for index in targets[:MAX_CACHE_BREAKPOINTS - marked]:
        messages[index]["content"][-1]["cache_control"] = dict(_EPHEMERAL)
        marked += 1
    return marked


# -- response ---------------------------------------------------------------------------------------


def parse_usage(usage: dict[str, Any] | None) -> Usage:
    """Anthropic usage as Usage: input_tokens made to include the cache reads and writes."""
    if not usage:
        return Usage()
    uncached = int(usage.get("input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    return Usage(input_tokens=uncached + read + written, output_tokens=int(usage.get("output_tokens") or 0),
                 cached_input_tokens=read, cache_creation_input_tokens=written)


def _response(blocks: list[dict[str, Any]], usage: dict[str, Any] | None, stop_reason: str | None,
              model: str) -> ModelResponse:
    text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
    calls = [ToolCall(id=b.get("id") or "", name=b.get("name") or "", arguments=parse_tool_arguments(b.get("input")))
             for b in blocks if b.get("type") == "tool_use"]
    return ModelResponse(message=Message(role="assistant", content=text, tool_calls=calls),
                         usage=parse_usage(usage), stop_reason=stop_reason, model=model)


def parse_message(data: dict[str, Any], *, fallback_model: str = "") -> ModelResponse:
    """A non-streamed Messages API response as a ModelResponse (stop reasons are already bosun's)."""
    blocks = [b for b in data.get("content") or [] if isinstance(b, dict)]
    return _response(blocks, data.get("usage"), data.get("stop_reason"), data.get("model") or fallback_model)


@dataclass
class _Block:
    type: str
    id: str = ""
    name: str = ""
    input: Any = None
    parts: list[str] = field(default_factory=list)
    """Text fragments (text blocks) or partial JSON fragments (tool_use blocks)."""


@dataclass
class StreamState:
    """Accumulates Messages API stream events into one response."""

    blocks: dict[int, _Block] = field(default_factory=dict)
    usage: dict[str, Any] = field(default_factory=dict)
    stop_reason: str | None = None
    model: str = ""
    done: bool = False

    def feed(self, kind: str, payload: dict[str, Any]) -> None:
        """Apply one event (``kind`` is its type); ``error`` events are the caller's to raise. Nothing after
        ``message_stop`` counts."""
        if self.done:
            return
        if kind == "message_start":
            message = payload.get("message") or {}
            self.model = message.get("model") or self.model
            self._merge_usage(message.get("usage"))
        elif kind == "content_block_start":
            start = payload.get("content_block") or {}
            self.blocks[int(payload.get("index", len(self.blocks)))] = _Block(
                type=start.get("type") or "", id=start.get("id") or "", name=start.get("name") or "",
                input=start.get("input"), parts=[start["text"]] if start.get("text") else [])
        elif kind == "content_block_delta":
            delta = payload.get("delta") or {}
            index = int(payload.get("index", 0))
            if delta.get("type") == "text_delta":
                self.blocks.setdefault(index, _Block(type="text")).parts.append(delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                self.blocks.setdefault(index, _Block(type="tool_use")).parts.append(delta.get("partial_json") or "")
        elif kind == "message_delta":
            self.stop_reason = (payload.get("delta") or {}).get("stop_reason") or self.stop_reason
            self._merge_usage(payload.get("usage"))
        elif kind == "message_stop":
            self.done = True
        # ping, content_block_stop and unknown events carry nothing to keep.

    def _merge_usage(self, usage: dict[str, Any] | None) -> None:
        # message_delta usage is cumulative: later values replace earlier ones, nulls do not.
        self.usage.update({k: v for k, v in (usage or {}).items() if v is not None})

    def response(self, *, fallback_model: str = "") -> ModelResponse:
        """The accumulated ModelResponse."""
        blocks: list[dict[str, Any]] = []
        for _, block in sorted(self.blocks.items()):
            if block.type == "text":
                blocks.append({"type": "text", "text": "".join(block.parts)})
            elif block.type == "tool_use":
                raw = "".join(block.parts)
                arguments = parse_tool_arguments(raw) if raw.strip() else parse_tool_arguments(block.input)
                blocks.append({"type": "tool_use", "id": block.id, "name": block.name, "input": arguments})
        return _response(blocks, self.usage, self.stop_reason, self.model or fallback_model)
