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
import contextlib
import hashlib
import logging
import re
import ssl
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

import nats.errors
from nats.aio.client import Client as NATS
from nats.errors import AuthorizationError
from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, KeyValueConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import APIError, BadRequestError, NoStreamResponseError, NotFoundError
from nats.js.kv import KeyValue

from infra.errors import ConfigError
from infra.events.config import EventsConfig
from infra.settings import Settings

log = logging.getLogger("bosun.events")


def _not_tls_close_noise(record: logging.LogRecord) -> bool:
    """asyncio warns on every TLS connection nats-py closes ("returning true from eof_received() has no effect when
    using ssl"): noise on the terminal of `bosun status`, not a problem."""
    return "eof_received" not in record.getMessage()


logging.getLogger("asyncio").addFilter(_not_tls_close_noise)

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


def nats_tls_context(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context for NATS: the CA (BOSUN_NATS_TLS_CA, else the system's authorities) and the client
    certificate (BOSUN_NATS_TLS_CERT/KEY); None when no TLS setting is given (a server that asks for TLS then gets
    the system's defaults)."""
    if settings.nats_tls_ca is None and settings.nats_tls_cert is None:
        return None
    ctx = ssl.create_default_context(cafile=str(settings.nats_tls_ca) if settings.nats_tls_ca else None)
    if settings.nats_tls_cert is not None and settings.nats_tls_key is not None:
        try:
            ctx.load_cert_chain(str(settings.nats_tls_cert), str(settings.nats_tls_key))
        except ssl.SSLError:
            raise ConfigError("BOSUN_NATS_TLS_KEY is not the private key of BOSUN_NATS_TLS_CERT") from None
    return ctx


def _credentials(settings: Settings) -> dict:
    if settings.nats_creds is not None:
        return {"user_credentials": str(settings.nats_creds)}
    if settings.nats_token is not None:
        return {"token": settings.nats_token.get_secret_value()}
    if settings.nats_user is not None and settings.nats_password is not None:
        return {"user": settings.nats_user, "password": settings.nats_password.get_secret_value()}
    return {}


def _refusal(error: BaseException, settings: Settings) -> str | None:
    """The configuration error behind a refused NATS connection (naming the settings to check), or None when the
    error is not one (a server that is down or restarting)."""
    text = str(error)
    if "Authorization Violation" in text or "Authentication" in text or isinstance(error, AuthorizationError):
        given = next((f"BOSUN_NATS_{n}" for n, v in (("CREDS", settings.nats_creds), ("TOKEN", settings.nats_token),
                                                       ("USER and BOSUN_NATS_PASSWORD", settings.nats_user))
                      if v is not None), None)
        if given is None:
            return (f"NATS at {settings.nats_display} requires credentials: set BOSUN_NATS_USER and "
                    "BOSUN_NATS_PASSWORD, BOSUN_NATS_TOKEN or BOSUN_NATS_CREDS")
        return f"NATS at {settings.nats_display} refused the credentials: check {given}"
    if isinstance(error, ssl.SSLCertVerificationError):
        if "hostname" in text.lower() or "IP address mismatch" in text:
            return (f"the NATS server's certificate does not name the host in BOSUN_NATS_URL "
                    f"({settings.nats_display}): use a name it holds")
        return ("the NATS server's certificate is not signed by a trusted authority: check BOSUN_NATS_TLS_CA "
                "(the PEM file of the authority that signed it)")
    if isinstance(error, ssl.SSLError):
        if re.search(r"certificate required|bad certificate|unknown ca|certificate unknown", text, re.IGNORECASE):
            return (f"NATS at {settings.nats_display} did not accept this host's client certificate: check "
                    "BOSUN_NATS_TLS_CERT and BOSUN_NATS_TLS_KEY (mutual TLS)")
        return (f"TLS to NATS at {settings.nats_display} failed ({text[:200]}): check BOSUN_NATS_TLS_CA and "
                "BOSUN_NATS_URL")
    if "TLS Required" in text or "Secure Connection" in text:
        return f"NATS at {settings.nats_display} requires TLS: use tls:// URLs or set BOSUN_NATS_TLS_CA"
    return None


def _one_line(error: BaseException) -> str:
    return (str(error).splitlines() or [""])[0][:200] or type(error).__name__


async def _tls_alert(server: str, tls: ssl.SSLContext, wait_s: float = 2.0) -> ssl.SSLError | None:
    """The TLS alert a NATS server sends a client it refuses after the handshake, or None.

    Under TLS 1.3 a server checks the client's certificate only after the client's handshake is over; the client,
    already writing CONNECT, then often sees a reset or a broken pipe instead of the alert. This reads the server's
    INFO, upgrades to TLS and sends nothing, so the alert (if any) arrives intact; a server that accepts the
    certificate waits for CONNECT and the read times out (None)."""
    writer = None
    try:
        parts = urlsplit(server)  # (checked by the settings: infra/settings.parse_nats_servers)
        host, port = parts.hostname, parts.port or 4222
        if host is None:
            return None
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), wait_s)
        if not (await asyncio.wait_for(reader.readline(), wait_s)).startswith(b"INFO"):
            return None
        await asyncio.wait_for(writer.start_tls(tls, server_hostname=host), wait_s)
        await asyncio.wait_for(reader.read(1), wait_s)
    except ssl.SSLError as e:
        return e
    except (OSError, TimeoutError, ValueError):
        return None
    finally:
        if writer is not None:
            writer.close()
    return None


CONNECT_TRIES = 2
"""How often the first connection tries each server before it gives up."""


async def connect_nats(settings: Settings, *, name: str, connect_timeout: float = 2.0) -> NATS:
    """Connect to the NATS servers of the settings (BOSUN_NATS_URL: one, or a cluster's; credentials and TLS from
    BOSUN_NATS_*), trying each server up to ``CONNECT_TRIES`` times (a busy server may reset a TLS handshake it
    found slow); the connection then reconnects forever on its own, to any server of the cluster. A refusal
    (credentials, TLS) raises ConfigError naming the settings to check; servers that do not answer raise
    ConnectionError. Neither message holds a secret."""
    nc = NATS()
    servers = settings.nats_servers
    failures: list[BaseException] = []
    gave_up = asyncio.Event()
    tls = nats_tls_context(settings)

    async def on_error(e: Exception) -> None:
        if not nc.is_connected and not nc.is_reconnecting:  # still making the first connection
            failures.append(e)
            if _refusal(e, settings) or len(failures) >= CONNECT_TRIES * len(servers):
                gave_up.set()
        else:
            log.warning("NATS (%s): %s", name, _one_line(e))

    connecting = asyncio.create_task(nc.connect(
        servers=servers, name=name, connect_timeout=connect_timeout, max_reconnect_attempts=-1,
        reconnect_time_wait=0.5, allow_reconnect=True, ping_interval=5, max_outstanding_pings=3,
        error_cb=on_error, tls=tls, **_credentials(settings)))
    waiting = asyncio.create_task(gave_up.wait())
    await asyncio.wait({connecting, waiting}, return_when=asyncio.FIRST_COMPLETED)
    if connecting.done() and connecting.exception() is None:
        waiting.cancel()
        return nc
    connecting.cancel()
    waiting.cancel()
    with contextlib.suppress(BaseException):
        await connecting
    with contextlib.suppress(Exception):
        await nc.close()
    errors = failures or ([connecting.exception()] if connecting.done() and not connecting.cancelled() else [])
    if tls is not None and errors and all(isinstance(e, (ConnectionResetError, BrokenPipeError)) for e in errors):
        errors += [e for server in servers if (e := await _tls_alert(server, tls)) is not None]
    for e in errors:
        if (why := _refusal(e, settings)) is not None:
            raise ConfigError(why)
    last = _one_line(errors[-1]) if errors else "no answer"
    raise ConnectionError(f"cannot reach NATS at {settings.nats_display} ({last})")


async def connect_nats_retrying(settings: Settings, *, name: str, stop: asyncio.Event | None = None,
                                first_delay: float = 0.2, max_delay: float = 5.0) -> NATS | None:
    """Connect, retrying with backoff until it works or ``stop`` is set (then None). A refusal (credentials, TLS:
    ConfigError) is not retried: it is raised."""
    delay = first_delay
    while stop is None or not stop.is_set():
        try:
            return await connect_nats(settings, name=name)
        except ConfigError:
            raise
        except Exception as e:  # noqa: BLE001 - any other failure to connect is retried
            log.warning("%s; retrying in %.1fs", _one_line(e), delay)
        try:
            if stop is None:
                await asyncio.sleep(delay)
            else:
                await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            pass
        delay = min(delay * 2, max_delay)
    return None


async def describe_nats(nc: NATS) -> dict:
    """What a connected NATS says about itself: the server this host talks to, its cluster and the cluster's size
    (the servers it advertises to clients), JetStream's streams, and each stream's replicas with its leader and
    how many of its copies are current."""
    info = getattr(nc, "_server_info", {}) or {}  # the server's INFO (nats-py keeps it; there is no accessor)
    js = nc.jetstream(timeout=3)
    out: dict = {"server": info.get("server_name"), "version": info.get("version"), "cluster": info.get("cluster"),
                 "cluster_size": max(len(set(info.get("connect_urls") or [])), 1), "jetstream": False, "streams": {}}
    account = await js.account_info()
    out["jetstream"] = True
    out["stream_count"] = account.streams
    for stream in await js.streams_info():
        cluster = stream.cluster
        peers = (cluster.replicas or []) if cluster else []
        out["streams"][stream.config.name] = {
            "replicas": stream.config.num_replicas or 1, "leader": cluster.leader if cluster else None,
            "current": (1 if cluster and cluster.leader else 0) + sum(1 for p in peers if p.current and not p.offline),
            "messages": stream.state.messages}
    return out


REPLICAS_NOT_SUPPORTED = 10074
"""JetStream's error code for more than one replica on a server that is not part of a cluster."""


def replicas(settings: Settings) -> int:
    """The replicas of every JetStream stream, key-value bucket and object store bosun makes (BOSUN_NATS_REPLICAS):
    give it to ``StreamConfig.num_replicas``, ``KeyValueConfig.replicas``, ``ObjectStoreConfig.replicas``, and
    call :func:`ensure_replicas` on a bucket that already existed."""
    return settings.nats_replicas


def _not_clustered(stream: str, want: int) -> ConfigError:
    return ConfigError(f"NATS cannot keep {want} replicas of {stream}: the server is not part of a cluster; set "
                       "BOSUN_NATS_REPLICAS=1, or point BOSUN_NATS_URL at a NATS cluster")


TRANSIENT = (NoStreamResponseError, nats.errors.TimeoutError, nats.errors.NoRespondersError, TimeoutError)
"""What a stream says while a leader is elected (one just made on a cluster) or under load: the operation is
tried again."""


async def retrying(op, tries: int = 6, first_delay: float = 0.25):
    """``op()`` (an idempotent operation: an object named by its content's hash, a publish with a message id, a
    span batch) tried again on a transient failure, for up to about 8 s in all: a bucket or stream another process
    just made, or one whose leader moves, answers nothing for a few seconds."""
    delay = first_delay
    for attempt in range(tries):
        try:
            return await op()
        except TRANSIENT:
            if attempt == tries - 1:
                raise
            await asyncio.sleep(delay)
            delay *= 2


async def ensure_replicas(js: JetStreamContext, stream: str, want: int) -> int:
    """Raise the replicas of the existing stream ``stream`` to ``want`` (a key-value bucket's stream is
    ``KV_<bucket>``, an object store's ``OBJ_<bucket>``); never lowers them. Returns the replicas it has now.
    ConfigError when the server cannot (not a cluster); other refusals (a node down: not enough peers) raise the
    server's error, to retry."""
    info = await js.stream_info(stream)
    have = info.config.num_replicas or 1
    if have >= want:
        return have
    config = info.config
    config.num_replicas = want
    try:
        await js.update_stream(config)
    except APIError as e:
        if e.err_code == REPLICAS_NOT_SUPPORTED:
            raise _not_clustered(stream, want) from None
        raise
    log.info("raised the replicas of stream %s from %d to %d (BOSUN_NATS_REPLICAS)", stream, have, want)
    await _await_leader(js, stream)
    return want


async def _await_leader(js: JetStreamContext, stream: str, timeout_s: float = 10.0) -> None:
    """Wait (a little) until ``stream`` has a leader again: after its replicas change, its group elects one, and
    a write before that would be refused."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        info = await js.stream_info(stream)
        if info.cluster is None or info.cluster.leader:
            return
        await asyncio.sleep(0.1)


async def _ensure_stream(js: JetStreamContext, config: StreamConfig) -> None:
    """Create the stream, or update it when its configuration differs; idempotent and safe to race. Its replicas
    are raised to ``config.num_replicas``, never lowered (a stream made on a cluster keeps its copies)."""
    want = config.num_replicas or 1
    try:
        await js.add_stream(config)
        return
    except APIError as e:
        if e.err_code == REPLICAS_NOT_SUPPORTED:
            raise _not_clustered(config.name or "", want) from None
        if not isinstance(e, BadRequestError) or e.err_code != 10058:  # 10058: exists with another configuration
            raise
    have = (await js.stream_info(config.name or "")).config.num_replicas or 1
    if have > want:
        config = replace(config, num_replicas=have)
    try:
        await js.update_stream(config)
    except APIError as e:
        if e.err_code == REPLICAS_NOT_SUPPORTED:
            raise _not_clustered(config.name or "", want) from None
        raise
    log.info("updated stream %s to the configured settings", config.name)
    if want > have:
        await _await_leader(js, config.name or "")


def events_stream_config(cfg: EventsConfig) -> StreamConfig:
    return StreamConfig(name=cfg.stream, subjects=[f"{SUBJECT_ROOT}.>"], storage=StorageType.FILE,
                        retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD,
                        duplicate_window=cfg.duplicate_window_s, max_age=cfg.stream_max_age_s,
                        num_replicas=replicas(cfg.settings),
                        description="bosun webhooks (raw bodies; see docs/EVENTS.md)")


def deadletter_stream_config(cfg: EventsConfig) -> StreamConfig:
    return StreamConfig(name=cfg.deadletter_stream, subjects=[f"{DEADLETTER_ROOT}.>"], storage=StorageType.FILE,
                        retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD, duplicate_window=120,
                        max_age=cfg.deadletter_max_age_s, num_replicas=replicas(cfg.settings),
                        description="bosun events that could not be handled")


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
        want = replicas(cfg.settings)
        try:
            kv = await js.key_value(cfg.ledger_bucket)
        except Exception:  # noqa: BLE001 - BucketNotFoundError and friends: create it
            try:
                kv = await js.create_key_value(KeyValueConfig(
                    bucket=cfg.ledger_bucket, ttl=cfg.ledger_ttl_s, history=1, storage=StorageType.FILE,
                    replicas=want, description="bosun: handled webhook deliveries"))
            except APIError as e:
                if e.err_code == REPLICAS_NOT_SUPPORTED:
                    raise _not_clustered(f"KV_{cfg.ledger_bucket}", want) from None
                raise
        else:
            await ensure_replicas(js, f"KV_{cfg.ledger_bucket}", want)
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
