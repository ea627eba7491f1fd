"""The bosun worker: polls the shared task queue (workflows, worker binding) and this host's own queue (every
activity that touches the workspace, the sandboxes or the artifact store).

Every activity execution is journalled to ``<data_dir>/logs/activity-journal.jsonl`` (start, complete, fail, with
attempt numbers), so anyone can check after a crash that no completed activity ran twice (activities/interceptor.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import time
from datetime import timedelta
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.contrib.opentelemetry import MetricsExporter
from temporalio.runtime import MetricBuffer, Runtime, TelemetryConfig
from temporalio.worker import Worker

from activities.agent import AgentActivities
from activities.hosts import HostActivities
from activities.interceptor import Journal, plugin
from activities.report import ReportActivities
from activities.telemetry import Observer
from activities.workspace import WorkspaceActivities
from agents.providers import keyed
from agents.tools.builtin import default_registry
from agents.tools.once import CallLedger
from entry.health import WORKER_FILE
from entry.stack import BOSUN_WORKFLOWS, workflow_build
from environments.runtime import resolve
from evaluation.activities import EvalActivities
from evaluation.workflow import EvalInstanceWorkflow, EvalWorkflow
from infra import telemetry
from infra.artifacts import write_json_atomically
from infra.errors import BosunError, ConfigError
from infra.hosts import BEAT_S, HostBeat, HostRegistry
from infra.objectstore import NatsArtifactStore, open_store
from infra.settings import Settings, load_settings
from infra.temporal import connect
from sandbox import diskquota, reap_orphans
from sandbox.hostrepo import TaskRepo
from sandbox.manager import SandboxManager
from workflows.agent import AgentWorkflow
from workflows.pull_request import PullRequestWorkflow
from workflows.task import TaskWorkflow

log = logging.getLogger("bosun.worker")


async def reap(client, sandboxes: SandboxManager, workspaces: Path | None = None,
               worker_id: str | None = None) -> list[str]:
    """Release the sandboxes of this worker whose workflow is no longer running (an agent or task that failed,
    was cancelled, timed out or was terminated without releasing them), remove the run workspaces of tasks that are
    over, and remove containers of dead workers. Returns the released keys and tasks.

    ``worker_id`` (hosts that share their state): of a task that is over, this host's copy of its repository goes
    too unless this host is the task's home at its end (its ``placement`` query): a host that held it for the
    task's agents, or its home until it was lost, missed the task's own clean-up while it was away."""
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
            if worker_id is not None and await _home_of(client, task.workflow_id) not in (worker_id, None):
                await asyncio.to_thread(task.remove)
                released.append(f"{task.workflow_id} (run workspaces and this host's copy of its repository)")
            else:
                await asyncio.to_thread(task.drop_runs)
                released.append(f"{task.workflow_id} (run workspaces)")
    await asyncio.to_thread(reap_orphans)
    if released:
        log.info("released %d sandboxes whose runs are over: %s", len(released), ", ".join(released))
    return released


async def _home_of(client, workflow_id: str) -> str | None:
    """The home host (worker id) of a task that is over, from its ``placement`` query; None when it cannot be
    told (a task from before placement, Temporal unreachable, the history gone)."""
    try:
        placement = await client.get_workflow_handle(workflow_id).query("placement")
    except Exception:  # noqa: BLE001 - unknown: keep the copy
        return None
    home = placement.get("home") if isinstance(placement, dict) else None
    return home if isinstance(home, str) and home else None


def identity(settings: Settings) -> str:
    """This worker's identity in Temporal (pollers show it): its worker id, its artifact store, pid and host."""
    return f"{settings.worker_id} ({settings.artifact_store}) pid {os.getpid()}@{socket.gethostname()}"


IDENTITY = re.compile(r"^(?P<worker>.+) \((?P<store>files|nats)\) pid \d+@(?P<host>.*)$")
POLLER_FRESH_S = 90.0
"""A poller seen this recently is a live worker (a long poll lasts about a minute)."""


async def other_hosts(client, settings: Settings) -> dict[str, str]:
    """Other worker hosts polling the shared task queue now: worker id (or identity) -> their artifact store (``?``
    when they do not say: a bosun from before it did)."""
    found: dict[str, str] = {}
    for kind in (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY):
        resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=settings.task_queue), task_queue_type=kind))
        for poller in resp.pollers:
            if time.time() - poller.last_access_time.ToSeconds() > POLLER_FRESH_S:
                continue
            m = IDENTITY.match(poller.identity)
            if m is not None:
                if m["worker"] != settings.worker_id:
                    found[m["worker"]] = m["store"]
            elif not poller.identity.endswith(f"@{socket.gethostname()}"):  # (this machine's older worker: itself)
                found[poller.identity] = "?"
    return found


