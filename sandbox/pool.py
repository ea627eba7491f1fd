"""Warm pools: sandboxes started ahead of time, handed out in milliseconds, destroyed (never reused) on release.

A ``PooledProvider`` wraps a backend provider (one backend, image and limits profile). It keeps up to ``size``
ready sandboxes per pool key (docker: the uid:gid commands run as; bwrap: one key), started with an empty
workspace slot and an empty object-store slot; ``acquire(workspace, objects=...)`` takes one, binds the workspace
into its slot and the task's object store read-only into the other (sandbox/slots.py), checks from inside that
the right directories arrived, and hands it out. Refills are rate-capped (``refill_per_s``) so a burst of acquires
does not stampede the host. ``prestart(owner)`` has one ready or starting ahead of a known use (an evaluation's
instance whose environment was just found), whatever ``size`` is; with ``spare``, a key acquired a second time
(a reused environment) gets one started ahead for its next acquire. One started ahead goes when unused for
``idle_s``, and an acquire waits for one still starting rather than start another. When the pool is
empty, the workspace cannot go into a slot, or the host does not allow slots, acquire starts a sandbox cold: never
a shared or reused one, and never none.

Release = ``sandbox.close()``: the sandbox is destroyed, its slot unbound and removed, and a refill scheduled.
Acquire and release durations are recorded; ``stats()`` gives counts and p50/p99.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry import trace

from infra.errors import UnexpectedEnvironment
from infra.traceview import BACKGROUND
from sandbox.base import Sandbox, SandboxProvider
from sandbox.slots import SlotManager

log = logging.getLogger("bosun.sandbox.pool")
_tracer = trace.get_tracer("bosun.sandbox")


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def summary(values: list[float]) -> dict[str, float]:
    return {"n": len(values), "p50_ms": round(percentile(values, 50) * 1000, 3),
            "p99_ms": round(percentile(values, 99) * 1000, 3)}


class PooledProvider(SandboxProvider):
    """A warm pool in front of ``provider``; see the module docstring."""

    def __init__(self, provider: SandboxProvider, *, size: int = 4, refill_per_s: float = 10.0,
                 slots: SlotManager | None = None, keys: list[str] | None = None, idle_s: float = 60.0,
                 spare: bool = False) -> None:
        self.provider = provider
        self.backend = provider.backend
        self.size = max(0, size)
        self.refill_interval = 1.0 / refill_per_s if refill_per_s > 0 else 0.0
        self.idle_s = idle_s
        self.spare = spare
        """After an acquire for a key acquired before (a reused environment), start one ahead for the next."""
        self._acquired: dict[str, int] = {}
        self.slots = slots or SlotManager()
        self._ready: dict[str, deque[Warm]] = {}
        self._prestarts: set[asyncio.Task[None]] = set()
        self._ahead: dict[str, int] = {}
        """Per key: sandboxes started ahead and still starting (an acquire waits for one of them)."""
        self._arrived: dict[str, asyncio.Event] = {}
        self._starting: dict[str, int] = {}
        self._refill_tasks: dict[str, asyncio.Task[None]] = {}
        self._last_start = 0.0
        self._start_lock = asyncio.Lock()
        self._closed = False
        self.acquire_times: list[float] = []
        self.release_times: list[float] = []
        self.cold_start_times: list[float] = []
        self.hits = 0
        self.misses = 0
        self.refill_failures = 0
        self._initial_keys = list(keys or [])

    # -- public API ------------------------------------------------------------------------------------------

    async def start(self, keys: list[str] | None = None) -> None:
        """Begin filling the pool for ``keys`` (default: the provider's own key for unprivileged defaults)."""
        for key in keys or self._initial_keys or [self._default_key()]:
            self._ensure_refill(key)

    async def wait_ready(self, key: str | None = None, timeout_s: float = 60.0) -> int:
        """Wait until the pool for ``key`` holds ``size`` sandboxes (or the timeout); returns how many it holds."""
        key = self._default_key() if key is None else key
        self._ensure_refill(key)
        deadline = time.monotonic() + timeout_s
        while len(self._ready.get(key, ())) < self.size and time.monotonic() < deadline:
            task = self._refill_tasks.get(key)
            if task is None or task.done():
                break  # not refilling: slots unusable on this host, or the pool is closed
            await asyncio.sleep(0.01)
        return len(self._ready.get(key, ()))

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        t0 = time.monotonic()
        ws = Path(workspace).resolve()
        if not ws.is_dir():
            raise UnexpectedEnvironment(f"workspace {workspace} is not a directory on this host; "
                                        f"create it (or clone the repository) before acquiring a sandbox")
        key = self._key(ws)
        usable, _why = self.slots.usable()
        sandbox = None
        while usable and not self._closed and not self._ready.get(key) and self._ahead.get(key):
            await self._arrived.setdefault(key, asyncio.Event()).wait()  # started ahead: it is nearly there
        if usable and (self.size > 0 or self._ready.get(key)) and self.slots.supports(ws):
            self._ensure_refill(key)
            sandbox = await self._take_warm(key, ws, objects)
        if sandbox is None:
            self.misses += 1
            sandbox = await self.provider.acquire(ws, objects=objects)
            self.cold_start_times.append(time.monotonic() - t0)
        else:
            self.hits += 1
        self._hook_release(sandbox)
        self.acquire_times.append(time.monotonic() - t0)
        self._acquired[key] = self._acquired.get(key, 0) + 1
        if self.spare and usable and self._acquired[key] > 1 and self.slots.supports(ws):
            self._ahead_to(key, 1)
        return sandbox

    def prestart(self, owner: tuple[int, int], count: int = 1) -> bool:
        """Have ``count`` sandboxes for ``owner`` (uid, gid of the workspaces to come) ready or starting in the
        background, ahead of acquires known to follow (a wave of agents: as many as it has; nothing new when there
        are enough); unused, each goes after ``idle_s``. False when the host does not allow slots or the pool is
        closed."""
        if self._closed or not self.slots.usable()[0]:
            return False
        self._ahead_to(self._owner_key(owner), count)
        return True

    def _ahead_to(self, key: str, count: int) -> None:
        for _ in range(count - len(self._ready.get(key, ())) - self._ahead.get(key, 0)):
            if self._closed:
                return
            self._ahead[key] = self._ahead.get(key, 0) + 1  # counted now: a second call before the task runs adds
            task = asyncio.create_task(self._prestart(key), name=f"pool-prestart-{key}")  # none
            self._prestarts.add(task)
            task.add_done_callback(self._prestarts.discard)

    def ready(self) -> int:
        """Sandboxes waiting in the pool, over every key."""
        return sum(len(v) for v in self._ready.values())

    def stats(self) -> dict[str, Any]:
        """Counts and p50/p99 (ms) of acquire and release; hits/misses; how many are ready per key."""
        return {"backend": self.backend, "size": self.size, "hits": self.hits, "misses": self.misses,
                "refill_failures": self.refill_failures,
                "ready": {k: len(v) for k, v in self._ready.items()},
                "acquire": summary(self.acquire_times), "release": summary(self.release_times),
                "cold_start": summary(self.cold_start_times)}

    def limits_report(self) -> dict[str, Any]:
        usable, why = self.slots.usable()
        return {**self.provider.limits_report(), "pool": {"size": self.size, "warm_binding": usable,
                                                          "note": why or "workspaces bound into warm sandboxes"}}

    async def close(self) -> None:
        """Stop refilling and destroy every ready sandbox."""
        self._closed = True
        tasks = [*self._refill_tasks.values(), *self._prestarts]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        self._ahead.clear()  # (a task cancelled before it ran never counted itself down)
        for arrived in self._arrived.values():
            arrived.set()
        while any(self._ready.values()):
            for q in self._ready.values():
                while q:
                    await q.popleft().sandbox.close()

    # -- internals -------------------------------------------------------------------------------------------

    def _key(self, ws: Path) -> str:
        fn = getattr(self.provider, "pool_key", None)
        return fn(ws) if fn else ""

    def _owner_key(self, owner: tuple[int, int]) -> str:
        fn = getattr(self.provider, "owner_key", None)
        return fn(*owner) if fn else ""

    def _default_key(self) -> str:
        fn = getattr(self.provider, "pool_key", None)
        if fn is None:
            return ""
        return fn(Path(os.getcwd()))

    async def _take_warm(self, key: str, ws: Path, objects: Path | None) -> Sandbox | None:
        q = self._ready.setdefault(key, deque())
        while q:
            warm = q.popleft()
            sb = warm.sandbox
            self._ensure_refill(key)
            if not sb.alive:
                await sb.close()
                continue
            try:
                await asyncio.to_thread(self.slots.attach, warm.slot, ws)
                if objects is not None:
                    await asyncio.to_thread(self.slots.attach_read_only, warm.objects_slot, objects)
                pong = await sb.request("ping", timeout_s=10)
                for what, path in (("workspace", ws), ("objects", objects)):
                    if path is None:
                        continue
                    st = path.stat()
                    if (pong.get(f"{what}_dev"), pong.get(f"{what}_ino")) != (st.st_dev, st.st_ino):
                        raise UnexpectedEnvironment(f"the {what} did not arrive in warm sandbox {sb.id} "
                                                    f"(mount propagation failed)")
            except Exception as exc:  # noqa: BLE001 - a broken warm sandbox is discarded, never handed out
                log.warning("discarding warm sandbox %s: %s", sb.id, exc)
                await sb.close()
                continue
            sb.workspace = ws
            return sb
        return None

    def _hook_release(self, sb: Sandbox) -> None:
        """Time the release (close() destroys the sandbox and unbinds its slot) and refill afterwards."""
        original = sb.close
        pool = self

        async def timed_close() -> None:
            t0 = time.monotonic()
            await original()
            pool.release_times.append(time.monotonic() - t0)
            if not pool._closed:
                for key in list(pool._ready):
                    pool._ensure_refill(key)

        sb.close = timed_close  # type: ignore[method-assign]

    def _ensure_refill(self, key: str) -> None:
        if self._closed or self.size <= 0:
            return
        task = self._refill_tasks.get(key)
        if task is None or task.done():
            self._refill_tasks[key] = asyncio.create_task(self._refill(key), name=f"pool-refill-{key}")

    async def _refill(self, key: str) -> None:
        q = self._ready.setdefault(key, deque())
        usable, why = await asyncio.to_thread(self.slots.usable)
        if not usable:
            log.info("no warm pool for %s: %s", self.backend, why)
            return
        failures = 0
        while not self._closed and len(q) + self._starting.get(key, 0) < self.size:
            try:
                warm = await self._start_one(key)
            except Exception as exc:  # noqa: BLE001 - keep the pool alive, back off
                self.refill_failures += 1
                failures += 1
                log.warning("pool refill for %s failed (%s); backing off", self.backend, exc)
                await asyncio.sleep(min(30.0, 0.5 * 2 ** failures))
                continue
            failures = 0
            if self._closed:
                await warm.sandbox.close()
                return
            q.append(warm)

    async def _prestart(self, key: str) -> None:
        try:
            warm = await self._start_one(key)
        except Exception as exc:  # noqa: BLE001 - the acquire that follows starts one cold
            self.refill_failures += 1
            log.warning("starting a %s sandbox ahead failed (%s); the next one starts cold", self.backend, exc)
            return
        finally:
            self._ahead[key] -= 1
            if (arrived := self._arrived.pop(key, None)) is not None:
                arrived.set()
        if self._closed:
            await warm.sandbox.close()
            return
        q = self._ready.setdefault(key, deque())
        q.append(warm)
        await asyncio.sleep(self.idle_s)
        if warm in q:  # nobody took it
            q.remove(warm)
            await warm.sandbox.close()

    async def _start_one(self, key: str) -> Warm:
        """A new sandbox with an empty workspace slot and object-store slot (rate-capped over every key), ahead of
        its use: its span (and what it starts) is marked as background, so that a trace does not count it in the
        acquire that set it off (``bosun trace``)."""
        with _tracer.start_as_current_span("sandbox start ahead", attributes={BACKGROUND: True,
                                                                             "bosun.sandbox.backend": self.backend}):
            return await self._start_unbound(key)

    async def _start_unbound(self, key: str) -> Warm:
        async with self._start_lock:
            wait = self._last_start + self.refill_interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_start = time.monotonic()
        self._starting[key] = self._starting.get(key, 0) + 1
        made: list[Path] = []
        try:
            made.append(await asyncio.to_thread(self.slots.new_slot))
            made.append(await asyncio.to_thread(self.slots.new_slot))
            sb = await self.provider.start_unbound(made[0], key, objects_slot=made[1])  # type: ignore[attr-defined]
        except BaseException:
            for slot in made:
                await asyncio.to_thread(self.slots.detach, slot)
            raise
        finally:
            self._starting[key] -= 1

        async def unbind() -> None:
            for slot in made:
                await asyncio.to_thread(self.slots.detach, slot)
        sb.on_close.append(unbind)  # type: ignore[attr-defined]
        return Warm(sb, made[0], made[1])


@dataclass(eq=False)
class Warm:
    """A ready sandbox and its two empty slots: /workspace and the object store."""
    sandbox: Sandbox
    slot: Path
    objects_slot: Path
