"""Small real repositories for environment builds, made as git repositories with a fixed commit date (so their
environments are built once per machine and then found in the cache)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from environments.models import EnvRecord
from environments.service import Environments
from infra.settings import Settings

FIXED_DATE = "2025-06-02T10:00:00+00:00"
"""A repository of that day gets Python 3.13, whose base the bootstrap builds."""

TINY = {
    "pyproject.toml": '[project]\nname = "tinypkg"\nversion = "0.1.0"\nrequires-python = ">=3.9"\n'
                      'dependencies = ["six>=1.16"]\n[build-system]\nrequires = ["setuptools>=64"]\n'
                      'build-backend = "setuptools.build_meta"\n[tool.setuptools]\npackages = ["tinypkg"]\n'
                      '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
    "tinypkg/__init__.py": "import six\n\n\ndef double(x):\n    return 2 * x\n",
    "tests/test_tiny.py": "import six\nfrom tinypkg import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
                          "\n\ndef test_six():\n    assert six.PY3\n",
    ".gitignore": "generated.txt\n",
}


def make_repo(path: Path, files: dict[str, str], date: str = FIXED_DATE) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
        subprocess.run(git + cmd, check=True, env=env, capture_output=True)
    return path


def built(envs: Environments, path: Path, files: dict[str, str], request) -> EnvRecord:
    """The environment of a repository of ``files`` made at ``path``, built now and removed after the test."""
    record = envs.ensure(*envs.detect_repo(str(make_repo(path, files)))).record
    request.addfinalizer(lambda: envs.remove(record.env_id))
    return record


def host_environments() -> Environments:
    """The host's environment cache (the same one bosun uses: builds persist across sessions)."""
    return Environments(Settings())


def tiny_environment(where: Path) -> EnvRecord:
    """The tiny package's environment (built once per machine, then cached)."""
    envs = host_environments()
    return envs.ensure(*envs.detect_repo(str(make_repo(where, TINY)))).record
