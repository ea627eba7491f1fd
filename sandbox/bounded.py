"""Host-side work on agent-written content, bounded in CPU time and memory: helper processes with limits.

The worker runs outside every sandbox's limits, yet parses what agents wrote: tree-sitter for the code index, the
repo map, references and syntax checks. A file can be made to cost that code far more than its size (900 nested
Rust modules in 10 KB took over 10 s of CPU; a grammar's error recovery on 500 KB of noise takes seconds), and one
agent would starve every task on the host. So each such parse runs in a helper process of this module, one file
per call, under:

- **CPU time**: ``setitimer(ITIMER_PROF)`` (user + system time of the helper, microsecond resolution) set before
  the call and cleared after it; when it fires, SIGPROF's default action ends the helper at once, whatever it is
  running (C code included). The call is then :class:`OverBound` (``cpu``).
- **memory**: ``RLIMIT_AS`` of the helper; an allocation past it fails (``MemoryError``, or tree-sitter aborts).
  :class:`OverBound` (``memory``).
- **wall time**: a helper that does not answer in time (a starved machine) is killed (``time``).

(py-tree-sitter 0.26 has neither a parse timeout nor a progress callback, and most of such a cost was bosun's own
Python walking the tree: a process's bound is the one that holds for all of it.)

Helpers are kept (``size`` at most, started on demand, replaced when one ends), so a call costs a round trip over
a pipe, not a process start. The function a helper runs is named by module and name (a module-level function of
bosun's, imported in the helper on first use), its arguments go as a pickle (host to helper), its result comes back
as JSON only: a helper that a hostile file somehow took over can send data, never objects, and at most
``MAX_RESULT_BYTES``.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import pickle
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""Where bosun's packages are (put on a helper's path: it starts isolated, ``-I``)."""
MAX_RESULT_BYTES = 64 << 20
HELPER_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
"""A helper's whole environment: none of the worker's variables (its keys and tokens) reach it."""
_START = ("import importlib.util as u, sys; sys.path.insert(0, {root!r}); "
          "s = u.spec_from_file_location('_bosun_bounded', {me!r}); m = sys.modules[s.name] = u.module_from_spec(s); "
          "s.loader.exec_module(m); m.serve({memory_mb})")
"""A helper's program: this file run on its own (not the sandbox package, whose imports cost 0.2 s), bosun's
packages on its path for the functions it runs."""
_HEADER = struct.Struct("!I")


@dataclass(frozen=True)
class Bounds:
    """What one call may cost."""

    cpu_s: float = 1.0
    """CPU time of the helper during the call (user + system)."""
    memory_mb: int = 1024
    """Address space of the helper (RLIMIT_AS), its interpreter included (about 70 MB with the grammars)."""
    wall_s: float = 60.0
    """Longest wait for the answer; only a starved machine gets there."""


DEFAULT = Bounds()


class OverBound(Exception):
    """The call went past a bound (``why``: cpu, memory, time), raised (failed) or its helper broke (crashed);
    nothing came back. The message completes "parsing it ..." ("took more than 1 s of CPU")."""

    def __init__(self, why: str, message: str) -> None:
        super().__init__(message)
        self.why = why


def describe(why: str, bounds: Bounds) -> str:
    return {"cpu": f"took more than {bounds.cpu_s:g} s of CPU", "memory": f"needed more than {bounds.memory_mb} MB",
            "time": f"took more than {bounds.wall_s:g} s", "failed": "failed"}.get(why, "crashed")