async def check_sharing(client, settings: Settings) -> None:
    """Refuse to start beside other hosts unless every host shares its state: a task a host with its own file store
    starts could not be read (or continued) by any other host. One line, naming the setting."""
    others = await other_hosts(client, settings)
    if not others:
        return
    names = ", ".join(sorted(others)[:5])
    if settings.artifact_store == "files":
        raise ConfigError(f"other worker hosts poll this Temporal ({names}): with BOSUN_ARTIFACT_STORE=files their "
                          "runs could not read this host's artifacts; set BOSUN_ARTIFACT_STORE=nats (and the same "
                          "BOSUN_NATS_URL) on every host")
    alone = sorted(w for w, store in others.items() if store != "nats")
    if alone:
        raise ConfigError(f"worker hosts {', '.join(alone[:5])} poll this Temporal with their own file store (or an "
                          "older bosun): set BOSUN_ARTIFACT_STORE=nats on them too, or give this host its own Temporal")


OLDER_RUNS_LISTED = 1000
"""At most this many running workflows are looked at when a worker starts (the newest first)."""


async def older_runs(client, build: str) -> dict[str, str]:
    """bosun's runs in progress that a worker of another build worked on: workflow id -> those build ids. Temporal
    lists the builds that completed a run's workflow tasks in its ``BuildIds`` search attribute
    (``unversioned:<build id>``); a run with no completed workflow task yet is not counted (any build may take it)."""
    from temporalio.common import SearchAttributeKey

    key, found = SearchAttributeKey.for_keyword_list("BuildIds"), {}
    async for wf in client.list_workflows('ExecutionStatus="Running"', limit=OLDER_RUNS_LISTED):
        builds = {b.split(":", 1)[1] for b in wf.typed_search_attributes.get(key) or [] if ":" in b}
        if wf.workflow_type in BOSUN_WORKFLOWS and builds - {build}:
            found[wf.id] = ", ".join(sorted(builds - {build}))
    return found


def older_runs_note(older: dict[str, str], build: str) -> str:
    """What the worker says when it finds runs of another build: which, and what to do (docs/operations.md)."""
    ids = sorted(older)
    shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    builds = ", ".join(sorted(set(older.values())))
    return (f"{len(ids)} run(s) in progress were started by another build of bosun's workflow code ({builds}; "
            f"this worker: {build}): {shown}. Their histories may not replay on this build: a run that does not "
            "replay fails its workflow tasks with a non-determinism error, retried until a worker of its build "
            "takes one. Drain, then "
            "upgrade: let them finish on a worker of the old build (or cancel them: `bosun cancel ID`), then "
            "start the new one (docs/operations.md, \"Upgrading\")")


LEDGER_MAX_AGE_S = 7 * 24 * 3600.0
"""Tool-call records of an agent that wrote nothing for this long are dropped when a worker starts."""


async def _note_older_runs(client, build: str) -> None:
    """Warn about the runs in progress that a worker of another build of the workflow code worked on."""
    try:
        if older := await older_runs(client, build):
            log.warning("%s", older_runs_note(older, build))
    except Exception as e:  # noqa: BLE001 - visibility away for a moment: the worker starts anyway
        log.warning("could not list the runs in progress to compare their build with this one (%s): %s", build, e)


def _workers(client, settings: Settings, build: str, layers: list, hosts: HostActivities, on_host: list,
             binding: list) -> tuple[Worker, Worker, Worker]:
    """The three pollers of a worker process: the shared queue, this host's slots, this host's own queue."""
    me = identity(settings)
    shared = Worker(client, task_queue=settings.task_queue,
                    workflows=[TaskWorkflow, AgentWorkflow, EvalWorkflow, EvalInstanceWorkflow, PullRequestWorkflow],
                    activities=[*binding, *hosts.shared_activities()], plugins=layers, identity=me, build_id=build)
    # Slots: this queue is polled only while one of the host's BOSUN_WORKER_SLOTS is free (activities/hosts.py); a
    # held slot heartbeats every second, so it is given back within a second of its agent's end.
    slots = Worker(client, task_queue=settings.slots_queue, activities=hosts.slot_activities(),
                   plugins=layers, identity=me, max_concurrent_activities=settings.slots,
                   max_heartbeat_throttle_interval=timedelta(seconds=1),
                   default_heartbeat_throttle_interval=timedelta(seconds=1))
    # Agent workflows run on the host queue too (see TaskWorkflow._agent): same queue as their activities, so
    # activities are dispatched eagerly with the workflow task's completion.
    # Heartbeats go out at least every 2 s: a cancelled run's model call, command or test run hears of it (the
    # server answers a heartbeat with the cancel) within seconds, not at 80% of its heartbeat timeout.
    local = Worker(client, task_queue=settings.worker_queue, workflows=[AgentWorkflow], activities=on_host,
                   plugins=layers, max_concurrent_activities=64,
                   identity=me, build_id=build, max_heartbeat_throttle_interval=timedelta(seconds=2),
                   default_heartbeat_throttle_interval=timedelta(seconds=2))
    return shared, slots, local


def _sandbox_facts(settings: Settings) -> tuple[str, str]:
    """The sandboxes' user and disk quota, as the worker's health file says them."""
    quota_ok, quota_why = diskquota.support()
    user = f"uid {settings.sandbox_uid}" if os.geteuid() == 0 else f"the worker's uid {os.geteuid()} (not root)"
    if not settings.sandbox_disk_mb:
        return user, "off (BOSUN_SANDBOX_DISK_MB=0)"
    return user, (f"{settings.sandbox_disk_mb} MB per workspace ({quota_why})" if quota_ok
                  else f"not enforced: {quota_why}")


