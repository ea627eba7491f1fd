"""One build's run in its build container: the steps (each a command run as the build user), their log (capped: its
head and tail kept), the deadline's watchdog, and how a failed step is reported (BuildFailed, with the log's tail)."""

from __future__ import annotations

import contextlib
import shlex
import threading
import time
from pathlib import Path
from typing import IO, Any, Protocol

from environments.bases import BUILD_UID
from infra.errors import EnvironmentFailed, UnexpectedEnvironment


class Engine(Protocol):
    """What a run needs of the builder that made it."""

    api: Any
    """The docker API client (its ``exec_*`` calls, and ``kill`` at the deadline)."""
    timeout_s: float
    """The build's time limit, for the message."""


LOG_TAIL = 25
"""Lines of the log a failure shows."""
LOG_HEAD_BYTES = 8 << 20
"""Bytes of build.log kept from its start..."""
LOG_TAIL_BYTES = 2 << 20
"""...and from its end; what lies between is cut (the log says how much)."""
OUTPUT_KEPT = 64 * 1024
"""Bytes of a step's output kept in memory (its end: where installers and pytest say what went wrong)."""


class CappedLog:
    """``build.log``, bounded: the first ``head`` bytes are written as they come, then only the last ``tail`` bytes
    are kept (in memory, written after a line saying how many bytes were cut, on every flush). A setup step that
    prints forever fills neither the disk nor the memory."""

    def __init__(self, f: IO[bytes], head: int = LOG_HEAD_BYTES, tail: int = LOG_TAIL_BYTES) -> None:
        self.f = f
        self.head = head
        self.tail = tail
        self.written = 0
        self.cut = 0
        self.kept = bytearray()

    def write(self, data: bytes) -> int:
        room = self.head - self.written
        if room > 0:
            self.f.write(data[:room])
            self.written += min(room, len(data))
            data = data[room:]
        if data:
            self.kept += data
            if len(self.kept) > self.tail:
                over = len(self.kept) - self.tail
                del self.kept[:over]
                self.cut += over
        return len(data)

    def flush(self) -> None:
        if self.written >= self.head and (self.kept or self.cut):
            self.f.seek(self.head)
            if self.cut:
                self.f.write(f"\n[... {self.cut} bytes of output cut: build.log keeps the first {self.head} and the "
                             f"last {self.tail} bytes ...]\n".encode())
            self.f.write(self.kept)
            self.f.truncate()
        self.f.flush()


class BuildFailed(EnvironmentFailed):
    """The repository's environment could not be built: a step failed (the repository's setup, its
    dependencies, the index). Not retried: the same inputs fail the same way."""

    def __init__(self, step: str, reason: str, tail: str, log: Path | None = None) -> None:
        where = f"; log: {log}" if log else ""
        super().__init__(f"environment build failed at step '{step}': {reason}{where}")
        self.step = step
        self.reason = reason
        self.tail = tail
        self.log = log


class BuildRun:
    """One build's log, steps and deadline."""

    def __init__(self, builder: Engine, log: CappedLog, log_path: Path, deadline: float) -> None:
        self.builder = builder
        self.log = log
        self.log_path = log_path
        self.deadline = deadline
        self.container = ""
        self.last_output = ""
        self.switched: dict[str, str] = {}
        """The toolchain an install attempt switched to (role -> version), over the one the build started with."""
        self.attempts: list[str] = []
        """Each install attempt of a JavaScript/TypeScript build and how it ended (the record's ``attempts``)."""
        self.timed_out = False
        self.part_failed = False
        """The JavaScript/TypeScript part beside the main ecosystem could not be installed."""
        self._stop = threading.Event()
        self._watchdog: threading.Thread | None = None

    def start_watchdog(self) -> None:
        def watch() -> None:
            if not self._stop.wait(max(0.0, self.deadline - time.monotonic())):
                self.timed_out = True
                with contextlib.suppress(Exception):
                    self.builder.api.kill(self.container)

        self._watchdog = threading.Thread(target=watch, daemon=True, name="envbuild-deadline")
        self._watchdog.start()

    def stop_watchdog(self) -> None:
        self._stop.set()

    def header(self, name: str, detail: str = "") -> None:
        self.log.write(f"\n==> {name}{': ' + detail if detail else ''}\n".encode())
        self.log.flush()

    def note(self, text: str) -> None:
        self.log.write(f"note: {text}\n".encode())

    def step(self, name: str, cmd: list[str], env: dict[str, str], *, check: bool = True) -> tuple[int, str]:
        """Run ``cmd`` in the build container as the build user; returns (exit code, its output)."""
        self.header(name, shlex.join(cmd))
        started = time.monotonic()
        api = self.builder.api
        try:
            exec_id = api.exec_create(self.container, cmd, environment=env, workdir="/workspace",
                                      user=f"{BUILD_UID}:{BUILD_UID}")["Id"]
            output = bytearray()
            for chunk in api.exec_start(exec_id, stream=True):
                self.log.write(chunk)
                output += chunk
                if len(output) > 2 * OUTPUT_KEPT:
                    del output[:-OUTPUT_KEPT]
            rc = api.exec_inspect(exec_id).get("ExitCode")
        except Exception as exc:  # noqa: BLE001 - the engine's errors: the container died (or the deadline)
            if self.timed_out:
                raise self.failed(name, f"the build ran past its time limit ({self.builder.timeout_s:.0f} s)"
                                  ) from None
            raise UnexpectedEnvironment(f"environment build: the docker engine failed during '{name}': {exc}"
                                        ) from None
        if self.timed_out:
            raise self.failed(name, f"the build ran past its time limit ({self.builder.timeout_s:.0f} s)")
        text = bytes(output[-OUTPUT_KEPT:]).decode("utf-8", "replace")
        self.last_output = text
        rc = -1 if rc is None else int(rc)
        self.log.write(f"[{name}: exit {rc} after {time.monotonic() - started:.1f} s]\n".encode())
        self.log.flush()
        if check and rc != 0:
            raise self.failed(name, f"exit {rc}")
        return rc, text

    def failed(self, step: str, reason: str) -> BuildFailed:
        self.log.flush()
        tail = log_tail(self.log_path)
        last = next((line for line in reversed(tail.splitlines()) if line.strip() and not line.startswith("[")), "")
        return BuildFailed(step, f"{reason}: {last.strip()[:300]}" if last else reason, tail, self.log_path)


def log_tail(path: Path, lines: int = LOG_TAIL) -> str:
    return "\n".join(read_tail(path, 64_000).splitlines()[-lines:])


def read_tail(path: Path, limit: int) -> str:
    """The last ``limit`` bytes of a file as text (never the whole file in memory); "" when unreadable."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            data = f.read(limit)
    except OSError:
        return ""
    cut = f"[... the first {size - limit} bytes of the log are not shown ...]\n" if size > limit else ""
    return cut + data.decode("utf-8", "replace")
