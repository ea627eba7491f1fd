"""Sandboxes of a built environment: the same backends with the same rules (no network, no capabilities, seccomp,
read-only root, unprivileged uid...), only the system they see is the environment's.

- docker: a container of the environment's image (``bosun-env:<key>``, layered on its base).
- bwrap: the base's root filesystem directories bound read-only in place of the host's, and the environment's own
  directory (virtualenv, seed) bound read-only at /opt/bosun-env.

What an environment is and how it is built is the environments package's; what a sandbox needs to run in one is
an ``EnvironmentRun`` (environments/runtime.py makes it from a build's record). When the build left files in the
source tree (compiled extensions...), they are unpacked into the workspace inside the sandbox, as its user, never
over a file that exists, before the sandbox is handed out. Those git does not ignore are named by the
environment's ``seed-exclude``, which every scratch ``.git`` the host makes reads (``core.excludesFile``,
sandbox/checkouts.py): the agent's git status leaves them out as the host's import does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox.base import SEED, EnvironmentInfo, Limits, Sandbox, SandboxProvider
from sandbox.bwrap import BwrapProvider
from sandbox.docker_backend import DockerProvider
from sandbox.pool import PooledProvider

SEED_COMMAND = f"tar -xf {SEED} --skip-old-files --no-same-owner --no-same-permissions -C /workspace"


@dataclass(frozen=True)
class EnvironmentRun:
    """What a sandbox of one built environment needs: its id, what agents and test runs are told of it, the
    variables of every process in it, and where each backend's half of it is on this host."""

    env_id: str
    info: EnvironmentInfo
    env: dict[str, str] = field(default_factory=dict)
    docker_image: str = ""
    """The image tag (docker); "" when this host has none."""
    bwrap_dir: str = ""
    """The environment's own directory, bound at ENV_ROOT (bwrap)."""
    rootfs: str = ""
    """The base's root filesystem (bwrap binds its directories read-only)."""
    seed: bool = False
    """The build left files in the source tree for every workspace."""
    unignored: tuple[str, ...] = ()
    """The seed's files git does not ignore: an agent's work is read back without them."""
    warnings: tuple[str, ...] = ()
    """What the build made that will not work as it did in the build (said where its tests' verdicts are read)."""
    python: str = "/usr/bin/python3"
    """The interpreter of the environment's system that runs the tool server."""
    docker_only: str = ""
    """Why the environment runs on docker only (an image of the repository's own: bwrap has no root filesystem of
    it); "": both backends."""


class EnvironmentProvider(SandboxProvider):
    """A backend provider whose sandboxes run in one environment (see the module docstring)."""

    def __init__(self, inner: SandboxProvider, run: EnvironmentRun) -> None:
        self.inner = inner
        self.run = run
        self.backend = inner.backend
        self.info = run.info

    @property
    def writes_on_start(self) -> bool:
        return self.run.seed

    def prestart(self, owner: tuple[int, int], count: int = 1) -> bool:
        """Start ``count`` sandboxes ahead for workspaces of ``owner`` (uid, gid) about to be acquired
        (sandbox/pool.py); False when this provider keeps no pool or the host cannot bind workspaces into started
        sandboxes."""
        return isinstance(self.inner, PooledProvider) and self.inner.prestart(owner, count)

    async def close(self) -> None:
        """Destroy the sandboxes started ahead and not taken."""
        if isinstance(self.inner, PooledProvider):
            await self.inner.close()

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        box = await self.inner.acquire(workspace, objects=objects)
        box.environment = self.info
        if self.run.seed:
            try:
                res = await box.exec(["sh", "-c", SEED_COMMAND], timeout_s=300, output_cap=20_000)
            except BaseException:
                await box.close()
                raise
            if res.exit_code != 0:
                await box.close()
                raise UnexpectedEnvironment(f"environment {self.run.env_id}: putting the build's files into the "
                                            f"workspace failed: {(res.stderr or res.stdout).strip()[-300:]}")
        return box

    def limits_report(self) -> dict[str, Any]:
        return {**self.inner.limits_report(), "environment": self.run.env_id}


def provider_for(run: EnvironmentRun, backend: str, *, limits: Limits | None = None,
                 pooled: bool = False, network: bool = False) -> EnvironmentProvider:
    """A provider of ``backend`` ("docker" or "bwrap") for the environment ``run``; UnexpectedEnvironment when that
    half of the environment is missing on this host. ``pooled``: its sandboxes can be started ahead
    (``EnvironmentProvider.prestart``), and once the environment is used again, one is kept ready for the next
    use (sandbox/pool.py: ``spare``). ``network``: its sandboxes reach the public internet (docker only,
    sandbox/netns.py: public_only; a ConfigError for bwrap)."""
    if network and backend != "docker":
        raise ConfigError(f"a sandbox with network needs the docker backend, and this worker's is {backend}: bwrap "
                          "would share the host's network namespace, its loopback and services included. Run the "
                          "worker with BOSUN_SANDBOX_BACKEND=docker, or judge without --network")
    if backend == "docker":
        if not run.docker_image:
            raise UnexpectedEnvironment(f"environment {run.env_id} has no docker image; build it again with "
                                        f"`bosun env build`")
        inner: SandboxProvider = DockerProvider(limits, image=run.docker_image, python=run.python,
                                                env=dict(run.env), network=network)
    elif backend == "bwrap" and run.docker_only:
        raise ConfigError(f"environment {run.env_id} runs on the docker backend only ({run.docker_only}), and the "
                          "sandbox backend here is bwrap: use docker (BOSUN_SANDBOX_BACKEND=docker for a worker, "
                          "--backend docker for a command)")
    elif backend == "bwrap":
        env_dir, rootfs = Path(run.bwrap_dir), Path(run.rootfs)
        if not run.bwrap_dir or not env_dir.is_dir() or not (rootfs / "usr").is_dir():
            raise UnexpectedEnvironment(f"environment {run.env_id}: its bwrap root ({rootfs}) or directory "
                                        f"({env_dir}) is missing; build it again with `bosun env build`")
        inner = BwrapProvider(limits, python="/usr/bin/python3", rootfs=rootfs, env_dir=env_dir, env=dict(run.env))
    else:
        raise UnexpectedEnvironment(f"unknown backend {backend!r} for an environment")
    return EnvironmentProvider(PooledProvider(inner, size=0, spare=True) if pooled else inner, run)
