"""Provider settings reach the wire: keys and headers for openai-compatible endpoints (one key for all, or per base
URL), and base URLs for openai: and anthropic: (gateways, proxies). Against the local fixture server."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr

from agents.messages import Message
from agents.providers import endpoint_auth, make_provider, parse_spec
from infra.errors import ConfigError
from infra.settings import Settings, load_settings

from .fixture_server import FixtureServer, Reply

HELLO = [Message(role="user", content="hi")]
OPENAI_OK = {"id": "c1", "object": "chat.completion", "model": "m",
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
ANTHROPIC_OK = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1}}


def settings(tmp_path, **kw) -> Settings:
    return Settings(data_dir=tmp_path, **kw)


async def ask(provider) -> str:
    try:
        return (await provider.complete(HELLO, [], max_tokens=10)).message.content
    finally:
        await provider.aclose()


async def test_openai_compatible_sends_the_shared_key(server: FixtureServer, tmp_path):
    server.enqueue(Reply(body=OPENAI_OK))
    s = settings(tmp_path, openai_compatible_api_key=SecretStr("sk-shared"))
    provider = make_provider(parse_spec(f"openai-compatible:{server.url}/v1#m"), settings=s)
    provider.stream = False
    assert await ask(provider) == "ok"
    assert server.requests[0].headers["authorization"] == "Bearer sk-shared"


async def test_openai_compatible_without_a_key_sends_none(server: FixtureServer, tmp_path):
    server.enqueue(Reply(body=OPENAI_OK))
    provider = make_provider(parse_spec(f"openai-compatible:{server.url}/v1#m"), settings=settings(tmp_path))
    provider.stream = False
    assert await ask(provider) == "ok"
    assert "authorization" not in server.requests[0].headers


async def test_per_endpoint_key_and_headers_win_over_the_shared_key(server: FixtureServer, tmp_path):
    server.enqueue(Reply(body=OPENAI_OK))
    endpoints = {server.url: {"api_key": "sk-or-1", "headers": {"HTTP-Referer": "https://example.org",
                                                                 "X-Title": "bosun"}},
                 "https://elsewhere.example/v1": {"api_key": "sk-other"}}
    s = settings(tmp_path, openai_compatible_api_key=SecretStr("sk-shared"),
                 openai_compatible_endpoints=SecretStr(json.dumps(endpoints)))
    provider = make_provider(parse_spec(f"openai-compatible:{server.url}/v1#m"), settings=s)
    provider.stream = False
    assert await ask(provider) == "ok"
    headers = server.requests[0].headers
    assert headers["authorization"] == "Bearer sk-or-1" and headers["http-referer"] == "https://example.org"
    assert headers["x-title"] == "bosun"


def test_endpoint_matching_is_by_path_boundary_and_longest_prefix(tmp_path):
    endpoints = {"https://gw.example": {"api_key": "a"}, "https://gw.example/team/v1": {"api_key": "b"}}
    s = settings(tmp_path, openai_compatible_api_key=SecretStr("shared"),
                 openai_compatible_endpoints=SecretStr(json.dumps(endpoints)))
    assert endpoint_auth(s, "https://gw.example/v1")[0] == "a"
    assert endpoint_auth(s, "https://gw.example/team/v1/")[0] == "b"
    assert endpoint_auth(s, "https://gw.example.evil/v1")[0] == "shared"  # not a path boundary


async def test_anthropic_and_openai_base_urls_are_settings(server: FixtureServer, tmp_path):
    server.enqueue(Reply(body=ANTHROPIC_OK), Reply(body=OPENAI_OK))
    s = settings(tmp_path, anthropic_api_key=SecretStr("sk-ant-x"), anthropic_base_url=f"{server.url}/anthropic",
                 openai_api_key=SecretStr("sk-openai"), openai_base_url=f"{server.url}/openai/v1")
    claude = make_provider(parse_spec("anthropic:claude-sonnet-4-5"), settings=s)
    claude.stream = False
    gpt = make_provider(parse_spec("openai:gpt-5"), settings=s)
    gpt.stream = False
    assert await ask(claude) == "ok" and await ask(gpt) == "ok"
    assert [(r.path, r.headers.get("x-api-key"), r.headers.get("authorization")) for r in server.requests] == [
        ("/anthropic/v1/messages", "sk-ant-x", None), ("/openai/v1/chat/completions", None, "Bearer sk-openai")]


@pytest.mark.parametrize("value,message", [
    ("{not json", "not JSON"),
    ("[1]", "expected a JSON object"),
    ('{"ftp://x": {}}', "is not an http(s) base URL"),
    ('{"https://x": {"api_key": 5}}', "api_key for https://x must be a string"),
    ('{"https://x": {"key": "sk-secret-123"}}', "only 'api_key' and 'headers'"),
    ('{"https://x": {"headers": {"a": 1}}}', "must be an object of strings"),
])
def test_bad_endpoints_are_refused_without_echoing_secrets(monkeypatch, value, message):
    monkeypatch.setenv("BOSUN_OPENAI_COMPATIBLE_ENDPOINTS", value)
    with pytest.raises(ConfigError) as err:
        load_settings()
    text = str(err.value)
    assert text.startswith("BOSUN_OPENAI_COMPATIBLE_ENDPOINTS=(a secret, not shown) is invalid") and message in text
    assert "sk-secret-123" not in text
