"""The telemetry interceptor on a real worker: GenAI spans under Temporal's activity spans, metrics by error class,
and alerts when a tool and a model start failing (a failing tool and a failing model are injected)."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.common import RetryPolicy
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import Worker

from activities.interceptor import plugin
from activities.models import ModelCallInput, ModelCallResult, ToolCallInput, ToolCallRef, ToolResultRef, Usage
from activities.telemetry import Observer
from infra.alerts import AlertSink, ErrorRateMonitor, read_alerts
from infra.errors import ProviderError
from infra.traceview import BACKGROUND

REF = "sha256:" + "0" * 64
MODEL = "openai:gpt-5-codex"
SPANS = InMemorySpanExporter()
READER = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def providers():
    """An SDK tracer and meter provider for this process (the worker's, as infra.telemetry.setup installs them)."""
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(SPANS))
    trace.set_tracer_provider(tp)
    metrics.set_meter_provider(MeterProvider(metric_readers=[READER]))
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        pytest.fail("another test installed a tracer provider first")


@activity.defn(name="model_call")
async def model_call(inp: ModelCallInput) -> ModelCallResult:
    if inp.turn % 2:  # the injected failure: every other model call
        raise ProviderError("503 Service Unavailable", status=503, retryable=False)
    return ModelCallResult(transcript_ref=REF, text_preview="ok", usage=Usage(input_tokens=1000, output_tokens=50),
                           model=inp.model, stop_reason="end_turn", cost_usd=0.002)


@activity.defn(name="tool_call")
async def tool_call(inp: ToolCallInput) -> ToolResultRef:
    failing = inp.call.name == "run_tests" and int(inp.call.id[1:]) % 2  # the injected failing tool
    return ToolResultRef(call_id=inp.call.id, name=inp.call.name, result_ref=REF, summary="x",
                         is_error=bool(failing), error_kind="Timeout" if failing else None)


@workflow.defn(sandboxed=False)  # a test workflow; its module imports what a sandbox refuses
class Calls:
    @workflow.run
    async def run(self, n: int) -> int:
        failed = 0
        for i in range(n):
            try:
                await workflow.execute_activity(
                    "model_call", ModelCallInput(agent_id="t/agent-1", turn=i, model=MODEL, transcript_ref=REF,
                                                 role="fast_edit"),
                    start_to_close_timeout=timedelta(seconds=10), retry_policy=RetryPolicy(maximum_attempts=1),
                    result_type=ModelCallResult)
            except Exception:  # noqa: BLE001
                failed += 1
            for name in ("read_file", "run_tests"):
                await workflow.execute_activity(
                    "tool_call", ToolCallInput(agent_id="t/agent-1", workspace="/w", model=MODEL, call=ToolCallRef(
                        id=f"c{i}", name=name, arguments_ref=REF, arguments_preview="{}")),
                    start_to_close_timeout=timedelta(seconds=10), result_type=ToolResultRef)
        return failed


async def test_spans_metrics_and_alerts_from_a_failing_tool_and_model(env, tmp_path):
    # a baseline from before: both were healthy (2% errors); now half of their calls fail
    monitor = ErrorRateMonitor(window_s=3600, min_calls=10,
                               baselines={f"run_tests|{MODEL}": {"Timeout": 0.02}, f"model_call|{MODEL}": {}})
    observer = Observer(monitor, AlertSink(tmp_path), None, backend="docker")
    client = Client(**{**env.client.config(), "interceptors": [TracingInterceptor()]})
    queue = f"telemetry-{uuid.uuid4().hex[:8]}"
    async with Worker(client, task_queue=queue, workflows=[Calls], activities=[model_call, tool_call],
                      plugins=[plugin(observer=observer)]):
        failed = await client.execute_workflow(Calls.run, 30, id=f"telemetry-{uuid.uuid4().hex[:6]}",
                                               task_queue=queue)
    assert failed == 15
    spans = SPANS.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    chats = [s for s in spans if s.name == f"chat {MODEL}"]
    tools = [s for s in spans if s.name.startswith("execute_tool ")]
    assert len(chats) == 30 and len(tools) == 60
    ok = next(s for s in chats if s.attributes.get("gen_ai.usage.input_tokens"))
    assert ok.attributes["gen_ai.operation.name"] == "chat" and ok.attributes["gen_ai.provider.name"] == "openai"
    assert ok.attributes["gen_ai.request.model"] == MODEL and ok.attributes["gen_ai.usage.output_tokens"] == 50
    assert by_id[ok.parent.span_id].name == "RunActivity:model_call"  # under Temporal's activity span
    bad = next(s for s in chats if s.attributes.get("error.type"))
    assert bad.attributes["error.type"] == "ProviderError" and not bad.status.is_ok
    failing = [s for s in tools if s.attributes.get("error.type") == "Timeout"]
    assert len(failing) == 15 and {s.attributes["gen_ai.tool.name"] for s in failing} == {"run_tests"}
    assert failing[0].attributes["bosun.sandbox.backend"] == "docker"
    # nothing of the content: no arguments, results or previews in any attribute
    assert all("arguments" not in k and "preview" not in k for s in spans for k in s.attributes)
    points = {(m.name, tuple(sorted(p.attributes.items()))): p for rm in READER.get_metrics_data().resource_metrics
              for sm in rm.scope_metrics for m in sm.metrics for p in m.data.data_points}
    assert points[("bosun.tool.calls", (("error.type", "Timeout"), ("gen_ai.request.model", MODEL),
                                        ("gen_ai.tool.name", "run_tests")))].value == 15
    assert points[("gen_ai.client.token.usage", (("gen_ai.request.model", MODEL),
                                                 ("gen_ai.token.type", "input")))].value == 15 * 1000
    # the alerts fired, once each, and were written where `bosun alerts` reads them
    fired = sorted((a["operation"], a["error_class"]) for a in read_alerts(tmp_path))
    assert fired == [("model_call", "ProviderError"), ("run_tests", "Timeout")]


