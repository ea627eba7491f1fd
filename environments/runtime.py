"""A built environment as its sandboxes run it: ``run_of`` turns a build's record into the ``EnvironmentRun`` that
sandbox/envruntime.py runs (PATH starting with the virtualenv's bin, so ``python``, ``pytest`` and the project's
tools are the environment's; the interpreter's variables; the declaration's), and ``resolve`` finds one by id for
a worker's sandboxes."""

from __future__ import annotations

from pathlib import Path

from environments.interpreters import interpreter_env
from environments.models import VENV, EnvRecord
from environments.store import EnvStore, default_cache
from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox.base import EnvironmentInfo, Limits, TestPart
from sandbox.envruntime import EnvironmentProvider, EnvironmentRun
from sandbox.envruntime import provider_for as run_provider


def info_of(record: EnvRecord) -> EnvironmentInfo:
    test, node, native, image = record.spec.test, record.spec.node, record.spec.native, record.spec.image
    runner = (node.runner or "unknown") if node is not None else native.runner if native is not None else \
        image.runner if image is not None else ""
    return EnvironmentInfo(env_id=record.env_id, python=record.python, test_kind=test.kind, test_argv=test.argv,
                           test_paths=test.paths, test_command=record.test_command, venv=VENV,
                           standins=list(record.spec.standins), runner=runner,
                           test_separator=node is not None and node.package_manager in ("npm", "pnpm"),
                           parts=[TestPart(root=part.root, command=part.test, runner=part.runner or "unknown",
                                           test_separator=part.package_manager in ("npm", "pnpm"))
                                  for part in (record.spec.node_part,) if part is not None and part.test])


def sandbox_env(record: EnvRecord) -> dict[str, str]:
    """Variables of every process in the environment's sandboxes."""
    if record.spec.image is not None:  # the image's own PATH and interpreter
        return record.spec.sandbox_env()
    return {"PATH": record.spec.path(), **interpreter_env(record.spec.python), **record.spec.sandbox_env()}


def run_of(record: EnvRecord) -> EnvironmentRun:
    """What the sandboxes of ``record``'s environment need (sandbox/envruntime.py)."""
    return EnvironmentRun(env_id=record.env_id, info=info_of(record), env=sandbox_env(record),
                          docker_image=record.backend_refs.get("docker", ""),
                          bwrap_dir=record.backend_refs.get("bwrap", ""), rootfs=record.rootfs, seed=record.seed,
                          unignored=tuple(record.seed_unignored), warnings=tuple(record.warnings),
                          python=record.tool_python or "/usr/bin/python3",
                          docker_only=f"its system is the image of {record.spec.image.source}"
                          if record.spec.image is not None else "")


def provider_for(record: EnvRecord, backend: str, *, limits: Limits | None = None, pooled: bool = False,
                 network: bool = False) -> EnvironmentProvider:
    """A provider of ``backend`` for ``record``'s environment (sandbox/envruntime.py: ``provider_for``)."""
    return run_provider(run_of(record), backend, limits=limits, pooled=pooled, network=network)


def resolve(env_id: str, cache: Path | None) -> EnvironmentRun:
    """The environment ``env_id`` of the cache ``cache`` (None: the default one), as its sandboxes run it; an
    UnexpectedEnvironment when it is gone from this host (a worker's sandboxes: sandbox/manager.py)."""
    try:
        record = EnvStore(cache or default_cache()).find(env_id)
    except ConfigError as exc:
        raise UnexpectedEnvironment(f"the task's environment is gone from this host ({exc}); run the task "
                                    "again to rebuild it") from None
    return run_of(record)
