"""Sandboxes: every tool call of an agent runs inside one (see sandbox/base.py for the interface).

``get_provider("auto" | "docker" | "bwrap", ...)`` picks a backend; ``auto`` means docker when an engine is
reachable and the image exists, else bwrap. Nothing ever falls back to running unsandboxed: if no backend can start,
acquiring a sandbox raises UnexpectedEnvironment. ``run_escalated`` is the only way to run a command outside a
sandbox, and only with a person's approval.

What the packages above import from it (tests/test_layers.py keeps this list whole):

- ``base``: The sandbox interface every backend implements (docker, bwrap).
- ``bwrap``: The bubblewrap backend: fast local isolation, host system directories read-only, the workspace
  writable.
- ``caches``: On-disk caches of this host (environments, evaluation sources, checkout templates).
- ``delivery``: Handing a task's result branch out: a checkout for people, a branch in the repository the task came
  from, a push.
- ``docker_backend``: The docker backend: one container per sandbox, the tool server as its main process, stdio over
  the attach socket.
- ``envruntime``: Sandboxes of a built environment: the same backends with the same rules (no network, no
  capabilities, seccomp, read-only root, unprivileged uid...).
- ``escalation``: Escalation: the one way to run a command outside every sandbox, and only with a person's approval.
- ``hostgit``: Git on the worker host, hardened: it never reads configuration, hooks or attributes a sandbox could
  have written.
- ``hostrepo``: A task's repository on the worker host: the authoritative one, host-owned, never writable from a
  sandbox.
- ``hostview``: A safe host-side view of a workspace, for code-search indexing (the sandbox has no tree-sitter).
- ``keeprate``: Keep Rate: of the lines bosun's commits added, the share still present N days later on the default
  branch.
- ``manager``: The live sandboxes of one worker: one per key (an agent run, a test run), started on first use and
  again after it died.
- ``runimport``: Importing an agent's work into the task's repository as data, one commit per run.
- ``snapshot``: Read an agent's workspace as data: a bounded, symlink-safe snapshot of the files git would take.
- ``sources``: An evaluation's sources on the worker host: one host-owned bare repository per source (a path or URL)
  holding the commits its instances need.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Literal

from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox import cgroups
from sandbox.base import WORKSPACE_PATH, ExecResult, Limits, Sandbox, SandboxProvider
from sandbox.bwrap import BwrapProvider
from sandbox.docker_backend import DEFAULT_IMAGE, DockerProvider
from sandbox.escalation import run_escalated
from sandbox.pool import PooledProvider
from sandbox.slots import SLOTS_ROOT, SlotManager

__all__ = ["WORKSPACE_PATH", "ExecResult", "Limits", "Sandbox", "SandboxProvider", "docker_available",
           "get_provider", "reap_orphans", "run_escalated"]

Backend = Literal["auto", "docker", "bwrap"]


def docker_available(image: str | None = None) -> tuple[bool, str]:
    """(usable, reason): whether a docker engine answers (DOCKER_HOST honoured) and has ``image``."""
    try:
        import docker  # noqa: PLC0415
        from docker.errors import DockerException, ImageNotFound  # noqa: PLC0415
    except ImportError:
        return False, "the docker SDK is not installed"
    try:
        client = docker.from_env(timeout=5)
    except DockerException as exc:
        return False, f"no docker engine: {exc}"
    try:
        client.ping()
        if image:
            client.images.get(image)
        return True, "ok"
    except ImageNotFound:
        return False, f"image {image} not present (build it with sandbox/image/build.sh)"
    except DockerException as exc:
        return False, f"docker engine not usable: {exc}"
    finally:
        client.close()


def reap_orphans() -> dict[str, Any]:
    """Clean up after workers on this host that died: their docker containers (by label), bwrap cgroups and
    workspace slots. Safe to call at any time (live owners are never touched); never raises."""
    out: dict[str, Any] = {"containers": [], "cgroups": 0, "slots": 0, "errors": []}
    try:
        import docker  # noqa: PLC0415 - the SDK takes most of a second to import

        client = docker.from_env(timeout=10)
        try:
            client.ping()
            out["containers"] = DockerProvider(docker_client=client).reap_orphans()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - no engine is fine
        out["errors"].append(f"docker: {exc}")
    try:
        out["cgroups"] = cgroups.reap_stale(cgroups.detect())
    except Exception as exc:  # noqa: BLE001
        out["errors"].append(f"cgroups: {exc}")
    try:
        if os.geteuid() == 0 and SLOTS_ROOT.exists():
            mgr = SlotManager()
            ok, _why = mgr.usable()  # sets up the shared mount and removes dead owners' slots
            out["slots"] = "cleaned" if ok else "unavailable"
    except Exception as exc:  # noqa: BLE001
        out["errors"].append(f"slots: {exc}")
    return out


def get_provider(backend: Backend | str = "auto", *, image: str | None = None, limits: Limits | None = None,
                 pool_size: int = 0, **kwargs: Any) -> SandboxProvider:
    """A sandbox provider for ``backend``.

    ``image``: docker image (default bosun-sandbox:latest). ``limits``: the limits profile. ``pool_size`` > 0 wraps
    the provider in a warm pool of that many ready sandboxes (sandbox/pool.py). Other keyword arguments go to the
    backend's constructor. Raises ConfigError for an unknown backend, UnexpectedEnvironment when the requested
    backend cannot work on this host.
    """
    image = image or DEFAULT_IMAGE
    if backend == "auto":
        ok, _reason = docker_available(image)
        backend = "docker" if ok else "bwrap"
    provider: SandboxProvider
    if backend == "docker":
        provider = DockerProvider(limits, image=image, **kwargs)
    elif backend == "bwrap":
        if not shutil.which("bwrap") and "bwrap" not in kwargs:
            raise UnexpectedEnvironment("the bwrap backend needs bubblewrap (apt-get install bubblewrap); "
                                        "or use the docker backend")
        provider = BwrapProvider(limits, **kwargs)
    else:
        raise ConfigError(f"unknown sandbox backend {backend!r}; use auto, docker or bwrap")
    if pool_size > 0:
        provider = PooledProvider(provider, size=pool_size)
    return provider
