"""Life cycle: failing closed, owners that die, warm pools, the CLI, escalation, the image recipe."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest

from infra.errors import EscalationRefused, UnexpectedEnvironment
from sandbox import get_provider, run_escalated
from sandbox.bwrap import BwrapProvider
from sandbox.image import BUILD_SCRIPT, image_tag
from sandbox.manager import SandboxManager
from sandbox.pool import PooledProvider
from sandbox.seccomp import build_filter, docker_profile
from sandbox.slots import SlotManager, mount_points
from tests.conftest import ROOT  # noqa: E402

from .conftest import SANDBOX_UID, TEST_LIMITS, chown_tree

OWNER_SCRIPT = """
import asyncio, sys
from pathlib import Path
from sandbox import get_provider
from sandbox.base import Limits
async def main():
    p = get_provider(sys.argv[1], image=sys.argv[3] if len(sys.argv) > 3 else None, limits=Limits(memory_mb=256))
    sb = await p.acquire(Path(sys.argv[2]))
    ident = getattr(sb, "container_id", None) or str(sb.pid)
    print(ident, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


def start_owner(backend: str, workspace: Path, image: str | None = None) -> tuple[subprocess.Popen[str], str]:
    args = [sys.executable, "-c", OWNER_SCRIPT, backend, str(workspace)] + ([image] if image else [])
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, proc.stderr.read() if proc.stderr else "owner printed nothing"
    return proc, line


# -- failing closed ---------------------------------------------------------------------------------------------


async def test_bwrap_fails_closed_when_the_server_cannot_start(workspace: Path) -> None:
    provider = BwrapProvider(TEST_LIMITS, python="/usr/bin/no-such-python")
    with pytest.raises(UnexpectedEnvironment, match="did not start"):
        await provider.acquire(workspace)
    with pytest.raises(UnexpectedEnvironment, match="not a directory"):
        await BwrapProvider(TEST_LIMITS).acquire(workspace / "missing")


def _live_processes(naming: str) -> list[str]:
    """The command lines of the host's live (not zombie) processes naming ``naming`` (an orphan included)."""
    out = subprocess.run(["ps", "-eww", "-o", "stat=,args="], capture_output=True, text=True)  # (whole lines: a
    # terminal's width would cut them before the workspace's path, and no process would ever be found)
    return [line for line in out.stdout.splitlines() if naming in line and not line.lstrip().startswith("Z")]


async def test_a_bwrap_start_cancelled_half_way_closes_its_process_and_pipes(workspace: Path) -> None:
    # Cancelled while bwrap was being started, the start hung for good (bwrap's child, never given its go, kept
    # the pipes asyncio waited on); cancelled while it joined its cgroup, it took 10 s, and the process's pipes
    # were left to garbage collection, which may come after the event loop is gone ("Event loop is closed").
    provider = BwrapProvider(TEST_LIMITS)
    unclosed = []
    gc.collect()  # (earlier tests' garbage is not this test's)
    for delay in (0.0, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08):
        started = time.monotonic()
        task = asyncio.ensure_future(provider.acquire(workspace))
        await asyncio.sleep(delay)
        task.cancel()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await asyncio.wait([task], timeout=15)
            assert task.done(), f"a start cancelled after {delay} s hangs"
            if not task.cancelled():
                await task.result().close()  # (started before the cancel arrived)
            del task
            gc.collect()
        unclosed += [f"{delay}: {w.message}" for w in caught
                     if "unclosed transport" in str(w.message) and "Unix" in str(w.message)]
        assert time.monotonic() - started < 5, f"stopping a start cancelled after {delay} s took too long"
    assert unclosed == []
    time.sleep(0.2)  # (a SIGKILL is not instant)
    assert _live_processes(f"{workspace} /workspace") == [], "a cancelled start left a bwrap process running"


async def test_a_bwrap_start_cancelled_while_its_network_is_closed_stops_the_sandbox(workspace: Path,
                                                                                     monkeypatch) -> None:
    # Ready, then cancelled while its private addresses were being blackholed, the sandbox was left running:
    # the start raised CancelledError and nobody held the sandbox (a CI run found its bwrap alive).
    from sandbox import netns

    entered = threading.Event()
    real = netns.blackhole_private_ranges

    def slow(pid: int | str) -> str | None:
        entered.set()
        time.sleep(0.5)
        return real(pid)

    monkeypatch.setattr(netns, "blackhole_private_ranges", slow)
    task = asyncio.ensure_future(BwrapProvider(TEST_LIMITS).acquire(workspace))
    while not entered.is_set():
        assert not task.done(), task.exception() if task.done() else ""
        await asyncio.sleep(0.01)
    assert _live_processes(f"{workspace} /workspace"), "the sandbox was not running when cancelled"
    task.cancel()
    await asyncio.wait([task], timeout=15)
    assert task.cancelled()
    time.sleep(0.2)  # (a SIGKILL is not instant)
    assert _live_processes(f"{workspace} /workspace") == [], "a start cancelled when ready left its sandbox running"


@pytest.mark.docker
async def test_docker_fails_closed_without_the_image(docker_provider, workspace: Path) -> None:
    from sandbox.docker_backend import DockerProvider

    provider = DockerProvider(TEST_LIMITS, image="bosun-sandbox:does-not-exist")
    with pytest.raises(UnexpectedEnvironment, match="not present"):
        await provider.acquire(workspace)


async def test_dead_tool_server_is_unexpected_environment(bwrap_sandbox) -> None:
    await bwrap_sandbox.exec("true", timeout_s=5)
    os.kill(bwrap_sandbox.pid, signal.SIGKILL)
    with pytest.raises(UnexpectedEnvironment):
        for _ in range(50):
            await bwrap_sandbox.request("ping", timeout_s=5)
            await asyncio.sleep(0.05)
    assert not bwrap_sandbox.alive


# -- owners that die --------------------------------------------------------------------------------------------


def test_bwrap_dies_with_its_owner(workspace: Path) -> None:
    proc, pid_s = start_owner("bwrap", workspace)
    bwrap_pid = int(pid_s)
    assert Path(f"/proc/{bwrap_pid}").exists()
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 5
    while Path(f"/proc/{bwrap_pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{bwrap_pid}").exists(), "bwrap survived its owner"
    BwrapProvider(TEST_LIMITS)  # a new provider removes the dead owner's cgroups
    stale = [d.name for d in Path("/sys/fs/cgroup/pids/bosun").iterdir() if f"-{proc.pid}-" in d.name]
    assert stale == []


@pytest.mark.docker
def test_killed_owner_leaves_no_container_behind(docker_provider, docker_image: str, workspace: Path) -> None:
    chown_tree(workspace, SANDBOX_UID, SANDBOX_UID)
    proc, container_id = start_owner("docker", workspace, docker_image)
    api = docker_provider.api
    assert api.inspect_container(container_id)["State"]["Running"]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    removed = docker_provider.reap_orphans()
    assert any(name.startswith("bosun-dk-") for name in removed)
    assert not api.containers(all=True, filters={"id": container_id})


@pytest.mark.docker
async def test_a_sandbox_of_an_image_declaring_a_volume_leaves_no_volume_behind(docker_provider, docker_image: str,
                                                                               workspace: Path) -> None:
    # environment images built before 2026-11-26 declare /opt/bosun-tools (and /workspace) volumes: docker makes an
    # anonymous volume for every container of them, which outlived the container (13,000 of them in a day here)
    from sandbox.docker_backend import DockerProvider

    api = docker_provider.api
    made = api.create_container(image=docker_image, command=["true"])["Id"]
    tag = f"bosun-test-volumes:{os.getpid()}"
    api.commit(made, repository=tag.split(":")[0], tag=tag.split(":")[1], changes=["VOLUME /opt/bosun-tools"])
    api.remove_container(made, v=True)
    try:
        chown_tree(workspace, SANDBOX_UID, SANDBOX_UID)
        box = await DockerProvider(TEST_LIMITS, image=tag).acquire(workspace)
        volumes = [m["Name"] for m in api.inspect_container(box.container_id)["Mounts"] if m["Type"] == "volume"]
        assert len(volumes) == 1  # (the workspace is bound over the image's, so only the tools' is made)
        await box.close()
        assert not set(volumes) & {v["Name"] for v in api.volumes()["Volumes"] or []}
    finally:
        api.remove_image(tag, force=True)


# -- warm pools -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
async def test_warm_pool_binds_the_workspace(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    provider = request.getfixturevalue(f"{backend}_provider")
    pool = PooledProvider(provider, size=2, refill_per_s=50)
    workspaces = []
    for i in range(3):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        subprocess.run(["git", "init", "-q", str(ws)], check=True)
        (ws / "name.txt").write_text(f"workspace {i}\n")
        if backend == "docker":
            chown_tree(ws, SANDBOX_UID, SANDBOX_UID)
        workspaces.append(ws)
    key = provider.pool_key(workspaces[0])
    try:
        await pool.start([key])
        assert await pool.wait_ready(key, timeout_s=60) == 2
        for ws in workspaces:
            await pool.wait_ready(key, timeout_s=60)
            sb = await pool.acquire(ws)
            try:
                assert (await sb.request("read", {"path": "name.txt"}))["text"] == (ws / "name.txt").read_text()
                res = await sb.exec(["sh", "-c", "echo out > out.txt; echo x > .git/hooks/pre-commit || "
                                                 "echo HOOK_REFUSED; git status --short"], timeout_s=20)
                assert "HOOK_REFUSED" in res.stdout, res
                assert (ws / "out.txt").read_text() == "out\n"
            finally:
                await sb.close()
        stats = pool.stats()
        assert stats["hits"] == 3 and stats["misses"] == 0, stats
        assert stats["acquire"]["n"] == 3 and stats["release"]["n"] == 3
    finally:
        await pool.close()
    slots = SlotManager()
    assert not any(str(p).startswith(str(slots.mine)) for p in mount_points() if p != str(slots.mine))


async def test_pool_falls_back_to_cold_start_for_unsupported_workspaces(bwrap_provider, tmp_path: Path) -> None:
    main = tmp_path / "main"
    main.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "f").write_text("x\n")
    subprocess.run([*git, "-C", str(main), "add", "f"], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "c"], check=True)
    wt = tmp_path / "wt"
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(wt)], check=True)
    pool = PooledProvider(bwrap_provider, size=1)
    try:
        sb = await pool.acquire(wt)  # a worktree needs mounts outside /workspace: cold start
        try:
            res = await sb.exec(["git", "log", "--oneline"], timeout_s=20)
            assert res.exit_code == 0 and " c" in res.stdout, res
        finally:
            await sb.close()
        assert pool.stats()["misses"] == 1
    finally:
        await pool.close()


