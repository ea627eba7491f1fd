"""The in-process sandbox (tests' backend): the tool server's answers as in bwrap, and a guest that kills only its
own commands' processes."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from infra.errors import InvalidArguments, ToolFailed, UnexpectedEnvironment
from sandbox.base import Sandbox
from sandbox.inprocess import InProcessProvider

ROOT = Path(__file__).resolve().parents[2]


async def test_its_answers_are_bwraps(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "a.py").write_text("import os\nvalue = 1\n")
    local = await InProcessProvider().acquire(workspace)
    try:
        for box in (bwrap_sandbox, local):
            assert (await box.read("/workspace/pkg/a.py")).text == "import os\nvalue = 1\n"
        for op, args in [("list", {"path": "pkg"}), ("glob", {"pattern": "**/*.py"}),
                         ("grep", {"pattern": "value", "path": "."})]:
            assert await local.request(op, args) == await bwrap_sandbox.request(op, args), op
        pongs = [await box.request("ping") for box in (bwrap_sandbox, local)]
        same = [{k: v for k, v in p.items() if k not in ("pid", "python")} for p in pongs]  # its interpreter's
        assert same[0] == same[1] and sorted(pongs[0]) == sorted(pongs[1])
        done = [await box.exec("echo $HOME; printf '%s' \"$USER $LANG\"; exit 3") for box in (bwrap_sandbox, local)]
        assert [(r.exit_code, r.stdout.splitlines()[1]) for r in done] == [(3, "sandbox C.UTF-8")] * 2
        for box in (bwrap_sandbox, local):
            with pytest.raises(ToolFailed, match="outside the workspace /workspace"):
                await box.read("../escape")
            with pytest.raises(InvalidArguments, match="unknown op"):
                await box.request("format", {})
    finally:
        await local.close()


async def test_a_guest_kills_what_its_command_left_and_nothing_else(tmp_path: Path) -> None:
    # Two processes of this test process that a real tool server, as their parent, would count as its own: one
    # unmarked, one with the marker of another sandbox's first job.
    strangers = [subprocess.Popen(["sleep", "60"]),
                 subprocess.Popen(["sleep", "60"], env={**os.environ, "BOSUN_EXEC_ID": "1"})]
    box = await InProcessProvider().acquire(tmp_path)
    try:
        left = await box.exec("setsid sleep 60 & echo $!", timeout_s=10)
        assert left.exit_code == 0
        pid = int(left.stdout.strip())
        assert not _running(pid), "the command's background process outlived it"
        assert all(p.poll() is None for p in strangers), "a guest killed a process that was not its command's"
    finally:
        await box.close()
        for p in strangers:
            p.send_signal(signal.SIGKILL)
            p.wait()


async def test_close_stops_a_running_command_and_removes_the_home(tmp_path: Path) -> None:
    box = await InProcessProvider().acquire(tmp_path)
    home = (await box.exec("echo $HOME")).stdout.strip()
    assert Path(home).is_dir() and home.startswith("/tmp/bosun-inprocess-home-")
    task = asyncio.ensure_future(box.exec("sleep 60", timeout_s=90))
    await asyncio.sleep(0.3)
    await box.close()
    with pytest.raises(UnexpectedEnvironment):
        await task
    assert not box.alive and not Path(home).exists()
    with pytest.raises(UnexpectedEnvironment):
        await box.read("x")


async def test_it_refuses_what_it_cannot_be(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot bind an object store"):
        await InProcessProvider().acquire(tmp_path, objects=tmp_path)
    with pytest.raises(ValueError, match="is not a directory"):
        await InProcessProvider().acquire(tmp_path / "missing")


def test_no_product_code_can_reach_it() -> None:
    """Only tests construct it: no product module imports it and no setting names it."""
    users = []
    for path in ROOT.glob("*/**/*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("tests", ".venv", "examples") or rel == Path("sandbox/inprocess.py"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if re.search(r"sandbox\.inprocess|\binprocess\b|InProcess", text):
            users.append(str(rel))
    assert users == []


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False

