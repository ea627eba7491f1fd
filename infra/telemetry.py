"""OpenTelemetry for every bosun process: traces and metrics, exported where users already look.

``setup(settings, component)`` installs a tracer provider and a meter provider once per process:

- **Offline by default**: spans go to ``<data dir>/telemetry/spans-<component>-<pid>.jsonl`` (one JSON object per
  span, written within ``SPAN_FILE_DELAY_MS`` of its end; files rotate at ``SPAN_FILE_BYTES``, the oldest beyond
  ``SPAN_FILES_KEPT`` per component are removed) and a snapshot of every metric to
  ``<data dir>/telemetry/metrics-<component>.json`` every ``METRIC_INTERVAL_S``.
  ``bosun trace ID`` draws a task's span tree from these files.
- **OTLP** when the standard variables ask for it: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the ``_TRACES_`` /
  ``_METRICS_`` variants), ``OTEL_EXPORTER_OTLP_PROTOCOL`` (``grpc``, the default, or ``http/protobuf``),
  ``OTEL_EXPORTER_OTLP_HEADERS``, ``OTEL_SERVICE_NAME``; ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER``
  ``none`` turns one off. The exporters read these variables themselves.
- **Prometheus**: ``BOSUN_PROMETHEUS_PORT`` serves a scrape endpoint from the worker.
- ``BOSUN_TELEMETRY=off`` (or ``OTEL_SDK_DISABLED=true``) installs nothing: no spans, no metrics, no overhead.

Attributes never carry secrets or file contents: tool names, model names, error classes, token counts, ids.
``Metrics`` holds bosun's instruments (created once, recorded from the activities and the ingress).
"""

from __future__ import annotations

import json
import os
import threading
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from infra.settings import Settings
from infra.spanfile import append, enabled, otlp_wanted, telemetry_dir
from infra.spanstore import NatsSpanExporter

SPAN_FILE_DELAY_MS = 100
METRIC_INTERVAL_S = 15.0

_lock = threading.Lock()
_installed: Telemetry | None = None


def _http() -> bool:
    proto = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
    return (proto or "grpc").lower().startswith("http")


# -- the offline store ------------------------------------------------------------------------------------------

