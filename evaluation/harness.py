"""How an instance is judged, step by step, the way the SWE-bench reference harness judges it (pure: the shell
commands; evaluation/activities.py runs them in a network-off sandbox of the instance's environment).

1. ``edits``: the recipe's edits of tracked files (Sphinx's ``-rA`` in tox.ini and setup.py bounds, astropy's
   setuptools pin), committed as the harness's instance image commits them (``git commit -am``): the prediction
   meets a clean tree whose HEAD has them;
2. ``apply`` (``apply_script``): the prediction, with ``git apply --verbose``, ``git apply --verbose --3way``,
   ``git apply --verbose --reject``, ``patch --batch --fuzz=5 -p1 -i``, the tree reset to HEAD before each retry
   (``git reset --hard``, ``git clean -fd``); the first that exits 0 applied it; when all four fail the
   prediction does not apply and nothing is tested. This is the behaviour the published SWE-bench Verified
   verdicts of 2025 (sb-cli) show: a model that ran in the harness's older images, whose edits were uncommitted,
   made diffs holding the edits (``-rA``, the setup.py bounds); ``--3way`` applies those as the same change on
   both sides, where ``git apply`` refuses them and ``patch --batch`` takes them for reversed (after a partial
   ``--reject``, it reverses the fix too); the reset lets ``patch`` apply a diff with a binary file git refuses.
   Of the 138 predictions of the 9 repositories of bench/swebench_verified.py the published run resolved, this
   keeps every fix; the harness 4.x's commands on an uncommitted tree (no ``--3way``, no reset) keep 111;
3. ``rebuild`` (compiled projects): the project is built again when the prediction changes what the build
   compiles (the harness re-runs its install after applying a prediction);
4. ``tests``: the files the test patch modifies are reset to the base commit (``git checkout BASE FILES``), the
   test patch is applied (``git apply -v``; when it does not apply the tests still run, as in the harness), the
   stand-ins started (a local httpbin.org for requests before 2.8: environments/standins.py), and the
   test command runs on the test patch's files -- stdout and stderr one stream, between the harness's markers.

Test selection (``directives``): every ``diff --git a/... b/PATH`` of the test patch, data files left out
(``NON_TEST_EXTS``); for Django a path becomes a module label (``tests/a/test_b.py`` -> ``a.test_b``). The paths
are the patch's (hostile) text: they are quoted for the shell, which for any path the harness accepts changes
nothing.
"""

from __future__ import annotations

import re
import shlex

from environments import standins
from evaluation.recipes import DJANGO, PYTEST, SYMPY, Recipe, recipe_for
from evaluation.swebench import Instance, patched_files
from evaluation.testlogs import parse

APPLY = ("git apply --verbose", "git apply --verbose --3way", "git apply --verbose --reject",
         "patch --batch --fuzz=5 -p1 -i")
RESET = "git update-index -q --refresh >/dev/null; git reset -q --hard HEAD && git clean -fdq"
"""Before each retry: the tree as before the first attempt (its HEAD: the base commit and the recipe's edits). The
index is refreshed first: the host checked the files out and gave them to the sandbox's user, so their stat data
no longer matches and ``reset --hard`` would rewrite every file from blobs the sandbox's git does not have (only the
prediction's files are lent): it failed with ``unable to read sha1 file`` and left the tree half reset."""
EDITS_COMMIT = "git -c user.name=SWE-bench -c user.email=setup@swebench.config commit -q --allow-empty -am SWE-bench"
PREDICTION = ".git/bosun-prediction.patch"
TEST_PATCH = ".git/bosun-test.patch"
"""Where the patches are written in the workspace (its scratch .git: never part of the tree)."""
START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
BUILD_INPUTS = re.compile(r"(?:\.(?:pyx|pxd|pxi|c|cc|cpp|cxx|h|hpp|f|f90|m)|(?:^|/)(?:setup\.py|setup\.cfg|"
                          r"pyproject\.toml|meson\.build))$")
"""Files whose change the build must see (compiled code and build configuration)."""
_RESET = re.compile(r"--- a/(.*)")


