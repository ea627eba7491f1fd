"""A worker keeps one provider per endpoint (spec and credentials) with its connections open: an agent's second and
later turns open no new connection, over HTTPS to a local fixture with a certificate of a private authority; a
model switch or other credentials are another endpoint; the pool closes what it built."""

from __future__ import annotations

import ssl

import pytest
from pydantic import SecretStr
from temporalio.testing import ActivityEnvironment

from activities.agent import AgentActivities
from activities.models import ModelCallInput
from agents.messages import Message
from agents.providers import ProviderPool, make_provider, parse_spec
from infra.devcerts import issue, make_ca
from infra.settings import Settings

from .fixture_server import FixtureServer, sse_reply
from .test_openai_compat import chunk
from .test_provider_settings import HELLO

STREAMED_OK = sse_reply([chunk({"role": "assistant", "content": "ok"}), chunk({}, finish="stop"), "data: [DONE]\n\n"])


@pytest.fixture
async def https_server(tmp_path, monkeypatch):
    """An HTTPS fixture that keeps connections open and answers every request with a completion; the client trusts
    its authority through SSL_CERT_FILE, as a user of a self-hosted endpoint behind a private CA would."""
    ca = make_ca(tmp_path / "tls")
    cert = issue(ca, tmp_path / "tls", "server")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert.cert, cert.key)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.cert))
    server = FixtureServer(keep_alive=True, ssl=context)
    server.default = STREAMED_OK
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def test_later_turns_reuse_the_connection(https_server, tmp_path):
    pool = ProviderPool(Settings(data_dir=tmp_path))
    spec = parse_spec(f"openai-compatible:{https_server.url}/v1#m")
    try:
        first = pool.get(spec)
        for _ in range(3):
            assert pool.get(spec) is first
            assert (await pool.get(spec).complete(HELLO, [], max_tokens=5)).message.content == "ok"
    finally:
        await pool.aclose()
    assert len(https_server.requests) == 3 and https_server.connections == 1


async def test_a_provider_per_call_opens_a_connection_per_call(https_server, tmp_path):
    """What the pool saves: a provider built and closed per turn (the old way) connects every time."""
    spec = parse_spec(f"openai-compatible:{https_server.url}/v1#m")
    for _ in range(3):
        provider = make_provider(spec, settings=Settings(data_dir=tmp_path))
        try:
            await provider.complete(HELLO, [], max_tokens=5)
        finally:
            await provider.aclose()
    assert https_server.connections == 3


async def test_another_model_or_key_is_another_endpoint(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pool = ProviderPool(Settings(data_dir=tmp_path, openai_compatible_endpoints=SecretStr(
        '{"https://a.example/v1": {"api_key": "sk-aaaaaaaa"}, "https://b.example/v1": {"api_key": "sk-bbbbbbbb"}}')))
    a = pool.get(parse_spec("openai-compatible:https://a.example/v1#m1"))
    assert pool.get(parse_spec("openai-compatible:https://a.example/v1#m1")) is a
    assert pool.get(parse_spec("openai-compatible:https://a.example/v1#m2")) is not a  # a model switch
    assert pool.get(parse_spec("openai-compatible:https://b.example/v1#m1")) is not a  # other credentials
    assert len(pool) == 3
    assert "sk-aaaaaaaa" not in repr(a) and "sk-" not in repr(list(pool._providers))
    scripted = tmp_path / "t.jsonl"
    scripted.write_text('{"content": "done"}\n')
    assert pool.get(parse_spec(f"scripted:{scripted}")) is not pool.get(parse_spec(f"scripted:{scripted}"))
    assert len(pool) == 3  # the test double holds no connection and is not kept
    clients = [p._client for p in pool._providers.values()]
    await pool.aclose()
    assert len(pool) == 0 and all(c.is_closed() for c in clients)


async def test_an_agents_model_calls_share_one_connection(https_server, tmp_path):
    """Through the model-call activity, as a worker runs it: two turns of an agent, one connection."""
    acts = AgentActivities.standalone(Settings(data_dir=tmp_path / "data", sandbox_backend="bwrap"))
    transcript = acts.store.put_json([Message(role="system", content="s").model_dump(mode="json"),
                                      Message(role="user", content="hi").model_dump(mode="json")])
    env = ActivityEnvironment()
    try:
        for turn in (1, 2):
            out = await env.run(acts.model_call, ModelCallInput(
                agent_id="t/agent-1", turn=turn, model=f"openai-compatible:{https_server.url}/v1#m",
                transcript_ref=transcript, role="solo"))
            assert out.text_preview == "ok"
    finally:
        await acts.close()
    assert len(https_server.requests) == 2 and https_server.connections == 1


def test_a_provider_without_its_key_is_refused_at_once_naming_where_the_key_goes(tmp_path, monkeypatch):
    """No key for anthropic or openai on the worker: a final ProviderError (never retried; a fallback model of
    another provider is tried next) naming the variables and that the worker reads them when it starts; the
    worker's health tells which providers have a key; a gateway of the settings' own may need none."""
    from agents.providers import keyed
    from infra.errors import ProviderError
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "BOSUN_ANTHROPIC_API_KEY", "BOSUN_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings(data_dir=tmp_path)
    assert keyed(settings) == []
    for spec, names in (("anthropic:claude-sonnet-4-5", "BOSUN_ANTHROPIC_API_KEY or ANTHROPIC_API_KEY"),
                        ("openai:gpt-5", "BOSUN_OPENAI_API_KEY or OPENAI_API_KEY")):
        with pytest.raises(ProviderError) as e:
            ProviderPool(settings).get(parse_spec(spec))
        assert names in str(e.value) and "restart it" in str(e.value) and not e.value.retryable
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-vendor-variable")
    assert keyed(Settings(data_dir=tmp_path)) == ["openai"]
    assert keyed(Settings(data_dir=tmp_path, anthropic_api_key=SecretStr("sk-ant-x"))) == ["anthropic", "openai"]
    ProviderPool(settings).get(parse_spec("openai-compatible:http://127.0.0.1:9/v1#local"))  # needs no key
    gateway = Settings(data_dir=tmp_path, anthropic_base_url="http://127.0.0.1:9")
    ProviderPool(gateway).get(parse_spec("anthropic:claude-sonnet-4-5"))
