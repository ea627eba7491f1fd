"""A commit that changes no dependency input reuses the environment of an earlier one (environments/service.py,
``Environments.lookup``): environments are found by what they install, and the commit's date still bounds the
resolution. Pure: records written into a cache directory, no engine."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from environments.detect import detect
from environments.models import EnvRecord, env_id_for
from environments.repofiles import MemoryFiles
from environments.service import Environments
from infra.settings import Settings

FILES = {"pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.1"\ndependencies = ["six>=1.16"]\n',
         "tinypkg/__init__.py": "", "tests/test_t.py": "def test_t():\n    pass\n"}
NODE = {"package.json": '{"name": "w", "version": "1.0.0", "scripts": {"test": "node --test"}, '
                        '"devDependencies": {"left-pad": "^1.3.0"}}', "index.js": ""}


def on(day: str, files: dict[str, str] = FILES):
    return detect(MemoryFiles(files), commit_date=datetime.fromisoformat(f"{day}T12:00:00").replace(tzinfo=UTC))


def build(envs: Environments, det, *, family: bool = True) -> EnvRecord:
    """What a build leaves in the cache, without the build: the record and the bwrap half's directory."""
    key = envs.key(det)
    root = envs.store.env_dir(key) / "root"
    root.mkdir(parents=True)
    record = EnvRecord(env_id=env_id_for(key), key=key, python=det.spec.python, base="b", spec=det.spec,
                       test_command=det.spec.test.text, backend_refs={"bwrap": str(root)},
                       family=det.family(envs._base_name(det)) if family else "")
    (root.parent / "env.json").write_text(record.model_dump_json())
    return record


def cache(tmp_path: Path) -> Environments:
    return Environments(Settings(data_dir=tmp_path / "data", env_cache=str(tmp_path / "cache")))


def test_the_same_install_inputs_a_day_later_reuse_the_environment(tmp_path):
    envs = cache(tmp_path)
    first = build(envs, on("2025-06-02"))
    later = on("2025-06-03", {**FILES, "tinypkg/__init__.py": "VERSION = 2\n"})  # the code changed, not its inputs
    assert envs.key(later) != first.key  # resolved as of its own day, it would be another environment...
    assert envs.lookup(later, need_docker=False) == first  # ...but the one of the day before installs the same
    found = envs.find(later, need_docker=False)
    assert found is not None and found.cached and found.record.key == first.key


def test_an_earlier_commit_does_not_get_an_environment_resolved_after_it(tmp_path):
    envs = cache(tmp_path)
    build(envs, on("2025-06-03"))
    assert envs.lookup(on("2025-06-02"), need_docker=False) is None


def test_a_changed_dependency_input_builds_its_own(tmp_path):
    envs = cache(tmp_path)
    build(envs, on("2025-06-02"))
    changed = {**FILES, "pyproject.toml": FILES["pyproject.toml"].replace("six>=1.16", "six>=1.15")}
    assert envs.lookup(on("2025-06-03", changed), need_docker=False) is None


def test_the_newest_resolution_no_later_than_the_commit_is_chosen(tmp_path):
    envs = cache(tmp_path)
    build(envs, on("2025-06-01"))
    middle = build(envs, on("2025-06-05"))
    build(envs, on("2025-06-09"))
    assert envs.lookup(on("2025-06-07"), need_docker=False) == middle


def test_a_record_whose_half_is_gone_or_that_has_no_family_is_not_reused(tmp_path):
    envs = cache(tmp_path)
    gone = build(envs, on("2025-06-04"))
    (envs.store.env_dir(gone.key) / "root").rmdir()
    older = build(envs, on("2025-06-02"))
    assert envs.lookup(on("2025-06-06"), need_docker=False) == older  # the next one back
    envs2 = cache(tmp_path / "other")
    old = build(envs2, on("2025-06-02"), family=False)  # built before families: its own key only...
    assert envs2.lookup(on("2025-06-03"), need_docker=False) is None
    # ...until its own commit's day finds it, and writes its family in: then the next day finds it too
    assert envs2.lookup(on("2025-06-02"), need_docker=False).family
    assert envs2.lookup(on("2025-06-03"), need_docker=False).key == old.key
    assert envs2.store.record(old.key).family == on("2025-06-03").family(envs2._base_name(on("2025-06-03")))


def test_a_node_project_without_a_lockfile_is_found_by_its_family_too(tmp_path):
    envs = cache(tmp_path)
    first = build(envs, on("2025-06-02", NODE))
    assert first.spec.node is not None and first.spec.node.before == "2025-06-02T23:59:59Z"
    assert envs.lookup(on("2025-06-20", NODE), need_docker=False) == first
    assert envs.lookup(on("2025-06-01", NODE), need_docker=False) is None


def test_an_undated_spec_is_found_by_its_own_key_only(tmp_path):
    det = detect(MemoryFiles(FILES), commit_date=None)
    assert det.spec.as_of() is None and det.spec.undated() == det.spec
    dated = on("2025-06-02")
    assert dated.spec.as_of() == "2025-06-02T23:59:59Z" and dated.spec.undated().as_of() is None
    assert dated.family("b") == on("2025-07-30").family("b") != dated.key("b")
