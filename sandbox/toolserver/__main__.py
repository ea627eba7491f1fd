#!/usr/bin/env python3
"""bosun's tool server: runs INSIDE a sandbox, answers tool calls over stdio.

Standalone on purpose: standard library only (Python >= 3.11), no imports from the project, because it runs with the
sandbox's own ``python3``. One long-lived process per sandbox. This folder is the program: ``python3 -I -S
<this folder> [WORKSPACE]`` runs this file, which imports its siblings by name (the folder is ``sys.path[0]``):
``ts_protocol`` (the requests and results), ``ts_base`` (errors, the workspace's path rule), ``ts_files`` (the
file ops), ``ts_processes`` (``exec`` and the process tracker).

Protocol: newline-delimited JSON on stdin/stdout, one request type and one result type per op (``ts_protocol``,
which the host imports too).

    request   {"id": 7, "op": "read", "args": {"path": "src/app.py"}}
    response  {"id": 7, "ok": true, "result": {...}}
              {"id": 7, "ok": false, "error": {"kind": "ToolFailed" | "InvalidArguments", "message": "..."}}

Every request runs in its own thread, so slow calls (exec, grep) do not hold up quick ones; responses are written
whole, one per line, under a lock. Ops: ping, read, write, delete, list, glob, grep (``ts_files``), exec
(``ts_processes``).

Paths are relative to the workspace root (argv[1], default /workspace). They are resolved here, inside the sandbox,
following symlinks, and refused when they end up outside the workspace.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from ts_base import ToolError, Workspace, invalid
from ts_files import op_delete, op_glob, op_grep, op_list, op_ping, op_read, op_write
from ts_processes import ProcessTracker, op_exec, start_thread
from ts_protocol import REQUESTS, ProtocolError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings anyway
    from typing import Any


class Server:
    """Reads requests from stdin, answers each in its own thread, writes responses under a lock."""

    def __init__(self, root: str, tracker: ProcessTracker, out: Any = None) -> None:
        self.ws = Workspace(root)
        self.tracker = tracker
        self.out = out if out is not None else sys.stdout.buffer
        """Where the responses go: anything with ``write(bytes)`` and ``flush()``."""
        self.out_lock = threading.Lock()
        self.workers: set[threading.Thread] = set()
        self.ops = {"ping": op_ping, "read": op_read, "write": op_write, "delete": op_delete, "list": op_list,
                    "glob": op_glob}

    def send(self, obj: dict[str, Any]) -> None:
        # Undecodable file names carry lone surrogates; backslashreplace turns them into valid JSON escapes.
        line = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace")
        with self.out_lock:
            self.out.write(line + b"\n")
            self.out.flush()

    def handle(self, req_id: Any, op: Any, args: Any) -> None:
        try:
            self.send({"id": req_id, "ok": True, "result": self.run(op, args).wire()})
        except ToolError as exc:
            self.send({"id": req_id, "ok": False, "error": {"kind": exc.kind, "message": str(exc)}})
        except Exception as exc:  # a bug here must not take the server down
            self.send({"id": req_id, "ok": False,
                       "error": {"kind": "ToolFailed", "message": f"internal error in op {op!r}: "
                                                                  f"{type(exc).__name__}: {exc}"}})

    def run(self, op: Any, args: Any) -> Any:
        """One operation: its request parsed from the arguments, its result (a ``ts_protocol`` message)."""
        if not isinstance(op, str):
            raise invalid("request field 'op' must be a string")
        if op not in REQUESTS:
            raise invalid(f"unknown op {op!r}; known ops: {', '.join(sorted(REQUESTS))}")
        try:
            request = REQUESTS[op].parse(args)
        except ProtocolError as exc:
            raise invalid(str(exc)) from None
        if op == "exec":
            return op_exec(self.ws, request, self.tracker)
        if op == "grep":
            return op_grep(self.ws, request, self.tracker)
        return self.ops[op](self.ws, request)

    def dispatch(self, raw: bytes) -> None:
        """One request line: answered in a thread of its own (a line that is not a request, at once)."""
        if not raw.strip():
            return
        try:
            req = json.loads(raw)
            if not isinstance(req, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self.send({"id": None, "ok": False,
                       "error": {"kind": "InvalidArguments", "message": f"bad request line: {exc}"}})
            return
        req_id, op, args = req.get("id"), req.get("op"), req.get("args") or {}
        try:
            worker = start_thread(self.handle, req_id, op, args)
            self.workers.add(worker)
            self.workers = {w for w in self.workers if w.is_alive()}
        except RuntimeError:
            self.send({"id": req_id, "ok": False,
                       "error": {"kind": "ToolFailed",
                                 "message": "cannot start a thread: the sandbox's process limit is reached"}})

    def serve(self) -> None:
        for raw in sys.stdin.buffer:
            self.dispatch(raw)
        # stdin closed: answer what is in flight, then stop.
        for worker in list(self.workers):
            worker.join()


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
    """``python3 -I -S toolserver [WORKSPACE] [--nofile N] [--user UID:GID]``"""
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
    server = Server(root, ProcessTracker())
    try:
        server.serve()
    except (BrokenPipeError, KeyboardInterrupt):
        server.tracker.kill_all()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
