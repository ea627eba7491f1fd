"""`make demo`'s job (python -m entry.demo) in a private data dir: the example fixed, the history printed,
the run's page served."""

from __future__ import annotations

import os
import subprocess
import sys

import httpx
import pytest

from tests.conftest import ROOT, Stack


@pytest.mark.slow
def test_the_demo_fixes_the_example_and_serves_its_page(tmp_path):
    st = Stack(tmp_path / "data")
    try:
        proc = subprocess.run([sys.executable, "-m", "entry.demo"], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, **st.env}, timeout=600, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        out = proc.stdout
        assert "demo: SUCCESS" in out and "tests after:  7 passed" in out and "debugger" in out
        page = next(line.rsplit(" ", 1)[1] for line in out.splitlines() if line.startswith("demo: the run's page:"))
        assert page.startswith(f"http://127.0.0.1:{st.env['BOSUN_UI_PORT']}/run?id=demo-")
        html = httpx.get(page, timeout=30).text
        assert "fast_edit-median-1" in html and "calc/stats.py" in html
        # the result is a branch in the demo's repository, and the commands it suggests work as printed
        assert "result: the branch bosun/demo-" in out and "in your repository" in out
        status = next(line for line in out.splitlines() if "The stack keeps running" in line)
        command = status.split("`")[1].split()
        assert command[-1] == "status"
        assert subprocess.run(command, env={**os.environ, **st.env}, capture_output=True, timeout=60,
                              stdin=subprocess.DEVNULL).returncode == 0
    finally:
        st.down()
