"""Spans every host shares (``BOSUN_ARTIFACT_STORE=nats``): a JetStream stream, so ``bosun trace`` and the web view on
any host, or on a machine with an empty data dir, draw a task's whole tree, whichever hosts ran its parts.

Each process that records spans publishes them (besides its own offline files, infra/telemetry.py) to the stream
``BOSUN_SPANS``: one message per trace per batch on ``bosun.spans.<trace id>`` (JSON lines of span records), and,
for every task a batch touches, an index message on ``bosun.spanidx.<hash of the task id>`` naming the trace (its
``Nats-Msg-Id`` drops repeats). A reader looks the task's traces up in the index, then reads their spans. The stream
keeps ``SPAN_DAYS`` days (BOSUN_NATS_REPLICAS replicas).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Sequence
from typing import Any

from nats.js.api import DeliverPolicy, DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from infra.events.bus import ensure_replicas, retrying
from infra.objectstore import NatsBridge
from infra.settings import Settings

log = logging.getLogger("bosun.telemetry")

STREAM = "BOSUN_SPANS"
SPANS = "bosun.spans"
INDEX = "bosun.spanidx"
SPAN_DAYS = 7
READ_IDLE_S = 0.5
"""A read of a subject ends once nothing more arrives for this long after what was pending."""


def task_of(workflow_id: str) -> str:
    """The task a workflow belongs to: its agents' ids are ``TASK/...``."""
    return workflow_id.split("/", 1)[0]


def index_subject(task_id: str) -> str:
    return f"{INDEX}.{hashlib.sha256(task_id.encode()).hexdigest()[:32]}"


class SpanStore:
    """Publishes and reads span records through a :class:`NatsBridge`."""

    def __init__(self, settings: Settings, bridge: NatsBridge | None = None) -> None:
        self.settings = settings
        self.bridge = bridge or NatsBridge(settings, "bosun-spans")
        self._ready = False

    async def _js(self) -> Any:
        js = await self.bridge.js()
        if not self._ready:
            config = StreamConfig(name=STREAM, subjects=[f"{SPANS}.>", f"{INDEX}.>"], storage=StorageType.FILE,
                                  retention=RetentionPolicy.LIMITS, discard=DiscardPolicy.OLD,
                                  max_age=SPAN_DAYS * 86400, duplicate_window=120,
                                  num_replicas=self.settings.nats_replicas,
                                  description="bosun spans of every host (bosun trace)")
            try:
                await ensure_replicas(js, STREAM, self.settings.nats_replicas)
            except NotFoundError:
                await js.add_stream(config)
            self._ready = True
        return js

    async def apublish(self, records: Sequence[dict[str, Any]]) -> None:
        js = await self._js()
        by_trace: dict[str, list[dict[str, Any]]] = {}
        tasks: set[tuple[str, str]] = set()
        for rec in records:
            by_trace.setdefault(rec["trace_id"], []).append(rec)
            wf = (rec.get("attributes") or {}).get("temporalWorkflowID") or \
                (rec.get("attributes") or {}).get("bosun.workflow_id")
            if isinstance(wf, str) and wf:
                tasks.add((task_of(wf), rec["trace_id"]))
        # Each publish is tried again while the stream answers nothing: one just made by this or another process
        # (a cluster's first spans) has no leader for a moment, and spans dropped then never draw. A batch sent
        # twice draws once (a reader keeps each span id once); an index entry carries its message id.
        body = {trace: "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs).encode()
                for trace, recs in by_trace.items()}
        pubs = [retrying(lambda t=trace, b=data: js.publish(f"{SPANS}.{t}", b)) for trace, data in body.items()]
        pubs += [retrying(lambda t=task, tr=trace: js.publish(index_subject(t), tr.encode(),
                                                             headers={"Nats-Msg-Id": f"{t}\0{tr}"}))
                 for task, trace in tasks]
        await asyncio.gather(*pubs)

    async def _read(self, subject: str) -> list[bytes]:
        js = await self._js()
        sub = await js.subscribe(subject, ordered_consumer=True, deliver_policy=DeliverPolicy.ALL)
        out: list[bytes] = []
        try:
            while True:
                try:
                    msg = await sub.next_msg(timeout=READ_IDLE_S)
                except Exception:  # noqa: BLE001 - nothing (more) there
                    break
                out.append(msg.data)
                if msg.metadata.num_pending == 0:
                    break
        finally:
            await sub.unsubscribe()
        return out

    async def atask_spans(self, workflow_id: str) -> list[dict[str, Any]]:
        """Every span of the traces that touch the task of ``workflow_id``."""
        traces = {d.decode() for d in await self._read(index_subject(task_of(workflow_id)))}
        spans: list[dict[str, Any]] = []
        for trace in sorted(traces):
            if not trace.isalnum():
                continue
            for data in await self._read(f"{SPANS}.{trace}"):
                for line in data.decode("utf-8", "replace").splitlines():
                    try:
                        spans.append(json.loads(line))
                    except ValueError:
                        continue
        return spans

    def task_spans(self, workflow_id: str) -> list[dict[str, Any]]:
        return self.bridge.run(self.atask_spans(workflow_id))

    def close(self) -> None:
        self.bridge.close()


class NatsSpanExporter(SpanExporter):
    """Sends a process's spans to the shared stream (see the module docstring)."""

    def __init__(self, settings: Settings, record) -> None:
        self.store = SpanStore(settings)
        self.record = record
        """infra.telemetry.span_record: a span as a JSON-able dict."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            self.store.bridge.run(self.store.apublish([self.record(s) for s in spans]), timeout_s=10)
        except Exception as e:  # noqa: BLE001 - NATS away: these spans stay in this host's files only
            log.warning("could not share %d spans through NATS: %s", len(spans), e)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        self.store.close()


def with_shared(settings: Settings, workflow_id: str, local: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``local`` (this host's spans of the task) and, on a host that shares its state, every host's: one list,
    each span once."""
    if settings.artifact_store != "nats":
        return local
    store = SpanStore(settings)
    try:
        shared = store.task_spans(workflow_id)
    except Exception as e:  # noqa: BLE001 - NATS away: this host's own spans still draw
        log.warning("cannot read the shared spans: %s", e)
        shared = []
    finally:
        store.close()
    out, seen = list(local), {s["span_id"] for s in local}
    for span in shared:
        if span.get("span_id") not in seen:
            seen.add(span.get("span_id"))
            out.append(span)
    return out
