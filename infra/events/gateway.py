"""Temporal operations of the starter: start, signal-with-start (follow-ups), cancel.

The requests are built here rather than through ``Client.start_workflow`` for two reasons:

* the request id is derived from the delivery id, so a repeated signal-with-start of the same delivery into the same
  run is dropped by the server (signals, unlike updates, have no other dedupe key);
* the trace context rides in the ``_tracer-data`` header, where temporalio's OpenTelemetry interceptor looks.

Errors are sorted into :class:`TransientError` (Temporal unreachable, overloaded, timed out: nak and retry later) and
everything else (a bug or a bad request: counted towards dead-lettering).
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from temporalio.api.errordetails.v1 import WorkflowExecutionAlreadyStartedFailure
from temporalio.api.workflowservice.v1 import SignalWithStartWorkflowExecutionRequest, StartWorkflowExecutionRequest
from temporalio.client import Client
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.converter import PayloadConverter
from temporalio.service import RPCError, RPCStatusCode

from infra.events import tracing
from infra.temporal import TASK_WORKFLOW

FOLLOW_UP_SIGNAL = "follow_up"
"""Signal sent to a task's workflow for each follow-up; its one argument is the follow-up text (a string)."""

REUSE_POLICIES = {
    "allow_duplicate": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    "allow_duplicate_failed_only": WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    "reject_duplicate": WorkflowIDReusePolicy.REJECT_DUPLICATE,
}

TRANSIENT = {RPCStatusCode.UNAVAILABLE, RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.RESOURCE_EXHAUSTED,
             RPCStatusCode.ABORTED, RPCStatusCode.CANCELLED, RPCStatusCode.UNKNOWN, RPCStatusCode.INTERNAL}

_REQUEST_NS = uuid.UUID("5d0f6f2e-6b1c-4a53-9d43-b0a5e0e7c0de")


class TransientError(Exception):
    """Temporal could not be reached or did not answer in time; retry the message later."""


def request_id(dedupe_key: str) -> str:
    """A stable request id for one delivery (UUID v5)."""
    return str(uuid.uuid5(_REQUEST_NS, dedupe_key))


@dataclass(frozen=True)
class StartResult:
    workflow_id: str
    run_id: str | None
    started: bool
    """True when this call created the run; False when it reached a running one (or found it closed)."""
    closed: bool = False
    """The id's last run is closed and the reuse policy refused a new one."""


class WorkflowGateway:
    """The starter's access to Temporal."""

    def __init__(self, client: Client, *, task_queue: str, timeout_s: float = 10.0,
                 reuse_policy: str = "allow_duplicate") -> None:
        self.client = client
        self.task_queue = task_queue
        self.timeout_s = timeout_s
        self.reuse_policy = REUSE_POLICIES[reuse_policy]

    async def _call(self, coro: Any) -> Any:
        try:
            return await asyncio.wait_for(coro, self.timeout_s + 1)
        except TimeoutError:
            raise TransientError(f"Temporal did not answer within {self.timeout_s:.0f}s") from None
        except RPCError as e:
            if e.status in TRANSIENT:
                raise TransientError(f"Temporal {e.status.name}: {e.message}") from None
            raise

    async def start(self, *, workflow_id: str, task_input: Any, dedupe_key: str, memo: dict[str, Any],
                    trace_carrier: dict[str, str] | None = None, summary: str = "",
                    follow_up: Any = None, workflow_type: str = TASK_WORKFLOW, signal: str = FOLLOW_UP_SIGNAL,
                    reuse_policy: str | None = None) -> StartResult:
        """Start ``workflow_type`` (TaskWorkflow) under ``workflow_id`` (USE_EXISTING when one is running). With
        ``follow_up``, signal-with-start: the running workflow (or the new one) receives ``signal`` with it as its
        one argument. ``reuse_policy``: this start's, instead of the gateway's."""
        dc = self.client.data_converter
        req: StartWorkflowExecutionRequest | SignalWithStartWorkflowExecutionRequest
        if follow_up is None:
            req = StartWorkflowExecutionRequest()
        else:
            req = SignalWithStartWorkflowExecutionRequest(signal_name=signal)
            req.signal_input.payloads.extend(await dc.encode([follow_up]))
        req.namespace = self.client.namespace
        req.workflow_id = workflow_id
        req.workflow_type.name = workflow_type
        req.task_queue.name = self.task_queue
        req.input.payloads.extend(await dc.encode([task_input]))
        req.identity = self.client.identity
        req.request_id = request_id(dedupe_key)
        policy = REUSE_POLICIES[reuse_policy] if reuse_policy else self.reuse_policy
        req.workflow_id_reuse_policy = int(policy)  # type: ignore[assignment]
        req.workflow_id_conflict_policy = int(WorkflowIDConflictPolicy.USE_EXISTING)  # type: ignore[assignment]
        for key, value in memo.items():
            req.memo.fields[key].CopyFrom((await dc.encode([value]))[0])
        if summary:
            req.user_metadata.summary.CopyFrom((await dc.encode([summary]))[0])
        if trace_carrier:
            req.header.fields[tracing.TEMPORAL_HEADER].CopyFrom(PayloadConverter.default.to_payloads([trace_carrier])[0])
        svc = self.client.workflow_service
        timeout = timedelta(seconds=self.timeout_s)
        try:
            if isinstance(req, StartWorkflowExecutionRequest):
                resp = await self._call(svc.start_workflow_execution(req, retry=True, timeout=timeout))
            else:
                resp = await self._call(svc.signal_with_start_workflow_execution(req, retry=True, timeout=timeout))
        except RPCError as e:
            if e.status == RPCStatusCode.ALREADY_EXISTS:
                details = WorkflowExecutionAlreadyStartedFailure()
                run_id = None
                if e.grpc_status.details and e.grpc_status.details[0].Unpack(details):
                    run_id = details.run_id or None
                return StartResult(workflow_id, run_id, started=False, closed=True)
            raise
        return StartResult(workflow_id, resp.run_id or None, started=bool(resp.started))

    async def cancel(self, workflow_id: str) -> bool:
        """Request cancellation of the running workflow; False when there is none (already finished or unknown)."""
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            await self._call(handle.cancel(rpc_timeout=timedelta(seconds=self.timeout_s)))
        except RPCError as e:
            if e.status in (RPCStatusCode.NOT_FOUND, RPCStatusCode.FAILED_PRECONDITION):
                return False
            raise
        return True

    async def latest_memo(self, workflow_id: str) -> dict[str, Any] | None:
        """The memo of the id's latest run, or None when there is no run."""
        handle = self.client.get_workflow_handle(workflow_id)
        try:
            desc = await self._call(handle.describe(rpc_timeout=timedelta(seconds=self.timeout_s)))
        except RPCError as e:
            if e.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        return await desc.memo()
