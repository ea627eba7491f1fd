"""The OpenAI Chat Completions provider: OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter and kin.

Wire format (POST ``{base_url}/chat/completions``):

* messages: ``system`` / ``user`` text; ``assistant`` with ``tool_calls`` (``{"id", "type": "function",
  "function": {"name", "arguments": "<json text>"}}``, content null when empty); tool results as
  ``{"role": "tool", "tool_call_id", "content"}``. The format has no error flag for tool results, so a
  failed one (``is_error``) is sent with its content prefixed by ``ERROR: ``.
* tools: ``{"type": "function", "function": {"name", "description", "parameters"}}``; omitted when none.
* streaming: ``stream: true`` with ``stream_options: {"include_usage": true}``; chunks carry
  ``choices[0].delta`` (content, and ``tool_calls[i]`` whose ``function.arguments`` arrive in fragments
  keyed by ``index``), usage arrives in a last chunk with empty ``choices``, ``data: [DONE]`` ends it.
  The SDK reads the events and stops at ``[DONE]`` without saying whether it came, so the terminal event bosun
  checks is the first choice's ``finish_reason``: a stream that ends before it is a retryable ProviderError.

Over the ``openai`` SDK (``max_retries=0``: Temporal retries), with what the SDK would add from the environment
left out: no ``OPENAI_API_KEY`` sent to an endpoint configured without a key, no ``OpenAI-Organization`` or
``OpenAI-Project`` header.

Usage: ``input_tokens`` = ``prompt_tokens`` (already includes cached tokens), ``cached_input_tokens`` =
``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``).

Stop reasons: ``stop`` -> ``end_turn``, ``tool_calls``/``function_call`` -> ``tool_use``, ``length`` ->
``max_tokens``; others pass through raw. A turn that carries tool calls but says ``stop`` (some local
servers do) is reported as ``tool_use``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx2
from pydantic import SecretStr

from agents.messages import Message, ModelResponse, ToolCall, ToolSpec, Usage
from agents.providers.base import Provider
from agents.providers.sdk import (
    Failures,
    checked_base_url,
    http_client,
    parse_tool_arguments,
    plain,
    raw_arguments_text,
    secret_header_values,
)

_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                 "length": "max_tokens"}
TOOL_ERROR_PREFIX = "ERROR: "


class OpenAICompatProvider(Provider):
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` is the API root including the version (``https://api.openai.com/v1``,
    ``http://localhost:11434/v1``). ``api_key`` (optional for local servers) is sent as a bearer token.
    ``timeout_s`` bounds connecting and each read (a stream may take longer while tokens keep coming).
    ``max_tokens_field`` names the output-limit field: ``max_tokens`` (understood everywhere) or
    ``max_completion_tokens`` (required by OpenAI's reasoning models).
    """

    def __init__(self, base_url: str, model: str, api_key: str | SecretStr | None, *, stream: bool = True,
                 timeout_s: float = 120, extra_headers: dict[str, str] | None = None,
                 max_tokens_field: str = "max_tokens", transport: httpx2.AsyncBaseTransport | None = None) -> None:
        import openai  # the SDK is imported at the first real provider: the test double never pays for it

        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self.model = model
        self.stream = stream
        self.max_tokens_field = max_tokens_field
        url = base_url.rstrip("/")
        host = urlsplit(url).hostname or ""
        self.name = f"openai:{model}" if host == "api.openai.com" else f"openai-compatible:{url}#{model}"
        self.base_url = checked_base_url(self.name, url)
        headers = dict(extra_headers or {})
        self._failures = Failures(label=self.name, url=self.base_url + "/chat/completions", timeout_s=timeout_s,
                                  sdk=openai, secrets=[key, *secret_header_values(headers)])
        # Per call, what the SDK would take from the environment is left out (see the module's docstring).
        self._omit = {name: openai.Omit() for name in ("OpenAI-Organization", "OpenAI-Project")}
        if not key and not any(name.lower() == "authorization" for name in headers):
            self._omit["Authorization"] = openai.Omit()
        self._client = openai.AsyncOpenAI(api_key=key or "no-key", base_url=self.base_url, max_retries=0,
                                          timeout=timeout_s, default_headers=headers,
                                          http_client=http_client(timeout_s, transport))

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(name={self.name!r}, stream={self.stream})"

    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = 4096
                       ) -> ModelResponse:
        body = build_request(self.model, messages, tools, max_tokens=max_tokens, stream=self.stream,
                             max_tokens_field=self.max_tokens_field)
        answered, receiving, error = False, False, None
        try:
            answer = await self._client.chat.completions.create(**body, extra_headers=self._omit)
            answered = True
            if not self.stream:
                return self._completion(plain(answer))
            async with answer as chunks:
                if "json" in chunks.response.headers.get("content-type", ""):
                    raise self._failures.json_instead_of_stream(await chunks.response.aread())
                receiving, state = True, StreamState()
                async for chunk in chunks:
                    state.feed(plain(chunk))
        except self._failures.errors as exc:
            if not answered and not isinstance(exc, self._failures.call_errors):
                raise  # (bosun's own bug, e.g. a request the SDK does not take)
            error = self._failures.error(exc, mid_stream=receiving)
        if error is not None:  # raised outside the handler: the SDK's exception (the request, its headers) is not
            raise error        # even its __context__
        if state.finish_reason is None:
            raise self._failures.malformed("the stream ended before its last choice finished (no finish_reason): "
                                           "connection cut or server error mid-generation")
        return state.response(fallback_model=self.model)

    def _completion(self, data: dict[str, Any]) -> ModelResponse:
        if "error" in data and not data.get("choices"):
            raise self._failures.payload_error(data)
        if not data.get("choices"):
            raise self._failures.malformed("the completion has no choices")
        return parse_completion(data, fallback_model=self.model)

    async def aclose(self) -> None:
        await self._client.close()


