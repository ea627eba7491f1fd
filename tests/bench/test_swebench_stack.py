"""A bench stopped with SIGTERM leaves through its ``with`` blocks, so its private stack goes down with it, also
when the signal comes while the stack is still coming up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import time
from bench.swebench import exit_on_sigterm
exit_on_sigterm()
try:
    print("up", flush=True)
    time.sleep(60)
finally:
    print("down", flush=True)
"""


def test_sigterm_runs_the_cleanup_of_a_bench() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "up\n"
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert out == "down\n" and proc.returncode == 128 + signal.SIGTERM


UP_SCRIPT = """
import time
from bench.swebench import Stack
stack = Stack("sigterm-test")
print(stack.work, flush=True)
with stack:
    print("up", flush=True)
    time.sleep(120)
"""


def _processes_in(data_dir: str, running: str = "") -> list[int]:
    """Processes whose environment names ``data_dir`` (the private stack's supervisor, worker, Temporal, NATS) and
    whose command line holds ``running``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"BOSUN_DATA_DIR={data_dir}".encode() in environ.split(b"\0") and running in cmdline:
            found.append(int(pid))
    return found


def test_sigterm_while_the_stack_comes_up_takes_it_down() -> None:
    """The signal lands inside Stack.__enter__ (``bosun up`` started the stack and waits for it): ``with`` never
    calls __exit__ for an __enter__ that raised, so __enter__ itself must take down what came up."""
    proc = subprocess.Popen([sys.executable, "-c", UP_SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    work = proc.stdout.readline().strip()
    data = f"{work}/data"
    deadline = time.monotonic() + 60
    while not _processes_in(data, "entry.stack") and time.monotonic() < deadline:  # its stack is starting
        time.sleep(0.05)
    assert _processes_in(data, "entry.stack"), "the stack never started"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=180)
    assert "up" not in out.split() and proc.returncode == 128 + signal.SIGTERM  # stopped while coming up
    deadline = time.monotonic() + 30
    while _processes_in(data) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_in(data) == [] and not Path(work).exists()
