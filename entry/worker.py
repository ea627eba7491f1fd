"""The bosun worker: polls the shared task queue (workflows, worker binding) and this host's own queue (every
activity that touches the workspace, the sandboxes or the artifact store).

Every activity execution is journalled to ``<data_dir>/logs/activity-journal.jsonl`` (start, complete, fail, with
attempt numbers), so anyone can check after a crash that no completed activity ran twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

from temporalio import activity
from temporalio.contrib.opentelemetry import MetricsExporter
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    Worker,
)

from activities.agent import AgentActivities
from activities.errors import ErrorInterceptor
from activities.eval import EvalActivities
from activities.report import ReportActivities
from activities.telemetry import Observer, TelemetryInterceptor
from activities.workspace import WorkspaceActivities
from agents.tools.builtin import default_registry
from agents.tools.once import CallLedger
from infra import telemetry
from infra.artifacts import write_json_atomically
from infra.objectstore import open_store
from infra.settings import Settings, load_settings
from infra.temporal import connect
from sandbox import diskquota, reap_orphans
from sandbox.hostrepo import TaskRepo
from sandbox.manager import SandboxManager
from workflows.agent import AgentWorkflow
from workflows.eval import EvalInstanceWorkflow, EvalWorkflow
from workflows.task import TaskWorkflow

log = logging.getLogger("bosun.worker")


class Journal:
    """Append-only JSONL record of activity executions."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()

    def write(self, **record) -> None:
        line = json.dumps({"ts": round(time.time(), 3), "pid": os.getpid(), **record}) + "\n"
        with self._lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(line)


class _JournalInbound(ActivityInboundInterceptor):
    def __init__(self, nxt: ActivityInboundInterceptor, journal: Journal) -> None:
        super().__init__(nxt)
        self.journal = journal

    async def execute_activity(self, input: ExecuteActivityInput):
        info = activity.info()
        rec = {"workflow_id": info.workflow_id, "activity_id": info.activity_id, "type": info.activity_type,
               "attempt": info.attempt, **({"local": True} if info.is_local else {})}
        self.journal.write(event="start", **rec)
        try:
            result = await super().execute_activity(input)
        except BaseException as e:
            self.journal.write(event="fail", error=type(e).__name__, **rec)
            raise
        if getattr(result, "replayed", False):
            rec["replayed"] = True  # a tool call that had already run: its recorded result, no effect repeated
        self.journal.write(event="complete", **rec)
        return result


class JournalInterceptor(Interceptor):
    def __init__(self, journal: Journal) -> None:
        self.journal = journal

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _JournalInbound(next, self.journal)


