"""The webhook ingress: an ASGI app (starlette) that verifies GitHub, GitLab and Linear deliveries and publishes
them to JetStream, answering 2xx only after JetStream acknowledged the message.

Routes: ``POST /webhooks/github``, ``POST /webhooks/gitlab``, ``POST /webhooks/linear``, ``GET /healthz``.

A delivery is checked in this order and refused at the first problem, with nothing published:
body size (413) -> signature, or GitLab's secret token (401) -> event and delivery headers (400) -> content type
(415) -> JSON object (400) -> Linear only: webhookTimestamp within the tolerance (400 malformed, 401 replayed or from
the future). A GitLab delivery is identified by its ``Idempotency-Key`` (the same on GitLab's retries), else by
``X-Gitlab-Event-UUID``.
Accepted: 200 ``{"accepted": true, "duplicate": ..., "subject": ..., "stream_seq": ...}`` (Linear counts anything
but 200 as a failure). JetStream not reachable or no PubAck in time: 503 with Retry-After; the sender retries (or a
person redelivers) with the same delivery id, and the stream drops the duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import PubAck
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from infra.errors import ConfigError
from infra.events import bus, tracing
from infra.events.config import EventsConfig, load_events_config
from infra.events.verify import (
    Rejected,
    check_linear_timestamp,
    parse_json_object,
    require_delivery,
    require_gitlab_event,
    require_json_content_type,
    require_token,
    verify_github_signature,
    verify_gitlab_token,
    verify_linear_signature,
)
from infra.objectstore import open_store
from infra.settings import Settings
from infra.telemetry import instruments

log = logging.getLogger("bosun.events.ingress")

PARSE_IN_THREAD = 1024 * 1024
"""Bodies larger than this are parsed and stored off the event loop."""


class Unavailable(Exception):
    """JetStream did not acknowledge the message; answered with 503."""


class Ingress:
    """Holds the NATS connection and handles the routes. ``app`` is the ASGI application."""

    def __init__(self, settings: Settings, cfg: EventsConfig) -> None:
        self.settings = settings
        self.cfg = cfg
        self.store = open_store(settings)
        self.nc: NATS | None = None
        self.js: JetStreamContext | None = None
        self.stream_ready = False
        self.refused: str | None = None
        """Why NATS refused the connection (a configuration error), shown by /healthz."""
        self._closing = asyncio.Event()
        self._connector: asyncio.Task[None] | None = None
        self.app = Starlette(routes=[
            Route("/webhooks/github", self.github, methods=["POST"]),
            Route("/webhooks/gitlab", self.gitlab, methods=["POST"]),
            Route("/webhooks/linear", self.linear, methods=["POST"]),
            Route("/healthz", self.healthz, methods=["GET"]),
        ], lifespan=self._lifespan)

    # ---------------------------------------------------------------- lifecycle

    @contextlib.asynccontextmanager
    async def _lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        self._connector = asyncio.create_task(self._connect(), name="ingress-nats-connect")
        try:
            yield
        finally:
            self._closing.set()
            self._connector.cancel()
            with contextlib.suppress(BaseException):
                await self._connector
            if self.nc is not None and not self.nc.is_closed:
                with contextlib.suppress(Exception):
                    await self.nc.drain()

    async def _connect(self) -> None:
        """Connect to NATS (retrying) and make sure the stream exists (retrying); runs in the background."""
        try:
            self.nc = await bus.connect_nats_retrying(self.settings, name="bosun-ingress", stop=self._closing)
        except ConfigError as e:  # refused (credentials, TLS): nothing to retry until the settings change
            self.refused = str(e)
            log.error("%s", e)
            return
        if self.nc is None:
            return
        self.js = self.nc.jetstream()
        delay = 0.2
        while not self._closing.is_set():
            try:
                await bus.ensure_events_stream(self.js, self.cfg)
                self.stream_ready = True
                log.info("ingress ready: stream %s on %s", self.cfg.stream, self.settings.nats_display)
                return
            except ConfigError as e:  # the server cannot do what the settings ask (replicas without a cluster)
                self.refused = str(e)
                log.error("%s", e)
                return
            except Exception as e:  # noqa: BLE001 - JetStream not ready yet (e.g. just restarted)
                log.warning("cannot set up stream %s (%s); retrying in %.1fs", self.cfg.stream, e, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    # ---------------------------------------------------------------- routes

    async def healthz(self, _request: Request) -> JSONResponse:
        connected = self.nc is not None and self.nc.is_connected
        ok = connected and self.stream_ready
        body = {"status": "ok" if ok else "unavailable", "nats": "connected" if connected else "down",
                "stream": self.cfg.stream if self.stream_ready else None}
        if self.refused:
            body["error"] = self.refused
        return JSONResponse(body, status_code=200 if ok else 503)

    async def github(self, request: Request) -> JSONResponse:
        secret = self.cfg.secret("github_webhook_secret")
        if not secret:
            return _error(503, "GitHub webhooks are not configured here: set BOSUN_GITHUB_WEBHOOK_SECRET")
        try:
            body = await _read_body(request, self.cfg.max_body_bytes)
            h = request.headers
            verify_github_signature(secret, body, h.get("x-hub-signature-256"), sha1_header=h.get("x-hub-signature"))
            event = require_token("X-GitHub-Event", h.get("x-github-event"), "issues")
            delivery = require_delivery("X-GitHub-Delivery", h.get("x-github-delivery"))
            require_json_content_type(h.get("content-type"))
            await _parse(body)
        except Rejected as r:
            return self._refuse("github", request, r)
        return await self._accept("github", event, delivery, body, request)

    async def gitlab(self, request: Request) -> JSONResponse:
        secret = self.cfg.secret("gitlab_webhook_secret")
        if not secret:
            return _error(503, "GitLab webhooks are not configured here: set BOSUN_GITLAB_WEBHOOK_SECRET")
        try:
            body = await _read_body(request, self.cfg.max_body_bytes)
            h = request.headers
            verify_gitlab_token(secret, h.get("x-gitlab-token"))
            event = require_gitlab_event(h.get("x-gitlab-event"))
            if h.get("idempotency-key"):
                delivery = require_delivery("Idempotency-Key", h.get("idempotency-key"))
            else:
                delivery = require_delivery("X-Gitlab-Event-UUID", h.get("x-gitlab-event-uuid"))
            require_json_content_type(h.get("content-type"))
            await _parse(body)
        except Rejected as r:
            return self._refuse("gitlab", request, r)
        return await self._accept("gitlab", event, delivery, body, request)

    async def linear(self, request: Request) -> JSONResponse:
        secret = self.cfg.secret("linear_webhook_secret")
        if not secret:
            return _error(503, "Linear webhooks are not configured here: set BOSUN_LINEAR_WEBHOOK_SECRET")
        try:
            body = await _read_body(request, self.cfg.max_body_bytes)
            h = request.headers
            verify_linear_signature(secret, body, h.get("linear-signature"))
            delivery = require_delivery("Linear-Delivery", h.get("linear-delivery"))
            event = require_token("Linear-Event", h.get("linear-event"), "AgentSessionEvent")
            require_json_content_type(h.get("content-type"))
            payload = await _parse(body)
            check_linear_timestamp(payload, self.cfg.linear_timestamp_tolerance_s)
        except Rejected as r:
            return self._refuse("linear", request, r)
        return await self._accept("linear", event, delivery, body, request)

    # ---------------------------------------------------------------- helpers

    def _refuse(self, source: str, request: Request, r: Rejected) -> JSONResponse:
        log.warning("refused %s delivery %s from %s: %d %s", source,
                    request.headers.get("x-github-delivery") or request.headers.get("linear-delivery")
                    or request.headers.get("x-gitlab-event-uuid") or "-",
                    request.client.host if request.client else "?", r.status, r.message)
        instruments().ingress.add(1, {"source": source, "outcome": "refused", "reason": f"{r.status} {r.field or ''}"
                                      .strip()})
        return _error(r.status, r.message, field=r.field)

    async def _accept(self, source: str, event: str, delivery: str, body: bytes, request: Request) -> JSONResponse:
        incoming = {k: request.headers[k] for k in ("traceparent", "tracestate") if k in request.headers}
        with tracing.span(f"webhook {source} {event}", incoming, **{"bosun.delivery": delivery}) as carrier:
            try:
                ack = await self.publish(source, event, delivery, body, carrier)
            except Unavailable as e:
                log.error("could not publish %s delivery %s: %s", source, delivery, e)
                instruments().ingress.add(1, {"source": source, "outcome": "refused", "reason": "503 bus"})
                return _error(503, f"event bus unavailable, nothing was accepted ({e}); retry the delivery",
                              headers={"Retry-After": "5"})
        instruments().ingress.add(1, {"source": source, "outcome": "duplicate" if ack.duplicate else "accepted",
                                      "event": event})
        return JSONResponse({"accepted": True, "duplicate": bool(ack.duplicate), "delivery": delivery,
                             "subject": bus.subject_for(source, event), "stream_seq": ack.seq})

    async def publish(self, source: str, event: str, delivery: str, body: bytes,
                      trace_headers: dict[str, str]) -> PubAck:
        """Publish one delivery; returns JetStream's PubAck or raises Unavailable. Within ``publish_timeout_s`` a
        refused publish is tried again (the delivery id makes it idempotent): a NATS node lost, the stream electing
        a new leader or the connection moving to another server of the cluster costs the sender time, not a 503."""
        nc, js = self.nc, self.js
        if nc is None or js is None or not self.stream_ready:
            raise Unavailable(f"not connected to NATS at {self.settings.nats_display} yet")
        headers = {bus.H_MSG_ID: delivery, bus.H_SOURCE: source, bus.H_EVENT: event, bus.H_DELIVERY: delivery,
                   bus.H_RECEIVED: str(int(time.time() * 1000)), **trace_headers}
        payload = body
        if len(body) > bus.inline_limit(nc, self.cfg):
            ref = await asyncio.to_thread(self.store.put_bytes, body)
            headers[bus.H_BODY_REF] = ref
            headers[bus.H_BODY_SIZE] = str(len(body))
            payload = b""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.cfg.publish_timeout_s
        while True:
            left = deadline - loop.time()
            try:
                if not nc.is_connected:
                    raise Unavailable(f"NATS connection to {self.settings.nats_display} is down (reconnecting)")
                return await js.publish(bus.subject_for(source, event), payload,
                                        timeout=max(min(left, PUBLISH_ATTEMPT_S), 0.05), stream=self.cfg.stream,
                                        headers=headers)
            except Exception as e:  # noqa: BLE001 - timeout, no responders, connection closed, JetStream error
                why = e if isinstance(e, Unavailable) else Unavailable(f"{type(e).__name__}: {str(e) or 'no PubAck'}")
                if deadline - loop.time() < PUBLISH_RETRY_S:
                    raise why from None
            await asyncio.sleep(PUBLISH_RETRY_S)


PUBLISH_RETRY_S = 0.1
"""Pause between two tries of a refused publish (within publish_timeout_s)."""
PUBLISH_ATTEMPT_S = 2.0
"""Longest wait for one try's PubAck: a request that went to a node just lost gets no answer, and is sent again."""


