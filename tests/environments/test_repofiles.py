"""Reading a repository's files on the host (environments/repofiles.py): its config never runs, every read
is bounded. Each hostile repository is built here, in tmp_path."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from environments import repofiles
from environments.repofiles import GitTree
from infra.errors import ConfigError
from tests.sandbox.envfixtures import TINY, make_repo


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost",
                    "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def _hostile_filter_repo(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "ran-on-the-host"
    repo = make_repo(tmp_path / "hostile", {**TINY, ".gitattributes": "* filter=x\n"})
    with open(repo / ".git" / "config", "a") as f:
        f.write(f'[filter "x"]\n\tsmudge = "touch {marker}; cat"\n\tclean = cat\n\trequired = true\n'
                f'[core]\n\tfsmonitor = "touch {marker}"\n')
    return repo, marker


def test_the_repositorys_filters_never_run_on_the_host(tmp_path):
    repo, marker = _hostile_filter_repo(tmp_path)
    tree = GitTree.of_repository(repo)
    assert "tinypkg/__init__.py" in tree.paths()
    assert tree.read("pyproject.toml") == TINY["pyproject.toml"]
    tree.commit_date(), tree.tree_id(), tree.version_tag()
    out = tree.archive(tmp_path / "source.tar")
    with tarfile.open(out) as tar:
        assert tar.extractfile("tinypkg/__init__.py").read().decode() == TINY["tinypkg/__init__.py"]
    assert not marker.exists()


def test_an_include_of_a_device_in_the_config_is_never_read(tmp_path):
    repo = make_repo(tmp_path / "r", TINY)
    fifo = tmp_path / "fifo"
    import os

    os.mkfifo(fifo)
    with open(repo / ".git" / "config", "a") as f:
        f.write(f"[include]\n\tpath = {fifo}\n")
    tree = GitTree.of_repository(repo)  # git reading the config would block on the FIFO
    assert tree.read("pyproject.toml") == TINY["pyproject.toml"]


def test_ref_expressions_resolve_and_options_are_refused(tmp_path):
    repo = make_repo(tmp_path / "r", TINY)
    first = GitTree.of_repository(repo).commit
    (repo / "new.txt").write_text("x\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "second")
    _git(repo, "tag", "v1.0")
    assert GitTree.of_repository(repo, "HEAD~1").commit == first
    assert GitTree.of_repository(repo, "v1.0^").commit == first
    assert GitTree.of_repository(repo, "main").commit != first
    for bad in ("--output=/tmp/x", "-h", "a b", ""):
        with pytest.raises(ConfigError, match="not a usable revision"):
            GitTree.of_repository(repo, bad)
    with pytest.raises(ConfigError, match="no such commit"):
        GitTree.of_repository(repo, "nope~3")


def test_a_tree_past_max_paths_is_refused_and_big_blobs_are_not_read(tmp_path, monkeypatch):
    files = {f"f{i}.txt": "x\n" for i in range(30)}
    files["big.txt"] = "y" * 5000
    repo = make_repo(tmp_path / "r", files)
    monkeypatch.setattr(repofiles, "MAX_FILE", 1000)
    tree = GitTree.of_repository(repo)
    assert tree.read("big.txt") is None and tree.read("f1.txt") == "x\n"
    monkeypatch.setattr(repofiles, "MAX_PATHS", 10)
    with pytest.raises(ConfigError, match="more than 10 files"):
        GitTree.of_repository(repo).paths()


def test_the_source_tar_is_capped(tmp_path):
    repo = make_repo(tmp_path / "r", {"big.txt": "z" * 200_000})
    with pytest.raises(ConfigError, match="larger than"):
        GitTree.of_repository(repo).archive(tmp_path / "s.tar", max_bytes=100_000)
    assert len(tarfile.open(fileobj=io.BytesIO((GitTree.of_repository(repo).archive(
        tmp_path / "ok.tar")).read_bytes())).getnames()) == 1
