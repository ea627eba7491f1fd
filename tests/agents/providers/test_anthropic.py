"""AnthropicProvider against a local fixture server speaking the Messages API wire format."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agents.messages import Message, ToolCall, ToolSpec
from agents.providers.anthropic import AnthropicProvider, build_request, parse_message
from infra.errors import ProviderError

from .fixture_server import FixtureServer, Reply, sse, sse_reply

KEY = "sk-ant-api03-TESTKEY-0123456789abcdefghij"
TOOLS = [
    ToolSpec(name="read_file", description="Read a file.",
             parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    ToolSpec(name="run", description="Run a command.",
             parameters={"type": "object", "properties": {"cmd": {"type": "string"}}}),
]
CONVERSATION = [
    Message(role="system", content="You are a coder."),
    Message(role="user", content="Fix the bug."),
    Message(role="assistant", content="Looking.", tool_calls=[
        ToolCall(id="toolu_a", name="read_file", arguments={"path": "a.py"}),
        ToolCall(id="toolu_b", name="run", arguments={"cmd": "pytest"}),
    ]),
    Message(role="tool", tool_call_id="toolu_a", name="read_file", content="print('hi')"),
    Message(role="tool", tool_call_id="toolu_b", name="run", content="exit 1", is_error=True),
]
USAGE = {"input_tokens": 20, "output_tokens": 15, "cache_read_input_tokens": 1000,
         "cache_creation_input_tokens": 300}


@pytest.fixture
async def make(server: FixtureServer) -> AsyncIterator:
    providers: list[AnthropicProvider] = []

    def factory(**kwargs: Any) -> AnthropicProvider:
        kwargs.setdefault("api_key", KEY)
        provider = AnthropicProvider("claude-test", base_url=server.url, **kwargs)
        providers.append(provider)
        return provider

    yield factory
    for provider in providers:
        await provider.aclose()


def ev(kind: str, **fields: Any) -> str:
    return sse({"type": kind, **fields}, event=kind)


def message_start(usage: dict | None = None) -> str:
    return ev("message_start", message={
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test-20250101",
        "stop_reason": None, "stop_sequence": None, "usage": usage or {"input_tokens": 20, "output_tokens": 1}})


def cache_marks(body: dict) -> list[str]:
    """Where cache_control was placed, as readable paths."""
    marks = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    marks += [f"system[{i}]" for i, s in enumerate(body.get("system", [])) if "cache_control" in s]
    for i, message in enumerate(body["messages"]):
        marks += [f"messages[{i}].content[{j}]" for j, b in enumerate(message["content"]) if "cache_control" in b]
    return marks


async def test_non_streaming_request_shape_and_usage(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-20250101",
        "content": [{"type": "text", "text": "Fixed."}], "stop_reason": "end_turn", "stop_sequence": None,
        "usage": USAGE}))
    response = await make(stream=False).complete(CONVERSATION, TOOLS, max_tokens=700)

    assert response.message == Message(role="assistant", content="Fixed.")
    assert response.stop_reason == "end_turn" and response.model == "claude-test-20250101"
    # input_tokens includes the cached prompt tokens: 20 uncached + 1000 read + 300 written.
    assert response.usage.model_dump() == {"input_tokens": 1320, "output_tokens": 15,
                                           "cached_input_tokens": 1000, "cache_creation_input_tokens": 300}
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert request.headers["x-api-key"] == KEY and "authorization" not in request.headers
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    body = request.json()
    assert body["model"] == "claude-test" and body["max_tokens"] == 700 and "stream" not in body
    eph = {"type": "ephemeral"}
    assert body["system"] == [{"type": "text", "text": "You are a coder.", "cache_control": eph}]
    assert body["tools"] == [
        {"name": "read_file", "description": "Read a file.", "input_schema": TOOLS[0].parameters},
        {"name": "run", "description": "Run a command.", "input_schema": TOOLS[1].parameters, "cache_control": eph},
    ]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug.", "cache_control": eph}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.py"}},
            {"type": "tool_use", "id": "toolu_b", "name": "run", "input": {"cmd": "pytest"}}]},
        {"role": "user", "content": [  # both results of the parallel calls, in one user message
            {"type": "tool_result", "tool_use_id": "toolu_a", "content": "print('hi')"},
            {"type": "tool_result", "tool_use_id": "toolu_b", "content": "exit 1", "is_error": True,
             "cache_control": eph}]},
    ]


def test_cache_breakpoints_never_exceed_four_and_can_be_disabled() -> None:
    long = CONVERSATION + [
        Message(role="assistant", content="Again.", tool_calls=[ToolCall(id="toolu_c", name="run", arguments={})]),
        Message(role="tool", tool_call_id="toolu_c", content="ok"),
        Message(role="user", content="Also check the docs."),
    ]
    body = build_request("m", long, TOOLS, max_tokens=10, stream=True)
    assert cache_marks(body) == ["tools[1]", "system[0]", "messages[2].content[1]", "messages[4].content[1]"]
    # The user's follow-up joined the tool results: tool_result first, then the text.
    assert [b["type"] for b in body["messages"][4]["content"]] == ["tool_result", "text"]

    no_tools = build_request("m", long, [], max_tokens=10, stream=True)
    assert cache_marks(no_tools) == ["system[0]", "messages[2].content[1]", "messages[4].content[1]"]
    first_turn = build_request("m", [Message(role="user", content="hi")], TOOLS, max_tokens=10, stream=True)
    assert cache_marks(first_turn) == ["tools[1]", "messages[0].content[0]"]

    off = build_request("m", long, TOOLS, max_tokens=10, stream=True, prompt_caching=False)
    assert "cache_control" not in json.dumps(off)


def test_translation_round_trip_and_odd_inputs() -> None:
    wire = {"id": "msg", "type": "message", "role": "assistant", "model": "m", "stop_reason": "tool_use",
            "content": [{"type": "text", "text": "Plan."},
                        {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"cmd": "ls"}},
                        {"type": "tool_use", "id": "toolu_2", "name": "read_file", "input": {"path": "x"}}],
            "usage": {"input_tokens": 5, "output_tokens": 6}}
    parsed = parse_message(wire)
    assert parsed.stop_reason == "tool_use"
    assert [c.id for c in parsed.message.tool_calls] == ["toolu_1", "toolu_2"]
    body = build_request("m", [Message(role="user", content="go"), parsed.message], [], max_tokens=1,
                         stream=False, prompt_caching=False)
    assert body["messages"][1] == {"role": "assistant", "content": wire["content"]}

    odd = [Message(role="system", content="A."), Message(role="user", content="go"),
           Message(role="system", content="B."),  # late system text joins the top-level system
           Message(role="assistant", content="", tool_calls=[ToolCall(id="call.1:x", name="run")]),
           Message(role="tool", tool_call_id="call.1:x", content="")]
    body = build_request("m", odd, [], max_tokens=1, stream=False, prompt_caching=False)
    assert body["system"] == [{"type": "text", "text": "A.\n\nB."}]
    assert body["messages"][1:] == [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1_x", "name": "run", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1_x"}]},
    ]


async def test_streaming_text_and_parallel_tool_use(server: FixtureServer, make) -> None:
    events = [
        message_start({"input_tokens": 20, "output_tokens": 1, "cache_read_input_tokens": 1000,
                       "cache_creation_input_tokens": 300}),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("ping"),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "Reading "}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "both ✓"}),
        ev("content_block_stop", index=0),
        ev("content_block_start", index=1, content_block={"type": "tool_use", "id": "toolu_1", "name": "read_file",
                                                          "input": {}}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": ""}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '{"path": "a'}),
        ev("content_block_delta", index=1, delta={"type": "input_json_delta", "partial_json": '.py"}'}),
        ev("content_block_stop", index=1),
        ev("content_block_start", index=2, content_block={"type": "tool_use", "id": "toolu_2", "name": "run",
                                                          "input": {}}),
        ev("content_block_stop", index=2),  # a call without arguments: no deltas at all
        ev("content_block_start", index=3, content_block={"type": "tool_use", "id": "toolu_3", "name": "run",
                                                          "input": {}}),
        ev("content_block_delta", index=3, delta={"type": "input_json_delta", "partial_json": '{"cmd": "l'}),
        ev("content_block_stop", index=3),
        ev("some_future_event", whatever=True),
        ev("message_delta", delta={"stop_reason": "tool_use", "stop_sequence": None}, usage={"output_tokens": 89}),
        ev("message_stop"),
    ]
    server.enqueue(sse_reply(events, split=7))
    response = await make().complete(CONVERSATION, TOOLS)
    assert response.message.content == "Reading both ✓"
    assert response.message.tool_calls == [
        ToolCall(id="toolu_1", name="read_file", arguments={"path": "a.py"}),
        ToolCall(id="toolu_2", name="run", arguments={}),
        ToolCall(id="toolu_3", name="run", arguments={"__raw__": '{"cmd": "l'}),
    ]
    assert response.stop_reason == "tool_use" and response.model == "claude-test-20250101"
    assert response.usage.model_dump() == {"input_tokens": 1320, "output_tokens": 89,
                                           "cached_input_tokens": 1000, "cache_creation_input_tokens": 300}
    body = server.requests[0].json()
    assert body["stream"] is True


async def test_streaming_max_tokens(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([
        message_start(),
        ev("content_block_start", index=0, content_block={"type": "text", "text": ""}),
        ev("content_block_delta", index=0, delta={"type": "text_delta", "text": "cut"}),
        ev("content_block_stop", index=0),
        ev("message_delta", delta={"stop_reason": "max_tokens"}, usage={"output_tokens": 3}),
        ev("message_stop")]))
    response = await make().complete([Message(role="user", content="hi")], [])
    assert (response.message.content, response.stop_reason) == ("cut", "max_tokens")
    assert (response.usage.input_tokens, response.usage.output_tokens) == (20, 3)


# -- errors -----------------------------------------------------------------------------------------


def error_body(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.parametrize("status", [500, 503, 529])
async def test_server_errors_are_retryable(server: FixtureServer, make, status: int) -> None:
    server.enqueue(Reply(status, error_body("overloaded_error" if status == 529 else "api_error", "Overloaded")))
    with pytest.raises(ProviderError, match="Overloaded") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable and caught.value.status == status and caught.value.retry_after is None


async def test_429_retry_after_http_date(server: FixtureServer, make) -> None:
    server.enqueue(Reply(429, error_body("rate_limit_error", "Number of request tokens has exceeded your limit"),
                         headers={"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}))
    with pytest.raises(ProviderError, match="rate_limit_error: Number of request tokens") as caught:
        await make(stream=False).complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable and caught.value.retry_after == 0  # a date in the past: retry now


async def test_429_retry_after_seconds(server: FixtureServer, make) -> None:
    server.enqueue(Reply(429, error_body("rate_limit_error", "slow down"), headers={"retry-after": "12"}))
    with pytest.raises(ProviderError) as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable and caught.value.retry_after == 12


@pytest.mark.parametrize(("status", "kind", "message"), [
    (400, "invalid_request_error", "messages.1.content.0.tool_use.id: String should match pattern"),
    (403, "permission_error", "Your API key does not have permission"),
    (404, "not_found_error", "model: claude-nope"),
])
async def test_client_errors_carry_the_provider_message(server: FixtureServer, make, status: int, kind: str,
                                                        message: str) -> None:
    server.enqueue(Reply(status, error_body(kind, message)))
    with pytest.raises(ProviderError) as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert not caught.value.retryable and caught.value.status == status
    assert f"{kind}: {message}" in str(caught.value)


async def test_401_echoing_the_key_is_redacted(server: FixtureServer, make) -> None:
    server.enqueue(Reply(401, error_body("authentication_error", f"invalid x-api-key: {KEY}")))
    provider = make()
    with pytest.raises(ProviderError, match="authentication_error: invalid x-api-key") as caught:
        await provider.complete([Message(role="user", content="hi")], [])
    assert not caught.value.retryable
    for text in (str(caught.value), repr(caught.value), repr(provider)):
        assert KEY not in text and "TESTKEY" not in text


@pytest.mark.parametrize(("kind", "retryable"), [("overloaded_error", True), ("invalid_request_error", False)])
async def test_error_event_mid_stream(server: FixtureServer, make, kind: str, retryable: bool) -> None:
    server.enqueue(sse_reply([message_start(), ev("ping"), sse(error_body(kind, "went wrong"), event="error")]))
    with pytest.raises(ProviderError, match=f"error in the response stream \\({kind}\\): went wrong") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable is retryable


async def test_malformed_sse_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([message_start(), "event: content_block_start\ndata: {\"type\": \n\n"]))
    with pytest.raises(ProviderError, match="malformed SSE stream.*not valid JSON") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_stream_without_message_stop_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([message_start(), ev("message_delta", delta={"stop_reason": "end_turn"})]))
    with pytest.raises(ProviderError, match="ended before its terminal 'message_stop'") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_mid_stream_disconnect_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([message_start(), ev("ping"), ev("message_stop")], drop_after=2))
    with pytest.raises(ProviderError, match="connection was lost mid-stream") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_timeout_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={}, delay_s=2))
    with pytest.raises(ProviderError, match="timed out after 0.2s") as caught:
        await make(timeout_s=0.2).complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_no_key_sends_no_key_header(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={"content": [], "stop_reason": "end_turn"}))
    response = await make(api_key=None, stream=False).complete([Message(role="user", content="hi")], [])
    assert "x-api-key" not in server.requests[0].headers and "authorization" not in server.requests[0].headers
    assert response.model == "claude-test" and response.message.content == ""
