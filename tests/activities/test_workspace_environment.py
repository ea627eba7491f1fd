"""The environment activities (activities/workspace.py): failures name the right step, logs are bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities import workspace
from activities.models import EnvironmentInput
from infra.errors import ConfigError
from sandbox.environments.detect import detect
from sandbox.environments.repofiles import MemoryFiles


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
