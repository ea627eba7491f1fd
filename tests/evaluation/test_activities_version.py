"""A row without a version: eval_prepare derives it from the instance's commit and, when the source is a
repository on this host, its tags (evaluation/versions.py); the report says which."""

from __future__ import annotations

import subprocess
from pathlib import Path

from evaluation.activities import EvalActivities, EvalPrepareInput


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_version_of_a_row_without_one_comes_from_its_file_or_the_sources_tags(tmp_path):
    repo = tmp_path / "src"
    (repo / "sphinx").mkdir(parents=True)
    (repo / "sphinx" / "__init__.py").write_text("__version__ = '3.1.0+'\n")  # sphinx-doc__sphinx-7440's
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "tag", "v3.0.4")
    base = git(repo, "rev-parse", "HEAD")

    def of(repo_name: str, source: str) -> tuple[str | None, str]:
        inp = EvalPrepareInput(key="k", source=source, base_commit=base, repo=repo_name)
        return EvalActivities._version_of(inp, repo / ".git", base)

    assert of("sphinx-doc/sphinx", "https://github.com/sphinx-doc/sphinx") == (
        "3.1", "3.1, derived from the repository: sphinx/__init__.py: __version__ = '3.1.0+'")
    # setuptools_scm projects: the nearest tag, from a source on this host; from a clone URL, none
    assert of("pytest-dev/pytest", str(repo))[0] == "3.0"
    assert of("pytest-dev/pytest", "https://github.com/pytest-dev/pytest")[0] is None
