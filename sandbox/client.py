"""The host side of the tool-server protocol: many concurrent requests over one stdio pipe, matched by id.

Both backends run the tool server as a child process of the worker (``bwrap ... python3 toolserver`` or
``docker exec -i ... python3 toolserver``) and talk to it through a ``ToolClient``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from infra.errors import BosunError, InvalidArguments, ToolFailed, UnexpectedEnvironment
from infra.names import show_text
from sandbox.base import Sandbox

TOOLSERVER_PATH = Path(__file__).with_name("toolserver")
"""The tool server's folder on the host (``python3 FOLDER`` runs it); every backend mounts it read-only into the
sandbox (bwrap: compiled to bytecode)."""

_tracer = trace.get_tracer("bosun.sandbox")

STREAM_LIMIT = 256 * 1024 * 1024
"""Longest response line accepted (an exec result carries up to 2 x output_cap bytes, JSON-escaped)."""


class Channel(Protocol):
    """The stdio of one tool server, however it is connected (a child process, a docker attach socket)."""

    stdout: asyncio.StreamReader
    stderr: asyncio.StreamReader

    async def send(self, data: bytes) -> None:
        """Write to the tool server's stdin."""

    def running(self) -> bool:
        """False once the tool server (or its container/sandbox) is known to be gone."""

    def exit_info(self) -> str:
        """How it ended, for error messages."""

    async def kill(self) -> None:
        """Stop it now; idempotent."""


class ProcessChannel:
    """A tool server that is (or runs under) a child process of the worker: bwrap, docker exec."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        self.proc = proc
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    async def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        await self.proc.stdin.drain()

    def running(self) -> bool:
        return self.proc.returncode is None

    def exit_info(self) -> str:
        return f"exited with {self.proc.returncode}"

    async def kill(self) -> None:
        """Kill the process, close its stdin (a sandbox process that outlives it, e.g. once it changed uid, which
        clears its parent-death signal, ends on that), wait for it and its pipes (10 s at most), close them."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        if self.proc.stdin is not None:
            with contextlib.suppress(Exception):
                self.proc.stdin.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.proc.wait(), 10.0)
        transport = getattr(self.proc, "_transport", None)  # close now, not at garbage collection
        if transport is not None:
            with contextlib.suppress(Exception):
                transport.close()


class ToolClient:
    """Multiplexes requests by id over the stdin/stdout of one tool server."""

    def __init__(self, channel: Channel, *, label: str) -> None:
        self.channel = channel
        self.label = label
        self._next_id = 0
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._stderr_tail: deque[str] = deque(maxlen=40)
        self._closed = False
        self._dead_reason: str | None = None
        self._reader = asyncio.create_task(self._read_stdout(), name=f"toolclient-stdout-{label}")
        self._err_reader = asyncio.create_task(self._read_stderr(), name=f"toolclient-stderr-{label}")

    @property
    def alive(self) -> bool:
        return not self._closed and self._dead_reason is None and self.channel.running()

    def stderr_tail(self) -> str:
        """The last lines the tool server (or the sandbox runtime) wrote to stderr: the clue when start-up fails."""
        return "\n".join(self._stderr_tail).strip()

    async def request(self, op: str, args: dict[str, Any] | None = None, *,
                      timeout_s: float | None = None) -> dict[str, Any]:
        """Send one request and wait for its response; raises ToolFailed/InvalidArguments/UnexpectedEnvironment."""
        if not self.alive:
            raise UnexpectedEnvironment(self._gone_message())
        self._next_id += 1
        req_id = self._next_id
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[req_id] = fut
        line = json.dumps({"id": req_id, "op": op, "args": args or {}}, separators=(",", ":")) + "\n"
        try:
            await self.channel.send(line.encode("utf-8", "surrogatepass"))
        except (ConnectionError, RuntimeError, OSError) as exc:
            self._pending.pop(req_id, None)
            raise UnexpectedEnvironment(f"{self.label}: cannot send '{op}' to the tool server ({exc}); "
                                        f"{self._gone_message()}") from None
        try:
            resp = await asyncio.wait_for(fut, timeout_s) if timeout_s else await fut
        except TimeoutError:
            raise UnexpectedEnvironment(f"{self.label}: the tool server did not answer '{op}' within "
                                        f"{timeout_s:.0f} s; the sandbox is presumed broken, re-provision it"
                                        ) from None
        finally:
            self._pending.pop(req_id, None)
        if resp.get("ok"):
            return resp.get("result") or {}
        err = resp.get("error") or {}
        message = show_text(str(err.get("message") or "unknown tool-server error"))  # it may echo a path
        # (the tool server, inside the sandbox, names one of the two classes by its kind: the wire's only strings)
        raise (InvalidArguments if err.get("kind") == InvalidArguments.kind else ToolFailed)(f"{op}: {message}")

    def _gone_message(self) -> str:
        reason = self._dead_reason or ("closed" if self._closed else self.channel.exit_info())
        tail = self.stderr_tail()
        return f"the sandbox's tool server is gone ({reason})" + (f"; its stderr: {tail[-2000:]}" if tail else "")

    async def _read_stdout(self) -> None:
        try:
            while True:
                raw = await self.channel.stdout.readline()
                if not raw:
                    break
                try:
                    resp = json.loads(raw)
                except ValueError:
                    self._stderr_tail.append(f"(unparseable stdout line: {raw[:200]!r})")
                    continue
                fut = self._pending.get(resp.get("id")) if isinstance(resp, dict) else None
                if fut is not None and not fut.done():
                    fut.set_result(resp)
        except (asyncio.LimitOverrunError, ValueError) as exc:
            self._dead_reason = f"response too long: {exc}"
        except Exception as exc:  # noqa: BLE001 - reported to every waiter below
            self._dead_reason = f"reader failed: {type(exc).__name__}: {exc}"
        finally:
            if self._dead_reason is None:
                if not self._closed:
                    await asyncio.sleep(0.05)  # let the exit status arrive, for the message
                self._dead_reason = "closed" if self._closed else self.channel.exit_info()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._err_reader, 1.0)
            err = UnexpectedEnvironment(f"{self.label}: {self._gone_message()}")
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(err)
            self._pending.clear()

    async def _read_stderr(self) -> None:
        while True:
            try:
                raw = await self.channel.stderr.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not raw:
                return
            self._stderr_tail.append(raw.decode("utf-8", "replace").rstrip()[:500])

    async def close(self) -> None:
        """Kill the tool server (and with it the sandbox runtime); idempotent."""
        self._closed = True
        await self.channel.kill()
        for task in (self._reader, self._err_reader):
            if not task.done():
                task.cancel()
            with contextlib.suppress(BaseException):
                await task


