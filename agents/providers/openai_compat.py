"""The OpenAI Chat Completions provider: OpenAI, vLLM, Ollama, llama.cpp server, OpenRouter and kin.

Wire format (POST ``{base_url}/chat/completions``):

* messages: ``system`` / ``user`` text; ``assistant`` with ``tool_calls`` (``{"id", "type": "function",
  "function": {"name", "arguments": "<json text>"}}``, content null when empty); tool results as
  ``{"role": "tool", "tool_call_id", "content"}``. The format has no error flag for tool results, so a
  failed one (``is_error``) is sent with its content prefixed by ``ERROR: ``.
* tools: ``{"type": "function", "function": {"name", "description", "parameters"}}``; omitted when none.
* streaming: ``stream: true`` with ``stream_options: {"include_usage": true}``; ``data:`` chunks carry
  ``choices[0].delta`` (content, and ``tool_calls[i]`` whose ``function.arguments`` arrive in fragments
  keyed by ``index``), usage arrives in a last chunk with empty ``choices``, ``data: [DONE]`` ends it.
  A stream that ends without ``[DONE]`` is a retryable ProviderError.

Usage: ``input_tokens`` = ``prompt_tokens`` (already includes cached tokens), ``cached_input_tokens`` =
``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``).

Stop reasons: ``stop`` -> ``end_turn``, ``tool_calls``/``function_call`` -> ``tool_use``, ``length`` ->
``max_tokens``; others pass through raw. A turn that carries tool calls but says ``stop`` (some local
servers do) is reported as ``tool_use``.
"""

from __future__ import annotations

import json
import uuid
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

from agents.messages import Message, ModelResponse, ToolCall, ToolSpec, Usage
from agents.providers.base import Provider
from agents.providers.http import ProviderHTTP, parse_tool_arguments, raw_arguments_text

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
                 max_tokens_field: str = "max_tokens") -> None:
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.stream = stream
        self.max_tokens_field = max_tokens_field
        host = urlsplit(self.base_url).hostname or ""
        self.name = f"openai:{model}" if host == "api.openai.com" else f"openai-compatible:{self.base_url}#{model}"
        headers = {"authorization": f"Bearer {key}"} if key else {}
        headers.update(extra_headers or {})
        self._http = ProviderHTTP(label=self.name, base_url=self.base_url, headers=headers,
                                  timeout_s=timeout_s, secrets=[key])

    def __repr__(self) -> str:
        return f"OpenAICompatProvider(name={self.name!r}, stream={self.stream})"

    async def complete(self, messages: list[Message], tools: list[ToolSpec], *, max_tokens: int = 4096
                       ) -> ModelResponse:
        body = build_request(self.model, messages, tools, max_tokens=max_tokens, stream=self.stream,
                             max_tokens_field=self.max_tokens_field)
        if not self.stream:
            data = await self._http.post_json("/chat/completions", body)
            if "error" in data and not data.get("choices"):
                raise self._http.payload_error(data)
            if not data.get("choices"):
                raise self._http.malformed("the completion has no choices")
            return parse_completion(data, fallback_model=self.model)
        state = StreamState()
        async with aclosing(self._http.post_sse("/chat/completions", body)) as events:
            async for event in events:
                if event.data.strip() == "[DONE]":
                    state.done = True
                    break
                chunk = self._http.event_json(event)
                if chunk.get("error"):
                    raise self._http.payload_error(chunk)
                state.feed(chunk)
        if not state.done:
            raise self._http.malformed("the stream ended before its terminal 'data: [DONE]' line "
                                       "(connection cut or server error mid-generation)")
        return state.response(fallback_model=self.model)

    async def aclose(self) -> None:
        await self._http.aclose()


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
    done: bool = False

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
