"""Spans, metrics and error-rate alerts for model calls and tool calls: a layer of the one activity interceptor
(activities/interceptor.py).

Temporal's ``TracingInterceptor`` makes the ``RunActivity:*`` spans (one trace per task, continued from the webhook
or the CLI); inside them ``observed`` adds the GenAI spans: ``chat {model}`` for a model call (OpenTelemetry
GenAI semantic conventions: ``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.response.model``, ``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.response.finish_reasons``)
and ``execute_tool {name}`` for a tool call (``gen_ai.tool.name``, the error class, the sandbox backend). It records
the metrics of ``infra.telemetry.Metrics`` and feeds every outcome to the error-rate monitor (``infra.alerts``).
Nothing it records carries arguments, results or file contents.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.worker import ExecuteActivityInput

from activities.models import ModelCallInput, ModelCallResult, ToolCallInput, ToolResultRef
from infra.alerts import AlertSink, ErrorRateMonitor, load_baselines, save_baselines
from infra.errors import BosunError, ToolFailed
from infra.telemetry import instruments

_tracer = trace.get_tracer("bosun.activities")
SAVE_EVERY_S = 60.0


TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
MAX_TOOL_NAMES = 64
_tool_names: set[str] = set()


def tool_label(name: str) -> str:
    """The tool name as a span and metric attribute. The model chooses it (an unknown or garbled name is refused as
    a tool call, but it still reaches here): odd names and names past the first ``MAX_TOOL_NAMES`` become
    ``other``, so a model cannot blow up the metrics' cardinality or put text of its own into labels."""
    if name in _tool_names:
        return name
    if TOOL_NAME.match(name) and len(_tool_names) < MAX_TOOL_NAMES:
        _tool_names.add(name)
        return name
    return "other"


def provider_of(model: str) -> str:
    """``gen_ai.provider.name`` of a model spec (openai, anthropic, openai-compatible, scripted)."""
    return model.partition(":")[0] or "unknown"


def error_class(e: BaseException) -> str:
    if isinstance(e, BosunError):
        return e.kind
    if isinstance(e, ApplicationError) and e.type:
        return e.type
    return type(e).__name__


class Observer:
    """What the interceptor records into: the alert monitor and its sink, saved now and then."""

    def __init__(self, monitor: ErrorRateMonitor, sink: AlertSink | None, baseline_path: Path | None,
                 backend: str = "") -> None:
        self.monitor, self.sink, self.baseline_path, self.backend = monitor, sink, baseline_path, backend
        self._saved = time.monotonic()

    @classmethod
    def for_settings(cls, settings: Any, backend: str = "") -> Observer:
        folder = settings.data_dir / "telemetry"
        path = folder / "alert-baselines.json"
        monitor = ErrorRateMonitor(window_s=settings.alert_window_s, factor=settings.alert_factor,
                                   min_calls=settings.alert_min_calls, min_rate=settings.alert_min_rate,
                                   baselines=load_baselines(path))
        return cls(monitor, AlertSink(folder, settings.alert_webhook_url), path, backend)

    def outcome(self, operation: str, model: str, error: str | None) -> None:
        for alert in self.monitor.record(operation, model, error, time.time()):
            instruments().alerts.add(1, {"operation": operation, "model": model, "error_class": alert.error_class})
            if self.sink is not None:
                self.sink.emit(alert)
                if self.sink.webhook_url:
                    asyncio.get_running_loop().create_task(self.sink.notify(alert))
        if self.baseline_path is not None and time.monotonic() - self._saved > SAVE_EVERY_S:
            self._saved = time.monotonic()
            try:
                save_baselines(self.baseline_path, self.monitor.baselines)
            except OSError:
                pass


Step = Callable[[], Awaitable[Any]]
"""The activity itself, with what runs inside this layer (the one interceptor: activities/interceptor.py)."""


async def observed(observer: Observer, input: ExecuteActivityInput, step: Step) -> Any:
    """``step`` run with the GenAI span, metrics and alert feed of a model call or a tool call (other activities
    run as they are)."""
    name = activity.info().activity_type
    arg = input.args[0] if input.args else None
    if name == "model_call" and isinstance(arg, ModelCallInput):
        return await _model_call(observer, arg, step)
    if name == "tool_call" and isinstance(arg, ToolCallInput):
        return await _tool_call(observer, arg, step)
    return await step()


async def _model_call(observer: Observer, arg: ModelCallInput, step: Step) -> Any:
    m = instruments()
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider_of(arg.model),
             "gen_ai.request.model": arg.model, "bosun.agent.id": arg.agent_id, "bosun.agent.role": arg.role,
             "bosun.turn": arg.turn}
    started = time.monotonic()
    with _tracer.start_as_current_span(f"chat {arg.model}", attributes=attrs) as span:
        try:
            result = await step()
        except BaseException as e:
            cls = error_class(e)
            span.set_attribute("error.type", cls)
            span.set_status(Status(StatusCode.ERROR, cls))
            m.model_calls.add(1, {"gen_ai.request.model": arg.model, "error.type": cls})
            m.model_duration.record(time.monotonic() - started, {"gen_ai.request.model": arg.model,
                                                                 "error.type": cls})
            observer.outcome("model_call", arg.model, cls)
            raise
        if isinstance(result, ModelCallResult):
            u = result.usage
            span.set_attributes({"gen_ai.response.model": result.model or arg.model,
                                 "gen_ai.usage.input_tokens": u.input_tokens,
                                 "gen_ai.usage.output_tokens": u.output_tokens,
                                 "gen_ai.response.finish_reasons": [result.stop_reason or "unknown"],
                                 "bosun.cost_usd": result.cost_usd, "bosun.tool_calls": len(result.tool_calls)})
            labels = {"gen_ai.request.model": arg.model}
            m.tokens.add(u.input_tokens, {**labels, "gen_ai.token.type": "input"})
            m.tokens.add(u.output_tokens, {**labels, "gen_ai.token.type": "output"})
            m.cost.add(result.cost_usd, labels)
        m.model_calls.add(1, {"gen_ai.request.model": arg.model, "error.type": "none"})
        m.model_duration.record(time.monotonic() - started, {"gen_ai.request.model": arg.model})
        observer.outcome("model_call", arg.model, None)
        return result


async def _tool_call(observer: Observer, arg: ToolCallInput, step: Step) -> Any:
    m = instruments()
    tool = tool_label(arg.call.name)
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
             "gen_ai.tool.call.id": arg.call.id, "bosun.agent.id": arg.agent_id,
             "bosun.sandbox.backend": observer.backend, "gen_ai.request.model": arg.model}
    started = time.monotonic()
    with _tracer.start_as_current_span(f"execute_tool {tool}", attributes=attrs) as span:
        cls: str | None = None
        try:
            result = await step()
        except BaseException as e:
            cls = error_class(e)
            span.set_status(Status(StatusCode.ERROR, cls))
            raise
        else:
            if isinstance(result, ToolResultRef) and result.is_error:
                cls = result.error_kind or ToolFailed.kind
            if isinstance(result, ToolResultRef) and result.replayed:
                span.set_attribute("bosun.replayed", True)
            return result
        finally:
            if cls:
                span.set_attribute("error.type", cls)
            labels = {"gen_ai.tool.name": tool, "gen_ai.request.model": arg.model, "error.type": cls or "none"}
            m.tool_calls.add(1, labels)
            m.tool_duration.record(time.monotonic() - started, labels)
            observer.outcome(tool, arg.model, cls)
