"""Shared fixtures. The embedded stack for integration tests is started through bosun's own `up`/`down`, in a
private data dir on free ports, so it never touches a stack a developer is running."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from entry.cluster import LocalCluster
from infra.privatestack import free_port, private_stack_env, use_port_slice

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "calc"
BOSUN = str(Path(sys.executable).parent / "bosun")


PHASES = ("parallel", "serial")
"""``BOSUN_TEST_PHASE`` (.ci/pytest.sh): ``parallel`` selects every test but the serial ones, ``serial`` only
those; unset, every test runs."""


def is_serial(item: pytest.Item) -> bool:
    """A test that must have the machine to itself: marked ``serial``, or starting a cluster (``make_cluster``)."""
    return item.get_closest_marker("serial") is not None or "make_cluster" in getattr(item, "fixturenames", ())


def pytest_configure(config: pytest.Config) -> None:
    """Each parallel process (pytest-xdist's gw0, gw1, ...) takes its ports from a slice of its own, so two
    processes' stacks never pick the same port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw"):
        use_port_slice(int(worker[2:]), int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    phase = os.environ.get("BOSUN_TEST_PHASE", "")
    if not phase:
        return
    if phase not in PHASES:
        raise pytest.UsageError(f"BOSUN_TEST_PHASE={phase}: use one of {', '.join(PHASES)}, or leave it unset")
    keep = [item for item in items if is_serial(item) == (phase == "serial")]
    if len(keep) < len(items):
        kept = {id(item) for item in keep}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in kept])
    if phase == "serial":  # the longest first, so the other process takes the rest meanwhile (xdist's worksteal)
        keep.sort(key=lambda item: -allowed_s(item))
    items[:] = keep


def allowed_s(item: pytest.Item) -> float:
    """The time a test is given (its ``timeout`` marker, else 0): the longer ones say so."""
    marker = item.get_closest_marker("timeout")
    if marker is None:
        return 0.0
    return float(marker.args[0] if marker.args else marker.kwargs.get("timeout", 0))


def stack_env(data_dir: Path) -> dict[str, str]:
    """A private stack's settings (infra/privatestack.py: data dir, a free port for every port setting, worker id)."""
    env = private_stack_env(data_dir, worker_id=f"test-{os.getpid()}-{data_dir.name}")
    # The worker reads the router configuration for every agent (fallback chains); tests that route with
    # --model auto write their own and put this empty one back (router_config fixture).
    data_dir.mkdir(parents=True, exist_ok=True)
    (data_dir / "router.json").write_text("{}")
    env["BOSUN_ROUTER_CONFIG"] = str(data_dir / "router.json")
    # No model key of the developer's shell reaches a test stack (a test that needs one sets it).
    env.update({name: "" for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "BOSUN_ANTHROPIC_API_KEY",
                                      "BOSUN_OPENAI_API_KEY")})
    return env


