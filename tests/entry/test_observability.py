"""Traces and metrics of a whole event-started team run, received by a local OTLP/HTTP collector (a tiny server
decoding the protobuf payloads): one trace from the webhook's traceparent through the starter, the task, each
agent, each model and tool call; GenAI attributes on model calls; metrics by tool and model. The same run is in the
offline store (`bosun trace`), can be exported (`bosun export`) and replays from the export to the same diff."""

from __future__ import annotations

import json
import re
import time
from collections import Counter, defaultdict

import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from tests.conftest import EXAMPLE, Served, Stack, free_port, make_example_repo, wait_for
from tests.infra.events.samples import GH_SECRET, REPO, github_request, issues_labeled

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


def _value(any_value) -> object:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


class Collector:
    """Receives OTLP/HTTP protobuf exports of traces and metrics and keeps what it decoded."""

    def __init__(self) -> None:
        self.spans: list[dict] = []
        self.metric_names: set[str] = set()

    async def traces(self, request: Request) -> Response:
        req = trace_service_pb2.ExportTraceServiceRequest()
        req.ParseFromString(await request.body())
        for rs in req.resource_spans:
            service = {a.key: _value(a.value) for a in rs.resource.attributes}.get("bosun.component")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    self.spans.append({"trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
                                       "parent_id": s.parent_span_id.hex() or None, "name": s.name,
                                       "service": service,
                                       "attributes": {a.key: _value(a.value) for a in s.attributes}})
        return Response(trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
                        media_type="application/x-protobuf")

    async def metrics(self, request: Request) -> Response:
        req = metrics_service_pb2.ExportMetricsServiceRequest()
        req.ParseFromString(await request.body())
        for rm in req.resource_metrics:
            for sm in rm.scope_metrics:
                self.metric_names.update(m.name for m in sm.metrics)
        return Response(metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString(),
                        media_type="application/x-protobuf")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"]),
                                 Route("/v1/metrics", self.metrics, methods=["POST"])])


@pytest.fixture(scope="module")
def observed(tmp_path_factory):
    collector, port, ingress = Collector(), free_port(), free_port()
    repo = make_example_repo(tmp_path_factory.mktemp("obs") / "calc")
    st = Stack(tmp_path_factory.mktemp("observability"))
    st.env.update({"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
                   "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_METRIC_EXPORT_INTERVAL": "1000",
                   "BOSUN_GITHUB_WEBHOOK_SECRET": GH_SECRET, "BOSUN_INGRESS_PORT": str(ingress),
                   "BOSUN_DEFAULT_MODEL": f"scripted:{EXAMPLE / 'team.jsonl'}",
                   "BOSUN_EVENTS_REPOS": json.dumps({REPO: str(repo)})})
    with Served(collector.app(), port):
        st.up()
        try:
            yield st, collector, ingress, repo
        finally:
            st.down()


async def _event_started_run(st: Stack, ingress: int, n: int) -> tuple[str, dict]:
    body, headers = github_request("issues", issues_labeled(n))
    async with httpx.AsyncClient() as http:
        r = await http.post(f"http://127.0.0.1:{ingress}/webhooks/github", content=body,
                            headers={**headers, "traceparent": TRACEPARENT})
    assert r.status_code == 200, r.text
    wf_id = f"gh:{REPO}:issue:{n}"
    client = await Client.connect(f"127.0.0.1:{st.env['BOSUN_TEMPORAL_PORT']}", data_converter=pydantic_data_converter)
    for _ in range(200):
        try:
            return wf_id, await client.get_workflow_handle(wf_id).result()
        except Exception:  # noqa: BLE001 - not started yet
            time.sleep(0.2)
    raise AssertionError("the event-started run never finished")


