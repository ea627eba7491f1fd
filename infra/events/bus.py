"""The JetStream side: connection, the EVENTS and DEADLETTER streams, the delivery ledger, message headers.

Message layout on ``events.<source>.<event>``: the payload is the webhook's raw body (byte for byte), or empty with
``Bosun-Body-Ref`` naming the body in the artifact store when it is too large for one NATS message. Headers:

=====================  ==================================================================
Nats-Msg-Id            the delivery id (JetStream drops duplicates inside duplicate_window)
Bosun-Source           ``github`` | ``linear``
Bosun-Event            the event name (X-GitHub-Event / Linear-Event)
Bosun-Delivery         the delivery id again (Nats-Msg-Id is a server concern)
Bosun-Received-At      epoch milliseconds when the ingress accepted it
Bosun-Body-Ref         ``sha256:<hex>`` when the body travels by reference, with Bosun-Body-Size
traceparent            W3C trace context (tracestate too when the sender gave one)
=====================  ==================================================================
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from dataclasses import dataclass

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, KeyValueConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import BadRequestError, NotFoundError
from nats.js.kv import KeyValue

from infra.events.config import EventsConfig
from infra.settings import Settings

log = logging.getLogger("bosun.events")

SUBJECT_ROOT = "events"
DEADLETTER_ROOT = "deadletter"

H_MSG_ID = "Nats-Msg-Id"
H_SOURCE = "Bosun-Source"
H_EVENT = "Bosun-Event"
H_DELIVERY = "Bosun-Delivery"
H_RECEIVED = "Bosun-Received-At"
H_BODY_REF = "Bosun-Body-Ref"
H_BODY_SIZE = "Bosun-Body-Size"
H_DL_REASON = "Bosun-Deadletter-Reason"
H_DL_DELIVERIES = "Bosun-Deadletter-Deliveries"
H_DL_SUBJECT = "Bosun-Deadletter-Subject"

HEADER_MARGIN = 16 * 1024
"""Bytes kept free for headers when deciding whether a body fits in one message."""


def subject_for(source: str, event: str) -> str:
    return f"{SUBJECT_ROOT}.{source}.{event}"


def deadletter_subject(subject: str) -> str:
    return f"{DEADLETTER_ROOT}.{subject}"


def header_safe(text: str, limit: int = 512) -> str:
    """NATS header values are one line of printable text."""
    return re.sub(r"[\r\n\t\x00-\x1f]+", " ", text)[:limit]


async def connect_nats(settings: Settings, *, name: str, connect_timeout: float = 2.0) -> NATS:
    """Connect once (raises on failure); the connection then reconnects forever on its own."""
    return await nats.connect(settings.nats_target, name=name, connect_timeout=connect_timeout,
                              max_reconnect_attempts=-1, reconnect_time_wait=0.5, allow_reconnect=True,
                              ping_interval=5, max_outstanding_pings=3)


async def connect_nats_retrying(settings: Settings, *, name: str, stop: asyncio.Event | None = None,
                                first_delay: float = 0.2, max_delay: float = 5.0) -> NATS | None:
    """Connect, retrying with backoff until it works or ``stop`` is set (then None)."""
    delay = first_delay
    while stop is None or not stop.is_set():
        try:
            return await connect_nats(settings, name=name)
        except Exception as e:  # noqa: BLE001 - any failure to connect is retried
            log.warning("cannot reach NATS at %s (%s); retrying in %.1fs", settings.nats_target,
                        str(e) or type(e).__name__, delay)
        try:
            if stop is None:
                await asyncio.sleep(delay)
            else:
                await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            pass
        delay = min(delay * 2, max_delay)
    return None


async def _ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream, or update it when its configuration differs; idempotent and safe to race."""
    try:
        await js.add_stream(config)
        return
    except BadRequestError as e:
        if e.err_code != 10058:  # "stream name already in use with a different configuration"
            raise
    await js.update_stream(config)
    log.info("updated stream %s to the configured settings", config.name)


def events_stream_config(cfg: EventsConfig) -> StreamConfig:
    return StreamConfig(name=cfg.stream, subjects=[f"{SUBJECT_ROOT}.>"], storage=StorageType.FILE,
                        retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD,
                        duplicate_window=cfg.duplicate_window_s, max_age=cfg.stream_max_age_s,
                        description="bosun webhooks (raw bodies; see docs/EVENTS.md)")


def deadletter_stream_config(cfg: EventsConfig) -> StreamConfig:
    return StreamConfig(name=cfg.deadletter_stream, subjects=[f"{DEADLETTER_ROOT}.>"], storage=StorageType.FILE,
                        retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD, duplicate_window=120,
                        max_age=cfg.deadletter_max_age_s, description="bosun events that could not be handled")


async def ensure_events_stream(js: JetStreamContext, cfg: EventsConfig) -> None:
    await _ensure_stream(js, events_stream_config(cfg))


async def ensure_deadletter_stream(js: JetStreamContext, cfg: EventsConfig) -> None:
    await _ensure_stream(js, deadletter_stream_config(cfg))


def inline_limit(nc: NATS, cfg: EventsConfig) -> int:
    """Largest body published inline; larger ones go to the artifact store."""
    server_max = nc.max_payload or 1024 * 1024
    limit = max(server_max - HEADER_MARGIN, 0)
    return min(limit, cfg.inline_body_max) if cfg.inline_body_max is not None else limit


# ---------------------------------------------------------------- delivery ledger

@dataclass(frozen=True)
class LedgerEntry:
    workflow_id: str
    run_id: str | None
    action: str


class Ledger:
    """Deliveries already handled, kept ``ledger_ttl_s`` in a JetStream key-value bucket.

    JetStream's duplicate window is minutes; GitHub lets people redeliver for 3 days and Linear retries over 7 hours.
    The ledger makes a late redelivery a no-op even after its workflow finished (when a new run could start).
    """

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    @classmethod
    async def open(cls, js: JetStreamContext, cfg: EventsConfig) -> Ledger:
        try:
            kv = await js.key_value(cfg.ledger_bucket)
        except Exception:  # noqa: BLE001 - BucketNotFoundError and friends: create it
            kv = await js.create_key_value(KeyValueConfig(bucket=cfg.ledger_bucket, ttl=cfg.ledger_ttl_s, history=1,
                                                          storage=StorageType.FILE,
                                                          description="bosun: handled webhook deliveries"))
        return cls(kv)

    @staticmethod
    def key(source: str, delivery: str) -> str:
        if re.fullmatch(r"[A-Za-z0-9_-]{1,100}", delivery):
            return f"{source}.{delivery}"
        return f"{source}.h-{hashlib.sha256(delivery.encode()).hexdigest()[:40]}"

    async def get(self, source: str, delivery: str) -> LedgerEntry | None:
        import json

        try:
            entry = await self.kv.get(self.key(source, delivery))
        except NotFoundError:  # KeyNotFoundError and KeyDeletedError derive from it
            return None
        if not entry.value:
            return None
        data = json.loads(entry.value)
        return LedgerEntry(data["workflow_id"], data.get("run_id"), data.get("action", ""))

    async def put(self, source: str, delivery: str, entry: LedgerEntry) -> None:
        import json

        await self.kv.put(self.key(source, delivery), json.dumps(
            {"workflow_id": entry.workflow_id, "run_id": entry.run_id, "action": entry.action}).encode())
