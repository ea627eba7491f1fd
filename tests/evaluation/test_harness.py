"""The harness's steps for one instance: which tests run and how, what is reset, how a prediction is applied, and
what part of the output is read. The steps are also run for real with sh and git on a repository (the sandbox
adds isolation, not behaviour)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evaluation.harness import (
    END,
    PREDICTION,
    START,
    TEST_PATCH,
    apply_script,
    directives,
    generic_recipe,
    judging_script,
    needs_rebuild,
    recipe_or_generic,
    reset_files,
    statuses,
)
from evaluation.recipes import recipe_for
from evaluation.swebench import Instance, instance_report


def diff(*files: tuple[str, bool]) -> str:
    """A test patch touching ``files`` (path, created?)."""
    out = ""
    for path, created in files:
        old = "/dev/null" if created else f"a/{path}"
        out += f"diff --git a/{path} b/{path}\n--- {old}\n+++ b/{path}\n@@ -0,0 +1 @@\n+x\n"
    return out


def instance(repo: str, version: str | None, test_patch: str, **kw) -> Instance:
    return Instance(instance_id="x__y-1", repo=repo, base_commit="a" * 40, test_patch=test_patch,
                    FAIL_TO_PASS=kw.get("f2p", []), PASS_TO_PASS=kw.get("p2p", []), version=version)


def test_django_runs_module_labels_every_other_repository_the_files():
    patch = diff(("tests/model_fields/test_jsonfield.py", False), ("tests/file_storage/models.py", False),
                 ("tests/templates/base.html", True), ("tests/fixtures/data.json", True))
    django = recipe_for("django/django", "3.0")
    assert directives(django, patch) == ["model_fields.test_jsonfield", "file_storage.models", "templates.base.html"]
    sympy = recipe_for("sympy/sympy", "1.5")
    assert directives(sympy, diff(("sympy/core/tests/test_basic.py", False))) == ["sympy/core/tests/test_basic.py"]
    assert reset_files(patch) == ["tests/model_fields/test_jsonfield.py", "tests/file_storage/models.py"]


def test_the_test_command_of_each_known_repository():
    patch = diff(("tests/test_a.py", False))
    cases = {("django/django", "3.0"): "LANG=en_US.UTF-8 LANGUAGE=en_US:en LC_ALL=en_US.UTF-8 ./tests/runtests.py "
                                       "--verbosity 2 --settings=test_sqlite --parallel 1 test_a",
             ("django/django", "4.2"): "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 test_a",
             ("sympy/sympy", "1.11"): "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C "
                                      "--verbose tests/test_a.py",
             ("sphinx-doc/sphinx", "3.5"): "PYTHONPATH=/opt/bosun-env/venv/lib/python3.9/site-packages tox "
                                           "--current-env -epy39 -v -- tests/test_a.py",
             ("astropy/astropy", "1.3"): "pytest -rA -vv -o console_output_style=classic --tb=no tests/test_a.py",
             ("astropy/astropy", "4.3"): "pytest -rA tests/test_a.py",
             ("mwaskom/seaborn", "0.12"): "pytest --no-header -rA tests/test_a.py",
             ("psf/requests", "2.26"): "pytest -rA tests/test_a.py"}
    for (repo, version), want in cases.items():
        script = judging_script(recipe_for(repo, version), instance(repo, version, patch))
        assert f"\n{want}\n" in script, (repo, version, script)
        assert script.index("git checkout") < script.index(f"git apply -v {TEST_PATCH}") < script.index(START)


def test_an_unknown_repository_gets_its_own_runner():
    inst = instance("acme/app", None, diff(("tests/test_a.py", False)))
    assert recipe_or_generic(inst, set(), "3.11").test_cmd == "python -m pytest -rA -v -p no:cacheprovider"
    assert recipe_or_generic(inst, {"tests/runtests.py"}, "3.11").parser == "django"
    assert generic_recipe("acme/app", {"bin/test"}, "3.9").parser == "sympy"


def test_hostile_paths_are_quoted_for_the_shell():
    inst = instance("psf/requests", "2.26", diff(("tests/$(touch pwned).py", False), ("-rf.py", True)))
    script = judging_script(recipe_for("psf/requests", "2.26"), inst)
    assert "'tests/$(touch pwned).py'" in script and "-- 'tests/$(touch pwned).py'" in script


def test_prediction_applies_as_the_harness_tries_and_rebuilds_only_compiled_changes():
    script = apply_script(recipe_for("psf/requests", "2.26"))
    tries = [line for line in script.splitlines() if line.endswith("&& exit 0")]
    assert tries == [f"{cmd} {PREDICTION} && exit 0" for cmd in (
        "git apply --verbose", "git apply --verbose --3way", "git apply --verbose --reject",
        "patch --batch --fuzz=5 -p1 -i")]
    assert "commit" not in script  # no edits: nothing committed
    sphinx = apply_script(recipe_for("sphinx-doc/sphinx", "4.1"))
    assert sphinx.index("tox.ini") < sphinx.index("commit -q --allow-empty -am") < sphinx.index("git apply")
    sklearn = recipe_for("scikit-learn/scikit-learn", "0.22")
    assert needs_rebuild(sklearn, diff(("sklearn/tree/_tree.pyx", False)))
    assert not needs_rebuild(sklearn, diff(("sklearn/tree/tree.py", False)))
    assert not needs_rebuild(recipe_for("django/django", "3.0"), diff(("setup.py", False)))


def test_only_the_output_between_the_markers_is_read_unless_it_names_nothing():
    pytest_recipe = recipe_for("psf/requests", "2.26")
    log = f"PASSED tests/test_git.py::noise\n{START}\nPASSED tests/test_a.py::test_a\n{END}\n"
    assert statuses(pytest_recipe, log) == {"tests/test_a.py::test_a": "PASSED"}
    log = f"PASSED tests/test_a.py::test_a\n{START}\nnothing here\n{END}\n"
    assert statuses(pytest_recipe, log) == {"tests/test_a.py::test_a": "PASSED"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


def test_the_steps_run_for_real(tmp_path):
    """A prediction that also edits the test file: the test file is reset to the base before the test patch,
    the new test file is created, the prediction's fix stays, and only the tests' output is read."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_zero():\n"
                                                  "    assert add(0, 0) == 0\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text("from calc import add\n\n\ndef test_zero():\n    assert False\n")
    prediction = git(repo, "diff")
    git(repo, "checkout", "-q", "--", ".")
    with open(repo / "tests" / "test_calc.py", "a") as f:
        f.write("\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    (repo / "tests" / "test_more.py").write_text("from calc import add\n\n\ndef test_more():\n"
                                                  "    assert add(1, 1) == 2\n")
    git(repo, "add", "-A")
    test_patch = git(repo, "diff", "--cached")
    git(repo, "reset", "-q", "--hard", base)
    inst = Instance(instance_id="calc-1", repo="acme/calc", base_commit=base, test_patch=test_patch,
                    FAIL_TO_PASS=["tests/test_calc.py::test_add", "tests/test_more.py::test_more"],
                    PASS_TO_PASS=["tests/test_calc.py::test_zero"])
    recipe = generic_recipe("acme/calc", set(), "3")
    recipe = recipe.model_copy(update={"test_cmd": f"{sys.executable} -m pytest -rA -p no:cacheprovider"})
    (repo / PREDICTION).write_text(prediction)
    (repo / TEST_PATCH).write_text(test_patch)
    applied = subprocess.run(["sh", "-c", apply_script(recipe)], cwd=repo, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    run = subprocess.run(["sh", "-c", judging_script(recipe, inst)], cwd=repo, capture_output=True, text=True)
    found = statuses(recipe, run.stdout + run.stderr)
    report = instance_report(inst, None, applied=True, statuses=found)
    assert report["resolved"], json.dumps(found) + run.stdout[-2000:]
    assert found == {"tests/test_calc.py::test_zero": "PASSED", "tests/test_calc.py::test_add": "PASSED",
                     "tests/test_more.py::test_more": "PASSED"}


SPHINX_SETUP = """import sys

from setuptools import find_packages, setup

install_requires = [
    'sphinxcontrib-applehelp',
    'sphinxcontrib-devhelp',
    'sphinxcontrib-jsmath',
    'sphinxcontrib-htmlhelp',
    'sphinxcontrib-serializinghtml',
    'sphinxcontrib-qthelp',
    'Jinja2>=2.3',
    'Pygments>=2.0',
    'docutils>=0.12',
    'snowballstemmer>=1.1',
    'babel>=1.3',
    'alabaster>=0.7,<0.8',
    'imagesize',
    'requests>=2.5.0',
    'setuptools',
    'packaging',
]
"""
SPHINX_TOX = """[testenv]
usedevelop = True
extras =
    test
setenv =
    PYTHONWARNINGS = all,ignore::ImportWarning:importlib._bootstrap_external
commands=
    pytest --durations 25 {posargs}

[testenv:flake8]
basepython = python3
"""
"""Sphinx 3.1's setup.py and tox.ini (sphinx-doc/sphinx at 9bb204dc, sphinx-doc__sphinx-7440), trimmed."""
STD = "".join(f"line {i}\n" for i in range(40)) + "def note(term):\n    return term.lower()\n" + \
    "".join(f"line {i}\n" for i in range(40, 80))
FIXED = STD.replace("return term.lower()", "return term")


def sphinx_like(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "sphinx"
    (repo / "sphinx").mkdir(parents=True)
    (repo / "setup.py").write_text(SPHINX_SETUP)
    (repo / "tox.ini").write_text(SPHINX_TOX)
    (repo / "sphinx" / "std.py").write_text(STD)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo, git(repo, "rev-parse", "HEAD").strip()


def harness_image_diff(repo: Path, base: str, recipe, change) -> str:
    """What a model's ``git diff`` gave in the harness's older images: the recipe's edits uncommitted there."""
    for edit in recipe.workspace_edits:
        subprocess.run(["sh", "-c", edit], cwd=repo, check=True)
    change(repo)
    made = git(repo, "diff")
    git(repo, "reset", "-q", "--hard", base)
    return made


def run_apply(repo: Path, prediction: str, script: str) -> subprocess.CompletedProcess:
    (repo / PREDICTION).write_text(prediction)
    return subprocess.run(["sh", "-c", script], cwd=repo, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"})


OLD_APPLY = (f"sed -i 's/pytest/pytest -rA/' tox.ini\ngit apply --verbose {PREDICTION} || git apply --verbose "
             f"--reject {PREDICTION} || patch --batch --fuzz=5 -p1 -i {PREDICTION}\n")
"""How bosun applied before: the edit uncommitted, no --3way, no reset between the tries."""


def test_a_diff_holding_the_harness_images_edits_applies_with_them_and_the_fix(tmp_path):
    """A model that ran in the harness's older images (the recipe's edits uncommitted there) made a diff holding
    the edits (setup.py's bounds, tox.ini's -rA) beside its fix (sphinx-doc__sphinx-7440's model patch, the
    published run resolved it). The harness applies it to a tree whose HEAD has the edits: ``git apply`` refuses
    the edits' hunks, ``--3way`` sees the same change on both sides."""
    recipe = recipe_for("sphinx-doc/sphinx", "3.1")
    repo, base = sphinx_like(tmp_path)
    prediction = harness_image_diff(repo, base, recipe, lambda r: (r / "sphinx" / "std.py").write_text(FIXED))
    assert "+    pytest -rA --durations" in prediction and "Jinja2<3.0" in prediction
    applied = run_apply(repo, prediction, apply_script(recipe))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "[git apply --verbose: exit 1]" in applied.stdout  # the first try refused it; --3way took it
    assert (repo / "sphinx" / "std.py").read_text() == FIXED
    assert "pytest -rA --durations" in (repo / "tox.ini").read_text()
    assert "'Jinja2<3.0'," in (repo / "setup.py").read_text()
    # bosun before: the edits uncommitted, then --reject applied the fix and patch --batch took every hunk for
    # reversed: "applied", without the fix and without -rA (no test would be reported as passing)
    git(repo, "reset", "-q", "--hard", base)
    git(repo, "clean", "-qfdx")
    old = run_apply(repo, prediction, OLD_APPLY)
    assert old.returncode == 0 and (repo / "sphinx" / "std.py").read_text() == STD
    assert "pytest -rA" not in (repo / "tox.ini").read_text()


def test_a_diff_with_a_binary_file_git_refuses_is_applied_by_patch_from_a_clean_tree(tmp_path):
    """astropy__astropy-13236's model patch: its fix, an edit the harness's HEAD has, and a stray binary file
    (``Binary files /dev/null and b/test.fits differ``) that every git try refuses; after the reset, ``patch``
    applies the fix (the published run resolved it)."""
    recipe = recipe_for("sphinx-doc/sphinx", "3.1")
    repo, base = sphinx_like(tmp_path)
    prediction = harness_image_diff(repo, base, recipe, lambda r: (r / "sphinx" / "std.py").write_text(FIXED))
    prediction += ("diff --git a/test.fits b/test.fits\nnew file mode 100644\nindex 0000000..672041e\n"
                   "Binary files /dev/null and b/test.fits differ\n")
    applied = run_apply(repo, prediction, apply_script(recipe))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "[git apply --verbose --reject: exit 1]" in applied.stdout
    assert (repo / "sphinx" / "std.py").read_text() == FIXED
    assert not list(repo.rglob("*.rej"))  # the --reject try's leftovers went with the reset


def test_a_prediction_that_does_not_apply_is_refused_after_every_try(tmp_path):
    repo, base = sphinx_like(tmp_path)
    prediction = ("diff --git a/sphinx/std.py b/sphinx/std.py\n--- a/sphinx/std.py\n+++ b/sphinx/std.py\n"
                  "@@ -1,3 +1,3 @@\n-nothing like this\n-at all\n+x\n context\n")
    applied = run_apply(repo, prediction, apply_script(recipe_for("sphinx-doc/sphinx", "5.0")))
    assert applied.returncode == 1
    assert applied.stdout.count(": exit ") == 4
    assert (repo / "sphinx" / "std.py").read_text() == STD


def test_requests_before_2_8_get_a_local_httpbin_for_the_network_its_tests_reach():
    patch = diff(("test_requests.py", False))
    old = judging_script(recipe_for("psf/requests", "2.0"), instance("psf/requests", "2.0", patch))
    start, wait = old.index("exec python serve.py"), old.index("range(100)")
    hook, test = old.index("export BOSUN_STANDIN_HOSTS=httpbin.org"), old.index("pytest -rA")
    assert start < wait < hook < old.index(START) < test
    assert "HTTPBIN_URL" not in old  # the tests' own default, http://httpbin.org/, reaches the stand-in
    assert "httpbin" in recipe_for("psf/requests", "2.0").requirements
    new = judging_script(recipe_for("psf/requests", "2.26"), instance("psf/requests", "2.26", patch))
    assert "httpbin" not in new  # its tests serve httpbin themselves (pytest-httpbin)


def test_a_detected_environments_stand_ins_reach_the_generic_runner():
    patch = diff(("tests/test_client.py", False))
    script = judging_script(generic_recipe("acme/client", set(), "3.11", ("httpbin.org",)),
                            instance("acme/client", "", patch))
    assert script.index("BOSUN_STANDIN_HOSTS=httpbin.org") < script.index(START)
    assert "bosun-standin" not in judging_script(generic_recipe("acme/client", set(), "3.11"),
                                                 instance("acme/client", "", patch))


def test_a_retry_resets_the_tree_with_only_the_predictions_blobs_at_hand(tmp_path):
    """The sandbox's git has the trees and the blobs of the files the prediction names, nothing else, and the host
    chowned the checked-out files (their stat data is stale in the index): the reset before a retry must not
    need the other files' blobs (mwaskom__seaborn-3069's model patch: a binary file git refuses, then patch)."""
    repo, base = sphinx_like(tmp_path)
    (repo / "README.md").write_text("untouched\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "readme")
    prediction = harness_image_diff(repo, git(repo, "rev-parse", "HEAD").strip(), recipe_for("psf/requests", "2.26"),
                                    lambda r: (r / "sphinx" / "std.py").write_text(FIXED))
    prediction += ("diff --git a/test.png b/test.png\nnew file mode 100644\nindex 0000000..672041e\n"
                   "Binary files /dev/null and b/test.png differ\n")
    lent = {git(repo, "rev-parse", "HEAD:sphinx/std.py").strip()}
    for line in git(repo, "rev-list", "--objects", "--all").splitlines():
        oid = line.split()[0]
        if git(repo, "cat-file", "-t", oid).strip() == "blob" and oid not in lent:
            (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    for path in repo.rglob("*"):
        if ".git" not in path.parts:
            path.chmod(path.stat().st_mode)  # (ctime moves: the index's stat data is stale)
    applied = run_apply(repo, prediction, apply_script(recipe_for("psf/requests", "2.26")))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "unable to read" not in applied.stderr
    assert (repo / "sphinx" / "std.py").read_text() == FIXED and (repo / "README.md").read_text() == "untouched\n"
