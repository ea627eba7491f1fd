"""The live sandboxes of one worker: one per key (an agent run, a test run), started on first use and again after
it died, released by key or by key prefix (a task's agents).

A run workspace of a task whose prepare step built an environment (``K.env.json``, see sandbox/hostrepo.py) gets
a sandbox of that environment (sandbox/envruntime.py; the worker hands the manager a way to look environments up:
environments/runtime.py ``resolve``); any other workspace, the plain sandbox image.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry import trace

from infra import telemetry
from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox import diskquota, get_provider
from sandbox.base import Sandbox, SandboxProvider
from sandbox.envruntime import EnvironmentProvider, EnvironmentRun, provider_for
from sandbox.hostrepo import TaskRepo
from sandbox.pool import PooledProvider

_tracer = trace.get_tracer("bosun.sandbox")
log = logging.getLogger("bosun.sandbox")


Resolve = Callable[[str, Path | None], EnvironmentRun]
"""An environment by id and cache (None: the default one), as its sandboxes run it; UnexpectedEnvironment when it
is gone (environments/runtime.py: ``resolve``)."""


class SandboxManager:
    def __init__(self, backend: str, image: str, environments: Resolve | None = None) -> None:
        self.backend = backend
        self.image = image
        self.resolve = environments
        """How this manager finds an environment's sandboxes; None: it runs plain sandboxes only."""
        self._boxes: dict[str, Sandbox] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._provider: SandboxProvider | None = None
        self._env_providers: dict[str, SandboxProvider] = {}
        self._closing: dict[asyncio.Task[None], str] = {}
        """Releases still running in the background (``release_later``), by key."""
        telemetry.add_warm_source(self)

    def warm(self) -> dict[str, int]:
        """Ready sandboxes in warm pools (the plain provider's, environments' spares and sandboxes started
        ahead), by backend."""
        counts: dict[str, int] = {}
        pools = [self._provider, *(p.inner for p in self._env_providers.values())]
        for pool in pools:
            if isinstance(pool, PooledProvider):
                counts[pool.backend] = counts.get(pool.backend, 0) + pool.ready()
        return counts

    def provider(self) -> SandboxProvider:
        if self._provider is None:
            self._provider = get_provider(self.backend, image=self.image)
        return self._provider

    def provider_for(self, workspace: str | Path, *, network: bool = False) -> SandboxProvider:
        """The provider for ``workspace``: its task's environment's, else the plain one. ``network``: sandboxes
        that reach the public internet (an environment's only: ``bosun eval swebench --network``)."""
        found = TaskRepo.environment_for(workspace)
        if found is None:
            if network:
                raise ConfigError(f"{workspace}: only a sandbox of an environment can have network, and this "
                                  "workspace has none")
            return self.provider()
        return self.environment(*found, network=network)

    def environment(self, env_id: str, cache: Path | None, *, network: bool = False) -> EnvironmentProvider:
        """The provider of environment ``env_id`` (kept in ``cache``, None: the default one); ``network``: its
        sandboxes with network (runtime.provider_for)."""
        backend = self.provider().backend
        name = f"{env_id}:{backend}" + (":network" if network else "")
        cached = self._env_providers.get(name)
        if cached is not None:
            return cached
        if self.resolve is None:
            raise UnexpectedEnvironment(f"this worker's sandboxes cannot run environments, and the task's is "
                                        f"{env_id}")
        provider = provider_for(self.resolve(env_id, cache), backend, pooled=True, network=network)
        self._env_providers[name] = provider
        return provider

    def prestart(self, env_id: str, cache: Path | None, owner: tuple[int, int], *, network: bool = False,
                 count: int = 1) -> bool:
        """Have ``count`` sandboxes of environment ``env_id`` for workspaces of ``owner`` (uid, gid) ready or
        starting in the background: the next acquires of that environment for that owner take them instead of
        starting one (an evaluation's instance, between finding its environment and judging; a task's wave of
        agents, while their workspaces are made). Unused, each goes after a minute. False when nothing was started
        (the host cannot bind a workspace into a started sandbox)."""
        return self.environment(env_id, cache, network=network).prestart(owner, count)

    async def get(self, key: str, workspace: str, *, filling: asyncio.Future | None = None,
                  network: bool = False) -> Sandbox:
        """The live sandbox of ``key``, bound to ``workspace``; a new one when there is none or it died.

        ``filling``: the host still checking ``workspace`` out (hostrepo's ``open_run`` then ``check_out``). A new
        sandbox starts meanwhile unless its provider writes into the workspace at start (an environment's build
        files); either way it is handed out only once the checkout is done, with nothing run in it before.
        ``network``: a new sandbox reaches the public internet (``provider_for``); a key keeps what it started
        with."""
        async with self._locks.setdefault(key, asyncio.Lock()):
            box = self._boxes.get(key)
            if box is None or not box.alive:
                with _tracer.start_as_current_span("sandbox acquire", attributes={"bosun.sandbox.key": key}):
                    box = await self._start(key, workspace, filling, network)
        if filling is not None:
            await asyncio.shield(filling)
        return box

    async def _start(self, key: str, workspace: str, filling: asyncio.Future | None, network: bool) -> Sandbox:
        """A new sandbox for ``key`` (under its lock), the dead one it replaces closed first."""
        dead = self._boxes.get(key)
        if dead is not None:
            telemetry.instruments().sandbox_in_use.add(-1, {"backend": dead.backend})
            await dead.close()
        # A run workspace on a file system of its own is mounted again if a stopped worker unmounted it.
        await asyncio.to_thread(diskquota.ensure_mounted, Path(workspace))
        # Its scratch .git borrows the task repository's objects (read-only in the sandbox); which store is
        # derived from the path bosun chose, never from the workspace's content.
        provider = await asyncio.to_thread(self.provider_for, workspace, network=network)
        if filling is not None and provider.writes_on_start:
            await asyncio.shield(filling)
        started = time.monotonic()
        pool = provider.inner if isinstance(provider, EnvironmentProvider) else provider
        hits = pool.hits if isinstance(pool, PooledProvider) else 0
        with _tracer.start_as_current_span("sandbox start", attributes={"bosun.sandbox.backend": provider.backend}
                                           ) as span:
            box = await provider.acquire(Path(workspace), objects=TaskRepo.objects_for(workspace))
            warm = isinstance(pool, PooledProvider) and pool.hits > hits
            span.set_attributes({"bosun.sandbox.start": "warm" if warm else "cold", "bosun.sandbox.id": box.id})
        labels = {"backend": provider.backend, "start": "warm" if warm else "cold"}
        metrics = telemetry.instruments()
        metrics.sandbox_acquire.record(time.monotonic() - started, labels)
        metrics.sandbox_starts.add(1, labels)
        metrics.sandbox_in_use.add(1, {"backend": provider.backend})
        self._boxes[key] = box
        return box

    def _take(self, key: str) -> Sandbox | None:
        """The sandbox of ``key``, out of this manager (no longer in use), or None."""
        box = self._boxes.pop(key, None)
        self._locks.pop(key, None)
        if box is not None:
            telemetry.instruments().sandbox_in_use.add(-1, {"backend": box.backend})
        return box

    async def release(self, key: str) -> bool:
        """Destroy the sandbox of ``key``; False when there was none."""
        box = self._take(key)
        if box is not None:
            await box.close()
        return box is not None

    def release_later(self, key: str, then: Callable[[], object] | None = None) -> bool:
        """Release ``key``'s sandbox in the background, then call ``then`` (in a thread: dropping its workspace),
        off the caller's path: a container's removal is a tenth of a second an agent's end or a test run need not
        wait for. The sandbox leaves this manager at once (a new one for the key starts afresh); ``settle`` and
        ``release_prefix`` wait for what is still closing, and a worker that dies meanwhile leaves containers its
        reaper removes. False when there was no sandbox."""
        box = self._take(key)

        async def close() -> None:
            try:
                if box is not None:
                    await box.close()
            finally:
                if then is not None:
                    await asyncio.to_thread(then)

        task = asyncio.create_task(close(), name=f"release-{key}")
        self._closing[task] = key
        task.add_done_callback(self._closed)
        return box is not None

    def _closed(self, task: asyncio.Task[None]) -> None:
        key = self._closing.pop(task, "")
        if not task.cancelled() and task.exception() is not None:
            log.warning("releasing %s in the background failed: %s", key, task.exception())

    async def settle(self, prefix: str = "") -> None:
        """Wait for the background releases of the keys that start with ``prefix`` (all: "")."""
        pending = [t for t, key in list(self._closing.items()) if key.startswith(prefix)]
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    async def release_prefix(self, prefix: str) -> list[str]:
        """Release every sandbox whose key starts with ``prefix`` (and wait for those released in the background);
        returns their keys."""
        keys = [k for k in list(self._boxes) if k.startswith(prefix)]
        for key in keys:
            await self.release(key)
        await self.settle(prefix)
        return keys

    def keys(self) -> list[str]:
        return list(self._boxes)

    async def close_all(self) -> None:
        """Destroy every live sandbox, and the warm ones the providers keep (the plain one's pool included)."""
        for key in list(self._boxes):
            await self.release(key)
        await self.settle()
        for provider in list(self._env_providers.values()):
            await provider.close()
        if isinstance(self._provider, PooledProvider):
            await self._provider.close()
