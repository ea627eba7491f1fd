"""Sandboxes of an environment: the same backends with the same rules (no network, no capabilities, seccomp,
read-only root, unprivileged uid...), only the system they see is the environment's.

- docker: a container of the environment's image (``bosun-env:<key>``, layered on its base).
- bwrap: the base's root filesystem directories bound read-only in place of the host's, and the environment's own
  directory (virtualenv, seed) bound read-only at /opt/bosun-env.

Either way PATH starts with the virtualenv's bin, so ``python``, ``pytest`` and the project's tools are the
environment's. When the build left files in the source tree (compiled extensions...), they are unpacked into the
workspace inside the sandbox, as its user, never over a file that exists, before the sandbox is handed out. Those
git does not ignore are named by the environment's ``seed-exclude``, which every scratch ``.git`` the host makes
reads (``core.excludesFile``, sandbox/checkouts.py): the agent's git status leaves them out as the host's import
does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox.base import EnvironmentInfo, Limits, Sandbox, SandboxProvider
from sandbox.bwrap import SANDBOX_PATH, BwrapProvider
from sandbox.docker_backend import DockerProvider
from sandbox.environments.interpreters import interpreter_env
from sandbox.environments.models import SEED, VENV, EnvRecord
from sandbox.pool import PooledProvider

SEED_COMMAND = f"tar -xf {SEED} --skip-old-files --no-same-owner --no-same-permissions -C /workspace"


def info_of(record: EnvRecord) -> EnvironmentInfo:
    test = record.spec.test
    return EnvironmentInfo(env_id=record.env_id, python=record.python, test_kind=test.kind, test_argv=test.argv,
                           test_paths=test.paths, test_command=record.test_command, venv=VENV,
                           standins=list(record.spec.standins))


def sandbox_env(record: EnvRecord) -> dict[str, str]:
    """Variables of every process in the environment's sandboxes."""
    return {"PATH": f"{VENV}/bin:{SANDBOX_PATH}", "VIRTUAL_ENV": VENV, **interpreter_env(record.spec.python),
            **record.spec.env}


class EnvironmentProvider(SandboxProvider):
    """A backend provider whose sandboxes run in one environment (see the module docstring)."""

    def __init__(self, inner: SandboxProvider, record: EnvRecord) -> None:
        self.inner = inner
        self.record = record
        self.backend = inner.backend
        self.info = info_of(record)

    @property
    def writes_on_start(self) -> bool:
        return bool(self.record.seed)

    def prestart(self, owner: tuple[int, int]) -> bool:
        """Start a sandbox ahead for a workspace of ``owner`` (uid, gid) about to be acquired (sandbox/pool.py);
        False when this provider keeps no pool or the host cannot bind workspaces into started sandboxes."""
        return isinstance(self.inner, PooledProvider) and self.inner.prestart(owner)

    async def close(self) -> None:
        """Destroy the sandboxes started ahead and not taken."""
        if isinstance(self.inner, PooledProvider):
            await self.inner.close()

    async def acquire(self, workspace: Path, *, objects: Path | None = None) -> Sandbox:
        box = await self.inner.acquire(workspace, objects=objects)
        box.environment = self.info
        if self.record.seed:
            try:
                res = await box.exec(["sh", "-c", SEED_COMMAND], timeout_s=300, output_cap=20_000)
            except BaseException:
                await box.close()
                raise
            if res.exit_code != 0:
                await box.close()
                raise UnexpectedEnvironment(f"environment {self.record.env_id}: putting the build's files into the "
                                            f"workspace failed: {(res.stderr or res.stdout).strip()[-300:]}")
        return box

    def limits_report(self) -> dict[str, Any]:
        return {**self.inner.limits_report(), "environment": self.record.env_id}


def provider_for(record: EnvRecord, backend: str, *, limits: Limits | None = None,
                 pooled: bool = False, network: bool = False) -> EnvironmentProvider:
    """A provider of ``backend`` ("docker" or "bwrap") for ``record``'s environment; UnexpectedEnvironment when
    that half of the environment is missing on this host. ``pooled``: its sandboxes can be started ahead
    (``EnvironmentProvider.prestart``), and once the environment is used again, one is kept ready for the next
    use (sandbox/pool.py: ``spare``). ``network``: its sandboxes reach the public internet (docker only,
    sandbox/netns.py: public_only; a ConfigError for bwrap)."""
    if network and backend != "docker":
        raise ConfigError(f"a sandbox with network needs the docker backend, and this worker's is {backend}: bwrap "
                          "would share the host's network namespace, its loopback and services included. Run the "
                          "worker with BOSUN_SANDBOX_BACKEND=docker, or judge without --network")
    if backend == "docker":
        image = record.backend_refs.get("docker")
        if not image:
            raise UnexpectedEnvironment(f"environment {record.env_id} has no docker image; build it again with "
                                        f"`bosun env build`")
        inner: SandboxProvider = DockerProvider(limits, image=image, python="/usr/bin/python3",
                                                env=sandbox_env(record), network=network)
    elif backend == "bwrap":
        env_dir = Path(record.backend_refs.get("bwrap", ""))
        rootfs = Path(record.rootfs)
        if not env_dir.is_dir() or not (rootfs / "usr").is_dir():
            raise UnexpectedEnvironment(f"environment {record.env_id}: its bwrap root ({rootfs}) or directory "
                                        f"({env_dir}) is missing; build it again with `bosun env build`")
        inner = BwrapProvider(limits, python="/usr/bin/python3", rootfs=rootfs, env_dir=env_dir,
                              env=sandbox_env(record))
    else:
        raise UnexpectedEnvironment(f"unknown backend {backend!r} for an environment")
    return EnvironmentProvider(PooledProvider(inner, size=0, spare=True) if pooled else inner, record)