def test_tool_names_in_labels_are_bounded():
    from activities import telemetry

    telemetry._tool_names.clear()
    assert telemetry.tool_label("read_file") == "read_file"
    assert telemetry.tool_label("x" * 500) == "other" and telemetry.tool_label("rm -rf /\n") == "other"
    for i in range(telemetry.MAX_TOOL_NAMES):
        telemetry.tool_label(f"made_up_{i}")
    assert telemetry.tool_label("one_more_name") == "other" and telemetry.tool_label("read_file") == "read_file"
    telemetry._tool_names.clear()


async def test_sandbox_pool_metrics_warm_in_use_and_cold_starts(tmp_path):
    """The sandbox manager reports starts (warm from a pool, cold otherwise), sandboxes in use and the pool's
    ready sandboxes, on a real bwrap backend."""
    from sandbox import get_provider
    from sandbox.manager import SandboxManager

    def point(name: str, **labels: str) -> float | None:
        data = READER.get_metrics_data()  # (None while nothing was recorded: this test run first)
        for rm in data.resource_metrics if data is not None else []:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    for p in m.data.data_points:
                        if m.name == name and dict(p.attributes) == labels:
                            return p.value
        return None

    cold_before = point("bosun.sandbox.starts", backend="bwrap", start="cold") or 0
    manager = SandboxManager("bwrap", "unused")
    manager._provider = get_provider("bwrap", pool_size=1)
    await manager._provider.start()
    ready = await manager._provider.wait_ready(timeout_s=30)
    assert point("bosun.sandbox.warm", backend="bwrap") == ready
    workspaces = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    for ws in workspaces:
        ws.mkdir()
    try:
        for i, ws in enumerate(workspaces):
            box = await manager.get(f"k{i}", str(ws))
            assert (await box.exec(["true"])).exit_code == 0
        assert point("bosun.sandbox.in_use", backend="bwrap") == 3
        warm = point("bosun.sandbox.starts", backend="bwrap", start="warm") or 0
        cold = (point("bosun.sandbox.starts", backend="bwrap", start="cold") or 0) - cold_before
        # the pool's hits were warm starts (it refills between acquires), its misses cold ones
        assert warm + cold == 3 and warm == manager._provider.hits >= ready
        # the pool's starts ahead are spans marked as background, set off by an agent's acquire: `bosun trace`
        # shows them under it without counting them in its time
        finished = SPANS.get_finished_spans()
        ahead = [sp for sp in finished if sp.name == "sandbox start ahead"]
        assert ahead and all(sp.attributes.get(BACKGROUND) is True for sp in ahead)
        acquiring = {sp.context.span_id for sp in finished if sp.name in ("sandbox acquire", "sandbox start")}
        assert any(sp.parent is not None and sp.parent.span_id in acquiring for sp in ahead)
    finally:
        await manager.close_all()  # (the warm pool's sandboxes too, as at a worker's shutdown)
    assert point("bosun.sandbox.in_use", backend="bwrap") == 0
    assert await manager._provider.wait_ready(timeout_s=10) == 0  # closed: nothing kept, nothing refilled
