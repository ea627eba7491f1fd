#!/usr/bin/env python3
"""bosun's tool server: runs INSIDE a sandbox, answers tool calls over stdio.

Standalone on purpose: standard library only (Python >= 3.11), no imports from the project, because it runs with the
sandbox's own ``python3``. One long-lived process per sandbox.

Protocol: newline-delimited JSON on stdin/stdout.

    request   {"id": 7, "op": "read", "args": {"path": "src/app.py"}}
    response  {"id": 7, "ok": true, "result": {...}}
              {"id": 7, "ok": false, "error": {"kind": "ToolFailed" | "InvalidArguments", "message": "..."}}

Every request runs in its own thread, so slow calls (exec, grep) do not hold up quick ones; responses are written
whole, one per line, under a lock. Ops: ping, read, write, delete, list, glob, grep, exec (see the ``op_*`` functions).

Paths are relative to the workspace root (argv[1], default /workspace). They are resolved here, inside the sandbox,
following symlinks, and refused when they end up outside the workspace.

Processes started by ``exec`` run in their own session. The server is a child subreaper, so descendants that
double-fork or call setsid are re-parented to it instead of escaping; a tracker scans /proc while commands run and
attributes every descendant to its command. When a command times out, or returns while leaving processes behind,
its whole tree is killed.
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import stat
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings anyway
    import subprocess
    from typing import Any

PROTOCOL_VERSION = 1
MAX_READ_BYTES = 8 * 1024 * 1024
MAX_LINE_TEXT = 400
EXEC_MARKER_ENV = "BOSUN_EXEC_ID"
SCAN_INTERVAL_S = 0.02
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


class ToolError(Exception):
    """An error reported back to the caller. ``kind`` is ToolFailed or InvalidArguments."""

    def __init__(self, message: str, kind: str = "ToolFailed") -> None:
        super().__init__(message)
        self.kind = kind


def invalid(message: str) -> ToolError:
    return ToolError(message, "InvalidArguments")


# ----------------------------------------------------------------------------------------------------------------
# Arguments and paths


def _arg(args: dict[str, Any], name: str, types: type | tuple[type, ...], default: Any = ..., *,
         allow_none: bool = False) -> Any:
    """Fetch and type-check one argument; a missing required one or a wrong type is InvalidArguments."""
    if name not in args or (args[name] is None and default is not ...):
        if default is ...:
            raise invalid(f"missing required argument '{name}'")
        return default
    value = args[name]
    if value is None and allow_none:
        return None
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise invalid(f"argument '{name}' must be {_type_names(types)}, got a boolean")
    if not isinstance(value, types):
        raise invalid(f"argument '{name}' must be {_type_names(types)}, got {type(value).__name__}")
    return value


def _type_names(types: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list",
             dict: "an object"}
    seq = types if isinstance(types, tuple) else (types,)
    return " or ".join(names.get(t, t.__name__) for t in seq)


class Workspace:
    """The workspace root and the rule that every path must stay inside it."""

    def __init__(self, root: str) -> None:
        self.display = root
        self.root = os.path.realpath(root)

    def resolve(self, path: str, *, arg: str = "path") -> str:
        """Absolute real path of ``path`` (relative to the root), or ToolFailed when it leaves the workspace."""
        if not isinstance(path, str):
            raise invalid(f"argument '{arg}' must be a string")
        if "\x00" in path:
            raise invalid(f"argument '{arg}' contains a NUL byte")
        if path.startswith("~"):
            raise ToolError(f"path '{path}' starts with '~': home directories are not available in the sandbox; "
                            f"use a path relative to the workspace {self.display}")
        joined = os.path.join(self.root, path) if not os.path.isabs(path) else path
        if os.path.isabs(path) and (path == self.display or path.startswith(self.display.rstrip("/") + "/")):
            joined = self.root + path[len(self.display.rstrip("/")):]
        real = os.path.realpath(joined)
        if not self.contains(real):
            raise ToolError(f"path '{path}' resolves to '{real}', outside the workspace {self.display}; "
                            f"use a path inside the workspace")
        return real

    def contains(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip("/") + "/")

    def rel(self, real: str) -> str:
        """Path relative to the root ("." for the root itself)."""
        r = os.path.relpath(real, self.root)
        return r


def _os_error(exc: OSError, what: str, path: str) -> ToolError:
    reasons = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a component of the path is not a directory",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EEXIST: "already exists",
        errno.ENOTEMPTY: "directory not empty",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return ToolError(f"cannot {what} '{path}': {reason}")


# ----------------------------------------------------------------------------------------------------------------
# File ops


def op_ping(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Liveness check; also reports what the server runs on."""
    st = os.stat(ws.root)
    pong = {"pong": True, "protocol": PROTOCOL_VERSION, "pid": os.getpid(), "workspace": ws.display,
            "workspace_dev": st.st_dev, "workspace_ino": st.st_ino, "python": sys.version.split()[0],
            "rg": _which("rg") is not None}
    try:  # a task's object store (sandbox/base.py: OBJECTS_IN_SANDBOX)
        objects = os.stat("/run/bosun/objects")
        pong.update(objects_dev=objects.st_dev, objects_ino=objects.st_ino)
    except OSError:
        pass
    return pong


