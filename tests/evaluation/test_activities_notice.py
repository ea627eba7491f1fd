"""An instance's log starts with its environment's warnings (what the environment's workspaces do not get)."""

from __future__ import annotations

from pathlib import Path

from environments.models import EnvRecord, EnvSpec
from environments.runtime import resolve
from environments.store import EnvStore
from evaluation.activities import EvalActivities
from infra.settings import Settings
from sandbox.manager import SandboxManager


def _record(key: str, warnings: list[str], root: Path) -> EnvRecord:
    (root / "rootfs" / "usr").mkdir(parents=True, exist_ok=True)
    (root / key / "root").mkdir(parents=True)
    return EnvRecord(env_id=f"env-{key}", key=key, python="3.9.2", base="b", spec=EnvSpec(python="3.9"),
                     test_command="pytest -rA", warnings=warnings, rootfs=str(root / "rootfs"),
                     backend_refs={"bwrap": str(root / key / "root")})


def test_the_environments_warnings_head_the_log_and_an_unknown_one_adds_nothing(tmp_path: Path):
    store = EnvStore(tmp_path / "envs")
    store.ensure_dirs()
    warned, clean = "a" * 20, "b" * 20
    for key, warnings in ((warned, ["1 compiled module(s) ... (pkg/_x.so) ..."]), (clean, [])):
        staging = tmp_path / f"staging-{key}"
        staging.mkdir()
        store.commit(staging, _record(key, warnings, tmp_path / "roots"))
    # the record comes from the sandbox manager, which made (and keeps) the instance's sandbox provider from it
    acts = EvalActivities(Settings(data_dir=tmp_path / "data", env_cache=tmp_path / "envs"), store=None,
                          sandboxes=SandboxManager("bwrap", "unused", resolve))  # type: ignore[arg-type]  # store unused
    assert acts.environment_notice(f"env-{warned}") == \
        f"[environment env-{warned}: warning: 1 compiled module(s) ... (pkg/_x.so) ...]\n"
    assert acts.environment_notice(f"env-{clean}") == ""
    assert acts.environment_notice("env-" + "c" * 20) == ""  # removed since: the verdict still stands
