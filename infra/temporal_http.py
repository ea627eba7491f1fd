"""Starting a workflow through Temporal's HTTP API, without loading Temporal's SDK.

The embedded dev server serves the frontend's calls as JSON on ``BOSUN_TEMPORAL_HTTP_PORT`` (``temporal server
start-dev --http-port``). ``bosun run`` starts its task there: the SDK and its protobufs take about half a second
to import on a small machine, more than the rest of the command. Payloads go in the API's shorthand (plain JSON
values for ``json/plain`` payloads), which is what the workers' pydantic data converter reads; the trace context
goes in the header the SDK's OpenTelemetry interceptor reads (``_tracer-data``).

Only for the embedded stack (no ``BOSUN_TEMPORAL_ADDRESS``: a cluster's frontend may serve no HTTP, or only over
TLS with credentials): ``usable`` says when. ``Unreachable`` means nothing answered, so the caller takes the SDK's
path, which explains why.
"""

from __future__ import annotations

import http.client
import json
import uuid
from typing import Any
from urllib.parse import quote

from infra.errors import ConfigError
from infra.settings import Settings

TASK_WORKFLOW = "TaskWorkflow"
"""The registered type of the task's workflow (workflows/task.py), by which `bosun run` and the events gateway start
it without loading the workflow's modules (tests/entry/test_help.py checks it against the definition)."""
TRACE_HEADER = "_tracer-data"
"""The header field temporalio's TracingInterceptor carries the trace context in."""
TIMEOUT_S = 10.0


class Unreachable(Exception):
    """Nothing answered at the HTTP API's address (the stack is down, or older than the HTTP port)."""


def usable(settings: Settings) -> bool:
    """The HTTP API is the embedded dev server's, at a known address."""
    return not settings.temporal_address


def start_workflow(settings: Settings, workflow: str, workflow_id: str, *, task_queue: str, arg: Any,
                   memo: dict[str, Any] | None = None, summary: str = "", trace: dict[str, str] | None = None,
                   request_id: str | None = None) -> str:
    """Start ``workflow`` with the one argument ``arg`` (JSON-able); its run id. ConfigError when Temporal refuses
    (a run of that id exists, ...); Unreachable when nothing answers."""
    body: dict[str, Any] = {"workflowId": workflow_id, "workflowType": {"name": workflow},
                            "taskQueue": {"name": task_queue}, "input": [arg],
                            "requestId": request_id or str(uuid.uuid4()), "identity": "bosun-cli"}
    if memo:
        body["memo"] = {"fields": memo}
    if summary:
        body["userMetadata"] = {"summary": summary}
    if trace:
        body["header"] = {"fields": {TRACE_HEADER: trace}}
    path = f"/api/v1/namespaces/{quote(settings.temporal_namespace, safe='')}/workflows/{quote(workflow_id, safe='')}"
    status, answer = _post(settings, path, body)
    if status == 200:
        return str(answer.get("runId", ""))
    message = str(answer.get("message", ""))[:300]
    if answer.get("code") == 6:  # ALREADY_EXISTS
        raise ConfigError(f"a run with the id {workflow_id} is running: pick another --id (`bosun history "
                          f"{workflow_id}` shows it)")
    if answer.get("code") == 5 and "namespace" in message.lower():
        raise ConfigError(f"Temporal has no namespace {settings.temporal_namespace!r}: {message} (check "
                          "BOSUN_TEMPORAL_NAMESPACE)")
    if "code" not in answer:  # not Temporal's gateway answering (another server on that port)
        raise Unreachable(f"{settings.host}:{settings.temporal_http_port} answered HTTP {status}, not as Temporal")
    raise ConfigError(f"Temporal refused to start {workflow_id}: {message or f'HTTP {status}'}")


def _post(settings: Settings, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection(settings.host, settings.temporal_http_port, timeout=TIMEOUT_S)
    try:
        conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = conn.getresponse()
        raw = response.read(1 << 20)
    except OSError as e:
        raise Unreachable(f"{settings.host}:{settings.temporal_http_port}: {e}") from None
    finally:
        conn.close()
    try:
        answer = json.loads(raw) if raw else {}
    except ValueError:
        answer = {"message": raw[:300].decode("utf-8", "replace")}
    return response.status, answer if isinstance(answer, dict) else {"message": str(answer)}