def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as a JSON-able dict (ids as hex, times in ns since the epoch)."""
    ctx = span.get_span_context()
    return {
        "trace_id": f"{ctx.trace_id:032x}", "span_id": f"{ctx.span_id:016x}",
        "parent_id": f"{span.parent.span_id:016x}" if span.parent else None,
        "name": span.name, "start": span.start_time, "end": span.end_time,
        "status": span.status.status_code.name, "error": span.status.description or None,
        "attributes": {k: v if isinstance(v, str | int | float | bool) else list(v)
                       for k, v in (span.attributes or {}).items()},
        "service": (span.resource.attributes or {}).get("bosun.component", ""),
    }


class FileSpanExporter(SpanExporter):
    """Appends spans as JSON lines to a file of this process; rotates by size, keeps a bounded number of files."""

    def __init__(self, folder: Path, component: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"spans-{component}-{os.getpid()}.jsonl"
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        records = [span_record(s) for s in spans]
        with self._lock:
            try:
                append(self.path, records)
            except OSError:
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


class FileMetricExporter(MetricExporter):
    """Writes the latest cumulative value of every metric to one JSON file (replaced atomically)."""

    def __init__(self, path: Path) -> None:
        super().__init__(preferred_temporality={}, preferred_aggregation={})
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        out: list[dict[str, Any]] = []
        for rm in metrics_data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        value = getattr(p, "value", None)
                        if value is None:  # a histogram
                            value = {"count": p.count, "sum": p.sum, "min": p.min, "max": p.max,
                                     "bounds": list(p.explicit_bounds), "counts": list(p.bucket_counts)}
                        out.append({"name": m.name, "unit": m.unit, "attributes": dict(p.attributes or {}),
                                    "value": value})
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps({"time": time.time(), "metrics": out}, default=str))
            tmp.replace(self.path)
        except OSError:
            return MetricExportResult.FAILURE
        return MetricExportResult.SUCCESS

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        return None


# -- installation -------------------------------------------------------------------------------------------------

class Telemetry:
    """What ``setup`` installed for this process."""

    def __init__(self, tracer_provider: TracerProvider | None, meter_provider: MeterProvider | None,
                 folder: Path) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self.folder = folder

    @property
    def on(self) -> bool:
        return self.tracer_provider is not None

    def flush(self) -> None:
        if self.tracer_provider is not None:
            self.tracer_provider.force_flush(5_000)
        if self.meter_provider is not None:
            self.meter_provider.force_flush(5_000)

    def shutdown(self) -> None:
        self.flush()
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()


def setup(settings: Settings, component: str) -> Telemetry:
    """Install the providers for this process (once; later calls return the same). ``component``: worker,
    starter, ingress, cli."""
    global _installed
    with _lock:
        if _installed is not None:
            return _installed
        folder = telemetry_dir(settings)
        if not enabled(settings):
            _installed = Telemetry(None, None, folder)
            return _installed
        resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "bosun"),
                                    "service.instance.id": settings.worker_id, "bosun.component": component})
        tracer_provider = TracerProvider(resource=resource)
        # The offline store is written within a tenth of a second of a span's end, so `bosun trace` right after a
        # run sees all of it (it waited a second, and a drawing made then lacked the run's last spans). Batched,
        # not written as each span ends: Temporal's workflow spans end inside the workflow sandbox, where file
        # access is refused, and a span exported there is lost.
        tracer_provider.add_span_processor(BatchSpanProcessor(FileSpanExporter(folder, component),
                                                              schedule_delay_millis=SPAN_FILE_DELAY_MS))
        if otlp_wanted("traces"):
            tracer_provider.add_span_processor(BatchSpanProcessor(_otlp_span_exporter()))
        if settings.artifact_store == "nats":  # every host's spans where every host reads them (bosun trace)
            tracer_provider.add_span_processor(BatchSpanProcessor(NatsSpanExporter(settings, span_record),
                                                                  schedule_delay_millis=SPAN_FILE_DELAY_MS))
        readers = [PeriodicExportingMetricReader(FileMetricExporter(folder / f"metrics-{component}.json"),
                                                 export_interval_millis=METRIC_INTERVAL_S * 1000)]
        if otlp_wanted("metrics"):
            readers.append(PeriodicExportingMetricReader(_otlp_metric_exporter()))
        if settings.prometheus_port and component == "worker":
            readers.append(_prometheus_reader(settings))
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(meter_provider)
        _installed = Telemetry(tracer_provider, meter_provider, folder)
        return _installed


# The OTLP and Prometheus exporters are imported only when configured: the gRPC stack alone takes ~0.3 s to load.
def _otlp_span_exporter() -> SpanExporter:
    if _http():
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HTTPSpans

        return HTTPSpans()
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GRPCSpans

    return GRPCSpans()


def _otlp_metric_exporter() -> MetricExporter:
    if _http():
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HTTPMetrics

        return HTTPMetrics()
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GRPCMetrics

    return GRPCMetrics()


def _prometheus_reader(settings: Settings):
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import start_http_server

    start_http_server(settings.prometheus_port, addr=settings.host)
    return PrometheusMetricReader()


# -- bosun's instruments ----------------------------------------------------------------------------------------

class Metrics:
    """bosun's metric instruments (on whatever meter provider is installed; no-ops when none is)."""

    def __init__(self) -> None:
        meter = metrics.get_meter("bosun")
        self.tool_calls = meter.create_counter("bosun.tool.calls", description="Tool calls, by tool, model and "
                                               "error class (none when it succeeded)")
        self.tool_duration = meter.create_histogram("bosun.tool.duration", unit="s",
                                                    description="Tool call duration")
        self.model_calls = meter.create_counter("bosun.model.calls", description="Model calls, by model and error "
                                                "class")
        self.model_duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s",
                                                     description="Model call duration (GenAI semantic conventions)")
        self.tokens = meter.create_counter("gen_ai.client.token.usage", unit="{token}",
                                           description="Tokens, by model and gen_ai.token.type (input, output)")
        self.cost = meter.create_counter("bosun.model.cost", unit="USD", description="Money spent, by model")
        self.sandbox_acquire = meter.create_histogram("bosun.sandbox.acquire.duration", unit="s",
                                                      description="Time to get a sandbox, by backend and start "
                                                                  "(warm: taken from a pool; cold: started)")
        self.sandbox_starts = meter.create_counter("bosun.sandbox.starts", description="Sandboxes handed out, by "
                                                   "backend and start (warm, cold)")
        self.sandbox_in_use = meter.create_up_down_counter("bosun.sandbox.in_use", description="Live sandboxes "
                                                           "held by agents and test runs, by backend")
        meter.create_observable_gauge("bosun.sandbox.warm", callbacks=[_observe_warm],
                                      description="Ready sandboxes waiting in warm pools, by backend")
        self.ingress = meter.create_counter("bosun.ingress.requests", description="Webhook deliveries, by source "
                                            "and outcome (accepted, duplicate, refused) and reason")
        self.alerts = meter.create_counter("bosun.alerts", description="Error-rate alerts fired")


_metrics: Metrics | None = None
_warm_sources: weakref.WeakSet[Any] = weakref.WeakSet()


def add_warm_source(source: Any) -> None:
    """Report ``source.warm()`` (a {backend: ready sandboxes} map) in the ``bosun.sandbox.warm`` gauge for as long
    as ``source`` lives (the gauge is made now, if it was not: a pool fills before its first sandbox is handed
    out)."""
    _warm_sources.add(source)
    instruments()


def _observe_warm(_options: Any) -> list[metrics.Observation]:
    totals: dict[str, int] = {}
    for source in list(_warm_sources):
        try:
            for backend, ready in source.warm().items():
                totals[backend] = totals.get(backend, 0) + ready
        except Exception:  # noqa: BLE001 - a gauge never breaks the exporter
            continue
    return [metrics.Observation(n, {"backend": b}) for b, n in totals.items()]


def instruments() -> Metrics:
    """The process's instruments (created on first use, after ``setup``)."""
    global _metrics
    if _metrics is None:
        _metrics = Metrics()
    return _metrics


def read_spans(folder: Path) -> list[dict[str, Any]]:
    """Every span in the offline store (unparseable lines skipped)."""
    out = []
    for path in sorted(folder.glob("spans-*.jsonl")):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out