def bosun(*args: str, env: dict[str, str] | None = None, timeout: float = 300, check: bool = False
          ) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([BOSUN, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise AssertionError(f"bosun {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


class Stack:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.env = stack_env(data_dir)

    def bosun(self, *args: str, env_extra: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess[str]:
        return bosun(*args, env={**self.env, **(env_extra or {})}, **kw)

    def state(self) -> dict:
        return json.loads((self.data_dir / "stack.json").read_text())

    def journal(self) -> list[dict]:
        path = self.data_dir / "logs" / "activity-journal.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def up(self) -> None:
        self.bosun("up", check=True, timeout=120)

    def down(self) -> None:
        self.bosun("down", timeout=120)


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    """One embedded stack for the session's integration tests."""
    st = Stack(tmp_path_factory.mktemp("stack"))
    try:
        st.up()
        yield st
    finally:
        st.down()


@pytest.fixture
def make_cluster(tmp_path_factory):
    """Start clusters on this machine (entry/cluster.py: 3 NATS nodes, one Temporal frontend, N worker hosts),
    each in a folder of its own on free ports; all are stopped at the end of the test.

    ``make_cluster(hosts=3, tls=False, extra_env=None) -> LocalCluster`` (started and healthy). Then:
    ``cluster.host_env(i)`` (the settings of host i, 1-based: use them for `bosun` commands), ``kill_host(i)``
    (SIGKILL, with its sandboxes), ``start_host(i)``, ``kill_node("n2")``, ``start_node("n2")``,
    ``stream_leader("EVENTS")``, ``kill_stream_leader("EVENTS")`` (returns the node), ``status()``, ``down()``."""
    made: list[LocalCluster] = []

    def make(hosts: int = 3, tls: bool = False, extra_env: dict[str, str] | None = None,
             wait_s: float = 120) -> LocalCluster:
        folder = tmp_path_factory.mktemp("cluster")
        (folder / "router.json").write_text("{}")  # as stack_env: no developer's router configuration leaks in
        env = {"BOSUN_ROUTER_CONFIG": str(folder / "router.json"), **(extra_env or {})}
        cluster = LocalCluster(folder, hosts=hosts, tls=tls, extra_env=env, name=f"test-{os.getpid()}")
        made.append(cluster)
        return cluster.up(wait_s)

    yield make
    for cluster in made:
        cluster.down()


@pytest.fixture
def example_repo(tmp_path) -> Path:
    """A fresh git repository holding the example project (with its real failing test)."""
    return make_example_repo(tmp_path / "calc")


def make_example_repo(dest: Path) -> Path:
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("*.jsonl", "__pycache__"))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example"]):
        subprocess.run(git + cmd, cwd=dest, check=True)
    return dest


def wait_for(predicate, timeout: float = 60, interval: float = 0.1, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def leftovers(st: Stack, wf: str = "") -> list[str]:
    """Sandboxes of the stack still alive on the host: containers by label, bwrap processes, bound to one of its
    workspaces directly or, started ahead (sandbox/pool.py), through a workspace slot that holds one."""
    found = []
    runs = set()
    for ws in st.data_dir.glob("workspaces/*.runs/*"):
        with contextlib.suppress(OSError):
            runs.add((ws.stat().st_dev, ws.stat().st_ino))

    def bound(paths: list[str]) -> bool:
        for path in paths:
            if path.startswith(str(st.data_dir)):
                return True
            if path.startswith("/run/bosun-slots/"):
                with contextlib.suppress(OSError):
                    if (os.stat(path).st_dev, os.stat(path).st_ino) in runs:
                        return True
        return False

    ps = subprocess.run(["docker", "ps", "-q", "--filter", "label=bosun.sandbox=1"], capture_output=True, text=True)
    for cid in ps.stdout.split():
        mounts = subprocess.run(["docker", "inspect", "-f", "{{range .Mounts}}{{.Source}} {{end}}", cid],
                                capture_output=True, text=True).stdout
        if bound(mounts.split()):
            found.append(f"container {cid}")
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            if "bwrap" in args[0] and bound(args):
                found.append(f"bwrap pid {pid}")
    return found


TEMPORAL = str(Path(sys.executable).parent / "temporal")
SUGGEST_CONTINUE_AS_NEW_AT = 40
"""History events after which the server suggests continue-as-new (the default is 4,096): low, so that an agent
of a few dozen turns continues as new in these tests."""


@pytest.fixture(scope="session")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    e = await WorkflowEnvironment.start_local(
        data_converter=pydantic_data_converter, dev_server_existing_path=TEMPORAL, port=free_port(),
        dev_server_extra_args=[
            "--dynamic-config-value", f"limit.historyCount.suggestContinueAsNew={SUGGEST_CONTINUE_AS_NEW_AT}",
            "--dynamic-config-value", "history.transferProcessorMaxPollRPS=2000",
            "--dynamic-config-value", "history.timerProcessorMaxPollRPS=2000"])
    try:
        yield e
    finally:
        await e.shutdown()


class Served:
    """An ASGI app served by uvicorn on a given loopback port, in a thread of its own (the stack's worker, another
    process, talks to it)."""

    def __init__(self, app, port: int) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self):
        self.thread.start()
        wait_for(lambda: self.server.started, 20, what="the fixture server")
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)
