"""A row's version derived from its repository as SWE-bench's versioning did (files, nearest tags, release dates),
on the words of real repositories' files and tags; and through git, from a repository with tags."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from environments.repofiles import GitTree
from evaluation.versions import derive, from_files, from_releases, from_tag, of_commit

FILES = {
    # the version files of SWE-bench Verified instances' base commits (their lines as written there)
    ("sympy/sympy", "sympy/release.py"): '__version__ = "1.12.dev"\n',
    ("sphinx-doc/sphinx", "sphinx/__init__.py"): "__version__ = '3.1.0+'\n__released__ = '3.1.0'\n"
                                                 "version_info = (3, 1, 0, 'beta', 0)\n",
    ("pylint-dev/pylint", "pylint/__pkginfo__.py"): '"""Docstring. __version__ = "9.9.9" is not it."""\n'
                                                    '__version__ = "2.15.0-dev0"\n',
    ("psf/requests", "requests/__init__.py"): "__title__ = 'requests'\n__version__ = '1.1.0'\n",
    ("psf/requests", "requests/__version__.py"): "__version__ = '2.26.0'\n",
    ("django/django", "django/__init__.py"): "VERSION = (3, 0, 0, 'alpha', 0)\n",
}
ASTROPY_TAGS = [("v1.3.3", "2017-05-29"), ("v2.0", "2017-07-07"), ("v2.0.16", "2019-10-27"), ("v3.0", "2018-04-12"),
                ("v3.0.5", "2019-03-01"), ("v3.1", "2018-12-06"), ("v3.1.2", "2019-02-23"), ("v3.2", "2019-06-14"),
                ("v3.2.3", "2019-10-27"), ("v4.3", "2021-07-26"), ("v4.3.1", "2021-08-11"), ("v5.0", "2021-11-24"),
                ("v5.0.4", "2022-03-31"), ("v5.1", "2022-05-24"), ("v5.1.1", "2022-10-24"), ("v6.0.dev", "2023-06-01")]
"""astropy's release tags (name, date) from its repository (a few)."""


def read_of(repo: str):
    return lambda path: FILES.get((repo, path))


def test_versions_from_files_as_the_harness_read_them():
    assert from_files("sympy/sympy", read_of("sympy/sympy")).version == "1.12"
    assert from_files("sphinx-doc/sphinx", read_of("sphinx-doc/sphinx")).version == "3.1"
    assert from_files("pylint-dev/pylint", read_of("pylint-dev/pylint")).version == "2.15"  # docstring left out
    assert from_files("django/django", read_of("django/django")).version == "3.0"
    requests = from_files("psf/requests", read_of("psf/requests"))
    assert requests.version == "2.26" and requests.how.startswith("requests/__version__.py")  # the first path
    assert from_files("acme/unknown", read_of("psf/requests")) is None
    assert from_files("sympy/sympy", lambda p: "__version__ = 'garbage'\n") is None


def test_versions_from_tags_and_release_dates():
    assert [from_tag(t) for t in ("5.4.0", "v6.0.0rc1", "7.2.0.dev0", "v2022.03.0", "nightly")] == \
        ["5.4", "6.0", "7.2", "2022.03", None]
    # astropy's rule: the highest minor version whose latest release came before (2.0's LTS releases ran to 2019)
    assert from_releases("astropy/astropy", ASTROPY_TAGS, "2018-02-07").version == "1.3"
    assert from_releases("astropy/astropy", ASTROPY_TAGS, "2019-05-13").version == "3.1"
    assert from_releases("astropy/astropy", ASTROPY_TAGS, "2022-03-03").version == "4.3"
    # the others': the latest feature release before
    xarray = [("v2022.03.0", "2022-03-02"), ("v2022.06.0rc0", "2022-06-09"), ("v2022.06.0", "2022-07-22"),
              ("v0.12.0", "2019-06-01")]
    assert from_releases("pydata/xarray", xarray, "2022-06-25").version == "2022.03"
    assert from_releases("pydata/xarray", xarray, "2022-08-20").version == "2022.06"
    assert from_releases("pydata/xarray", xarray, "2019-01-01") is None
    assert derive("pytest-dev/pytest", lambda p: None, nearest_tag="5.4.0").version == "5.4"
    assert derive("pytest-dev/pytest", lambda p: None, nearest_tag=None) is None


def git(repo: Path, *args: str, date: str = "2020-05-08T12:00:00Z") -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True, env=env).stdout.strip()


def test_a_row_without_a_version_gets_its_repositorys_through_git(tmp_path):
    """A pytest-like repository (setuptools_scm: no version file in the tree) whose base commit is after the tag
    5.4.0; read as eval_prepare reads it: the files from the instance's store, the tags from the source."""
    repo = tmp_path / "pytest"
    (repo / "src" / "_pytest").mkdir(parents=True)
    (repo / "setup.py").write_text("from setuptools import setup\nsetup(use_scm_version=True)\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "5.4.0", date="2020-03-12T12:00:00Z")
    git(repo, "tag", "5.4.0")
    (repo / "src" / "_pytest" / "fix.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a fix")
    base = git(repo, "rev-parse", "HEAD")
    tree, tags = GitTree(repo / ".git", base, refs=False), GitTree(repo / ".git", base)
    try:
        assert of_commit("pytest-dev/pytest", tree, tags, None) == (
            "5.4", "5.4, derived from the repository: the nearest tag, 5.4.0")
        # a clone URL: its tags are not at hand, and the words say so
        assert of_commit("pytest-dev/pytest", tree, None, "2020-05-08T00:00:00Z") == (
            None, "none derived: the source's tags are not at hand (a clone URL)")
        assert tags.release_tags() == [("5.4.0", "2020-03-12")]
    finally:
        tree.close()
        tags.close()
