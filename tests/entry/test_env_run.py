"""Environments in a task, on the real stack: the prepare step builds or finds the repository's environment, the
agents and the test runs use it and are told about it, and a repository whose environment cannot be built ends
its task `environment_failed` with the reason, never a hang."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, make_example_repo

pytestmark = pytest.mark.docker


def run(stack, repo: Path, wf_id: str):
    return stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}", "--id", wf_id,
                       "--wait", "--json", "--mode", "solo", "fix the failing tests", timeout=1800)


def declare(repo: Path, text: str) -> Path:
    (repo / ".bosun").mkdir()
    (repo / ".bosun" / "environment.toml").write_text(text)
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "declare the environment"], check=True)
    return repo


def test_the_task_runs_in_its_environment(stack, tmp_path):
    repo = make_example_repo(tmp_path / "calc")
    proc = run(stack, repo, "env-run-1")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    result = json.loads(proc.stdout)
    env = result["environment"]
    assert env["status"] == "ready" and env["env_id"].startswith("env-") and env["python"].startswith("3.13")
    assert env["test_command"] == "python -m pytest" and env["log_ref"].startswith("sha256:")
    assert result["tests_before"]["summary"].startswith("3 failed, 4 passed")
    assert result["tests_after"]["green"]
    ref = result["agent"]["transcript_ref"]
    first = next(m["content"] for m in json.loads((stack.data_dir / "artifacts" / ref[7:9] / ref[7:]).read_text())
                 if m["role"] == "user")
    assert f"- Python: {env['python']} in a virtualenv" in first and "- Tests: python -m pytest" in first
    steps = json.loads(stack.bosun("history", "env-run-1", "--json").stdout)
    prepared = next(c for c in steps["children"] if c["name"] == "prepare_workspace")
    assert prepared["result"]["environment"]["env_id"] == env["env_id"]  # the environment is in history


def test_a_failing_environment_ends_the_task_with_the_reason(stack, tmp_path):
    repo = declare(make_example_repo(tmp_path / "calc"), 'requirements = ["bosun-no-such-package-xyz"]\n')
    proc = run(stack, repo, "env-run-broken")
    assert proc.returncode == 1, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "environment_failed"
    env = result["environment"]
    assert env["status"] == "failed" and env["step"] == "install"
    assert "bosun-no-such-package-xyz" in env["tail"] and env["log_ref"].startswith("sha256:")
    assert result["tests_before"]["summary"].startswith("not run: the environment could not be built")
    assert not result["files_changed"] and result["agent"] is None


def test_an_invalid_environment_file_ends_the_task_at_once(stack, tmp_path):
    repo = declare(make_example_repo(tmp_path / "calc"), 'python = "3.7"\n')
    proc = run(stack, repo, "env-run-invalid")
    result = json.loads(proc.stdout)
    assert result["status"] == "environment_failed" and result["environment"]["step"] == "detect"
    assert "python '3.7' is not available" in result["environment"]["reason"]
