"""The environment activities (activities/workspace.py): failures name the right step, logs are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities import workspace
from activities.models import EnvironmentInput
from environments.detect import detect
from environments.repofiles import MemoryFiles
from infra.errors import ConfigError


def test_the_activity_stores_only_the_end_of_a_build_log(tmp_path: Path, monkeypatch):
    class Store:
        def put_text(self, text: str) -> str:
            self.text = text
            return "ref"

    monkeypatch.setattr(workspace, "LOG_ARTIFACT_BYTES", 1000)
    acts = workspace.WorkspaceActivities.__new__(workspace.WorkspaceActivities)
    acts.store = Store()
    log = tmp_path / "build.log"
    log.write_bytes(b"x" * 50_000 + b"the end\n")
    assert acts._log_ref(log) == "ref" and len(acts.store.text) < 1100 and acts.store.text.endswith("the end\n")
    assert acts._log_ref(tmp_path / "none") is None


class FakeRepo:
    git_dir = Path("/nonexistent")

    def prepared(self):
        return {"base": "0" * 40, "source": "x"}

    def set_environment(self, *_a):
        pass


class FakeEnvs:
    def __init__(self, key_error: bool = False) -> None:
        self.key_error = key_error

    def key(self, _det):
        if self.key_error:
            raise ConfigError("the base's apt package 'bad name' is not a Debian package name")
        return "k" * 16

    def ensure(self, _det, _tree):
        raise ConfigError("the source of 0000 is larger than 4096 MB as a tar")


@pytest.mark.parametrize("key_error, step", [(False, "build"), (True, "detect")])
async def test_a_config_error_names_its_step(monkeypatch, key_error, step):
    det = detect(MemoryFiles({"setup.py": "from setuptools import setup\nsetup(name='d')\n"}), commit_date=None)
    acts = workspace.WorkspaceActivities.__new__(workspace.WorkspaceActivities)
    monkeypatch.setattr(acts, "repo", lambda _wf: FakeRepo(), raising=False)
    monkeypatch.setattr(acts, "_environments", lambda progress=None: FakeEnvs(key_error), raising=False)
    monkeypatch.setattr(acts, "_detect", lambda *_a: det, raising=False)
    state = await acts.build_environment(EnvironmentInput(workflow_id="wf"))
    assert state.status == "failed" and state.step == step
    assert ("larger than" if step == "build" else "apt package") in state.reason
    if step == "build":
        assert state.env_id == "env-" + "k" * 16


async def test_collect_leaves_out_the_files_the_environment_put_there_that_git_does_not_ignore(tmp_path: Path):
    """A build whose products git does not ignore (no ``*.so`` in .gitignore): workspaces get them, and the import of
    an agent's work leaves them out, by the record's list, never a tracked file."""
    from activities.models import CollectInput
    from environments.models import EnvRecord, EnvSpec
    from environments.runtime import resolve
    from environments.store import EnvStore
    from infra.artifacts import ArtifactStore
    from infra.settings import Settings
    from sandbox.hostrepo import TaskRepo
    from sandbox.manager import SandboxManager
    from tests.conftest import make_example_repo

    key = "d" * 20
    store = EnvStore(tmp_path / "envs")
    store.ensure_dirs()
    (tmp_path / "rootfs" / "usr").mkdir(parents=True)
    (tmp_path / "envroot").mkdir()
    staging = tmp_path / "staging"
    staging.mkdir()
    store.commit(staging, EnvRecord(
        env_id=f"env-{key}", key=key, python="3.13.5", base="b", spec=EnvSpec(python="3.13"),
        test_command="pytest", rootfs=str(tmp_path / "rootfs"), backend_refs={"bwrap": str(tmp_path / "envroot")},
        seed=True, seed_unignored=["build/", "calc/_speedups.so", "calc/stats.py", "weird [x]*.txt "]))
    settings = Settings(data_dir=tmp_path / "data", env_cache=tmp_path / "envs")
    acts = workspace.WorkspaceActivities(settings, store=ArtifactStore(settings.artifacts_dir),
                                         sandboxes=SandboxManager("bwrap", "unused", resolve))
    repo = TaskRepo(settings.workspaces_dir, "wf")
    base = repo.prepare(str(make_example_repo(tmp_path / "src")), "HEAD")

    def agent_run(name: str) -> None:
        ws = repo.materialize(name, base)
        (ws / "build" / "lib" / "calc").mkdir(parents=True)  # what the environment's seed put there...
        (ws / "build" / "lib" / "calc" / "stats.py").write_text("copy\n")
        (ws / "calc" / "_speedups.so").write_bytes(b"\x7fELF")
        (ws / "weird [x]*.txt ").write_text("generated\n")
        (ws / "calc" / "stats.py").write_text("changed by the agent\n")  # ...and the agent's work
        (ws / "calc" / "_speedups.py").write_text("new\n")

    repo.set_environment(f"env-{key}", tmp_path / "envs")
    agent_run("a")
    got = await acts.collect_agent_work(CollectInput(workflow_id="wf", name="a", parent=base, message="m"))
    assert got.files == ["calc/_speedups.py", "calc/stats.py"]  # a listed path that is tracked is imported
    repo.set_environment(None, None)  # the same work in a task without the environment: all of it is work
    agent_run("b")
    got = await acts.collect_agent_work(CollectInput(workflow_id="wf", name="b", parent=base, message="m"))
    assert got.files == ["build/lib/calc/stats.py", "calc/_speedups.py", "calc/_speedups.so", "calc/stats.py",
                         "weird [x]*.txt "]