def op_read(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Read a UTF-8 text file, bytes preserved exactly (CRLF, BOM)."""
    path = _arg(args, "path", str)
    real = ws.resolve(path)
    try:
        st = os.stat(real)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"cannot read '{path}': it is a directory (use list)")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"cannot read '{path}': not a regular file")
        if st.st_size > MAX_READ_BYTES:
            raise ToolError(f"cannot read '{path}': {st.st_size} bytes is larger than the limit of "
                            f"{MAX_READ_BYTES} bytes; use grep or exec (head/sed) to look at parts of it")
        with open(real, "rb") as f:
            data = f.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise _os_error(exc, "read", path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"cannot read '{path}': not UTF-8 text (invalid byte at offset {exc.start}); "
                        f"it looks like a binary file") from None
    if "\x00" in text:
        raise ToolError(f"cannot read '{path}': contains NUL bytes; it looks like a binary file")
    return {"text": text, "size": len(data), "mtime_ns": st.st_mtime_ns}


def op_write(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Write a text file atomically (temp file in the same directory, fsync, rename), keeping the file's mode."""
    path = _arg(args, "path", str)
    text = _arg(args, "text", str)
    create_dirs = _arg(args, "create_dirs", bool, False)
    real = ws.resolve(path)
    if real == ws.root:
        raise ToolError(f"cannot write '{path}': it is the workspace root")
    parent = os.path.dirname(real)
    data = text.encode("utf-8")
    try:
        if create_dirs:
            os.makedirs(parent, exist_ok=True)
        elif not os.path.isdir(parent):
            raise ToolError(f"cannot write '{path}': directory '{ws.rel(parent)}' does not exist "
                            f"(pass create_dirs=true to create it)")
        try:
            st = os.stat(real)
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"cannot write '{path}': it is a directory")
            mode = stat.S_IMODE(st.st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, tmp = _mkstemp(parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode & 0o1777)
            os.replace(tmp, real)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise _os_error(exc, "write", path) from None
    return {"size": len(data)}


def _mkstemp(parent: str) -> tuple[int, str]:
    """A new temporary file next to the target (same file system, so the rename is atomic)."""
    for _ in range(100):
        tmp = os.path.join(parent, f".bosun-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "cannot create a temporary file")


def _which(name: str) -> str | None:
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        full = os.path.join(d, name)
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return full
    return None


def op_delete(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Delete a file or symlink (the link itself); a directory only if empty unless recursive=true."""
    path = _arg(args, "path", str)
    recursive = _arg(args, "recursive", bool, False)
    # Resolve the parent only: deleting a symlink removes the link, never its target.
    if path.rstrip("/") in ("", "."):
        raise ToolError("refusing to delete the workspace root")
    parent = ws.resolve(os.path.dirname(path.rstrip("/")) or ".")
    real = os.path.join(parent, os.path.basename(path.rstrip("/")))
    if not ws.contains(real) or real == ws.root:
        raise ToolError(f"path '{path}' resolves to '{real}', outside the workspace {ws.display}")
    try:
        st = os.lstat(real)
        if stat.S_ISDIR(st.st_mode):
            if recursive:
                import shutil  # noqa: PLC0415 - rarely needed, slow to import

                shutil.rmtree(real)
            else:
                os.rmdir(real)
            return {"deleted": path, "type": "dir"}
        os.unlink(real)
        return {"deleted": path, "type": "symlink" if stat.S_ISLNK(st.st_mode) else "file"}
    except OSError as exc:
        if exc.errno == errno.ENOTEMPTY:
            raise ToolError(f"cannot delete '{path}': directory not empty (pass recursive=true)") from None
        raise _os_error(exc, "delete", path) from None


def _entry_type(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def op_list(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Entries of one directory, sorted by name: name, type (file|dir|symlink|other), size."""
    path = _arg(args, "path", str, ".")
    real = ws.resolve(path)
    entries = []
    try:
        with os.scandir(real) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append({"name": entry.name, "type": _entry_type(st.st_mode), "size": st.st_size})
    except OSError as exc:
        raise _os_error(exc, "list", path) from None
    entries.sort(key=lambda e: e["name"])
    return {"path": ws.rel(real), "entries": entries}


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with ``**`` (any number of directories), ``*``, ``?``, ``[...]`` into a regex."""
    i, n, out = 0, len(pattern), []
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                out.append(".*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _walk_files(base: str) -> Any:
    """Yield (dirpath, name, is_dir) below ``base``, not following symlinks, skipping .git directories."""
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for d in dirnames:
            yield dirpath, d, True
        for f in sorted(filenames):
            yield dirpath, f, False


def op_glob(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Paths matching a glob (``**`` spans directories), relative to the workspace, sorted; .git is skipped."""
    pattern = _arg(args, "pattern", str)
    path = _arg(args, "path", str, ".")
    limit = _arg(args, "max_results", int, 1000)
    if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
        raise invalid(f"glob pattern '{pattern}' must be relative and must not contain '..'")
    base = ws.resolve(path)
    if not os.path.isdir(base):
        raise ToolError(f"cannot glob in '{path}': not a directory")
    rx = glob_to_regex(pattern)
    matches: list[str] = []
    truncated = False
    for dirpath, name, _is_dir in _walk_files(base):
        full = os.path.join(dirpath, name)
        rel_base = os.path.relpath(full, base)
        if rx.match(rel_base):
            if len(matches) >= limit:
                truncated = True
                break
            matches.append(ws.rel(full))
    matches.sort()
    return {"paths": matches, "truncated": truncated}


def op_grep(ws: Workspace, args: dict[str, Any]) -> dict[str, Any]:
    """Search file contents: ``rg --json`` when available, else Python ``re``. Matches: path, line, text."""
    pattern = _arg(args, "pattern", str)
    path = _arg(args, "path", str, ".")
    file_glob = _arg(args, "glob", str, None)
    ignore_case = _arg(args, "ignore_case", bool, False)
    fixed = _arg(args, "fixed", bool, False)
    limit = _arg(args, "max_results", int, 200)
    if limit <= 0:
        raise invalid("argument 'max_results' must be positive")
    base = ws.resolve(path)
    if not fixed:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise invalid(f"invalid regular expression {pattern!r}: {exc} "
                          f"(pass fixed=true for a literal string)") from None
    rg = _which("rg")
    if rg:
        return _grep_rg(ws, rg, pattern, base, file_glob, ignore_case, fixed, limit)
    return _grep_py(ws, pattern, base, file_glob, ignore_case, fixed, limit)


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_TEXT else text[:MAX_LINE_TEXT] + "..."


def _grep_rg(ws: Workspace, rg: str, pattern: str, base: str, file_glob: str | None, ignore_case: bool,
             fixed: bool, limit: int) -> dict[str, Any]:
    cmd = [rg, "--json", "--hidden", "--glob", "!.git", "--no-messages"]
    if ignore_case:
        cmd.append("--ignore-case")
    if fixed:
        cmd.append("--fixed-strings")
    if file_glob:
        cmd += ["--glob", file_glob]
    cmd += ["-e", pattern, "--", base]
    matches: list[dict[str, Any]] = []
    truncated = False
    proc = TRACKER.popen_helper(cmd, ws.root)
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            if b'"type":"match"' not in raw[:32]:
                continue
            try:
                data = json.loads(raw)["data"]
            except (ValueError, KeyError):
                continue
            p = data.get("path", {}).get("text")
            text = data.get("lines", {}).get("text")
            if p is None or text is None:
                continue
            if len(matches) >= limit:
                truncated = True
                break
            matches.append({"path": ws.rel(os.path.join(ws.root, p)), "line": data.get("line_number"),
                            "text": _clip(text)})
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
        TRACKER.helper_done(proc)
    if proc.returncode == 2 and not matches and err.strip():
        raise ToolError(f"grep failed: {err.decode('utf-8', 'replace').strip()[:500]}")
    matches.sort(key=lambda m: (m["path"], m["line"] or 0))
    return {"matches": matches, "truncated": truncated}


def _grep_py(ws: Workspace, pattern: str, base: str, file_glob: str | None, ignore_case: bool, fixed: bool,
             limit: int) -> dict[str, Any]:
    flags = re.IGNORECASE if ignore_case else 0
    rx = re.compile(re.escape(pattern) if fixed else pattern, flags)
    grx = glob_to_regex(file_glob if "/" in (file_glob or "") else "**/" + file_glob) if file_glob else None
    files = [base] if os.path.isfile(base) else [os.path.join(d, n) for d, n, is_dir in _walk_files(base)
                                                   if not is_dir]
    matches: list[dict[str, Any]] = []
    truncated = False
    for full in files:
        if grx and not grx.match(os.path.relpath(full, base)):
            continue
        try:
            if os.path.islink(full) or os.path.getsize(full) > MAX_READ_BYTES:
                continue
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                if len(matches) >= limit:
                    truncated = True
                    break
                matches.append({"path": ws.rel(full), "line": lineno, "text": _clip(line)})
        if truncated:
            break
    matches.sort(key=lambda m: (m["path"], m["line"]))
    return {"matches": matches, "truncated": truncated}


# ----------------------------------------------------------------------------------------------------------------
# Processes


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

    def __init__(self, job_id: int, proc: subprocess.Popen[bytes]) -> None:
        self.id = job_id
        self.proc = proc
        self.root = proc.pid
        self.marker = f"{EXEC_MARKER_ENV}={job_id}".encode()
        self.members: set[int] = {proc.pid}


class ProcessTracker:
    """Attributes descendants to jobs (even after they double-fork or setsid) and reaps orphans.

    The server is a child subreaper: an orphan is re-parented to it, never to the namespace's init. A background
    thread scans /proc while jobs run; a process belongs to a job when its parent does, when it is in the job's
    session or process group, or when it carries the job's marker variable.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spawn_lock = threading.Lock()
        self.jobs: dict[int, Job] = {}
        self.helpers: set[int] = set()
        """Children the server starts for itself (rg): never killed as orphans, never reaped behind Popen's back."""
        self.next_id = 1
        self.me = os.getpid()
        self.wake = threading.Event()
        threading.Thread(target=self._loop, name="tracker", daemon=True).start()

    def spawn(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> Job:
        with self.lock:
            job_id = self.next_id
            self.next_id += 1
        env = dict(env)
        env[EXEC_MARKER_ENV] = str(job_id)
        _harden()
        import subprocess  # noqa: PLC0415 - imported on first use: the server starts faster

        with self.spawn_lock:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
            job = Job(job_id, proc)
            with self.lock:
                self.jobs[job_id] = job
        _raise_oom_score(proc.pid)
        self.wake.set()
        return job

    def popen_helper(self, argv: list[str], cwd: str) -> subprocess.Popen[bytes]:
        """Start a helper process of the server itself (not a job)."""
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

    def _loop(self) -> None:
        while True:
            self.wake.wait(timeout=1.0)
            with self.lock:
                busy = bool(self.jobs)
            if not busy:
                self.wake.clear()
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
                if marker == job.marker or (marker is None and ppid == self.me):
                    # Carries this job's marker, or is an unmarked orphan no other job claims.
                    victims.add(pid)
            victims -= {self.me, 1}
            if not victims:
                # Done once the dead are reaped too: zombies still count against the sandbox's process limit.
                with self.lock:
                    mine = {j.root for j in self.jobs.values()} | self.helpers
                zombies = [p for p, (pp, _pg, _sid, st) in table.items() if pp == self.me and st == "Z"
                           and p not in mine]
                if not zombies:
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


TRACKER: ProcessTracker
"""The one process tracker of this server (created in main, after becoming a subreaper)."""


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


def op_exec(ws: Workspace, args: dict[str, Any], tracker: ProcessTracker) -> dict[str, Any]:
    """Run a command (argv list, or a string run by /bin/sh -c) with a timeout and capped output."""
    cmd = _arg(args, "cmd", (list, str))
    cwd_arg = _arg(args, "cwd", str, None)
    env_arg = _arg(args, "env", dict, {})
    timeout_s = float(_arg(args, "timeout_s", (int, float), 60.0))
    cap = _arg(args, "output_cap", int, 1_000_000)
    if isinstance(cmd, list):
        if not cmd or not all(isinstance(a, str) for a in cmd):
            raise invalid("argument 'cmd' must be a non-empty list of strings or a shell command string")
        argv = list(cmd)
    else:
        if not cmd.strip():
            raise invalid("argument 'cmd' is an empty command")
        argv = ["/bin/sh", "-c", cmd]
    if timeout_s <= 0:
        raise invalid("argument 'timeout_s' must be positive")
    if cap < 0:
        raise invalid("argument 'output_cap' must not be negative")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env_arg.items()):
        raise invalid("argument 'env' must map strings to strings")
    cwd = ws.resolve(cwd_arg, arg="cwd") if cwd_arg else ws.root
    if not os.path.isdir(cwd):
        raise ToolError(f"cannot run in '{cwd_arg}': not a directory")
    env = dict(os.environ)
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
    return {"exit_code": exit_code, "stdout": out.text(), "stderr": err.text(), "timed_out": timed_out,
            "truncated": bool(out.dropped or err.dropped), "duration_s": round(time.monotonic() - start, 4)}


# ----------------------------------------------------------------------------------------------------------------
# Server loop


class Server:
    """Reads requests from stdin, answers each in its own thread, writes responses under a lock."""

    def __init__(self, root: str) -> None:
        self.ws = Workspace(root)
        self.tracker = TRACKER
        self.out = sys.stdout.buffer
        self.out_lock = threading.Lock()
        self.workers: set[threading.Thread] = set()
        self.ops = {"ping": op_ping, "read": op_read, "write": op_write, "delete": op_delete, "list": op_list,
                    "glob": op_glob, "grep": op_grep}

    def send(self, obj: dict[str, Any]) -> None:
        # Undecodable file names carry lone surrogates; backslashreplace turns them into valid JSON escapes.
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")
        with self.out_lock:
            self.out.write(line + b"\n")
            self.out.flush()

    def handle(self, req_id: Any, op: Any, args: Any) -> None:
        try:
            if not isinstance(op, str):
                raise invalid("request field 'op' must be a string")
            if not isinstance(args, dict):
                raise invalid("request field 'args' must be an object")
            if op == "exec":
                result = op_exec(self.ws, args, self.tracker)
            elif op in self.ops:
                result = self.ops[op](self.ws, args)
            else:
                raise invalid(f"unknown op {op!r}; known ops: {', '.join(sorted([*self.ops, 'exec']))}")
            self.send({"id": req_id, "ok": True, "result": result})
        except ToolError as exc:
            self.send({"id": req_id, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}})
        except Exception as exc:  # a bug here must not take the server down
            self.send({"id": req_id, "ok": False,
                       "error": {"kind": "ToolFailed", "message": f"internal error in op {op!r}: "
                                                                  f"{type(exc).__name__}: {exc}"}})

    def serve(self) -> None:
        stdin = sys.stdin.buffer
        for raw in stdin:
            if not raw.strip():
                continue
            try:
                req = json.loads(raw)
                if not isinstance(req, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                self.send({"id": None, "ok": False,
                           "error": {"kind": "InvalidArguments", "message": f"bad request line: {exc}"}})
                continue
            req_id, op, args = req.get("id"), req.get("op"), req.get("args") or {}
            try:
                worker = start_thread(self.handle, req_id, op, args)
                self.workers.add(worker)
                self.workers = {w for w in self.workers if w.is_alive()}
            except RuntimeError:
                self.send({"id": req_id, "ok": False,
                           "error": {"kind": "ToolFailed",
                                     "message": "cannot start a thread: the sandbox's process limit is reached"}})
        # stdin closed: answer what is in flight, then stop.
        for worker in list(self.workers):
            worker.join()


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


def _limit_fds(nofile: int) -> None:
    """Lower RLIMIT_NOFILE for the server and every command it starts."""
    import resource  # noqa: PLC0415 - only when asked

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new_hard = nofile if hard == resource.RLIM_INFINITY else min(hard, nofile)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(new_hard, nofile), new_hard))


def _drop_to(user: str) -> None:
    """Become ``uid:gid`` for good (bwrap started by root keeps only CAP_SETUID/CAP_SETGID for this): no
    supplementary groups, every uid and gid set, and no capability left afterwards - checked, or exit."""
    uid_s, _, gid_s = user.partition(":")
    uid, gid = int(uid_s), int(gid_s or uid_s)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    with open("/proc/self/status", encoding="ascii") as f:
        caps = {k: v.strip() for k, _, v in (line.partition(":") for line in f) if k.startswith("Cap")}
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid) or \
            any(int(caps.get(k, "1"), 16) for k in ("CapEff", "CapPrm", "CapAmb")):
        sys.stderr.write(f"toolserver: could not drop to {user} without capabilities ({caps})\n")
        sys.exit(2)


def main(argv: list[str]) -> int:
    """``toolserver.py [WORKSPACE] [--nofile N] [--user UID:GID]``"""
    rest = list(argv[1:])
    if "--nofile" in rest:
        i = rest.index("--nofile")
        _limit_fds(int(rest[i + 1]))
        del rest[i:i + 2]
    if "--user" in rest:
        i = rest.index("--user")
        _drop_to(rest[i + 1])
        del rest[i:i + 2]
    root = rest[0] if rest else "/workspace"
    if not os.path.isdir(root):
        sys.stderr.write(f"toolserver: workspace {root} is not a directory\n")
        return 2
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    home = os.environ.get("HOME", "")
    if home.startswith("/tmp/") and not os.path.isdir(home):  # a private home on the sandbox's tmpfs
        try:
            os.makedirs(home, mode=0o700, exist_ok=True)
        except OSError:
            pass
    global TRACKER
    TRACKER = ProcessTracker()
    server = Server(root)
    try:
        server.serve()
    except (BrokenPipeError, KeyboardInterrupt):
        server.tracker.kill_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
