"""Fixtures of the sandbox tests: real bwrap and real docker, no mocks.

Docker tests never skip: when the engine or the image cannot be had they fail, loudly (the bootstrap guarantees
both). The image is built (or found) once per session by sandbox/image/build.sh.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from environments.runtime import provider_for
from sandbox.base import Limits, Sandbox
from sandbox.bwrap import BwrapProvider
from sandbox.image import BUILD_SCRIPT, image_tag

from .envfixtures import tiny_environment

TEST_LIMITS = Limits(memory_mb=512, pids=256, cpus=1.0, tmp_mb=64, nofile=1024)
SANDBOX_UID = 1000
"""Docker tests run with a workspace owned by this uid, so commands run unprivileged (the recommended setup)."""

UNPRIVILEGED = ("docker", "bwrap-user", "envbwrap", "envdocker")
"""Backend variants whose workspace is owned by SANDBOX_UID (they run as it)."""
ENV_BACKENDS = [pytest.param("envbwrap", id="envbwrap", marks=pytest.mark.docker),
                pytest.param("envdocker", id="envdocker", marks=pytest.mark.docker)]
"""Sandboxes of an environment (environments/: the tiny package's), for the attack suite: the same rules must
hold with another root filesystem and a virtualenv (building the environment needs the docker engine)."""
BACKENDS = [pytest.param("bwrap", id="bwrap"),  # workspace owned by root: the sandbox is uid 0 without capabilities
            pytest.param("bwrap-user", id="bwrap-user"),  # workspace owned by uid 1000: bwrap runs unprivileged
            pytest.param("docker", id="docker", marks=pytest.mark.docker)]


def prepare_workspace(backend: str, ws: Path) -> None:
    """Docker and bwrap-user sandboxes get a workspace owned by an unprivileged uid (they run as its owner)."""
    if backend in UNPRIVILEGED:
        chown_tree(ws, SANDBOX_UID, SANDBOX_UID)


def chown_tree(path: Path, uid: int, gid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(path):
        os.chown(dirpath, uid, gid)
        for name in [*dirnames, *filenames]:
            os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)


@pytest.fixture
def workspace(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A fresh workspace directory with one text file (under the host's /tmp: exercises the mount order).

    For the bwrap-user variant it lives where uid 1000 can reach it (pytest's tmp_path is private to root)."""
    backend = getattr(getattr(request.node, "callspec", None), "params", {}).get("backend")
    if backend in ("bwrap-user", "envbwrap"):
        base = Path(tempfile.mkdtemp(prefix="bosun-test-ws-", dir="/tmp"))
        base.chmod(0o755)
        ws = base / "ws"
    else:
        base = None
        ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello\n")
    yield ws
    if base is not None:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def bwrap_provider() -> BwrapProvider:
    return BwrapProvider(TEST_LIMITS)


@pytest.fixture
async def bwrap_sandbox(bwrap_provider: BwrapProvider, workspace: Path) -> AsyncIterator[Sandbox]:
    sb = await bwrap_provider.acquire(workspace)
    try:
        yield sb
    finally:
        await sb.close()


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image of the current recipe, built by build.sh if missing. Fails (never skips) without docker."""
    proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=1200,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, (f"sandbox/image/build.sh failed (exit {proc.returncode}); docker tests need a "
                                  f"docker engine and the image:\n{proc.stdout}\n{proc.stderr}")
    return image_tag()


@pytest.fixture(scope="session")
def docker_provider(docker_image: str):
    from sandbox.docker_backend import DockerProvider

    provider = DockerProvider(TEST_LIMITS, image=docker_image)
    provider.reap_orphans()
    return provider


@pytest.fixture(scope="session")
def tiny_env(tmp_path_factory: pytest.TempPathFactory):
    return tiny_environment(tmp_path_factory.mktemp("tinyenv") / "tiny")


@pytest.fixture(scope="session")
def envbwrap_provider(tiny_env):
    return provider_for(tiny_env, "bwrap", limits=TEST_LIMITS)


@pytest.fixture(scope="session")
def envdocker_provider(tiny_env):
    return provider_for(tiny_env, "docker", limits=TEST_LIMITS)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def provider(backend: str, request: pytest.FixtureRequest):
    return request.getfixturevalue(f"{backend.split('-')[0]}_provider")


@pytest.fixture
async def sandbox(provider, backend: str, workspace: Path) -> AsyncIterator[Sandbox]:
    """A sandbox of each backend variant (see BACKENDS)."""
    prepare_workspace(backend, workspace)
    sb = await provider.acquire(workspace)
    if backend in UNPRIVILEGED:
        assert sb.user == f"{SANDBOX_UID}:{SANDBOX_UID}"  # type: ignore[attr-defined]
    try:
        yield sb
    finally:
        await sb.close()