def scrubbed_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment sandbox runtimes are started with: nothing of the worker's, only a plain PATH."""
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    if extra:
        env.update(extra)
    return env


class ClientSandbox(Sandbox):
    """A sandbox whose tool server is reached through a ToolClient (both backends): requests, liveness, and a
    close() that stops the tool server, runs the backend's ``_destroy`` and then the ``on_close`` hooks."""

    def __init__(self, sandbox_id: str, workspace: Path, client: ToolClient, user: str = "") -> None:
        self.id = sandbox_id
        self.workspace = workspace
        self.user = user
        """uid:gid the sandbox runs as (host ids)."""
        self._client = client
        self._closed = False
        self.started_at = time.monotonic()
        self.on_close: list[Callable[[], Awaitable[None]]] = []
        """Run after the sandbox is destroyed (pools: unbind the workspace slot, count the release)."""

    async def request(self, op: str, args: dict[str, Any] | None = None, *, timeout_s: float | None = None
                      ) -> dict[str, Any]:
        """One round trip, as a span ``sandbox {op}`` under whatever runs it (an agent's tool call, its start)."""
        attrs = {"bosun.sandbox.backend": self.backend, "bosun.sandbox.id": self.id}
        # The error's message is left out of the span: it may quote what the sandbox wrote (file names, output).
        with _tracer.start_as_current_span(f"sandbox {op}", attributes=attrs, record_exception=False,
                                           set_status_on_exception=False) as span:
            try:
                result = await self._client.request(op, args, timeout_s=timeout_s)
            except (ToolFailed, InvalidArguments) as exc:  # the op's own answer (no such file...), not a failure
                span.set_attribute("bosun.sandbox.refused", exc.kind)
                raise
            except Exception as exc:  # the sandbox is gone, the call timed out (or a bug)
                kind = exc.kind if isinstance(exc, BosunError) else type(exc).__name__
                span.set_attribute("error.type", kind)
                span.set_status(Status(StatusCode.ERROR, kind))
                raise
            if op == "exec":
                span.set_attributes({"bosun.exec.exit_code": -1 if result.get("exit_code") is None
                                     else int(result["exit_code"]), "bosun.exec.timed_out": bool(
                                         result.get("timed_out"))})
            return result

    async def _destroy(self) -> None:
        """What the backend tears down after the tool server is gone (default: nothing)."""

    async def wait_ready(self, what: str, timeout_s: float) -> None:
        """Ping the tool server once it has started; if it does not answer, close the sandbox and raise
        UnexpectedEnvironment naming ``what`` (e.g. "bwrap sandbox for /ws") with the tool server's stderr."""
        try:
            pong = await self.request("ping", timeout_s=timeout_s)
            if not pong.get("pong"):
                raise UnexpectedEnvironment(f"unexpected answer to ping: {pong!r}")
        except BaseException as exc:
            tail = self.stderr_tail()
            await self.close()
            if isinstance(exc, UnexpectedEnvironment):
                raise UnexpectedEnvironment(f"{what} did not start: {exc}"
                                            + (f"; stderr: {tail}" if tail and tail not in str(exc) else "")
                                            ) from None
            raise

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._client.close()
        await self._destroy()
        for hook in self.on_close:
            with contextlib.suppress(Exception):
                await hook()

    @property
    def alive(self) -> bool:
        return not self._closed and self._client.alive

    def stderr_tail(self) -> str:
        return self._client.stderr_tail()


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (on this host)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
