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
    with pytest.raises(ConfigError, match="ref .no-such-branch. is not in the repository"):
        prepare(tmp_path / "ws", "t", str(repo), "no-such-branch")
    assert not (tmp_path / "ws" / "t").exists()


def test_prepare_fetches_a_pull_request_head_the_clone_did_not_bring(tmp_path):
    """A pull request's head lives under refs/pull/N/head (fork pull requests: nowhere else): a plain clone does
    not have it, so prepare fetches it by name or by commit."""
    repo = make_repo(tmp_path / "r")
    g = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*g, "checkout", "-q", "-b", "tmp"], cwd=repo, check=True)
    (repo / "a.txt").write_text("pr\n")
    subprocess.run([*g, "commit", "-qam", "pr"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    subprocess.run([*g, "update-ref", "refs/pull/7/head", sha], cwd=repo, check=True)
    subprocess.run([*g, "checkout", "-q", "-"], cwd=repo, check=True)
    subprocess.run([*g, "branch", "-qD", "tmp"], cwd=repo, check=True)
    ws, base = prepare(tmp_path / "ws", "by-name", str(repo), "refs/pull/7/head")
    assert base == sha and (ws / "a.txt").read_text() == "pr\n"
    ws2, base2 = prepare(tmp_path / "ws", "by-sha", str(repo), sha)
    assert base2 == sha and (ws2 / "a.txt").read_text() == "pr\n"
    with pytest.raises(ConfigError, match="'refs/pull/8/head' is not in the repository"):
        prepare(tmp_path / "ws", "missing", str(repo), "refs/pull/8/head")
    with pytest.raises(ConfigError, match="is not in the repository"):
        prepare(tmp_path / "ws", "missing-sha", str(repo), "0" * 40)
    assert not (tmp_path / "ws" / "missing").exists()