def generic_recipe(repo: str, has: set[str], python: str, standin: tuple[str, ...] = ()) -> Recipe:
    """The recipe of a repository the harness does not know: its own runner when it has one (``tests/runtests.py``:
    Django's; ``bin/test``: sympy's), else pytest; its environment is bosun's detection (``python``, and the
    public test services its tests call, ``standin``)."""
    if "tests/runtests.py" in has:
        test_cmd, parser = DJANGO, "django"
    elif "bin/test" in has:
        test_cmd, parser = SYMPY, "sympy"
    else:
        # -v: pytest before 4.6 prints no status line for a passed test with -rA, but a verbose line
        test_cmd, parser = f"python -m {PYTEST} -v -p no:cacheprovider", "pytest_any"
    return Recipe(repo=repo, version="", test_cmd=test_cmd, parser=parser, harness_python=python, python=python,
                  standin=standin)


def recipe_or_generic(instance: Instance, has: set[str], python: str) -> Recipe:
    return recipe_for(instance.repo, instance.version) or generic_recipe(instance.repo, has, python)


def directives(recipe: Recipe, test_patch: str) -> list[str]:
    """The test runner's arguments: the test patch's files (Django: module labels)."""
    files = patched_files(test_patch)
    if recipe.parser != "django":
        return files
    labels = []
    for path in files:
        path = path.removesuffix(".py")
        path = path.removeprefix("tests/")
        labels.append(path.replace("/", "."))
    return labels


def reset_files(test_patch: str) -> list[str]:
    """The files the test patch modifies (its ``--- a/PATH`` lines; files it creates are not listed): reset to the
    base commit before it is applied."""
    return _RESET.findall(test_patch)


def prediction_files(prediction: str) -> list[str]:
    """The files a prediction names (both sides of each ``diff --git a/OLD b/NEW`` and of its ``---``/``+++``
    lines), once each: the retries' reset and ``--3way`` read their base versions from git."""
    names = re.findall(r"^diff --git a/(\S+) b/(\S+)$", prediction, re.M)
    names += [(m,) for m in re.findall(r"^(?:---|\+\+\+) [ab]/(\S+)$", prediction, re.M)]
    return list(dict.fromkeys(p for pair in names for p in pair))


def apply_script(recipe: Recipe) -> str:
    """The shell script of steps 1 and 2: the recipe's edits committed, then the prediction's apply commands, each
    after a reset, until one exits 0 (the script's exit status: 0 applied, 1 not); each attempt's exit status is
    logged."""
    lines = []
    if recipe.workspace_edits:
        lines += [*recipe.workspace_edits, EDITS_COMMIT]
    for n, cmd in enumerate(APPLY):
        if n:
            lines.append(RESET)
        lines.append(f"{cmd} {PREDICTION} && exit 0")
        lines.append(f"echo \"[{cmd}: exit $?]\"")
    return "\n".join([*lines, "exit 1"]) + "\n"


def needs_rebuild(recipe: Recipe, prediction: str) -> bool:
    """Whether the prediction changes what the recipe's build compiles."""
    if not recipe.rebuild:
        return False
    return any(BUILD_INPUTS.search(path) for path in re.findall(r"^diff --git a/.* b/(.*)$", prediction, re.M))


def runner_command(recipe: Recipe, instance: Instance) -> str:
    """The test command line: the recipe's command and variables, the test patch's files."""
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(recipe.eval_env.items()))
    args = "" if recipe.whole_suite else " ".join(shlex.quote(d) for d in directives(recipe, instance.test_patch))
    return " ".join(part for part in (env, recipe.test_cmd, args) if part)


def judging_script(recipe: Recipe, instance: Instance) -> str:
    """The script of step 4: reset, test patch, the tests between the markers (one output stream)."""
    lines = ["exec 2>&1"]
    reset = reset_files(instance.test_patch)
    if reset:
        lines.append(f"git checkout {shlex.quote(instance.base_commit)} -- {' '.join(shlex.quote(f) for f in reset)}")
    if instance.test_patch.strip():
        lines.append(f"git apply -v {TEST_PATCH}")
    lines += standins.start_lines(recipe.standin)  # started from /tmp: never the workspace's code
    lines += [f"echo '{START}'", runner_command(recipe, instance), f"echo '{END}'"]
    return "\n".join(lines) + "\n"


def statuses(recipe: Recipe, log: str) -> dict[str, str]:
    """Each test's status in a tests script's output, as the harness reads it: the part between the markers,
    or the whole output when that part names no test."""
    part = log.split(START, 1)[1].split(END, 1)[0] if START in log else ""
    return parse(recipe.parser, part) or parse(recipe.parser, log)
