"""The tool server's processes: ``exec``, and the tracker that attributes every descendant to its command.

Processes started by ``exec`` run in their own session. The server is a child subreaper, so descendants that
double-fork or call setsid are re-parented to it instead of escaping; a tracker scans /proc while commands run and
attributes every descendant to its command. When a command times out, or returns while leaving processes behind,
its whole tree is killed. Part of the tool server (``__main__.py`` says what it is).
"""

from __future__ import annotations

import errno
import os
import signal
import threading
import time

from ts_base import ToolError, Workspace, invalid
from ts_protocol import Exec, ExecResult

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings anyway
    import subprocess
    from typing import Any

EXEC_MARKER_ENV = "BOSUN_EXEC_ID"
SHELLS = {"sh": "/bin/sh", "bash": "/bin/bash"}
"""What runs a command string (``exec``'s ``shell``): POSIX sh by default (bosun's own scripts), bash for the
commands a model writes (``run_command``). Never a login shell: ``-l`` would source /etc/profile, which resets PATH
(the environment's virtualenv would drop out of it) and, under bwrap without an environment, the host's
/etc/profile.d."""
SCAN_INTERVAL_S = 0.02
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _proc_table() -> dict[int, tuple[int, int, int, str]]:
    """pid -> (ppid, pgid, sid, state) for every process visible in /proc."""
    table: dict[int, tuple[int, int, int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                raw = f.read().decode("ascii", "replace")
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2:].split()
        try:
            table[int(name)] = (int(rest[1]), int(rest[2]), int(rest[3]), rest[0])
        except (IndexError, ValueError):
            continue
    return table


def _marker_of(pid: int) -> bytes | None:
    """The job marker (``BOSUN_EXEC_ID=n``) in a process's initial environment, if any."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for item in f.read().split(b"\x00"):
                if item.startswith(EXEC_MARKER_ENV.encode() + b"="):
                    return item
    except OSError:
        pass
    return None


class Job:
    """One running ``exec``: its root process and every descendant seen so far."""

    def __init__(self, job_id: int, proc: subprocess.Popen[bytes], marker: str) -> None:
        self.id = job_id
        self.proc = proc
        self.root = proc.pid
        self.marker = f"{EXEC_MARKER_ENV}={marker}".encode()
        self.members: set[int] = {proc.pid}


class ProcessTracker:
    """Attributes descendants to jobs (even after they double-fork or setsid) and reaps orphans.

    The server is a child subreaper: an orphan is re-parented to it, never to the namespace's init. A background
    thread scans /proc while jobs run; a process belongs to a job when its parent does, when it is in the job's
    session or process group, or when it carries the job's marker variable.
    """

    def __init__(self, *, guest: bool = False, env: dict[str, str] | None = None) -> None:
        self.guest = guest
        """The tracker shares its process with others (the in-process sandbox of bosun's tests): it never becomes a
        subreaper, reaps no orphan and kills only its own jobs' processes (their members, their marker)."""
        self.env = env
        """The environment commands start from (``exec``'s ``env`` is laid over it); None: this process's."""
        self.lock = threading.Lock()
        self.spawn_lock = threading.Lock()
        self.jobs: dict[int, Job] = {}
        self.helpers: set[int] = set()
        """Children the server starts for itself (rg): never killed as orphans, never reaped behind Popen's back."""
        self.next_id = 1
        self.me = os.getpid()
        self.wake = threading.Event()
        self.stopped = False
        threading.Thread(target=self._loop, name="tracker", daemon=True).start()

    def spawn(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> Job:
        with self.lock:
            job_id = self.next_id
            self.next_id += 1
        env = dict(env)
        # Inside a sandbox the job's number is unique; a guest sees every process of the host, whose other
        # sandboxes number their jobs too.
        marker = f"{os.getpid()}.{id(self)}.{job_id}" if self.guest else str(job_id)
        env[EXEC_MARKER_ENV] = marker
        if not self.guest:
            _harden()
        import subprocess  # noqa: PLC0415 - imported on first use: the server starts faster

        with self.spawn_lock:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
            job = Job(job_id, proc, marker)
            with self.lock:
                self.jobs[job_id] = job
        _raise_oom_score(proc.pid)
        self.wake.set()
        return job

    def popen_helper(self, argv: list[str], cwd: str) -> subprocess.Popen[bytes]:
        """Start a helper process of the server itself (not a job)."""
        if not self.guest:
            _harden()
        import subprocess  # noqa: PLC0415

        with self.spawn_lock:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    cwd=cwd)
            with self.lock:
                self.helpers.add(proc.pid)
        return proc

    def helper_done(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.helpers.discard(proc.pid)

    def finish(self, job: Job) -> None:
        with self.lock:
            self.jobs.pop(job.id, None)

    def stop(self) -> None:
        """Kill every job's processes and end the scanning thread (a guest's sandbox closing)."""
        self.kill_all()
        self.stopped = True
        self.wake.set()

    def _loop(self) -> None:
        while not self.stopped:
            self.wake.wait(timeout=1.0)
            with self.lock:
                busy = bool(self.jobs)
            if not busy:
                self.wake.clear()
                if not self.guest:
                    self._reap_orphans(_proc_table())
                continue
            try:
                self.scan()
            except Exception:  # the tracker must never die
                pass
            time.sleep(SCAN_INTERVAL_S)

    def scan(self, table: dict[int, tuple[int, int, int, str]] | None = None) -> None:
        """Update every job's member set from the process table; reap orphaned zombies."""
        table = table if table is not None else _proc_table()
        with self.lock:
            jobs = list(self.jobs.values())
        if jobs:
            children: dict[int, list[int]] = {}
            for pid, (ppid, _pg, _sid, _st) in table.items():
                children.setdefault(ppid, []).append(pid)
            for job in jobs:
                job.members &= set(table) | {job.root}
                stack = [p for p in job.members]
                for pid, (_ppid, pgid, sid, _st) in table.items():
                    if pid != self.me and (pgid == job.root or sid == job.root) and pid not in job.members:
                        job.members.add(pid)
                        stack.append(pid)
                while stack:
                    for child in children.get(stack.pop(), ()):
                        if child not in job.members:
                            job.members.add(child)
                            stack.append(child)
        self._reap_orphans(table)

    def _reap_orphans(self, table: dict[int, tuple[int, int, int, str]]) -> None:
        if self.guest:  # the children of this process that are not ours are someone else's to reap
            return
        with self.spawn_lock:
            with self.lock:
                roots = {j.root for j in self.jobs.values()} | self.helpers
            for pid, (ppid, _pg, _sid, state) in table.items():
                if ppid == self.me and state == "Z" and pid not in roots:
                    try:
                        os.waitpid(pid, os.WNOHANG)
                    except ChildProcessError:
                        pass

    def kill_tree(self, job: Job) -> int:
        """SIGKILL every process of ``job`` until none is left; returns how many signals were sent."""
        killed = 0
        checked: dict[int, bytes | None] = {}
        for _round in range(200):
            table = _proc_table()
            self.scan(table)
            with self.lock:
                others = [j for j in self.jobs.values() if j is not job]
                claimed = set().union(*(j.members for j in others)) | self.helpers
                claimed |= {j.root for j in others}
            victims = {p for p in job.members if p in table and table[p][3] != "Z"}
            for pid, (ppid, _pg, _sid, state) in table.items():
                if pid in (self.me, 1) or state == "Z" or pid in victims or pid in claimed:
                    continue
                if pid not in checked:
                    checked[pid] = _marker_of(pid)
                marker = checked[pid]
                if marker == job.marker or (marker is None and ppid == self.me and not self.guest):
                    # Carries this job's marker, or is an unmarked orphan no other job claims.
                    victims.add(pid)
            victims -= {self.me, 1}
            if not victims:
                # Done once the dead are reaped too: zombies still count against the sandbox's process limit.
                with self.lock:
                    mine = {j.root for j in self.jobs.values()} | self.helpers
                zombies = [p for p, (pp, _pg, _sid, st) in table.items() if pp == self.me and st == "Z"
                           and p not in mine]
                if not zombies or self.guest:
                    return killed
                self._reap_orphans(table)
                time.sleep(0.002)
                continue
            try:
                os.killpg(job.root, signal.SIGKILL)
            except OSError:
                pass
            for pid in victims:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
            job.members |= victims
            time.sleep(0.002)
            self._reap_orphans(_proc_table())
        return killed

    def kill_all(self) -> None:
        with self.lock:
            jobs = list(self.jobs.values())
        for job in jobs:
            self.kill_tree(job)


def _raise_oom_score(pid: int) -> None:
    """Make commands the OOM killer's first choice, so a memory bomb dies before the tool server."""
    try:
        with open(f"/proc/{pid}/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def start_thread(target: Any, *args: Any, wait_s: float = 3.0) -> threading.Thread:
    """Start a daemon thread; when the process limit is momentarily reached, retry for a while."""
    deadline = time.monotonic() + wait_s
    while True:
        thread = threading.Thread(target=target, args=args, daemon=True)
        try:
            thread.start()
            return thread
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class _Capture:
    """Reads one pipe to EOF, keeping at most ``cap`` bytes and counting the rest."""

    def __init__(self, pipe: Any, cap: int) -> None:
        self.pipe = pipe
        self.cap = cap
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0
        self.thread = start_thread(self._run)

    def _run(self) -> None:
        fd = self.pipe.fileno()
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                room = self.cap - self.kept
                if room > 0:
                    self.chunks.append(chunk[:room])
                    self.kept += min(room, len(chunk))
                self.dropped += max(0, len(chunk) - max(room, 0))
        except OSError:
            pass

    def text(self) -> str:
        out = b"".join(self.chunks).decode("utf-8", "replace")
        if self.dropped:
            out += f"\n[... output truncated: {self.dropped} bytes dropped ...]\n"
        return out


def op_exec(ws: Workspace, req: Exec, tracker: ProcessTracker) -> ExecResult:
    """Run a command (argv list, or a string run by ``SHELLS[shell] -c``: /bin/sh by default, /bin/bash with
    ``shell: bash``) with a timeout and capped output."""
    cmd, shell, cwd_arg, env_arg, cap = req.cmd, req.shell, req.cwd, req.env, req.output_cap
    timeout_s = float(req.timeout_s)
    if shell not in SHELLS:
        raise invalid(f"argument 'shell' must be one of {', '.join(SHELLS)}, got {shell[:40]!r}")
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd):
            raise invalid("argument 'cmd' must be a non-empty list of strings or a shell command string")
        if shell != "sh":
            raise invalid("argument 'shell' applies to a command string only, and 'cmd' is an argument list")
        argv = list(cmd)
    else:
        if not cmd.strip():
            raise invalid("argument 'cmd' is an empty command")
        argv = [SHELLS[shell], "-c", cmd]
        if not os.path.isfile(argv[0]):
            raise ToolError(f"cannot run the command: this sandbox has no {shell} ({argv[0]} is missing from its "
                            "root file system)")
    if timeout_s <= 0:
        raise invalid("argument 'timeout_s' must be positive")
    if cap < 0:
        raise invalid("argument 'output_cap' must not be negative")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env_arg.items()):
        raise invalid("argument 'env' must map strings to strings")
    cwd = ws.resolve(cwd_arg, arg="cwd") if cwd_arg else ws.root
    if not os.path.isdir(cwd):
        raise ToolError(f"cannot run in '{cwd_arg}': not a directory")
    env = dict(os.environ if tracker.env is None else tracker.env)
    env.update(env_arg)
    start = time.monotonic()
    try:
        job = tracker.spawn(argv, cwd=cwd, env=env)
    except FileNotFoundError:
        raise ToolError(f"command not found: {argv[0]!r}") from None
    except PermissionError:
        raise ToolError(f"cannot run {argv[0]!r}: permission denied (is it executable?)") from None
    except OSError as exc:
        if exc.errno == errno.EAGAIN:
            raise ToolError("cannot start the command: the sandbox's process limit is reached; "
                            "wait for running commands to finish") from None
        raise ToolError(f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
    out, err = _Capture(job.proc.stdout, cap), _Capture(job.proc.stderr, cap)
    timed_out = False
    exit_code: int | None = None
    import subprocess  # noqa: PLC0415 - already loaded by spawn

    try:
        exit_code = job.proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        exit_code = None
    finally:
        # Whatever the command left behind dies with it (background jobs, daemons, orphans).
        tracker.kill_tree(job)
        if exit_code is None and not timed_out:
            exit_code = job.proc.wait()
        if timed_out:
            job.proc.wait()
        tracker.finish(job)
    for capture in (out, err):
        capture.thread.join(timeout=2.0)
        if not capture.thread.is_alive():  # never close an fd another thread may still read
            capture.pipe.close()
    if exit_code is not None and exit_code < 0:
        exit_code = 128 - exit_code  # killed by a signal: shell convention 128 + signal number
    return ExecResult(exit_code=exit_code, stdout=out.text(), stderr=err.text(), timed_out=timed_out,
                      truncated=bool(out.dropped or err.dropped), duration_s=round(time.monotonic() - start, 4))



_HARDENED = threading.Lock()
_hardened = False


def _harden() -> None:
    """Before the first child: become a child subreaper (orphans come back to us) and non-dumpable (no ptrace,
    no /proc/<pid>/fd or environ access by the commands we run). Until then nothing else runs in the sandbox."""
    global _hardened
    if _hardened:
        return
    with _HARDENED:
        if _hardened:
            return
        try:
            import ctypes  # noqa: PLC0415 - costs milliseconds at start-up

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
            libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        _hardened = True