@pytest.mark.parametrize("backend", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
async def test_a_sandbox_started_ahead_gets_the_workspace_and_a_read_only_object_store(
        backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    provider = request.getfixturevalue(f"{backend}_provider")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    origin = tmp_path / "origin"
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    (origin / "f.txt").write_text("from the object store\n")
    subprocess.run([*git, "-C", str(origin), "add", "f.txt"], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "c"], check=True)
    commit = subprocess.run(["git", "-C", str(origin), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    objects = tmp_path / "K.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(objects)], check=True)
    ws = tmp_path / "ws"
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "objects" / "info" / "alternates").write_text("/run/bosun/objects/objects\n")
    if backend == "docker":
        chown_tree(ws, SANDBOX_UID, SANDBOX_UID)
    owner = (ws.stat().st_uid, ws.stat().st_gid)
    pool = PooledProvider(provider, size=0, idle_s=1.0)  # no pool kept: only what is started ahead
    try:
        assert pool.prestart(owner)
        key = provider.pool_key(ws)
        deadline = time.monotonic() + 60
        while pool.stats()["ready"].get(key, 0) < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        sb = await pool.acquire(ws, objects=objects)
        try:
            assert pool.stats()["hits"] == 1 and pool.stats()["misses"] == 0
            res = await sb.exec(["git", "show", f"{commit}:f.txt"], timeout_s=20)
            assert res.stdout == "from the object store\n", res
            res = await sb.exec(["sh", "-c", "touch /run/bosun/objects/x || echo REFUSED"], timeout_s=20)
            assert "REFUSED" in res.stdout and not (objects / "x").exists(), res
        finally:
            await sb.close()
        assert not any(p.startswith(str(pool.slots.mine) + "/") for p in mount_points())  # slots released
        # one more started ahead and never taken goes after idle_s
        assert pool.prestart(owner)
        deadline = time.monotonic() + 60
        while pool.stats()["ready"].get(key, 0) < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert pool.ready() == 1
        await asyncio.sleep(1.5)
        assert pool.ready() == 0
        sb = await pool.acquire(ws, objects=objects)  # none ready and size 0: a cold start
        await sb.close()
        assert pool.stats()["misses"] == 1
    finally:
        await pool.close()
    assert not any(p.startswith(str(pool.slots.mine) + "/") for p in mount_points())


def named_workspaces(tmp_path: Path, n: int) -> list[Path]:
    """``n`` workspaces, each with a name.txt saying which it is (what a sandbox bound to it reads back)."""
    out = []
    for i in range(n):
        ws = tmp_path / f"ws{i}"
        ws.mkdir()
        (ws / "name.txt").write_text(f"workspace {i}\n")
        out.append(ws)
    return out


async def test_a_reused_pool_keeps_one_spare_for_the_next_acquire(bwrap_provider, tmp_path: Path) -> None:
    workspaces = named_workspaces(tmp_path, 4)
    key = bwrap_provider.pool_key(workspaces[0])
    pool = PooledProvider(bwrap_provider, size=0, spare=True, idle_s=30)

    async def use(ws: Path) -> None:
        sb = await pool.acquire(ws)
        try:
            assert (await sb.request("read", {"path": "name.txt"}))["text"] == (ws / "name.txt").read_text()
        finally:
            await sb.close()

    async def settled() -> int:
        deadline = time.monotonic() + 60
        while pool._ahead.get(key) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        return pool.ready()
    try:
        await use(workspaces[0])  # a first use: nothing says the key will be used again
        assert await settled() == 0 and pool.stats()["misses"] == 1
        await use(workspaces[1])  # used again: one is started for the next
        assert await settled() == 1
        await use(workspaces[2])  # ...which takes it, and another is started
        assert pool.stats()["hits"] == 1 and await settled() == 1
        assert pool.prestart((os.geteuid(), os.getegid())) and pool.ready() == 1  # one is there: none added
        await use(workspaces[3])
        assert pool.stats()["hits"] == 2 and pool.stats()["misses"] == 2
    finally:
        await pool.close()
    assert pool.ready() == 0
    assert not any(p.startswith(str(pool.slots.mine) + "/") for p in mount_points())


# -- CLI, escalation, provider selection ------------------------------------------------------------------------


def test_cli_exec_json(workspace: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import sys; from entry.cli_sandbox import exec_main; "
                                                 "sys.exit(exec_main(sys.argv[1:]))",
                           "--backend", "bwrap", "--workspace", str(workspace), "--timeout", "10", "--json", "--",
                           "sh", "-c", "cat hello.txt; echo err >&2; exit 5"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["exit_code"] == 5 and out["stdout"] == "hello\n" and out["stderr"] == "err\n"
    assert out["timed_out"] is False and isinstance(out["duration_s"], float)


def test_cli_exec_reports_a_sandbox_that_cannot_start(workspace: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", "import sys; from entry.cli_sandbox import exec_main; "
                                                 "sys.exit(exec_main(sys.argv[1:]))",
                           "--backend", "docker", "--image", "bosun-sandbox:nope", "--workspace", str(workspace),
                           "--json", "--", "true"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "could not run" in proc.stderr


async def test_escalation_needs_approval(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    seen = []

    def deny(cmd, why):
        seen.append((cmd, why))
        return False

    with pytest.raises(EscalationRefused, match="not approved"):
        await run_escalated(["touch", str(marker)], "need it", deny)
    with pytest.raises(EscalationRefused):
        await run_escalated(["touch", str(marker)], "need it", lambda c, w: "yes")  # truthy is not approval
    with pytest.raises(EscalationRefused, match="approver failed"):
        await run_escalated(["touch", str(marker)], "need it", lambda c, w: 1 / 0)
    with pytest.raises(EscalationRefused, match="no justification"):
        await run_escalated(["touch", str(marker)], " ", lambda c, w: True)
    assert not marker.exists() and seen == [(["touch", str(marker)], "need it")]

    async def approve(cmd, why):
        return True

    res = await run_escalated(["touch", str(marker)], "need it", approve)
    assert res.exit_code == 0 and marker.exists()


def test_get_provider() -> None:
    assert get_provider("bwrap").backend == "bwrap"
    from infra.errors import ConfigError

    with pytest.raises(ConfigError):
        get_provider("chroot")


@pytest.mark.docker
def test_get_provider_auto_prefers_docker(docker_image: str) -> None:
    assert get_provider("auto", image=docker_image).backend == "docker"
    assert get_provider("auto", image="bosun-sandbox:missing").backend == "bwrap"


def test_seccomp_programs() -> None:
    prog = build_filter("x86_64")
    assert len(prog) % 8 == 0 and 8 < len(prog) < 8 * 64
    assert len(build_filter("aarch64")) % 8 == 0
    profile = docker_profile()
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"


# -- the image recipe -------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.docker
def test_image_build_is_idempotent(docker_image: str) -> None:
    assert docker_image == image_tag()
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and f"image {docker_image} already present, skipping" in proc.stdout
    tag = subprocess.run(["bash", str(BUILD_SCRIPT), "--print-tag"], capture_output=True, text=True)
    assert tag.stdout.strip() == docker_image


@pytest.mark.docker
def test_module_level_reap_orphans(docker_image: str) -> None:
    from sandbox import reap_orphans

    out = reap_orphans()
    assert out["errors"] == [], out


class _StartWriter(BwrapProvider):
    """bwrap whose start writes into the workspace, as an environment's build files do."""

    @property
    def writes_on_start(self) -> bool:
        return True


@pytest.mark.parametrize("writes", [False, True])
async def test_a_sandbox_started_beside_a_checkout_is_handed_out_after_it(workspace: Path, writes: bool) -> None:
    """SandboxManager.get(filling=...): a sandbox starts while the host still checks the workspace out, unless its
    start writes there; either way it is handed out only once the checkout is done."""
    manager = SandboxManager("bwrap", "unused")
    manager._provider = (_StartWriter if writes else BwrapProvider)(TEST_LIMITS)
    checked_out = asyncio.Event()
    started: list[bool] = []
    real_acquire = manager._provider.acquire

    async def acquire(ws: Path, *, objects: Path | None = None):
        started.append(checked_out.is_set())  # was the checkout done when the sandbox started?
        return await real_acquire(ws, objects=objects)

    manager._provider.acquire = acquire

    async def check_out() -> None:
        await asyncio.sleep(0.5)
        (workspace / "checked-out.txt").write_text("files\n")
        checked_out.set()

    filling = asyncio.ensure_future(check_out())
    try:
        box = await manager.get("k", str(workspace), filling=filling)
        assert filling.done() and started == [writes]
        assert (await box.exec(["cat", "checked-out.txt"])).stdout == "files\n"
        again = asyncio.ensure_future(asyncio.sleep(0.2))
        assert await manager.get("k", str(workspace), filling=again) is box and again.done()
    finally:
        await manager.close_all()


async def test_a_sandbox_released_later_goes_in_the_background_and_settle_waits_for_it(workspace: Path) -> None:
    """SandboxManager.release_later: the sandbox leaves the manager at once (a new one for the key starts afresh),
    its close and then the follow-up (dropping the workspace) run in the background, and settle (as cleanup_task's
    release_prefix) waits for both; a follow-up that fails breaks nothing."""
    manager = SandboxManager("bwrap", "unused")
    manager._provider = BwrapProvider(TEST_LIMITS)
    order: list[str] = []
    try:
        box = await manager.get("task/agent-1", str(workspace))
        real_close = box.close

        async def slow_close() -> None:
            await asyncio.sleep(0.3)
            await real_close()
            order.append("closed")

        box.close = slow_close
        started = time.monotonic()
        assert manager.release_later("task/agent-1", then=lambda: order.append("dropped")) is True
        assert time.monotonic() - started < 0.05 and "task/agent-1" not in manager.keys() and order == []
        fresh = await manager.get("task/agent-1", str(workspace))
        assert fresh is not box and (await fresh.exec(["true"])).exit_code == 0
        assert manager.release_later("nobody", then=lambda: 1 / 0) is False  # (its follow-up fails: nothing breaks)
        await manager.release_prefix("task/")
        assert order == ["closed", "dropped"] and not box.alive and manager.keys() == []
        await manager.settle()
    finally:
        await manager.close_all()


async def test_a_wave_prestarts_as_many_sandboxes_as_it_has_agents_and_each_acquire_is_warm(bwrap_provider,
                                                                                           tmp_path: Path) -> None:
    """prestart(owner, count): a wave of three agents acquiring at once gets three sandboxes started ahead, one
    each (none queues behind another's spare, none starts cold); asking again for fewer adds none."""
    workspaces = named_workspaces(tmp_path, 3)
    owner = (os.geteuid(), os.getegid())
    pool = PooledProvider(bwrap_provider, size=0, spare=True, idle_s=30)
    try:
        assert pool.prestart(owner, 3)
        assert pool.prestart(owner, 2) and len(pool._prestarts) == 3  # (three ahead already: none added)

        async def use(ws: Path) -> str:
            sb = await pool.acquire(ws)
            try:
                return (await sb.request("read", {"path": "name.txt"}))["text"]
            finally:
                await sb.close()

        seen = await asyncio.gather(*(use(ws) for ws in workspaces))
        assert seen == [f"workspace {i}\n" for i in range(3)]
        assert pool.stats()["hits"] == 3 and pool.stats()["misses"] == 0
    finally:
        await pool.close()