@pytest.mark.slow
async def test_one_trace_from_the_webhook_through_every_agent_model_and_tool_call(observed):
    st, collector, ingress, _ = observed
    wf_id, result = await _event_started_run(st, ingress, 4242)
    assert result["status"] == "succeeded"

    def complete() -> bool:
        return any(s["name"] == "CompleteWorkflow:TaskWorkflow" for s in collector.spans
                   if s["trace_id"] == TRACE_ID)
    wait_for(complete, 30, 0.5, "the task's last span at the collector")
    spans = [s for s in collector.spans if s["trace_id"] == TRACE_ID]
    by_id = {s["span_id"]: s for s in spans}
    # the webhook's trace continues through the ingress, the starter and the worker
    assert {s["service"] for s in spans} >= {"ingress", "starter", "worker"}
    assert any(s["name"] == "webhook github issues" for s in spans)
    # every span of the task's workflows is in this one trace
    ours = [s for s in collector.spans if str(s["attributes"].get("temporalWorkflowID", "")).startswith(wf_id)]
    assert ours and {s["trace_id"] for s in ours} == {TRACE_ID}

    def ancestors(span: dict) -> list[dict]:
        out = []
        while span.get("parent_id") in by_id:
            span = by_id[span["parent_id"]]
            out.append(span)
        return out

    chats = [s for s in spans if s["name"].startswith("chat scripted:")]
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    per_agent = defaultdict(int)
    for s in chats + tools:
        run = by_id[s["parent_id"]]
        assert run["name"] in ("RunActivity:model_call", "RunActivity:tool_call")
        agent = run["attributes"]["temporalWorkflowID"]
        assert agent.startswith(f"{wf_id}/")
        per_agent[agent] += 1
        assert ancestors(s)[-1]["name"] == "webhook github issues"  # all the way up to the webhook
    agents = sorted(f"{wf_id}/{n}" for n in ("planner", "fast_edit-median-1", "fast_edit-percent-1", "debugger-1"))
    assert sorted(per_agent) == agents
    # down to the sandbox: each agent's sandbox is acquired and started once, under the agent (its first step in
    # the sandbox, init_agent), and every command it runs is a sandbox exec under the agent's tool call
    sandbox_spans: dict[str, Counter] = defaultdict(Counter)
    for s in spans:
        if s["name"].startswith("sandbox "):
            run = next((a for a in ancestors(s) if a["name"].startswith("RunActivity:")), None)
            assert run is not None, s
            sandbox_spans[run["attributes"]["temporalWorkflowID"]][s["name"]] += 1
    for agent in agents:
        assert sandbox_spans[agent]["sandbox acquire"] == 1 and sandbox_spans[agent]["sandbox start"] == 1, agent
        assert sandbox_spans[agent]["sandbox exec"] >= 1, agent
    starts = [s for s in spans if s["name"] == "sandbox start"]
    assert all(s["attributes"]["bosun.sandbox.start"] in ("warm", "cold") for s in starts)
    execs = [s for s in spans if s["name"] == "sandbox exec" and any(
        a["name"] == "execute_tool run_tests" for a in ancestors(s))]
    assert execs and all("bosun.exec.exit_code" in s["attributes"] for s in execs)
    assert len(chats) == 16  # one per recorded turn of team.jsonl
    for s in chats:
        a = s["attributes"]
        assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "scripted"
        assert a["gen_ai.request.model"].startswith("scripted:") and a["gen_ai.usage.input_tokens"] > 0
        assert "gen_ai.usage.output_tokens" in a and a["gen_ai.response.finish_reasons"]
    assert {s["attributes"]["gen_ai.tool.name"] for s in tools} >= {"grep", "submit_plan", "read_file",
                                                                    "str_replace", "run_tests"}
    wait_for(lambda: {"bosun.tool.calls", "gen_ai.client.token.usage"} <= collector.metric_names, 30, 0.5,
             "bosun's metrics at the collector")
    # the same trace is in the offline store, read at once: every agent, each with its sandbox under it
    shown = st.bosun("trace", wf_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"trace {TRACE_ID}") and "»" in shown.stdout
    blocks = agent_blocks(shown.stdout)
    assert sorted(blocks) == agents
    for agent, block in blocks.items():
        assert sum("sandbox start  (" in line for line in block) == 1, (agent, block)
        assert any("sandbox exec  (" in line for line in block), (agent, block)
    assert "execute_tool run_tests" in shown.stdout


def agent_blocks(tree: str) -> dict[str, list[str]]:
    """The lines under each ``AgentWorkflow ID`` line of a drawn trace (deeper than it, up to its next sibling)."""
    lines = tree.splitlines()
    blocks: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        found = re.search(r"AgentWorkflow (\S+)", line)
        if not found:
            continue
        depth = line.index("AgentWorkflow")
        block = []
        for below in lines[i + 1:]:
            if re.match(r"[» │├└─]*", below).end() <= depth:
                break
            block.append(below)
        blocks[found.group(1)] = block
    return blocks


@pytest.mark.slow
def test_an_export_replays_to_the_same_diff(observed, tmp_path):
    st, _, _, _ = observed
    first = st.bosun("run", "--repo", str(make_example_repo(tmp_path / "a")), "--model",
                     f"scripted:{EXAMPLE / 'team.jsonl'}", "--id", "obs-export", "--wait", "--json", "fix the tests",
                     timeout=400)
    assert first.returncode == 0, first.stderr
    out = tmp_path / "run.json"
    exported = st.bosun("export", "obs-export", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "bosun.trajectory/1" and doc["task"]["status"] == "succeeded"
    agents = {a["agent_id"].split("/")[-1]: a for a in doc["agents"]}
    assert set(agents) == {"planner", "fast_edit-median-1", "fast_edit-percent-1", "debugger-1"}
    call = agents["fast_edit-median-1"]["turns"][1]["tool_calls"][0]
    assert call["name"] == "str_replace" and call["arguments"]["path"] == "calc/stats.py"
    assert call["result"].startswith("edited calc/stats.py") and call["result_ref"].startswith("sha256:")
    assert agents["planner"]["messages"][0]["role"] == "system" and agents["debugger-1"]["usage"]["input_tokens"]
    jsonl = st.bosun("export", "obs-export", "--format", "jsonl").stdout.splitlines()
    assert json.loads(jsonl[0])["record"] == "task" and {json.loads(x)["record"] for x in jsonl} == {
        "task", "agent", "turn"}
    # the export replays: same diff, byte for byte, from either form
    (tmp_path / "run.jsonl").write_text("\n".join(jsonl) + "\n")
    for form in ("run.json", "run.jsonl"):
        again = st.bosun("run", "--repo", str(make_example_repo(tmp_path / form.replace(".", "-"))), "--model",
                         f"scripted:{tmp_path / form}", "--id", f"obs-replay-{form.split('.')[1]}", "--wait",
                         "--json", "fix the tests", timeout=400)
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["diff"] == json.loads(first.stdout)["diff"]
