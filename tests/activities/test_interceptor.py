"""The one activity interceptor (activities/interceptor.py): journal, then errors, then uploads, then telemetry,
from the outside in, on a real Temporal worker."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.worker import Worker

import activities.interceptor as layers
from activities.interceptor import LAYERS, Journal, plugin
from activities.telemetry import Observer
from infra import objectstore
from infra.alerts import AlertSink, ErrorRateMonitor
from infra.errors import ProviderError, ToolFailed

SEEN: dict[str, object] = {}


@activity.defn(name="tool_call")
async def failing_tool(why: str) -> str:
    SEEN["uploads_open_in_activity"] = objectstore._PENDING.get() is not None
    if why == "provider":
        raise ProviderError("the provider said 503", status=503, retry_after=7)
    raise ToolFailed(why)


@workflow.defn(sandboxed=False)
class OneCall:
    @workflow.run
    async def run(self, why: str) -> str:
        try:
            await workflow.execute_activity(failing_tool, why, start_to_close_timeout=timedelta(seconds=10),
                                            retry_policy=RetryPolicy(maximum_attempts=1))
        except ActivityError as e:
            cause = e.cause
            assert isinstance(cause, ApplicationError)
            return json.dumps({"type": cause.type, "non_retryable": cause.non_retryable,
                               "delay": cause.next_retry_delay.total_seconds() if cause.next_retry_delay else None})
        return "no failure"


async def test_the_layers_in_their_order(env, tmp_path, monkeypatch):
    real = layers.observed

    async def watched(observer, input, step):
        try:
            return await real(observer, input, step)
        except BaseException as e:
            SEEN["telemetry_saw"] = type(e).__name__
            SEEN["uploads_open_in_telemetry"] = objectstore._PENDING.get() is not None
            raise

    monkeypatch.setattr(layers, "observed", watched)
    journal = Journal(tmp_path / "journal.jsonl")
    observer = Observer(ErrorRateMonitor(window_s=60, min_calls=100), AlertSink(tmp_path), None, backend="test")
    queue = f"layers-{uuid.uuid4().hex[:8]}"
    async with Worker(env.client, task_queue=queue, workflows=[OneCall], activities=[failing_tool],
                      plugins=[plugin(journal, observer)]):
        tool = json.loads(await env.client.execute_workflow(OneCall.run, "exit 1", id=f"{queue}-a", task_queue=queue))
        provider = json.loads(await env.client.execute_workflow(OneCall.run, "provider", id=f"{queue}-b",
                                                                task_queue=queue))
    assert LAYERS == ("journal", "errors", "uploads", "telemetry")
    # telemetry is innermost: it sees bosun's own class, inside the uploads' scope, which the activity runs in
    assert SEEN == {"uploads_open_in_activity": True, "telemetry_saw": "ProviderError",
                    "uploads_open_in_telemetry": True}
    # errors: the class decides type, retries and the retry-after delay
    assert tool == {"type": "ToolFailed", "non_retryable": True, "delay": None}
    assert provider == {"type": "ProviderError", "non_retryable": False, "delay": 7.0}
    # journal is outermost: it records the failure Temporal records, after the mapping
    records = [json.loads(line) for line in journal.path.read_text().splitlines()]
    assert [(r["event"], r.get("error")) for r in records] == [("start", None), ("fail", "ApplicationError")] * 2
    assert all(r["type"] == "tool_call" and r["attempt"] == 1 for r in records)


async def test_without_journal_or_telemetry_errors_are_still_mapped(env):
    queue = f"layers-{uuid.uuid4().hex[:8]}"
    async with Worker(env.client, task_queue=queue, workflows=[OneCall], activities=[failing_tool],
                      plugins=[plugin()]):
        out = json.loads(await env.client.execute_workflow(OneCall.run, "exit 2", id=f"{queue}-a", task_queue=queue))
    assert out["type"] == "ToolFailed"
    assert out["non_retryable"] is True
    async with Worker(env.client, task_queue=queue, workflows=[OneCall], activities=[failing_tool]):
        bare = json.loads(await env.client.execute_workflow(OneCall.run, "exit 3", id=f"{queue}-b", task_queue=queue))
    assert bare["non_retryable"] is False  # (without it, a ToolFailed would be retried: the layer decides)