def _error(status: int, message: str, *, field: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    content: dict[str, Any] = {"error": message}
    if field:
        content["field"] = field
    return JSONResponse(content, status_code=status, headers=headers)


async def _read_body(request: Request, cap: int) -> bytes:
    length = request.headers.get("content-length")
    if length is not None:
        if not length.isdigit():
            raise Rejected(400, f"header Content-Length={length!r} is not a byte count", field="Content-Length")
        if int(length) > cap:
            raise Rejected(413, f"the body has {int(length)} bytes, more than the limit of {cap} bytes "
                                "(GitHub sends at most 25 MB)", field="body")
    buf = bytearray()
    async for chunk in request.stream():
        buf += chunk
        if len(buf) > cap:
            raise Rejected(413, f"the body exceeds the limit of {cap} bytes (GitHub sends at most 25 MB)",
                           field="body")
    return bytes(buf)


async def _parse(body: bytes) -> dict[str, Any]:
    if len(body) > PARSE_IN_THREAD:
        return await asyncio.to_thread(parse_json_object, body)
    return parse_json_object(body)


def create_app(settings: Settings, cfg: EventsConfig | None = None) -> Starlette:
    """The ASGI app (serve it with any ASGI server; run_ingress uses uvicorn)."""
    return Ingress(settings, cfg or load_events_config(settings)).app


async def run_ingress(settings: Settings, host: str | None = None, port: int | None = None, *,
                      cfg: EventsConfig | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve the ingress until ``stop`` is set (or SIGINT/SIGTERM). Listens on ``host``:``port``, by default
    Settings.host and EventsConfig.ingress_port."""
    cfg = cfg or load_events_config(settings)
    server = uvicorn.Server(uvicorn.Config(
        create_app(settings, cfg), host=host or settings.host,
        port=port if port is not None else cfg.settings.ingress_port,
        log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5,
        server_header=False))
    watcher: asyncio.Task[None] | None = None
    if stop is not None:
        async def _watch() -> None:
            await stop.wait()
            server.should_exit = True

        watcher = asyncio.create_task(_watch())
    try:
        await server.serve()
    except SystemExit:  # uvicorn exits when it cannot bind

        raise ConfigError(f"the ingress could not listen on {server.config.host}:{server.config.port} (in use?); "
                          "set BOSUN_INGRESS_PORT to a free port") from None
    finally:
        if watcher is not None:
            watcher.cancel()
