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


def test_a_commit_whose_big_file_the_mirror_lacks_is_judged_on_a_whole_substitute(tmp_path: Path, monkeypatch) -> None:
    """The fetch tool's mirrors leave the largest files out: the bench judges such a commit on a substitute whose
    absent files are empty, the same commit id each time, and a whole commit as it is."""
    repo = tmp_path / "repo"
    (repo / "data").mkdir(parents=True)
    (repo / "data" / "big.dat").write_text("x" * 5000)
    (repo / "code.py").write_text("print(1)\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    gd = repo / ".git"
    monkeypatch.setattr(swebench_verified, "SUBSTITUTES", tmp_path / "sources")
    assert swebench_verified.substitute(gd, "acme/app", base) == (gd, base, [])  # whole: itself
    big = git(repo, "rev-parse", "HEAD:data/big.dat")
    (gd / "objects" / big[:2] / big[2:]).unlink()  # (as the mirror lacks it)
    swebench_verified.substitute.cache_clear()  # (once per commit and run: this is another run)
    assert swebench_verified.absent_files(gd, base) == [("100644", "data/big.dat")]
    source, commit, files = swebench_verified.substitute(gd, "acme/app", base)
    assert files == ["data/big.dat"] and commit != base and source != gd
    swebench_verified.substitute.cache_clear()
    assert swebench_verified.substitute(gd, "acme/app", base)[1] == commit  # the same id again, in another run
    listing = subprocess.run(["git", "--git-dir", str(source), "archive", commit], capture_output=True)
    assert listing.returncode == 0 and b"print(1)" in listing.stdout  # whole: every file there, big.dat empty
    assert git(repo, "--git-dir", str(source), "cat-file", "-s", f"{commit}:data/big.dat") == "0"
    assert git(repo, "--git-dir", str(source), "rev-parse", f"{commit}^") == base


def test_a_gold_failure_is_classed_by_what_its_test_output_shows(tmp_path: Path) -> None:
    """Real lines: Sphinx 7985's linkcheck (no network in a sandbox), xarray 3305's cdms2 (a conda-only module)."""
    log = tmp_path / "test_output.txt"
    log.write_text("links.txt:10: [broken] https://www.google.com#!bar: HTTPSConnectionPool(host='www.google.com', "
                   "port=443): Max retries exceeded with url: / (Caused by NameResolutionError(\"<urllib3.connection."
                   "HTTPSConnection object at 0x7f>: Failed to resolve 'www.google.com' ([Errno -3] Temporary failure "
                   "in name resolution)\"))\n")
    assert swebench_verified.gold_class(log)[0] == "needs_network"
    log.write_text("PASSED xarray/tests/test_dataarray.py::test_x\n"
                   "SKIPPED [1] xarray/tests/test_dataarray.py:3585: could not import 'cdms2': "
                   "No module named 'cdms2'\n"
                   "SKIPPED [2] xarray/tests/test_plot.py:10: requires matplotlib\n")
    assert swebench_verified.gold_class(log) == ("missing_module", "cdms2")
    log.write_text("FAILED tests/test_x.py::test_y - AssertionError: 1 != 2\n")
    assert swebench_verified.gold_class(log) == ("", "")
    assert swebench_verified.gold_class(tmp_path / "absent.txt") == ("", "")