async def _reaper(client, sandboxes: SandboxManager, settings: Settings, shared: bool) -> None:
    """Every BOSUN_SANDBOX_REAP_S: release what runs that ended left behind (``reap``); never fails the worker."""
    while True:
        await asyncio.sleep(settings.sandbox_reap_s)
        try:
            await reap(client, sandboxes, settings.workspaces_dir, settings.worker_id if shared else None)
        except Exception:  # noqa: BLE001 - the reaper must never take the worker down
            log.exception("sandbox reaper failed; trying again in %.0f s", settings.sandbox_reap_s)


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> None:
    tel = telemetry.setup(settings, "worker")
    runtime, metric_buffer = None, None
    if tel.on:  # Temporal's own SDK metrics go through the same meter provider as bosun's
        metric_buffer = MetricBuffer(10_000)
        runtime = Runtime(telemetry=TelemetryConfig(metrics=metric_buffer))
    client = await connect(settings, timeout_s=30, tracing=tel.on, runtime=runtime)
    await check_sharing(client, settings)
    build = workflow_build()
    await _note_older_runs(client, build)
    store = open_store(settings)
    registry = HostRegistry(settings, store.bridge) if isinstance(store, NatsArtifactStore) else None
    hosts = HostActivities(settings, registry)
    sandboxes = SandboxManager(settings.sandbox_backend, settings.sandbox_image, resolve)
    calls = CallLedger(settings.data_dir / "tool-calls", store)
    agent = AgentActivities(settings, store, sandboxes, default_registry(), calls)
    workspace = WorkspaceActivities(settings, store, sandboxes)
    report = ReportActivities(settings)
    reap_orphans()
    backend = sandboxes.provider().backend
    # One interceptor on every worker, installed the same way (journal, errors, uploads, telemetry).
    layers = [plugin(Journal(settings.logs_dir / "activity-journal.jsonl"),
                     Observer.for_settings(settings, backend) if tel.on else None)]
    evaluation = EvalActivities(settings, store, sandboxes)
    shared, slots, local = _workers(client, settings, build, layers, hosts, [
        *agent.all(), *workspace.all(), *report.all(), *evaluation.all()],
        [workspace.bind_worker, workspace.bind_host, report.ci_context, report.set_label])
    stop = stop or asyncio.Event()
    if dropped := calls.prune(LEDGER_MAX_AGE_S):
        log.info("dropped the tool-call records of %d agents idle for more than a week", dropped)
    log.info("worker %s polling %s and %s; sandbox backend %s (setting: %s)", settings.worker_id,
             settings.task_queue, settings.worker_queue, backend, settings.sandbox_backend)
    health = settings.data_dir / WORKER_FILE
    user, quota = _sandbox_facts(settings)

    keys = keyed(settings)  # which providers have a key here (names only): `bosun run` checks against it

    async def beat() -> None:
        while True:
            now = time.time()
            write_json_atomically(health, {"pid": os.getpid(), "ts": now, "worker_id": settings.worker_id,
                                           "queues": [settings.task_queue, settings.worker_queue],
                                           "sandbox_backend": backend, "sandbox_user": user,
                                           "disk_quota": quota, "slots": settings.slots, "slots_in_use": hosts.in_use,
                                           "artifact_store": settings.artifact_store,
                                           "model_keys": keys})
            if registry is not None:
                try:
                    await asyncio.to_thread(registry.bridge.run, registry.abeat(HostBeat(
                        worker_id=settings.worker_id, queue=settings.worker_queue, slots=settings.slots,
                        in_use=hosts.in_use, store=settings.artifact_store, ts=now, pid=os.getpid(),
                        hostname=socket.gethostname())))
                except Exception as e:  # noqa: BLE001 - NATS away for a moment: the next beat tries again
                    log.warning("cannot write this host's heartbeat to NATS: %s", e)
            await asyncio.sleep(BEAT_S)

    exporter = MetricsExporter(metric_buffer, tel.meter_provider) if metric_buffer and tel.meter_provider else None
    try:
        if registry is not None:  # in the registry before the first task can bind here
            await asyncio.to_thread(registry.bridge.run, registry.afirst_beat(HostBeat(
                worker_id=settings.worker_id, queue=settings.worker_queue, slots=settings.slots, in_use=0,
                store=settings.artifact_store, ts=time.time(), pid=os.getpid(), hostname=socket.gethostname())))
        async with shared, local, slots, exporter or contextlib.nullcontext():
            beater = asyncio.create_task(beat())
            reaping = asyncio.create_task(_reaper(client, sandboxes, settings, workspace.store.shared))
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
    try:
        main()
    except BosunError as e:  # a setting, or a Temporal shared with hosts that keep their own state: one line
        print(f"bosun worker: {e}", file=sys.stderr)
        sys.exit(2)
