"""Starting a workflow through Temporal's HTTP API (infra/temporal_http.py), on the embedded stack's real dev server:
what the SDK reads back is what was sent, a taken id and a wrong namespace are said in plain words, and a port where
Temporal does not answer sends the caller to the SDK's path (Unreachable)."""

from __future__ import annotations

import asyncio
import http.server
import threading
import uuid

import pytest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from infra import temporal_http
from infra.errors import ConfigError
from infra.privatestack import held_port
from infra.settings import Settings
from workflows.models import TaskInput


def settings_of(stack, **extra) -> Settings:
    return Settings(host="127.0.0.1", temporal_port=int(stack.env["BOSUN_TEMPORAL_PORT"]),
                    temporal_http_port=int(stack.env["BOSUN_TEMPORAL_HTTP_PORT"]), **extra)


async def test_a_workflow_started_over_http_is_what_the_sdk_reads_back(stack):
    s = settings_of(stack)
    wf_id = f"http-{uuid.uuid4().hex[:8]}"
    inp = TaskInput(repo="/nonexistent/repo", task="fix the \u00e9 test", model="scripted:/x.jsonl", mode="solo",
                    budget={"usd": 1.5})
    trace = {"traceparent": f"00-{'1' * 32}-{'2' * 16}-01"}
    queue = f"nobody-polls-{wf_id}"  # (no worker runs it: only what Temporal holds is read)
    run_id = temporal_http.start_workflow(s, "TaskWorkflow", wf_id, task_queue=queue, arg=inp.model_dump(mode="json"),
                                          memo={"trigger": "cli", "repo": "/nonexistent/repo"}, summary="fix it",
                                          trace=trace)
    client = await Client.connect(s.temporal_target, data_converter=pydantic_data_converter)
    handle = client.get_workflow_handle(wf_id)
    try:
        desc = await handle.describe()
        assert desc.run_id == run_id and desc.workflow_type == "TaskWorkflow" and desc.task_queue == queue
        assert await desc.memo() == {"trigger": "cli", "repo": "/nonexistent/repo"}
        assert await desc.static_summary() == "fix it"
        started = (await handle.fetch_history()).events[0].workflow_execution_started_event_attributes
        [payload] = started.input.payloads
        assert pydantic_data_converter.payload_converter.from_payload(payload, TaskInput) == inp
        header = started.header.fields["_tracer-data"]
        assert pydantic_data_converter.payload_converter.from_payload(header, dict) == trace
        with pytest.raises(ConfigError, match=f"a run with the id {wf_id} is running: pick another --id"):
            temporal_http.start_workflow(s, "TaskWorkflow", wf_id, task_queue=queue, arg={})
    finally:
        await handle.terminate()


async def test_a_namespace_that_does_not_exist_is_named(stack):
    s = settings_of(stack, temporal_namespace="no-such-namespace")
    with pytest.raises(ConfigError, match="Temporal has no namespace 'no-such-namespace'.*BOSUN_TEMPORAL_NAMESPACE"):
        await asyncio.to_thread(temporal_http.start_workflow, s, "TaskWorkflow", "x", task_queue="q", arg={})


def test_nothing_listening_or_another_server_is_unreachable():
    with held_port() as port:
        with pytest.raises(temporal_http.Unreachable):
            temporal_http.start_workflow(Settings(host="127.0.0.1", temporal_http_port=port), "TaskWorkflow", "x",
                                         task_queue="q", arg={})
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)  # answers 501 to POST
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(temporal_http.Unreachable, match="not as Temporal"):
            temporal_http.start_workflow(Settings(host="127.0.0.1", temporal_http_port=server.server_address[1]),
                                         "TaskWorkflow", "x", task_queue="q", arg={})
    finally:
        server.shutdown()


def test_a_cluster_temporal_is_not_started_over_http():
    assert temporal_http.usable(Settings()) and not temporal_http.usable(Settings(temporal_address="t.example:7233"))
