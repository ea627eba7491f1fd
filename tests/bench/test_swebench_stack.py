"""A bench stopped with SIGTERM leaves through its ``with`` blocks, so its private stack goes down with it, also
when the signal comes while the stack is still coming up."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from entry.stack import pid_matches
from tests.conftest import wait_for
from tests.entry.test_stack import _procs_mentioning

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


def test_sigterm_while_the_stack_comes_up_takes_it_down() -> None:
    """The signal lands inside Stack.__enter__ (``bosun up`` started the stack and waits for it): ``with`` never
    calls __exit__ for an __enter__ that raised, so __enter__ itself must take down what came up."""
    proc = subprocess.Popen([sys.executable, "-c", UP_SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    work = proc.stdout.readline().strip()
    data = f"{work}/data"

    def supervisor() -> list[int]:
        return [pid for pid in _procs_mentioning(data) if pid_matches(pid, "entry.stack")]
    wait_for(supervisor, 60, 0.05, "the stack's supervisor")  # its stack is coming up
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=180)
    assert "up" not in out.split() and proc.returncode == 128 + signal.SIGTERM  # stopped while coming up
    wait_for(lambda: _procs_mentioning(data) == [], 30, 0.2, "no process of the stack left")
    assert not Path(work).exists()
