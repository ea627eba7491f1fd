"""Fixtures of the events tests: a private nats-server with JetStream per test (so it can be restarted), the
embedded stack's Temporal (started through bosun's own `bosun up`), the ingress and the starter in-process."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest

from entry.ingress import run_ingress
from entry.starter import Starter
from infra.events.config import EventsConfig, load_events_config
from infra.settings import Settings
from tests.conftest import ROOT, free_port
from tests.infra.events.samples import GH_SECRET, GL_PROJECT, GL_SECRET, LINEAR_SECRET, REPO

TRAJECTORY = next((p for p in (ROOT / "examples" / "calc" / n for n in ("solo.jsonl", "fix-median.jsonl"))
                   if p.exists()), ROOT / "examples" / "calc" / "solo.jsonl")
"""The scripted test double's trajectory for the example repository."""


class NatsServer:
    """nats-server with JetStream on free ports, file store under ``root``; survives restarts (same store)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = free_port()
        self.monitor_port = free_port()
        self.proc: subprocess.Popen | None = None
        root.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        log = open(self.root / "nats.log", "ab")
        self.proc = subprocess.Popen(
            ["nats-server", "-js", "-sd", str(self.root / "store"), "-a", "127.0.0.1", "-p", str(self.port),
             "-m", str(self.monitor_port), "--server_name", "events-test"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.monitor_port}/healthz?js-enabled-only=true",
                             timeout=0.5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"nats-server did not become healthy; see {self.root / 'nats.log'}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture
def nats_server(tmp_path: Path):
    server = NatsServer(tmp_path / "nats")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def settings(tmp_path: Path, nats_server: NatsServer) -> Settings:
    """Settings for ingress-only tests (no Temporal)."""
    return Settings(data_dir=tmp_path / "data", host="127.0.0.1", nats_port=nats_server.port,
                    nats_monitor_port=nats_server.monitor_port, temporal_port=free_port(),
                    task_queue=f"events-test-{uuid.uuid4().hex[:8]}", default_model=f"scripted:{TRAJECTORY}")


@pytest.fixture
def tsettings(settings: Settings, stack) -> Settings:
    """Settings with the embedded stack's Temporal. The task queue is private: no worker runs the workflows, so they
    stay open and every start is visible."""
    return settings.model_copy(update={"temporal_port": int(stack.env["BOSUN_TEMPORAL_PORT"]),
                                       "temporal_ui_port": int(stack.env["BOSUN_TEMPORAL_UI_PORT"])})


def make_cfg(settings: Settings | None = None, **overrides: Any) -> EventsConfig:
    """The tests' events configuration; ``settings``: the bosun settings it carries (replicas...), else the
    environment's."""
    base: dict[str, Any] = {
        "github_webhook_secret": GH_SECRET, "linear_webhook_secret": LINEAR_SECRET,
        "gitlab_webhook_secret": GL_SECRET, "gitlab_repos": {GL_PROJECT: "/srv/repos/gitlab-test"},
        "repos": {REPO: "/srv/repos/hello-world"}, "linear_default_repo": "/srv/repos/linear",
        "ack_wait_s": 2.0, "retry_delay_s": 0.2, "retry_delay_max_s": 1.0, "poison_after": 3,
        "post_status": False, "fetch_batch": 16}
    base.update(overrides)
    return load_events_config(settings, **base)


@pytest.fixture
def cfg() -> EventsConfig:
    return make_cfg()


@pytest.fixture
async def temporal_client(tsettings: Settings):
    from infra.temporal import connect

    return await connect(tsettings)


class IngressHandle:
    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http = http
        self.url = url

    async def github(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post("/webhooks/github", content=body, headers=headers)

    async def linear(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post("/webhooks/linear", content=body, headers=headers)

    async def gitlab(self, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return await self.http.post("/webhooks/gitlab", content=body, headers=headers)


@contextlib.asynccontextmanager
async def running_ingress(settings: Settings, cfg: EventsConfig, *, wait_ready: bool = True,
                          port: int | None = None) -> AsyncIterator[IngressHandle]:
    port = port or free_port()
    stop = asyncio.Event()
    task = asyncio.create_task(run_ingress(settings, "127.0.0.1", port, cfg=cfg, stop=stop))
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        deadline = time.monotonic() + 15
        while True:
            if task.done():
                task.result()
            try:
                r = await http.get("/healthz")
                if r.status_code == 200 or (not wait_ready and r.status_code == 503):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError("the ingress did not become ready")
            await asyncio.sleep(0.05)
        try:
            yield IngressHandle(http, url)
        finally:
            stop.set()
            await task


@contextlib.asynccontextmanager
async def running_starter(settings: Settings, cfg: EventsConfig, starter_cls: type[Starter] = Starter,
                          **kw: Any) -> AsyncIterator[Starter]:
    starter = starter_cls(settings, cfg, **kw)
    stop = asyncio.Event()
    task = asyncio.create_task(starter.run(stop))
    ready = asyncio.create_task(starter.ready.wait())
    await asyncio.wait({task, ready}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    assert starter.ready.is_set(), "the starter did not become ready"
    try:
        yield starter
    finally:
        stop.set()
        ready.cancel()
        await asyncio.wait_for(task, 30)


async def stream_messages(settings: Settings, stream: str = "EVENTS") -> int:
    nc = await nats.connect(settings.nats_target)
    try:
        js = nc.jetstream()
        try:
            return (await js.stream_info(stream)).state.messages
        except nats.js.errors.NotFoundError:
            return 0
    finally:
        await nc.close()


async def runs_of(client, workflow_id: str) -> list:
    return [w async for w in client.list_workflows(f"WorkflowId = '{workflow_id}'")]


async def wait_until(predicate, timeout: float = 20.0, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = await predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


async def settled_runs(client, workflow_id: str, expect_at_least: int = 1, settle_s: float = 1.5) -> list:
    """Runs of ``workflow_id`` once at least ``expect_at_least`` are visible and the count stayed the same for
    ``settle_s`` (visibility is eventually consistent)."""
    await wait_until(lambda: _at_least(client, workflow_id, expect_at_least), what=f"a run of {workflow_id}")
    await asyncio.sleep(settle_s)
    return await runs_of(client, workflow_id)


async def _at_least(client, workflow_id: str, n: int) -> bool:
    return len(await runs_of(client, workflow_id)) >= n
