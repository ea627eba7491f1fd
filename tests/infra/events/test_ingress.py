"""The ingress against a real nats-server with JetStream: accepted deliveries land in the stream exactly as sent;
every malformed or unauthenticated delivery gets a precise 4xx and publishes nothing."""

from __future__ import annotations

import json
import time

import nats
import pytest

from infra.artifacts import ArtifactStore
from infra.events import bus
from tests.infra.events.conftest import make_cfg, running_ingress, stream_messages
from tests.infra.events.samples import (
    GH_SECRET,
    LINEAR_SECRET,
    github_request,
    issues_labeled,
    linear_agent_session,
    linear_request,
)

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


async def last_message(settings, subject: str = "events.>"):
    nc = await nats.connect(settings.nats_target)
    try:
        js = nc.jetstream()
        return await js.get_last_msg("EVENTS", subject)
    finally:
        await nc.close()


async def test_healthz_and_accepted_github_delivery(settings, cfg):
    async with running_ingress(settings, cfg) as ing:
        health = await ing.http.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok", "nats": "connected",
                                                               "stream": "EVENTS"}
        body, headers = github_request("issues", issues_labeled(), delivery="72d3162e-cc78-11e3-81ab-4c9367dc0958")
        r = await ing.github(body, {**headers, "traceparent": TRACEPARENT})
        assert r.status_code == 200, r.text
        assert r.json()["accepted"] is True and r.json()["duplicate"] is False
        assert r.json()["subject"] == "events.github.issues"
    msg = await last_message(settings)
    assert msg.subject == "events.github.issues"
    assert msg.data == body  # the raw body, byte for byte
    assert msg.headers[bus.H_MSG_ID] == "72d3162e-cc78-11e3-81ab-4c9367dc0958"
    assert msg.headers[bus.H_SOURCE] == "github" and msg.headers[bus.H_EVENT] == "issues"
    # the incoming trace continues: same trace id, a new span id
    assert msg.headers["traceparent"].startswith("00-0af7651916cd43dd8448eb211c80319c-")
    assert msg.headers["traceparent"] != TRACEPARENT


async def test_a_trace_is_started_when_none_comes_in(settings, cfg):
    async with running_ingress(settings, cfg) as ing:
        body, headers = linear_request(linear_agent_session())
        assert (await ing.linear(body, headers)).status_code == 200
    msg = await last_message(settings)
    assert msg.subject == "events.linear.AgentSessionEvent"
    assert msg.headers["traceparent"].startswith("00-") and len(msg.headers["traceparent"]) == 55


def _flip(body: bytes, index: int) -> bytes:
    b = bytearray(body)
    b[index] ^= 0x01
    return bytes(b)


def github_cases():
    body, good = github_request("issues", issues_labeled())
    sig = good["X-Hub-Signature-256"]
    no = {k: v for k, v in good.items()}

    def without(*names):
        return {k: v for k, v in no.items() if k not in names}

    sha1 = "sha1=" + "0" * 40
    return [
        ("missing signature", body, without("X-Hub-Signature-256"), 401, "missing header X-Hub-Signature-256"),
        ("only the sha1 header", body, {**without("X-Hub-Signature-256"), "X-Hub-Signature": sha1}, 401,
         "only the legacy SHA-1 header"),
        ("sha1= signature", body, {**good, "X-Hub-Signature-256": sha1}, 401, "uses 'sha1'"),
        ("no algorithm prefix", body, {**good, "X-Hub-Signature-256": sig[7:]}, 401, "expected the form 'sha256="),
        ("truncated hex", body, {**good, "X-Hub-Signature-256": sig[:-2]}, 401, "got 62 characters"),
        ("wrong secret", body, github_request("issues", body, secret="not the secret")[1], 401,
         "does not match the body"),
        ("one flipped byte in the body", _flip(body, 40), good, 401, "does not match the body"),
        ("one flipped byte in the signature", body,
         {**good, "X-Hub-Signature-256": sig[:-1] + ("0" if sig[-1] != "0" else "1")}, 401, "does not match"),
        ("missing event header", body, without("X-GitHub-Event"), 400, "missing header X-GitHub-Event"),
        ("event header not a token", body, {**good, "X-GitHub-Event": "issues.>"}, 400,
         "header X-GitHub-Event='issues.>' is not an event name"),
        ("missing delivery id", body, without("X-GitHub-Delivery"), 400, "missing header X-GitHub-Delivery"),
        ("delivery id with spaces", body, {**good, "X-GitHub-Delivery": "a b"}, 400, "is not a delivery id"),
        ("form-encoded body", body, {**good, "Content-Type": "application/x-www-form-urlencoded"}, 415,
         "expected 'application/json'"),
        ("malformed JSON", b'{"action": "labeled",', github_request("issues", b'{"action": "labeled",')[1], 400,
         "the body is not valid JSON"),
        ("JSON array", b"[1, 2]", github_request("issues", b"[1, 2]")[1], 400, "the body is JSON list"),
        ("empty body", b"", github_request("issues", b"")[1], 400, "the body is empty"),
        ("not UTF-8", b'{"a": "\xff"}', github_request("issues", b'{"a": "\xff"}')[1], 400, "not UTF-8"),
        *[(name, b, github_request("issues", b)[1], 400, msg) for name, b, msg in hostile_json()],
    ]