# -- request ----------------------------------------------------------------------------------------


def build_request(model: str, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int,
                  stream: bool, max_tokens_field: str = "max_tokens") -> dict[str, Any]:
    """The JSON body of a ``/chat/completions`` request."""
    body: dict[str, Any] = {"model": model, "messages": [to_wire_message(m) for m in messages],
                            max_tokens_field: max_tokens}
    if tools:
        body["tools"] = [to_wire_tool(t) for t in tools]
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def to_wire_tool(tool: ToolSpec) -> dict[str, Any]:
    """A ToolSpec as an OpenAI function tool."""
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}


def to_wire_message(message: Message) -> dict[str, Any]:
    """One provider-neutral message as a Chat Completions message."""
    if message.role == "tool":
        content = message.content
        if message.is_error and not content.startswith(TOOL_ERROR_PREFIX):
            content = TOOL_ERROR_PREFIX + content
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": content}
    if message.role == "assistant" and message.tool_calls:
        return {"role": "assistant", "content": message.content or None,
                "tool_calls": [_wire_tool_call(call) for call in message.tool_calls]}
    return {"role": message.role, "content": message.content}


def _wire_tool_call(call: ToolCall) -> dict[str, Any]:
    raw = raw_arguments_text(call.arguments)
    arguments = raw if raw is not None else json.dumps(call.arguments, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


# -- response ---------------------------------------------------------------------------------------


def normalise_stop_reason(reason: str | None, has_tool_calls: bool) -> str | None:
    """Map a finish_reason to bosun's vocabulary (``end_turn``, ``tool_use``, ``max_tokens``, or raw)."""
    if has_tool_calls and reason in (None, "stop"):
        return "tool_use"
    if reason is None:
        return None
    return _STOP_REASONS.get(reason, reason)


def parse_usage(usage: dict[str, Any] | None) -> Usage:
    """Chat Completions usage as Usage (prompt_tokens already counts the cached tokens)."""
    if not usage:
        return Usage()
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") or usage.get("prompt_cache_hit_tokens") or 0
    return Usage(input_tokens=int(usage.get("prompt_tokens") or 0),
                 output_tokens=int(usage.get("completion_tokens") or 0),
                 cached_input_tokens=int(cached))


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a content-part list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text") or "" for part in content
                       if isinstance(part, dict) and part.get("type") in (None, "text"))
    return ""


def _call_id(value: Any) -> str:
    return value if isinstance(value, str) and value else f"call_{uuid.uuid4().hex[:24]}"


def parse_completion(data: dict[str, Any], *, fallback_model: str = "") -> ModelResponse:
    """A non-streamed ``chat.completion`` object as a ModelResponse (first choice)."""
    choice = data["choices"][0]
    wire = choice.get("message") or {}
    calls = []
    for item in wire.get("tool_calls") or []:
        function = item.get("function") or {}
        if item.get("type", "function") != "function":
            continue
        calls.append(ToolCall(id=_call_id(item.get("id")), name=function.get("name") or "",
                              arguments=parse_tool_arguments(function.get("arguments"))))
    content = _text(wire.get("content")) or (wire.get("refusal") or "")
    return ModelResponse(
        message=Message(role="assistant", content=content, tool_calls=calls),
        usage=parse_usage(data.get("usage")),
        stop_reason=normalise_stop_reason(choice.get("finish_reason"), bool(calls)),
        model=data.get("model") or fallback_model)


@dataclass
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamState:
    """Accumulates ``chat.completion.chunk`` objects into one response."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    model: str = ""

    def feed(self, chunk: dict[str, Any]) -> None:
        """Apply one chunk (choices other than index 0 are ignored)."""
        if chunk.get("model"):
            self.model = chunk["model"]
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            content = _text(delta.get("content")) or delta.get("refusal")
            if isinstance(content, str) and content:
                self.text.append(content)
            for fragment in delta.get("tool_calls") or []:
                self._feed_call(fragment)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]

    def _feed_call(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        frag_id = fragment.get("id")
        if not isinstance(index, int):
            # Some servers omit ``index``: a new id opens a new call, anything else continues the last.
            known = {call.id for call in self.calls.values()}
            if not self.calls or (frag_id and frag_id not in known):
                index = max(self.calls, default=-1) + 1
            else:
                index = max(self.calls)
        call = self.calls.setdefault(index, _PartialCall())
        if frag_id and not call.id:
            call.id = frag_id
        function = fragment.get("function") or {}
        name = function.get("name")
        if name and name != call.name:
            # Normally the whole name comes once; tolerate servers that repeat it or send it in pieces.
            call.name = name if name.startswith(call.name) else call.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments, ensure_ascii=False)
        if isinstance(arguments, str) and arguments:
            call.arguments.append(arguments)

    def response(self, *, fallback_model: str = "") -> ModelResponse:
        """The accumulated ModelResponse."""
        calls = [ToolCall(id=_call_id(call.id), name=call.name,
                          arguments=parse_tool_arguments("".join(call.arguments)))
                 for _, call in sorted(self.calls.items())]
        return ModelResponse(
            message=Message(role="assistant", content="".join(self.text), tool_calls=calls),
            usage=parse_usage(self.usage),
            stop_reason=normalise_stop_reason(self.finish_reason, bool(calls)),
            model=self.model or fallback_model)
