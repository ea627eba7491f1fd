import subprocess

import pytest

from activities.workspace import check_repo, commit_changes, prepare
from infra.errors import ConfigError


def make_repo(path):
    path.mkdir()
    (path / "a.txt").write_text("one\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"]):
        subprocess.run(["git", *cmd], cwd=path, check=True)
    return path


def test_check_repo_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such directory"):
        check_repo(str(tmp_path / "missing"))
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        check_repo(str(tmp_path / "f"))
    (tmp_path / "plain").mkdir()
    with pytest.raises(ConfigError, match="not a git repository"):
        check_repo(str(tmp_path / "plain"))
    repo = make_repo(tmp_path / "r")
    (repo / "sub").mkdir()
    with pytest.raises(ConfigError, match="is inside the git repository"):
        check_repo(str(repo / "sub"))
    (tmp_path / "empty").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path / "empty", check=True)
    with pytest.raises(ConfigError, match="no commits yet"):
        check_repo(str(tmp_path / "empty"))
    assert check_repo(str(repo)) == repo


def test_prepare_and_commit_are_idempotent(tmp_path):
    repo = make_repo(tmp_path / "r")
    ws, base = prepare(tmp_path / "ws", "task-1", str(repo), "HEAD")
    assert (ws / "a.txt").read_text() == "one\n"
    assert prepare(tmp_path / "ws", "task-1", str(repo), "HEAD") == (ws, base)
    (ws / "a.txt").write_text("two\n")
    (ws / "new.txt").write_text("n\n")
    diff, files, commit = commit_changes(ws, base, "bosun/task-1", "msg")
    assert files == ["a.txt", "new.txt"] and "+two" in diff and commit
    assert commit_changes(ws, base, "bosun/task-1", "msg") == (diff, files, commit)
    # the user's repository is untouched
    assert (repo / "a.txt").read_text() == "one\n"


def test_prepare_bad_ref(tmp_path):
    repo = make_repo(tmp_path / "r")
    with pytest.raises(ConfigError, match="rev-parse"):
        prepare(tmp_path / "ws", "t", str(repo), "no-such-branch")
    assert not (tmp_path / "ws" / "t").exists()