class _Helper:
    """One helper process and its pipes (used by one call at a time)."""

    def __init__(self, memory_mb: int) -> None:
        self.memory_mb = memory_mb
        self.proc = subprocess.Popen([sys.executable, "-I", "-c", _START.format(root=str(ROOT), me=__file__,
                                                                              memory_mb=memory_mb)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     close_fds=True, start_new_session=True, cwd="/", env=HELPER_ENV)

    def call(self, target: str, args: tuple, bounds: Bounds) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = pickle.dumps((target, args, bounds.cpu_s), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.proc.stdin.write(_HEADER.pack(len(request)) + request)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._ended(bounds) from None
        deadline = time.monotonic() + bounds.wall_s
        head = self._read(_HEADER.size, deadline, bounds)
        (size,) = _HEADER.unpack(head)
        if size > MAX_RESULT_BYTES:
            self.kill()
            raise OverBound("crashed", f"crashed (its result was larger than {MAX_RESULT_BYTES} bytes)")
        try:
            reply = json.loads(self._read(size, deadline, bounds))
        except ValueError:
            self.kill()
            raise OverBound("crashed", "crashed (its result was not JSON)") from None
        if not isinstance(reply, dict):
            self.kill()
            raise OverBound("crashed", "crashed (its result was not a JSON object)")
        if "error" in reply:
            why = str(reply.get("error"))
            if why == "memory":
                self.kill()  # a MemoryError may leave it half-broken
            raise OverBound(why, f"{describe(why, bounds)} ({str(reply.get('message', ''))[:300]})")
        return reply.get("ok")

    def _read(self, n: int, deadline: float, bounds: Bounds) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        chunks: list[bytes] = []
        while n > 0:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                raise OverBound("time", describe("time", bounds))
            chunk = os.read(fd, min(n, 1 << 20))
            if not chunk:
                raise self._ended(bounds)
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _ended(self, bounds: Bounds) -> OverBound:
        """The helper is gone mid-call: why, from how it ended."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code == -signal.SIGPROF:
            return OverBound("cpu", describe("cpu", bounds))
        if code in (-signal.SIGABRT, -signal.SIGSEGV, -signal.SIGBUS):  # tree-sitter aborts when malloc fails
            return OverBound("memory", f"{describe('memory', bounds)} (its helper ended with signal {-code})")
        return OverBound("crashed", f"crashed (its helper ended with exit status {code})")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=5)
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                pipe.close()  # type: ignore[union-attr]


class Pool:
    """Up to ``size`` helpers, each running one call at a time; callers wait for a free one."""

    def __init__(self, size: int | None = None) -> None:
        self.size = max(1, size or min(4, os.cpu_count() or 1))
        self._idle: list[_Helper] = []
        self._running = 0
        self._cond = threading.Condition()

    def call(self, fn: Callable[..., Any], *args: Any, bounds: Bounds = DEFAULT) -> Any:
        """``fn(*args)`` in a helper, within ``bounds``: its (JSON) result, or OverBound."""
        target = f"{fn.__module__}:{fn.__qualname__}"
        helper = self._take(bounds.memory_mb)
        try:
            return helper.call(target, args, bounds)
        finally:
            self._give(helper)

    def map(self, fn: Callable[..., Any], items: Sequence[tuple], bounds: Bounds = DEFAULT,
            parallel: int | None = None) -> list[Any]:
        """``fn(*item)`` for every item, on up to ``parallel`` (default: ``size``) helpers at once: each result, or
        the OverBound it raised."""
        results: list[Any] = [None] * len(items)
        if not items:
            return results
        todo = iter(range(len(items)))
        lock = threading.Lock()

        def work() -> None:
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                try:
                    results[i] = self.call(fn, *items[i], bounds=bounds)
                except OverBound as e:
                    results[i] = e

        threads = [threading.Thread(target=work, daemon=True)
                   for _ in range(min(parallel or self.size, self.size, len(items)) - 1)]
        for t in threads:
            t.start()
        work()
        for t in threads:
            t.join()
        return results

    def _take(self, memory_mb: int) -> _Helper:
        with self._cond:
            while True:
                while self._idle:
                    helper = self._idle.pop()
                    if helper.alive and helper.memory_mb == memory_mb:
                        return helper
                    self._running -= 1
                    helper.kill()
                if self._running < self.size:
                    self._running += 1
                    break
                self._cond.wait()
        try:
            return _Helper(memory_mb)
        except BaseException:
            with self._cond:
                self._running -= 1
                self._cond.notify()
            raise

    def _give(self, helper: _Helper) -> None:
        with self._cond:
            if helper.alive:
                self._idle.append(helper)
            else:
                helper.kill()
                self._running -= 1
            self._cond.notify()

    def close(self) -> None:
        """End the idle helpers (those in a call end when it returns)."""
        with self._cond:
            idle, self._idle = self._idle, []
            self._running -= len(idle)
        for helper in idle:
            helper.kill()


_pool: Pool | None = None
_pool_lock = threading.Lock()


def pool() -> Pool:
    """This process's pool of helpers."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool()
            atexit.register(_pool.close)
        return _pool


def run(fn: Callable[..., Any], *args: Any, bounds: Bounds = DEFAULT) -> Any:
    """``fn(*args)`` in one of this process's helpers, within ``bounds`` (OverBound past them)."""
    return pool().call(fn, *args, bounds=bounds)


# -- the helper's side -------------------------------------------------------------------------------------------


def serve(memory_mb: int) -> None:
    """A helper's loop: requests on stdin, JSON replies on stdout, each call under its CPU timer."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGPROF, signal.SIG_DFL)  # the timer's signal ends the process
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGPROF})
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    functions: dict[str, Callable[..., Any]] = {}
    while True:
        head = stdin.read(_HEADER.size)
        if len(head) < _HEADER.size:
            return
        target, args, cpu_s = pickle.loads(stdin.read(_HEADER.unpack(head)[0]))
        ended = False
        try:
            fn = functions.get(target)
            if fn is None:
                module, _, name = target.partition(":")
                fn = functions[target] = getattr(importlib.import_module(module), name)
            signal.setitimer(signal.ITIMER_PROF, cpu_s)
            try:
                reply: dict[str, Any] = {"ok": fn(*args)}
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
            data = json.dumps(reply, separators=(",", ":")).encode()
        except MemoryError:
            data, ended = b'{"error":"memory","message":"MemoryError"}', True
        except Exception as e:  # noqa: BLE001 - reported to the caller, the helper goes on
            data = json.dumps({"error": "failed", "message": f"{type(e).__name__}: {e}"[:500]}).encode()
        stdout.write(_HEADER.pack(len(data)) + data)
        stdout.flush()
        if ended:
            return
