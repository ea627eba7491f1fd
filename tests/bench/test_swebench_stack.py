"""A bench stopped with SIGTERM leaves through its ``with`` blocks, so its private stack goes down with it."""

from __future__ import annotations

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
