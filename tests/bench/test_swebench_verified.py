"""bench/swebench_verified.py's test patch: the test files of the fix's pull request, its other files left out."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bench import swebench_verified


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_test_patch_is_the_pull_requests_test_files_beside_the_gold_patch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "_pytest").mkdir(parents=True)
    (repo / "testing").mkdir()
    (repo / "src" / "_pytest" / "capture.py").write_text("x = 1\n")
    (repo / "testing" / "test_capture.py").write_text("def test_a():\n    pass\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-qb", "fix")
    (repo / "src" / "_pytest" / "capture.py").write_text("x = 2\n")  # the gold patch's file ("test" in its path)
    (repo / "testing" / "test_capture.py").write_text("def test_a():\n    pass\n\n\ndef test_b():\n    pass\n")
    (repo / "changelog").mkdir()
    (repo / "changelog" / "5257.bugfix.rst").write_text("Fixed.\n")  # neither gold nor test: left out
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fix")
    git(repo, "update-ref", "refs/pull/5262/head", "HEAD")
    gold = git(repo, "diff", base, "HEAD", "--", "src") + "\n"
    patch, why = swebench_verified.test_patch(repo / ".git", base, "5262", gold)
    assert why == "" and swebench_verified.files_of(patch) == ["testing/test_capture.py"]
    assert swebench_verified.test_patch(repo / ".git", base, "1", gold) == ("", "no refs/pull/1/head in the mirror")
    assert swebench_verified.applies(repo / ".git", base, gold, patch) is None
    assert "does not apply" in (swebench_verified.applies(repo / ".git", "HEAD", gold) or "")
