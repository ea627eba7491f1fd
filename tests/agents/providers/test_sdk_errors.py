"""What both SDK-backed providers share: retry-after parsing, status classification, error extraction, redaction,
and the one map from the SDKs' errors to ProviderError, driven through each provider over httpx2.MockTransport (the
network swapped out, the SDK and the wire format real)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

import httpx2
import pytest

from agents.messages import Message
from agents.providers.anthropic import AnthropicProvider
from agents.providers.openai_compat import OpenAICompatProvider
from agents.providers.sdk import (
    REDACTED,
    extract_error,
    is_retryable_status,
    parse_retry_after,
    parse_tool_arguments,
    redact,
)
from infra.errors import ConfigError, ProviderError

KEY = "sk-test-0123456789abcdefSECRET"


def test_parse_retry_after() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25  # ms wins
    assert parse_retry_after({"retry-after-ms": "junk", "retry-after": "9"}) == 9
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now=now) == 30
    assert parse_retry_after({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, now=now) == 0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None
    assert parse_retry_after(httpx2.Headers({"Retry-After": "3"})) == 3  # case-insensitive headers


@pytest.mark.parametrize(("status", "retryable"), [
    (400, False), (401, False), (403, False), (404, False), (413, False), (422, False),
    (408, True), (409, True), (429, True), (500, True), (502, True), (503, True), (529, True),
])
def test_status_classification(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable


@pytest.mark.parametrize(("body", "expected"), [
    ({"error": {"message": "bad model", "type": "invalid_request_error", "code": None}},
     ("invalid_request_error", "bad model")),
    ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
     ("overloaded_error", "Overloaded")),
    ({"error": "model 'x' not found"}, (None, "model 'x' not found")),  # Ollama
    ({"object": "error", "message": "too long", "type": "BadRequestError", "code": 400},
     ("BadRequestError", "too long")),  # vLLM
    ({"detail": [{"loc": ["body"], "msg": "field required"}]},
     (None, '[{"loc": ["body"], "msg": "field required"}]')),
    ([{"error": {"code": 429, "message": "quota"}}], ("429", "quota")),
    ("plain", (None, None)),
])
def test_extract_error_dialects(body: object, expected: tuple[str | None, str | None]) -> None:
    assert extract_error(body) == expected


def test_redact_exact_truncated_and_key_shaped() -> None:
    assert redact(f"bad key {KEY}!", [KEY]) == f"bad key {REDACTED}!"
    assert KEY[:20] not in redact(f"key starts {KEY[:20]}... wrong", [KEY])
    assert redact("Authorization: Bearer abcdefgh12345678", []) == f"Authorization: Bearer {REDACTED}"
    assert redact("got sk-ant-api03-zzzzzzzzzzzz", []) == f"got {REDACTED}"
    assert redact("nothing secret here", [None, ""]) == "nothing secret here"


def test_parse_tool_arguments() -> None:
    assert parse_tool_arguments('{"a": 1}') == {"a": 1}
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments(None) == {}
    assert parse_tool_arguments({"b": 2}) == {"b": 2}
    assert parse_tool_arguments('{"a": ') == {"__raw__": '{"a": '}
    assert parse_tool_arguments("[1]") == {"__raw__": "[1]"}


HI = [Message(role="user", content="hi")]
Handler = Callable[[httpx2.Request], httpx2.Response]


def openai_on(handler: Handler, **kwargs) -> OpenAICompatProvider:
    kwargs.setdefault("api_key", KEY)
    return OpenAICompatProvider("http://llm.test/v1", "m", transport=httpx2.MockTransport(handler), **kwargs)


def anthropic_on(handler: Handler, **kwargs) -> AnthropicProvider:
    return AnthropicProvider("claude-x", kwargs.pop("api_key", KEY), base_url="http://claude.test",
                             transport=httpx2.MockTransport(handler), **kwargs)


PROVIDERS = {"openai": openai_on, "anthropic": anthropic_on}


def stream(*events: str) -> httpx2.Response:
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content="".join(events).encode())


async def fails(provider, **kwargs) -> ProviderError:
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(HI, [], **kwargs)
    finally:
        await provider.aclose()
    error = caught.value  # nothing chained holds the request (and its headers)
    assert error.__cause__ is None and error.__context__ is None
    return error


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize(("status", "retryable"), [(400, False), (401, False), (403, False), (404, False),
                                                   (413, False), (422, False), (408, True), (409, True),
                                                   (429, True), (500, True), (503, True), (529, True)])
async def test_every_status_is_one_class(kind, status, retryable):
    body = {"type": "error", "error": {"type": "some_error", "message": f"the server says {status}"}}
    error = await fails(PROVIDERS[kind](lambda request: httpx2.Response(status, json=body)))
    assert (error.status, error.retryable) == (status, retryable)
    assert f"HTTP {status} some_error: the server says {status}" in str(error)
    assert error.kind == "ProviderError"


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize(("headers", "after"), [({"retry-after": "7"}, 7), ({"retry-after-ms": "1500"}, 1.5),
                                                ({"retry-after": "soon"}, None)])
async def test_retry_after_is_honoured(kind, headers, after):
    error = await fails(PROVIDERS[kind](lambda request: httpx2.Response(429, headers=headers, json={})))
    assert error.retryable and error.retry_after == after


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_key_echoed_anywhere_is_redacted_in_the_error_and_the_log(kind, caplog):
    echo = {"error": {"type": "authentication_error", "message": f"invalid key {KEY}, or {KEY[:12]}..."}}
    provider = PROVIDERS[kind](lambda request: httpx2.Response(401, json=echo))
    with caplog.at_level(logging.DEBUG):
        error = await fails(provider)
    assert "invalid key" in str(error) and "check the API key" in str(error)
    for text in (str(error), repr(error), repr(provider), caplog.text):
        assert KEY not in text and KEY[:12] not in text
    assert REDACTED in caplog.text


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_no_key_sends_no_credential_even_with_the_vendors_variables_set(kind, monkeypatch):
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_ORG_ID"):
        monkeypatch.setenv(name, "sk-from-the-environment-0123456789")
    seen: list[httpx2.Headers] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request.headers)
        return httpx2.Response(500, json={})
    await fails(PROVIDERS[kind](answer, api_key=None))
    assert not {"authorization", "x-api-key", "openai-organization"} & {k.lower() for k in seen[0]}
    assert "sk-from-the-environment" not in str(seen[0])


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_connection_refused_is_retryable_and_names_the_endpoint(kind):
    def refuse(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused", request=request)
    error = await fails(PROVIDERS[kind](refuse))
    assert error.retryable and "could not connect to http://" in str(error) and "Connection refused" in str(error)


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_read_timeout_is_retryable(kind):
    def stall(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)
    error = await fails(PROVIDERS[kind](stall, timeout_s=3))
    assert error.retryable and "timed out after 3s waiting for the response" in str(error)


class _Cut(httpx2.AsyncByteStream):
    """A body that sends its first events and then loses the connection."""

    def __init__(self, first: str) -> None:
        self.first = first

    async def __aiter__(self):
        yield self.first.encode()
        raise httpx2.ReadError("peer closed the connection")


OPENAI_PART = 'data: {"choices": [{"index": 0, "delta": {"content": "par"}}]}\n\n'
ANTHROPIC_PART = ('event: message_start\ndata: {"type": "message_start", "message": {"model": "claude-x"}}\n\n'
                  'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, '
                  '"delta": {"type": "text_delta", "text": "par"}}\n\n')
PART = {"openai": OPENAI_PART, "anthropic": ANTHROPIC_PART}


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_stream_without_its_terminal_event_is_retryable(kind):
    error = await fails(PROVIDERS[kind](lambda request: stream(PART[kind])))
    assert error.retryable and "malformed response: the stream ended before" in str(error)


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_connection_lost_mid_stream_is_retryable(kind):
    cut = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=_Cut(PART[kind]))
    error = await fails(PROVIDERS[kind](lambda request: cut))
    assert error.retryable and "the connection was lost mid-stream (ReadError" in str(error)


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_bad_json_in_a_stream_is_retryable(kind):
    bad = "event: content_block_delta\ndata: {\"choices\": [oops\n\n"
    error = await fails(PROVIDERS[kind](lambda request: stream(PART[kind], bad)))
    assert error.retryable and "malformed SSE stream" in str(error) and "not valid JSON" in str(error)


@pytest.mark.parametrize(("kind", "event", "retryable"), [
    ("anthropic", 'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'
                  "\n\n", True),
    ("anthropic", 'event: error\ndata: {"type": "error", "error": {"type": "invalid_request_error", '
                  '"message": "bad"}}\n\n', False),
    ("openai", 'data: {"error": {"code": 502, "message": "Provider returned error"}}\n\n', True),  # OpenRouter
    ("openai", 'data: {"error": {"type": "invalid_request_error", "message": "bad"}}\n\n', False),
])
async def test_an_error_event_in_a_200_stream(kind, event, retryable):
    error = await fails(PROVIDERS[kind](lambda request: stream(PART[kind], event)))
    assert error.retryable is retryable and "error in the response stream" in str(error)


@pytest.mark.parametrize(("body", "message"), [
    ({"error": "model 'qwen' not found, try pulling it first"}, "model 'qwen' not found"),  # Ollama
    ({"object": "error", "message": "maximum context length is 4096", "type": "BadRequestError", "code": 400},
     "BadRequestError: maximum context length is 4096"),  # vLLM
    ({"error": {"code": 400, "message": "the request exceeds the available context size", "type":
     "exceed_context_size_error"}}, "exceed_context_size_error: the request exceeds"),  # llama.cpp server
    ({"detail": "Not Found"}, "Not Found"),  # a FastAPI gateway
    ("<html>bad gateway</html>", "<html>bad gateway</html>"),
])
async def test_openai_compatible_servers_error_dialects(body, message):
    def answer(request: httpx2.Request) -> httpx2.Response:
        if isinstance(body, str):
            return httpx2.Response(400, text=body)
        return httpx2.Response(400, json=body)
    error = await fails(openai_on(answer))
    assert message in str(error) and not error.retryable


def test_base_url_needs_a_scheme() -> None:
    with pytest.raises(ConfigError, match="must start with http"):
        OpenAICompatProvider("localhost:8000/v1", "m", None)
    with pytest.raises(ConfigError, match="must start with http"):
        AnthropicProvider("m", None, base_url="api.anthropic.com")


@pytest.mark.parametrize("kind", PROVIDERS)
@pytest.mark.parametrize("answer", [
    httpx2.Response(200, text="hello"), httpx2.Response(200, json=[1]), httpx2.Response(200, json={"choices": "x"}),
    httpx2.Response(200, json={"content": 5}), httpx2.Response(200, json={"choices": [{"message": "x"}]}),
    httpx2.Response(200, headers={"content-type": "application/json"}, content=b"{bad"),
], ids=["text", "list", "choices-str", "content-int", "message-str", "bad-json"])
async def test_an_answer_of_another_shape_is_a_retryable_malformed_response(kind, answer):
    """What a server sends is hostile: whatever shape it has, the call ends in a ProviderError, never in another
    exception (which would end the activity with a bug's traceback)."""
    error = await fails(PROVIDERS[kind](lambda request: answer, stream=False))
    assert error.retryable and "malformed response" in str(error)


@pytest.mark.parametrize(("kind", "event"), [
    ("openai", "data: [1]\n\n"), ("openai", 'data: {"choices": [{"delta": "x"}]}\n\n'),
    ("openai", 'data: {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": 7}]}}]}\n\n'),
    ("anthropic", 'event: content_block_start\ndata: {"type": "content_block_start", "index": "x"}\n\n'),
    ("anthropic", 'event: message_delta\ndata: {"type": "message_delta", "delta": [], "usage": 3}\n\n'),
])
async def test_a_stream_event_of_another_shape_is_a_retryable_malformed_response(kind, event):
    error = await fails(PROVIDERS[kind](lambda request: stream(PART[kind], event)))
    assert error.retryable and "malformed response" in str(error)


@pytest.mark.parametrize("kind", PROVIDERS)
async def test_a_request_the_sdk_refuses_is_a_bug_not_a_provider_error(kind, monkeypatch):
    """A TypeError before any answer is in hand is bosun's own (a request the SDK does not take): it propagates as
    it is, and is not retried as a malformed answer. No request reaches the server."""
    module = __import__(f"agents.providers.{'openai_compat' if kind == 'openai' else 'anthropic'}",
                        fromlist=["build_request"])
    real = module.build_request
    monkeypatch.setattr(module, "build_request", lambda *a, **kw: {**real(*a, **kw), "no_such_parameter": 1})
    sent: list[httpx2.Request] = []
    provider = PROVIDERS[kind](lambda request: sent.append(request) or httpx2.Response(500))
    try:
        with pytest.raises(TypeError, match="no_such_parameter"):
            await provider.complete(HI, [])
    finally:
        await provider.aclose()
    assert sent == []
