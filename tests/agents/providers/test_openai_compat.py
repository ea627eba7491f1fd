"""OpenAICompatProvider against a local fixture server speaking the Chat Completions wire format."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator

import pytest

from agents.messages import Message, ToolCall, ToolSpec
from agents.providers.openai_compat import OpenAICompatProvider, to_wire_message
from infra.errors import ProviderError

from .fixture_server import FixtureServer, Reply, sse, sse_reply

KEY = "sk-proj-TESTKEY0123456789abcdef"
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
        ToolCall(id="call_a", name="read_file", arguments={"path": "a.py"}),
        ToolCall(id="call_b", name="run", arguments={"cmd": "pytest"}),
    ]),
    Message(role="tool", tool_call_id="call_a", name="read_file", content="print('hi')"),
    Message(role="tool", tool_call_id="call_b", name="run", content="exit 1", is_error=True),
]


@pytest.fixture
async def make(server: FixtureServer) -> AsyncIterator:
    providers: list[OpenAICompatProvider] = []

    def factory(**kwargs) -> OpenAICompatProvider:
        kwargs.setdefault("api_key", KEY)
        provider = OpenAICompatProvider(server.url + "/v1", "test-model", **kwargs)
        providers.append(provider)
        return provider

    yield factory
    for provider in providers:
        await provider.aclose()


def chunk(delta: dict | None = None, finish: str | None = None, usage: dict | None = None) -> str:
    choices = [] if delta is None and finish is None else [
        {"index": 0, "delta": delta or {}, "finish_reason": finish}]
    return sse({"id": "c1", "object": "chat.completion.chunk", "model": "test-model-2025",
                "choices": choices, "usage": usage})


USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
         "prompt_tokens_details": {"cached_tokens": 100}}


async def test_non_streaming_text_and_request_shape(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={
        "id": "c1", "object": "chat.completion", "model": "test-model-2025",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}],
        "usage": USAGE}))
    provider = make(stream=False, extra_headers={"HTTP-Referer": "https://bosun.dev"})
    response = await provider.complete(CONVERSATION, TOOLS, max_tokens=500)

    assert response.message == Message(role="assistant", content="Done.")
    assert response.stop_reason == "end_turn" and response.model == "test-model-2025"
    assert response.usage.model_dump() == {"input_tokens": 120, "output_tokens": 30,
                                           "cached_input_tokens": 100, "cache_creation_input_tokens": 0}
    request = server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["http-referer"] == "https://bosun.dev"
    body = request.json()
    assert body["model"] == "test-model" and body["max_tokens"] == 500
    assert "stream" not in body and "stream_options" not in body
    assert body["tools"][0] == {"type": "function", "function": {
        "name": "read_file", "description": "Read a file.", "parameters": TOOLS[0].parameters}}
    assert body["messages"] == [
        {"role": "system", "content": "You are a coder."},
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {"id": "call_b", "type": "function", "function": {"name": "run", "arguments": '{"cmd": "pytest"}'}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "print('hi')"},
        {"role": "tool", "tool_call_id": "call_b", "content": "ERROR: exit 1"},
    ]


async def test_non_streaming_parallel_tool_calls(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={"model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
            {"id": "call_2", "type": "function", "function": {"name": "run", "arguments": "{bad json"}}]}}]}))
    response = await make(stream=False).complete([Message(role="user", content="go")], TOOLS)
    assert response.stop_reason == "tool_use"
    assert response.message.content == ""
    assert response.message.tool_calls == [
        ToolCall(id="call_1", name="read_file", arguments={"path": "x"}),
        ToolCall(id="call_2", name="run", arguments={"__raw__": "{bad json"}),
    ]
    assert response.usage.input_tokens == 0  # no usage reported: zeros, not a failure


async def test_streaming_text_with_usage(server: FixtureServer, make) -> None:
    events = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Hel"}), chunk({"content": "lo ✓"}),
              ": keep-alive\n\n", chunk({}, finish="stop"), chunk(usage=USAGE), "data: [DONE]\n\n"]
    server.enqueue(sse_reply(events, split=5))  # cut mid-line and mid-character
    response = await make().complete([Message(role="user", content="hi")], [], max_tokens=64)
    assert response.message.content == "Hello ✓"
    assert response.stop_reason == "end_turn" and response.model == "test-model-2025"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cached_input_tokens) == (
        120, 30, 100)
    body = server.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "tools" not in body


async def test_streaming_parallel_tool_calls_with_fragmented_arguments(server: FixtureServer, make) -> None:
    def call(index: int, **fields) -> str:
        return chunk({"tool_calls": [{"index": index, **fields}]})

    events = [
        chunk({"role": "assistant", "content": "Reading both."}),
        call(0, id="call_1", type="function", function={"name": "read_file", "arguments": ""}),
        call(0, function={"arguments": '{"pa'}),
        call(1, id="call_2", type="function", function={"name": "run", "arguments": '{"cmd":'}),
        call(0, function={"arguments": 'th": "a.py"}'}),
        call(1, function={"arguments": ' "ls"}'}),
        call(2, id="call_3", type="function", function={"name": "run", "arguments": '{"cmd": "unterminated'}),
        chunk({}, finish="tool_calls"),
        chunk(usage={"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": None}),
        "data: [DONE]\n\n",
    ]
    server.enqueue(sse_reply(events))
    response = await make().complete([Message(role="user", content="go")], TOOLS)
    assert response.message.content == "Reading both."
    assert response.stop_reason == "tool_use"
    assert response.message.tool_calls == [
        ToolCall(id="call_1", name="read_file", arguments={"path": "a.py"}),
        ToolCall(id="call_2", name="run", arguments={"cmd": "ls"}),
        ToolCall(id="call_3", name="run", arguments={"__raw__": '{"cmd": "unterminated'}),
    ]
    assert (response.usage.input_tokens, response.usage.cached_input_tokens) == (10, 0)


async def test_streaming_tool_calls_without_index_and_stop_finish(server: FixtureServer, make) -> None:
    # Some local servers send each call whole, without ``index``, and finish with "stop".
    events = [chunk({"tool_calls": [{"id": "a", "function": {"name": "run", "arguments": '{"cmd": "1"}'}}]}),
              chunk({"tool_calls": [{"id": "b", "function": {"name": "run", "arguments": '{"cmd": "2"}'}}]}),
              chunk({}, finish="stop"), "data: [DONE]\n\n"]
    server.enqueue(sse_reply(events))
    response = await make().complete([Message(role="user", content="go")], TOOLS)
    assert [(c.id, c.arguments) for c in response.message.tool_calls] == [("a", {"cmd": "1"}), ("b", {"cmd": "2"})]
    assert response.stop_reason == "tool_use"


async def test_length_finish_is_max_tokens(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "trunc"}, finish="length"), "data: [DONE]\n\n"]))
    response = await make().complete([Message(role="user", content="go")], [])
    assert response.stop_reason == "max_tokens"


def test_translation_round_trip() -> None:
    """A parsed assistant turn translates back to the wire message it came from."""
    wire = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "run", "arguments": '{"cmd": "ls -la"}'}},
        {"id": "c2", "type": "function", "function": {"name": "run", "arguments": "not json"}}]}
    from agents.providers.openai_compat import parse_completion

    parsed = parse_completion({"choices": [{"message": wire, "finish_reason": "tool_calls"}]}).message
    assert parsed.tool_calls[1].arguments == {"__raw__": "not json"}
    assert to_wire_message(parsed) == wire  # raw arguments go back exactly as the model wrote them
    tool_result = Message(role="tool", tool_call_id="c1", content="ok")
    assert to_wire_message(tool_result) == {"role": "tool", "tool_call_id": "c1", "content": "ok"}


# -- errors -----------------------------------------------------------------------------------------


async def test_429_with_retry_after(server: FixtureServer, make) -> None:
    payload = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
    server.enqueue(Reply(429, {"error": payload}, headers={"retry-after": "7"}))
    with pytest.raises(ProviderError) as caught:
        await make().complete([Message(role="user", content="hi")], [])
    error = caught.value
    assert error.retryable and error.status == 429 and error.retry_after == 7
    assert "Rate limit reached" in str(error) and "retry after 7s" in str(error)


async def test_429_with_retry_after_ms(server: FixtureServer, make) -> None:
    server.enqueue(Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after-ms": "1500"}))
    with pytest.raises(ProviderError) as caught:
        await make(stream=False).complete([Message(role="user", content="hi")], [])
    assert caught.value.retry_after == 1.5


@pytest.mark.parametrize("status", [500, 502, 503])
async def test_5xx_is_retryable(server: FixtureServer, make, status: int) -> None:
    server.enqueue(Reply(status, "<html>upstream sick</html>", headers={"content-type": "text/html"}))
    with pytest.raises(ProviderError) as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable and caught.value.status == status
    assert "upstream sick" in str(caught.value)


@pytest.mark.parametrize(("status", "message"), [
    (400, "This model's maximum context length is 8192 tokens."),
    (404, "The model `nope` does not exist"),
    (422, "Unprocessable"),
])
async def test_client_errors_are_not_retryable(server: FixtureServer, make, status: int, message: str) -> None:
    server.enqueue(Reply(status, {"error": {"message": message, "type": "invalid_request_error"}}))
    with pytest.raises(ProviderError) as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert not caught.value.retryable and caught.value.status == status
    assert message in str(caught.value)


async def test_401_echoing_the_key_is_redacted(server: FixtureServer, make) -> None:
    server.enqueue(Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}. Also {KEY[:12]}...",
                                         "type": "invalid_request_error", "code": "invalid_api_key"}}))
    provider = make()
    with pytest.raises(ProviderError) as caught:
        await provider.complete([Message(role="user", content="hi")], [])
    error = caught.value
    assert not error.retryable and error.status == 401
    assert "Incorrect API key provided" in str(error) and "check the API key" in str(error)
    for text in (str(error), repr(error), repr(provider), repr(provider._client), repr(provider._failures)):
        assert KEY not in text and KEY[:12] not in text
    assert error.__cause__ is None and error.__context__ is None  # no chained exception holds the request


async def test_error_payload_mid_stream(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "par"}),
                              sse({"error": {"code": 502, "message": "Provider returned error"}})]))
    with pytest.raises(ProviderError, match="Provider returned error") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_malformed_sse_data_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "ok"}), "data: {\"choices\": [oops\n\n", "data: [DONE]\n\n"]))
    with pytest.raises(ProviderError, match="malformed SSE stream.*not valid JSON") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_stream_cut_before_its_choice_finished_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "ok"}), chunk({"content": " and"})]))
    with pytest.raises(ProviderError, match=r"ended before its last choice finished") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_a_finished_choice_without_done_is_the_answer(server: FixtureServer, make) -> None:
    """The SDK stops at ``data: [DONE]`` without telling whether it came: the choice's finish_reason is the
    terminal event bosun checks, so a server that leaves out [DONE] (or a cut after the last chunk) still answers."""
    server.enqueue(sse_reply([chunk({"content": "ok"}), chunk({}, finish="stop")]))
    response = await make().complete([Message(role="user", content="hi")], [])
    assert (response.message.content, response.stop_reason) == ("ok", "end_turn")


async def test_mid_stream_disconnect_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "a"}), chunk({"content": "b"}), "data: [DONE]\n\n"], drop_after=1))
    with pytest.raises(ProviderError, match="connection was lost mid-stream") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # nothing of the SDK chained


async def test_timeout_waiting_for_response_is_retryable(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={}, delay_s=2))
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out after 0.2s waiting for the response") as caught:
        await make(stream=False, timeout_s=0.2).complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable and time.monotonic() - started < 1.5


async def test_stall_mid_stream_times_out(server: FixtureServer, make) -> None:
    server.enqueue(sse_reply([chunk({"content": "a"}), "data: [DONE]\n\n"], chunk_delay_s=1))
    with pytest.raises(ProviderError, match="timed out .* waiting for the") as caught:
        await make(timeout_s=0.2).complete([Message(role="user", content="hi")], [])
    assert caught.value.retryable


async def test_connection_refused_is_retryable(server: FixtureServer) -> None:
    closed_port = server.port
    await server.close()
    provider = OpenAICompatProvider(f"http://127.0.0.1:{closed_port}/v1", "m", KEY)
    try:
        with pytest.raises(ProviderError, match="could not connect") as caught:
            await provider.complete([Message(role="user", content="hi")], [])
        assert caught.value.retryable
    finally:
        await provider.aclose()
    await server.start()  # the fixture closes it again


async def test_json_answer_to_a_stream_request(server: FixtureServer, make) -> None:
    server.enqueue(Reply(body={"choices": [{"message": {"content": "x"}}]}))
    with pytest.raises(ProviderError, match="stream=False") as caught:
        await make().complete([Message(role="user", content="hi")], [])
    assert not caught.value.retryable


async def test_name_and_max_tokens_field() -> None:
    remote = OpenAICompatProvider("https://api.openai.com/v1/", "gpt-5", None)
    local = OpenAICompatProvider("http://localhost:11434/v1", "qwen3", None)
    assert remote.name == "openai:gpt-5"
    assert local.name == "openai-compatible:http://localhost:11434/v1#qwen3"
    await remote.aclose()
    await local.aclose()
    from agents.providers.openai_compat import build_request

    body = build_request("m", [], [], max_tokens=9, stream=False, max_tokens_field="max_completion_tokens")
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body
    assert json.dumps(body)  # JSON-serialisable
