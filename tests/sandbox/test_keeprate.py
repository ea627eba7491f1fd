"""Keep Rate on a real repository history: bosun's lines still there N days on, per task and overall."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from infra.errors import ConfigError
from sandbox.keeprate import keep_rate
from tests.conftest import bosun

DAY = 86400
T0 = 1_780_000_000


def commit(repo: Path, files: dict[str, str], message: str, when: int, *, bot: bool = False) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    who = ("bosun", "bosun@localhost") if bot else ("Ada", "ada@example.org")
    env = {"GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1], "GIT_COMMITTER_NAME": who[0],
           "GIT_COMMITTER_EMAIL": who[1], "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000",
           "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "-c", "commit.gpgsign=false", "commit", "-qm", message], cwd=repo, check=True, env=env)


@pytest.fixture
def history(tmp_path) -> Path:
    repo = tmp_path / "r"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    base = "".join(f"base {i}\n" for i in range(5))
    commit(repo, {"a.py": base}, "start", T0)
    added = "".join(f"bosun line {i}\n" for i in range(10))
    commit(repo, {"a.py": base + added}, "bosun subtask x: add lines\n\nBosun-Task: task-1", T0 + DAY, bot=True)
    commit(repo, {"b.py": "one\ntwo\n"}, "bosun: other\n\nBosun-Task: task-2", T0 + 2 * DAY, bot=True)
    # 20 days on, a person removes 3 of task-1's lines; 40 days on, 2 more and one of task-2's
    lines = (base + added).splitlines(keepends=True)
    kept = lines[:5] + lines[8:]
    commit(repo, {"a.py": "".join(kept)}, "tidy", T0 + 21 * DAY)
    commit(repo, {"a.py": "".join(kept[:-2]), "b.py": "one\n"}, "tidy more", T0 + 41 * DAY)
    return repo


def test_lines_kept_after_n_days_per_task_and_overall(history):
    after30 = keep_rate(history, days=30)
    tasks = after30.by_task()
    assert (tasks["task-1"]["added"], tasks["task-1"]["kept"]) == (10, 7)
    assert (tasks["task-2"]["added"], tasks["task-2"]["kept"]) == (2, 2)
    assert after30.added == 12 and after30.kept == 9 and after30.rate == pytest.approx(0.75)
    after60 = keep_rate(history, days=60)
    assert after60.by_task()["task-1"]["kept"] == 5 and after60.by_task()["task-2"]["kept"] == 1
    assert all(c.provisional for c in after60.commits)  # the branch is younger than 60 days after them
    assert not any(c.provisional for c in after30.commits)


def test_the_command(history):
    proc = bosun("keep-rate", "--repo", str(history), "--days", "30", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["branch"] == "main" and out["keep_rate"] == 0.75 and out["tasks"]["task-1"]["keep_rate"] == 0.7
    text = bosun("keep-rate", "--repo", str(history)).stdout
    assert "task-1: 7/10 lines kept = 70.0%" in text and "overall on main after 30 days: 9/12" in text


def test_bad_input_is_refused(tmp_path, history):
    with pytest.raises(ConfigError, match="not a git repository"):
        keep_rate(tmp_path)
    with pytest.raises(ConfigError, match="must be 0 or more"):
        keep_rate(history, days=-1)
    with pytest.raises(ConfigError):
        keep_rate(history, branch="--upload-pack=evil")
    proc = bosun("keep-rate", "--repo", str(tmp_path / "nope"))
    assert proc.returncode == 2 and proc.stderr.startswith("bosun: --repo")
