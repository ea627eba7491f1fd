"""The harness's steps for one instance: which tests run and how, what is reset, how a prediction is applied, and
what part of the output is read. The steps are also run for real with sh and git on a repository (the sandbox
adds isolation, not behaviour)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agents.evaluation.harness import (
    END,
    PREDICTION,
    START,
    TEST_PATCH,
    apply_command,
    directives,
    generic_recipe,
    judging_script,
    needs_rebuild,
    recipe_or_generic,
    reset_files,
    statuses,
)
from agents.evaluation.recipes import recipe_for
from agents.evaluation.swebench import Instance, instance_report


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
    assert recipe_or_generic(inst, set(), "3.11").test_cmd == "python -m pytest -rA -p no:cacheprovider"
    assert recipe_or_generic(inst, {"tests/runtests.py"}, "3.11").parser == "django"
    assert generic_recipe("acme/app", {"bin/test"}, "3.9").parser == "sympy"


def test_hostile_paths_are_quoted_for_the_shell():
    inst = instance("psf/requests", "2.26", diff(("tests/$(touch pwned).py", False), ("-rf.py", True)))
    script = judging_script(recipe_for("psf/requests", "2.26"), inst)
    assert "'tests/$(touch pwned).py'" in script and "-- 'tests/$(touch pwned).py'" in script


def test_prediction_applies_as_the_harness_tries_and_rebuilds_only_compiled_changes():
    assert apply_command() == (f"git apply --verbose {PREDICTION} || git apply --verbose --reject {PREDICTION} || "
                               f"patch --batch --fuzz=5 -p1 -i {PREDICTION}")
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
    applied = subprocess.run(["sh", "-c", apply_command()], cwd=repo, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    run = subprocess.run(["sh", "-c", judging_script(recipe, inst)], cwd=repo, capture_output=True, text=True)
    found = statuses(recipe, run.stdout + run.stderr)
    report = instance_report(inst, None, applied=True, statuses=found)
    assert report["resolved"], json.dumps(found) + run.stdout[-2000:]
    assert found == {"tests/test_calc.py::test_zero": "PASSED", "tests/test_calc.py::test_add": "PASSED",
                     "tests/test_more.py::test_more": "PASSED"}