def hostile_json() -> list[tuple[str, bytes, str]]:
    """Signed bodies that Python's json module would choke on or accept although they are not JSON."""
    return [
        ("nested 5,000 deep", b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}", "nested too deeply"),
        ("objects nested 5,000 deep", b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nested too deeply"),
        ("a 5,000-digit number", b'{"action": "labeled", "n": ' + b"9" * 5000 + b"}", "a number of 5000 digits"),
        ("NaN", b'{"action": "labeled", "n": NaN}', "NaN is not JSON"),
        ("Infinity", b'{"n": -Infinity}', "-Infinity is not JSON"),
        ("a float that overflows", b'{"n": 1e999}', "overflows a double"),
    ]


@pytest.mark.parametrize("name,body,headers,status,message", github_cases(), ids=[c[0] for c in github_cases()])
async def test_bad_github_delivery_is_refused_and_publishes_nothing(settings, cfg, name, body, headers, status,
                                                                    message):
    async with running_ingress(settings, cfg) as ing:
        before = await stream_messages(settings)
        r = await ing.github(body, headers)
        assert r.status_code == status, r.text
        assert message in r.json()["error"], r.json()
        assert await stream_messages(settings) == before


def linear_cases():
    now_ms = int(time.time() * 1000)
    body, good = linear_request(linear_agent_session())

    def signed(payload):
        return linear_request(payload)

    def without(*names):
        return {k: v for k, v in good.items() if k not in names}

    no_ts = linear_agent_session()
    del no_ts["webhookTimestamp"]
    return [
        ("missing signature", body, without("Linear-Signature"), 401, "missing header Linear-Signature"),
        ("sha256= prefixed signature", body, {**good, "Linear-Signature": "sha256=" + good["Linear-Signature"]}, 401,
         "expected 64 hex digits"),
        ("wrong secret", body, linear_request(body, secret="nope")[1], 401, "does not match the body"),
        ("one flipped byte", _flip(body, 25), good, 401, "does not match the body"),
        ("replayed (61 s old)", *signed(linear_agent_session(ts_ms=now_ms - 61_000)), 401, "s in the past"),
        ("from the future (61 s ahead)", *signed(linear_agent_session(ts_ms=now_ms + 61_000)), 401,
         "s in the future"),
        ("a day old", *signed(linear_agent_session(ts_ms=now_ms - 86_400_000)), 401, "refused as replays"),
        ("missing timestamp", *signed(no_ts), 400, "field webhookTimestamp is missing"),
        ("timestamp not a number", *signed({**linear_agent_session(), "webhookTimestamp": "yesterday"}), 400,
         "is not a number"),
        ("missing delivery id", body, without("Linear-Delivery"), 400, "missing header Linear-Delivery"),
        ("missing event header", body, without("Linear-Event"), 400, "missing header Linear-Event"),
        ("malformed JSON", *linear_request(b"{not json}", event="Issue"), 400, "the body is not valid JSON"),
        ("timestamp NaN", *linear_request(json.dumps({**linear_agent_session(), "webhookTimestamp": "@"}).encode()
                                          .replace(b'"@"', b"NaN")), 400, "NaN is not JSON"),
        ("timestamp of 400 nines", *signed({**linear_agent_session(), "webhookTimestamp": int("9" * 400)}), 400,
         "a number of 400 digits"),
        ("timestamp of 99 nines", *signed({**linear_agent_session(), "webhookTimestamp": int("9" * 99)}), 400,
         "is not a time"),
        ("timestamp 1e308", *signed({**linear_agent_session(), "webhookTimestamp": 1e308}), 400, "is not a time"),
        *[(f"linear {name}", *linear_request(b), 400, msg) for name, b, msg in hostile_json()],
    ]


@pytest.mark.parametrize("name", [c[0] for c in linear_cases()])
async def test_bad_linear_delivery_is_refused_and_publishes_nothing(settings, cfg, name):
    async with running_ingress(settings, cfg) as ing:
        # built now, not at collection time: the timestamps are relative to the moment of sending
        _, body, headers, status, message = next(c for c in linear_cases() if c[0] == name)
        before = await stream_messages(settings)
        r = await ing.linear(body, headers)
        assert r.status_code == status, r.text
        assert message in r.json()["error"], r.json()
        assert await stream_messages(settings) == before


async def test_timestamps_just_inside_the_window_are_accepted(settings, cfg):
    now_ms = int(time.time() * 1000)
    async with running_ingress(settings, cfg) as ing:
        for ts in (now_ms - 55_000, now_ms + 55_000):
            r = await ing.linear(*linear_request(linear_agent_session(ts_ms=ts)))
            assert r.status_code == 200, r.text
    assert await stream_messages(settings) == 2


async def test_oversized_bodies_get_413_and_publish_nothing(settings):
    cfg = make_cfg(max_body_bytes=64 * 1024)
    big = json.dumps({"action": "labeled", "pad": "x" * 70_000}).encode()
    async with running_ingress(settings, cfg) as ing:
        r = await ing.github(*github_request("issues", big))  # Content-Length says too much
        assert r.status_code == 413 and "more than the limit of 65536 bytes" in r.json()["error"]

        async def chunks():  # no Content-Length: the limit is enforced while reading
            for i in range(0, len(big), 8192):
                yield big[i:i + 8192]

        _, headers = github_request("issues", big)
        r = await ing.http.post("/webhooks/github", content=chunks(), headers=headers)
        assert r.status_code == 413 and "exceeds the limit of 65536 bytes" in r.json()["error"]
    assert await stream_messages(settings) == 0


async def test_body_over_the_message_limit_travels_by_reference(settings, cfg):
    payload = issues_labeled()
    payload["issue"]["body"] = "y" * (3 * 1024 * 1024)  # 3 MB: over JetStream's default 1 MB max payload
    body, headers = github_request("issues", payload)
    async with running_ingress(settings, cfg) as ing:
        r = await ing.github(body, headers)
        assert r.status_code == 200, r.text
    msg = await last_message(settings)
    assert msg.data in (b"", None)
    ref = msg.headers[bus.H_BODY_REF]
    assert int(msg.headers[bus.H_BODY_SIZE]) == len(body)
    assert ArtifactStore(settings.artifacts_dir).get_bytes(ref) == body


async def test_same_delivery_twice_is_stored_once(settings, cfg):
    body, headers = github_request("issues", issues_labeled())
    async with running_ingress(settings, cfg) as ing:
        first, second = await ing.github(body, headers), await ing.github(body, headers)
    assert first.json()["duplicate"] is False and second.json()["duplicate"] is True
    assert first.json()["stream_seq"] == second.json()["stream_seq"]
    assert await stream_messages(settings) == 1


async def test_unconfigured_source_is_503_not_published(settings):
    cfg = make_cfg(github_webhook_secret=None)
    async with running_ingress(settings, cfg) as ing:
        r = await ing.github(*github_request("issues", issues_labeled()))
        assert r.status_code == 503 and "BOSUN_GITHUB_WEBHOOK_SECRET" in r.json()["error"]
        assert (await ing.linear(*linear_request(linear_agent_session()))).status_code == 200
    assert await stream_messages(settings) == 1


async def test_503_while_nats_is_down_then_200_after_it_returns(settings, nats_server):
    cfg = make_cfg(publish_timeout_s=1.0)
    async with running_ingress(settings, cfg) as ing:
        nats_server.stop()
        body, headers = github_request("issues", issues_labeled(), delivery="while-down-1")
        t = time.monotonic()
        r = await ing.github(body, headers)
        assert r.status_code == 503 and r.headers["retry-after"] == "5", r.text
        assert "retry the delivery" in r.json()["error"]
        assert time.monotonic() - t < 3
        assert (await ing.http.get("/healthz")).status_code == 503
        nats_server.start()
        deadline = time.monotonic() + 15
        while (await ing.http.get("/healthz")).status_code != 200:
            assert time.monotonic() < deadline, "ingress did not reconnect"
            await _sleep(0.1)
        r = await ing.github(body, headers)  # the sender's retry, same delivery id
        assert r.status_code == 200, r.text
    assert await stream_messages(settings) == 1


async def test_secrets_are_compared_over_the_raw_bytes(settings, cfg):
    # Same JSON, different whitespace: the signature of the other serialisation does not verify.
    payload = issues_labeled()
    body = json.dumps(payload, indent=2).encode()
    _, headers = github_request("issues", json.dumps(payload).encode())
    async with running_ingress(settings, cfg) as ing:
        assert (await ing.github(body, headers)).status_code == 401
        assert (await ing.github(*github_request("issues", body))).status_code == 200
    assert GH_SECRET and LINEAR_SECRET


async def _sleep(s: float) -> None:
    import asyncio

    await asyncio.sleep(s)