async def reap(client, sandboxes: SandboxManager, workspaces: Path | None = None) -> list[str]:
    """Release the sandboxes of this worker whose workflow is no longer running (an agent or task that failed,
    was cancelled, timed out or was terminated without releasing them), remove the run workspaces of tasks that are
    over, and remove containers of dead workers. Returns the released keys and tasks."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    released = []
    async def running(wf_id: str) -> bool:
        try:
            desc = await client.get_workflow_handle(wf_id).describe()
            return desc.status == WorkflowExecutionStatus.RUNNING
        except RPCError as e:
            return "not found" not in str(e).lower()  # unsure (server unreachable): keep it

    for key in sandboxes.keys():
        if not await running(key.split(":")[1] if key.startswith("checks:") else key):
            await sandboxes.release(key)
            released.append(key)
    for task in TaskRepo.open_runs(workspaces) if workspaces else []:
        if not await running(task.workflow_id):
            await sandboxes.release_prefix(f"{task.workflow_id}/")
            await asyncio.to_thread(task.drop_runs)
            released.append(f"{task.workflow_id} (run workspaces)")
    await asyncio.to_thread(reap_orphans)
    if released:
        log.info("released %d sandboxes whose runs are over: %s", len(released), ", ".join(released))
    return released


LEDGER_MAX_AGE_S = 7 * 24 * 3600.0
"""Tool-call records of an agent that wrote nothing for this long are dropped when a worker starts."""


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    tel = telemetry.setup(settings, "worker")
    runtime, metric_buffer = None, None
    if tel.on:  # Temporal's own SDK metrics go through the same meter provider as bosun's
        metric_buffer = MetricBuffer(10_000)
        runtime = Runtime(telemetry=TelemetryConfig(metrics=metric_buffer))
    client = await connect(settings, timeout_s=30, tracing=tel.on, runtime=runtime)
    store = open_store(settings)
    sandboxes = SandboxManager(settings.sandbox_backend, settings.sandbox_image)
    calls = CallLedger(settings.data_dir / "tool-calls", store)
    agent = AgentActivities(settings, store, sandboxes, default_registry(), calls)
    workspace = WorkspaceActivities(settings, store, sandboxes)
    report = ReportActivities(settings)
    journal = JournalInterceptor(Journal(settings.logs_dir / "activity-journal.jsonl"))
    reap_orphans()
    errors = ErrorInterceptor()
    backend = sandboxes.provider().backend
    observed = [TelemetryInterceptor(Observer.for_settings(settings, backend))] if tel.on else []
    evaluation = EvalActivities(settings, store, sandboxes)
    shared = Worker(client, task_queue=settings.task_queue,
                    workflows=[TaskWorkflow, AgentWorkflow, EvalWorkflow, EvalInstanceWorkflow],
                    activities=[workspace.bind_worker], interceptors=[journal, errors])
    # Agent workflows run on the host queue too (see TaskWorkflow._agent): same queue as their activities, so
    # activities are dispatched eagerly with the workflow task's completion.
    local = Worker(client, task_queue=settings.worker_queue, workflows=[AgentWorkflow],
                   activities=[*agent.all(), *workspace.all(), *report.all(), *evaluation.all()],
                   interceptors=[journal, errors, *observed], max_concurrent_activities=64)
    stop = stop or asyncio.Event()
    if dropped := calls.prune(LEDGER_MAX_AGE_S):
        log.info("dropped the tool-call records of %d agents idle for more than a week", dropped)
    log.info("worker %s polling %s and %s; sandbox backend %s (setting: %s)", settings.worker_id,
             settings.task_queue, settings.worker_queue, backend, settings.sandbox_backend)
    health = settings.data_dir / "worker-health.json"
    quota_ok, quota_why = diskquota.support()
    user = f"uid {settings.sandbox_uid}" if os.geteuid() == 0 else f"the worker's uid {os.geteuid()} (not root)"
    if not settings.sandbox_disk_mb:
        quota = "off (BOSUN_SANDBOX_DISK_MB=0)"
    else:
        quota = (f"{settings.sandbox_disk_mb} MB per workspace ({quota_why})" if quota_ok
                 else f"not enforced: {quota_why}")

    async def beat() -> None:
        while True:
            write_json_atomically(health, {"pid": os.getpid(), "ts": time.time(), "worker_id": settings.worker_id,
                                           "queues": [settings.task_queue, settings.worker_queue],
                                           "sandbox_backend": backend, "sandbox_user": user,
                                           "disk_quota": quota})
            await asyncio.sleep(2)

    async def reaper() -> None:
        while True:
            await asyncio.sleep(settings.sandbox_reap_s)
            try:
                await reap(client, sandboxes, settings.workspaces_dir)
            except Exception:  # noqa: BLE001 - the reaper must never take the worker down
                log.exception("sandbox reaper failed; trying again in %.0f s", settings.sandbox_reap_s)

    exporter = MetricsExporter(metric_buffer, tel.meter_provider) if metric_buffer and tel.meter_provider else None
    try:
        async with shared, local, exporter or contextlib.nullcontext():
            beater = asyncio.create_task(beat())
            reaping = asyncio.create_task(reaper())
            await stop.wait()
            beater.cancel()
            reaping.cancel()
    finally:
        tel.flush()
        health.unlink(missing_ok=True)
        await evaluation.close()
        await agent.close()
        await sandboxes.close_all()
        await asyncio.to_thread(store.close)
        await asyncio.to_thread(diskquota.unmount_under, settings.workspaces_dir)


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings()

    async def _run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run_worker(settings, stop)

    asyncio.run(_run())


if __name__ == "__main__":
    main()
