"""SWE-bench-format instances from real projects' real fixes, judged with `bosun eval swebench` (prints JSON).

Run: ``.venv/bin/python bench/swebench_real.py [--rebuild] [--pair NAME ...] [--max-parallel N] [--no-eval]``.

Each instance is a pair of consecutive releases of a project on PyPI whose difference is a small bug fix with a
test: the repositories of SWE-bench Verified (Django, sympy, Sphinx, pytest, pylint, requests, xarray, seaborn,
Flask...) under their upstream names, so that `bosun eval swebench` judges them with the harness's recipes, and a
few others (Jinja2, MarkupSafe, attrs, click, Werkzeug) that bosun judges with its own. The releases are their
sdists turned into git repositories with one commit dated at the upload (bench/environments.py's
``repository()``); the releases of one project are gathered into one repository (a branch per release,
``~/.cache/bosun-bench/swebench-real/<project>``; the commits are reproducible, so the checked-in instances name
them by hash). For each pair:

- ``base_commit``: the older release's commit (also its ``environment_setup_commit``); ``version``: its
  major.minor, as SWE-bench's version field; ``patch``: the newer release's changes to the package's Python
  sources (the version string left alone); ``test_patch``: its changes to the test files;
- FAIL_TO_PASS / PASS_TO_PASS: found by execution, as the SWE-bench data were, with bosun's evaluator itself (the
  same environments, commands and parsers): `bosun eval swebench --logs` once with a prediction that changes
  nothing (base + test patch) and once with the gold patch; FAIL_TO_PASS = passing only with the patch,
  PASS_TO_PASS = passing in both. A pair without a FAIL_TO_PASS or a PASS_TO_PASS test is dropped.

The instances are written to ``bench/data/swebench_real/instances.jsonl`` (reused unless ``--rebuild``; rows in
the published format, list fields as JSON strings). Then, on the same private embedded stack, the commands a user
types: ``bosun eval swebench --instances F --predictions gold`` and ``--predictions empty``, and a prediction
that changes nothing (base + test patch: must not resolve). Printed: the sandbox backend the stack's worker chose
(``BOSUN_SANDBOX_BACKEND=bwrap`` or ``docker`` picks it), instances, environments built, gold and empty
resolved, per instance two costs against its tests' time, each with its share of the fetch ahead (its source's
fetch seconds over that source's instances):

- ``eval_s`` (``ratio``, ``over_2x``): its workflow's seconds, its wait for a judging slot left out: all the
  work done for it, including its preparation while another instance was judged (``phases``: where it went;
  ``waited_s``, ``set_up_ahead``: an instance started ahead, its workspace and sandbox set up while it waited);
- ``held_s`` (``held_ratio``, ``held_over_2x``): the seconds it held a judging slot (``slot_s``: from its
  start with one, or its go, to its end, as the evaluation saw it), the evaluation's time it took, plus its
  share. One at a time (``--max-parallel 1``) the slots' seconds add up to the evaluation's wall time after
  the fetch ahead (the shares add up to the fetch activities' seconds, which may overlap across sources).

Also: how many instances waited, started ahead, and instances per hour (the gold pass; environments are warm
from the derivation); ``left_behind``: docker volumes and containers the runs left (0 expected). The gold and
base + test patch logs are kept (``LOGS``) for bench/swebench_conformance.py, which judges them again with the
reference harness's own code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.environments import CACHE, repository  # noqa: E402
from bench.swebench import Stack as PrivateStack  # noqa: E402
from bench.swebench import bosun  # noqa: E402
from evaluation.harness import generic_recipe, statuses  # noqa: E402
from evaluation.recipes import recipe_for  # noqa: E402
from evaluation.testlogs import PASSING  # noqa: E402

INSTANCES = ROOT / "bench" / "data" / "swebench_real" / "instances.jsonl"
MIRRORS = CACHE.parent / "swebench-real"
LOGS = CACHE.parent / "swebench-real-logs"
"""The last evaluation's per-instance logs (gold, and base + test patch), for bench/swebench_conformance.py."""
MAX_PATCH_LINES = 300
"""A pair whose source change is longer than this is not a small fix: skipped."""
NOOP = ("diff --git a/.bosun-noop b/.bosun-noop\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n"
        "+++ b/.bosun-noop\n@@ -0,0 +1 @@\n+nothing\n")
"""A prediction that changes nothing the tests see: judging it runs base + test patch."""

PAIRS = [
    # PyPI name, older release, newer release, owner/name upstream
    ("Jinja2", "3.1.5", "3.1.6", "pallets/jinja"),
    ("Jinja2", "3.1.3", "3.1.4", "pallets/jinja"),
    ("Jinja2", "3.1.2", "3.1.3", "pallets/jinja"),
    ("Jinja2", "3.0.1", "3.0.2", "pallets/jinja"),
    ("MarkupSafe", "2.1.4", "2.1.5", "pallets/markupsafe"),
    ("MarkupSafe", "2.1.2", "2.1.3", "pallets/markupsafe"),
    ("attrs", "21.1.0", "21.2.0", "python-attrs/attrs"),
    ("Flask", "2.2.4", "2.2.5", "pallets/flask"),
    ("Flask", "2.3.2", "2.3.3", "pallets/flask"),
    ("click", "8.0.3", "8.0.4", "pallets/click"),
    ("Werkzeug", "2.3.6", "2.3.7", "pallets/werkzeug"),
    ("Django", "3.0.1", "3.0.2", "django/django"),
    ("Django", "3.0.5", "3.0.6", "django/django"),
    ("Django", "3.1.4", "3.1.5", "django/django"),
    ("Django", "3.2.1", "3.2.2", "django/django"),
    ("Django", "3.2.2", "3.2.3", "django/django"),
    ("Django", "3.2.5", "3.2.6", "django/django"),
    ("Django", "3.2.7", "3.2.8", "django/django"),
    ("Django", "4.0.4", "4.0.5", "django/django"),
    ("Django", "4.0.5", "4.0.6", "django/django"),
    ("Django", "4.2.3", "4.2.4", "django/django"),
    ("sympy", "1.5", "1.5.1", "sympy/sympy"),
    ("sympy", "1.10", "1.10.1", "sympy/sympy"),
    ("sympy", "1.11", "1.11.1", "sympy/sympy"),
    ("sympy", "1.13.0", "1.13.1", "sympy/sympy"),
    ("Sphinx", "3.3.0", "3.3.1", "sphinx-doc/sphinx"),
    ("Sphinx", "4.3.0", "4.3.1", "sphinx-doc/sphinx"),
    ("Sphinx", "5.2.0", "5.2.1", "sphinx-doc/sphinx"),
    ("Sphinx", "6.2.0", "6.2.1", "sphinx-doc/sphinx"),
    ("Sphinx", "7.1.0", "7.1.1", "sphinx-doc/sphinx"),
    ("Sphinx", "7.1.1", "7.1.2", "sphinx-doc/sphinx"),
    ("pytest", "5.2.3", "5.2.4", "pytest-dev/pytest"),
    ("pytest", "6.1.0", "6.1.1", "pytest-dev/pytest"),
    ("pytest", "6.2.2", "6.2.3", "pytest-dev/pytest"),
    ("pytest", "7.1.0", "7.1.1", "pytest-dev/pytest"),
    ("pytest", "8.0.1", "8.0.2", "pytest-dev/pytest"),
    ("requests", "2.20.0", "2.20.1", "psf/requests"),
    ("requests", "2.27.0", "2.27.1", "psf/requests"),
    ("requests", "2.30.0", "2.31.0", "psf/requests"),
    ("xarray", "2023.4.0", "2023.4.1", "pydata/xarray"),
    ("astropy", "4.3", "4.3.1", "astropy/astropy"),
    ("astropy", "5.0.2", "5.0.3", "astropy/astropy"),
    ("scikit-learn", "0.22.1", "0.22.2.post1", "scikit-learn/scikit-learn"),
    ("scikit-learn", "1.3.0", "1.3.1", "scikit-learn/scikit-learn"),
    ("matplotlib", "3.7.2", "3.7.3", "matplotlib/matplotlib"),
]
# Tried and left out: packaging 21.2 -> 21.3 and Werkzeug 3.0.3 -> 3.0.4 (their new tests spin on the old
# release -- Werkzeug's is a ReDoS test of parse_options_header -- and the run gave no status before the timeout);
# click 8.0.1 -> 8.0.2 (no PASS_TO_PASS); Flask 2.2.2 -> 2.2.3 and 3.0.2 -> 3.0.3 (no FAIL_TO_PASS: their tests
# changed for typing only). The sdists of itsdangerous 2.1.2, click 8.1.7, six 1.16.0 and MarkupSafe 2.0.1 carry
# no test change. sympy 1.6.1 -> 1.6.2: its test files (test_matrices and test_polytools, cache off) take more
# than the harness's 1800 s on this machine. astropy 4.0.2 -> 4.0.3: 4.0 is no version the harness has a recipe
# for (its neighbour's pins break it: numpy.asscalar). pylint: the sdists of the versions SWE-bench Verified has
# (2.13-2.15) carry no tests, and its fixes are tested through tests/functional/ lint inputs. seaborn: every
# 0.11-0.13 release is a 360-2000 line change. astropy 4.3 -> 4.3.1: the 4.3 release's build requires
# jinja2==2.10.3 without a markupsafe pin, and the markupsafe of the harness's date has no soft_unicode: it does
# not build, for the harness either (SWE-bench's "4.3" instances are commits of 2022, after 5.0, whose build
# pins markupsafe 2.0.1).
# scikit-learn 0.20.3 -> 0.20.4 and 0.21.2 -> 0.21.3: their sdists' generated C sources differ (patches of 84,000
# lines and more).

_TEST_DIRS = {"tests", "test", "testing"}
_NOISE = re.compile(r"^[-+]\s*(__version__|version|VERSION|version_info|__version_info__|__version_tuple__|"
                    r"__build__)\s*=")
_NOT_SOURCE = {"docs", "doc", "examples", "artwork", "scripts", "bin", "extra", "extras", "release", "tools",
               "tutorials", "plot_types", "benchmarks", "asv_bench", "galleries", "ci", "requirements",
               ".github", ".circleci", ".azure-pipelines", "changelog", "changes"}
SYMPY_BIN_TEST = """#!/usr/bin/env python
# bosun's bench: sympy's sdists leave out the repository's bin/test, which the SWE-bench harness runs. This stands
# in for it: the same options it is given (-C: no cache; --verbose) and sympy's own test runner (its output).
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = [a for a in sys.argv[1:] if a not in ("-C", "--no-cache", "--verbose", "-v")]
if "-C" in sys.argv or "--no-cache" in sys.argv:
    os.environ["SYMPY_USE_CACHE"] = "no"
try:
    from sympy.testing.runtests import test  # noqa: E402
except ImportError:  # before 1.6
    from sympy.utilities.runtests import test  # noqa: E402

sys.exit(0 if test(*args, verbose="--verbose" in sys.argv or "-v" in sys.argv) else 1)
"""
SKLEARN_GITIGNORE = """# bosun's bench: scikit-learn's sdists leave out the repository's .gitignore; these are
# its lines for what a build makes, so that the mirror's workspaces look like the
# repository's (a build product it does not name still goes into workspaces, listed
# as not ignored: environments/, seed_unignored).
*.pyc
*.so
*.pyd
build
scikit_learn.egg-info/
"""
ADDED_FILES = {"sympy": {"bin/test": (SYMPY_BIN_TEST, 0o755)},
               "scikit-learn": {".gitignore": (SKLEARN_GITIGNORE, 0o644)}}
"""Files a project's repository has and its sdists do not, put in each release's commit (see SYMPY_BIN_TEST)."""


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                           *args], check=check, capture_output=True, stdin=subprocess.DEVNULL
                          ).stdout.decode("utf-8", "surrogateescape")


def mirror(name: str, versions: list[str]) -> tuple[Path, dict[str, str]]:
    """One repository holding the releases of ``name`` (branch ``release/V`` each); their commits by version."""
    repo = MIRRORS / name.lower()
    if not (repo / ".git").is_dir():
        repo.mkdir(parents=True, exist_ok=True)
        git(repo, "init", "-q", "-b", "main")
    commits = {}
    for version in versions:
        branch = f"release/{version}"
        if not git(repo, "rev-parse", "--verify", "--quiet", branch, check=False).strip():
            git(repo, "fetch", "-q", str(repository(name, version)), f"main:{branch}")
        add_files(repo, branch, ADDED_FILES.get(name.lower(), {}))
        commits[version] = git(repo, "rev-parse", branch).strip()
    return repo, commits


def add_files(repo: Path, branch: str, files: dict[str, tuple[str, int]]) -> None:
    """Commit ``files`` (path -> text, mode) on ``branch`` when it lacks them, dated as the branch's commit (so the
    commit is the same on every machine)."""
    missing = {p: f for p, f in files.items() if not git(repo, "ls-tree", branch, "--", p).strip()}
    if not missing:
        return
    date = git(repo, "log", "-1", "--format=%cI", branch).strip()
    with tempfile.TemporaryDirectory(prefix="bench-add-") as tmp:
        work = Path(tmp) / "wt"
        git(repo, "worktree", "add", "-q", str(work), branch)
        try:
            for path, (text, mode) in missing.items():
                (work / path).parent.mkdir(parents=True, exist_ok=True)
                (work / path).write_text(text)
                (work / path).chmod(mode)
            git(work, "add", "-f", *missing)
            subprocess.run(["git", "-C", str(work), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                            "commit", "-q", "-m", f"bench: add {', '.join(missing)}"], check=True,
                           env={**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
                           capture_output=True)
        finally:
            git(repo, "worktree", "remove", "--force", str(work), check=False)


def is_test(path: str) -> bool:
    parts = path.split("/")
    return bool(_TEST_DIRS & set(parts[:-1])) or parts[-1].startswith("test_") or parts[-1] == "conftest.py"


def is_source(path: str) -> bool:
    """A file of the package (its code, templates, compiled sources; not tests, docs, examples, tools or packaging
    metadata), as a fix's patch holds it."""
    parts = path.split("/")
    return (not is_test(path) and parts[0] not in _NOT_SOURCE and "/" in path and not parts[0].endswith(".egg-info")
            and parts[-1] not in {"PKG-INFO", "SOURCES.txt"})


def without_version_bumps(diff: str) -> str:
    """``diff`` minus the hunks that change nothing but a version string (and files left with no hunk)."""
    out: list[str] = []
    for chunk in re.split(r"(?m)^(?=diff --git )", diff):
        if not chunk:
            continue
        head, *hunks = re.split(r"(?m)^(?=@@ )", chunk)
        kept = [h for h in hunks if not all(_NOISE.match(line) for line in h.splitlines()[1:]
                                            if line[:1] in "+-")]
        if kept or not hunks:
            out.append(head + "".join(kept))
    return "".join(out)


def split_diff(repo: Path, old: str, new: str) -> tuple[str, str]:
    """(patch, test_patch): the Python source changes and the test changes (deleted test files left out: the test
    runner is given every file the test patch names)."""
    changed = git(repo, "diff", "--no-renames", "--name-status", old, new).splitlines()
    sources = [p for s, p in (line.split("\t", 1) for line in changed) if is_source(p)]
    tests = [p for s, p in (line.split("\t", 1) for line in changed) if is_test(p) and s != "D"]
    patch = without_version_bumps(git(repo, "diff", "--binary", "--no-renames", old, new, "--", *sources)) \
        if sources else ""
    test_patch = git(repo, "diff", "--binary", "--no-renames", old, new, "--", *tests) if tests else ""
    return patch, test_patch


def version_of(release: str) -> str:
    """SWE-bench's version field of a release: its major.minor (``3.0.5`` -> ``3.0``)."""
    return ".".join(release.split(".")[:2])


def candidate(name: str, old: str, new: str, owner_name: str) -> dict | None:
    """The instance of one pair of releases without its tests lists, or None when it is not a small fix."""
    repo, commits = mirror(name, [old, new])
    patch, test_patch = split_diff(repo, commits[old], commits[new])
    lines = sum(1 for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
    if not patch or not test_patch or lines > MAX_PATCH_LINES:
        log(f"{name} {old}->{new}: skipped (patch {lines} lines, test patch {len(test_patch)} chars)")
        return None
    return {"repo": owner_name, "instance_id": f"{owner_name.replace('/', '__')}-{new}",
            "base_commit": commits[old], "patch": patch, "test_patch": test_patch,
            "problem_statement": f"Changes between {name} {old} and {new} (see the project's changelog).",
            "version": version_of(old), "environment_setup_commit": commits[old],
            "created_at": git(repo, "log", "-1", "--format=%cI", commits[new]).strip(),
            "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]"}


class Stack(PrivateStack):
    """The bench's private stack, for its `bosun eval` runs."""

    def __init__(self) -> None:
        super().__init__("swe-real")

    def judge(self, rows: list[dict], predictions: str, run_id: str, max_parallel: int) -> tuple[dict, Path, float]:
        """`bosun eval swebench` on ``rows``: (the report, the logs folder, wall seconds)."""
        path = self.work / f"{run_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        report, logs = self.work / f"{run_id}.json", self.work / f"{run_id}-logs"
        started = time.monotonic()
        proc = bosun(self.env, "eval", "swebench", "--instances", str(path), "--predictions", predictions,
                     "--max-parallel", str(max_parallel), "--run-id", run_id, "--report", str(report), "--logs",
                     str(logs), *sources(rows), timeout=6 * 3600)
        wall = time.monotonic() - started
        if not report.exists():
            raise RuntimeError(f"bosun eval swebench ({run_id}) wrote no report: {proc.stderr[-2000:]}")
        return json.loads(report.read_text()), logs, wall


def statuses_in(logs: Path, row: dict) -> dict[str, str]:
    """Each test's status in an instance's test output, read by the parser its recipe names."""
    out = logs / row["instance_id"] / "test_output.txt"
    recipe = recipe_for(row["repo"], row["version"]) or generic_recipe(row["repo"], set(), "")
    return statuses(recipe, out.read_text()) if out.exists() else {}


def derive(stack: Stack, rows: list[dict], max_parallel: int) -> list[dict]:
    """FAIL_TO_PASS / PASS_TO_PASS of each candidate, found by the evaluator; candidates without both dropped."""
    _, before_logs, _ = stack.judge(rows, noop_predictions(stack, rows), "derive-before", max_parallel)
    after, after_logs, _ = stack.judge(rows, "gold", "derive-after", max_parallel)
    kept = []
    for row in rows:
        if row["instance_id"] in after["errors"]:
            log(f"{row['instance_id']}: {after['errors'][row['instance_id']]}")
            continue
        before, now = statuses_in(before_logs, row), statuses_in(after_logs, row)
        f2p = sorted(t for t, s in now.items() if s in PASSING and before.get(t) not in PASSING)
        p2p = sorted(t for t, s in now.items() if s in PASSING and before.get(t) in PASSING)
        log(f"{row['instance_id']}: {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS")
        if f2p and p2p:  # no PASS_TO_PASS: the test patch alone stops the old tests from running
            kept.append({**row, "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p)})
    return kept


def build_instances(stack: Stack, wanted: set[str], max_parallel: int) -> None:
    """Derive the instances of the pairs (``wanted``: only these projects, or ``PROJECT-NEWVERSION``s) into the
    instances file, replacing their rows and keeping the others."""
    rows = {}
    if INSTANCES.exists():
        rows = {r["instance_id"]: r for r in map(json.loads, INSTANCES.read_text().splitlines()) if r}
    todo = []
    for name, old, new, owner_name in PAIRS:
        if wanted and not wanted & {name.lower(), f"{name.lower()}-{new}"}:
            continue
        rows.pop(f"{owner_name.replace('/', '__')}-{new}", None)
        try:
            row = candidate(name, old, new, owner_name)
        except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
            log(f"{name} {old}->{new}: {type(e).__name__}: {e}")
            row = None
        if row is not None:
            todo.append(row)
    for row in derive(stack, todo, max_parallel) if todo else []:
        rows[row["instance_id"]] = row
    INSTANCES.parent.mkdir(parents=True, exist_ok=True)
    INSTANCES.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))


def sources(rows: list[dict]) -> list[str]:
    """``--repo OWNER/NAME=PATH`` for each project, its releases' repository made (or reused) from PyPI."""
    by_repo: dict[str, tuple[str, list[str]]] = {}
    for name, old, _new, owner_name in PAIRS:
        if any(r["repo"] == owner_name and r["version"] == version_of(old) for r in rows):
            by_repo.setdefault(owner_name, (name, []))[1].append(old)
    out = []
    for owner_name, (name, versions) in by_repo.items():
        repo, commits = mirror(name, versions)
        for r in rows:
            if r["repo"] == owner_name and r["base_commit"] not in commits.values():
                raise RuntimeError(f"{r['instance_id']}: {name} {r['version']} is not a commit of {repo}")
        out += ["--repo", f"{owner_name}={repo}"]
    return out


def noop_predictions(stack: Stack, rows: list[dict]) -> str:
    path = stack.work / "noop-predictions.jsonl"
    path.write_text("".join(json.dumps({"instance_id": r["instance_id"], "model_name_or_path": "noop",
                                        "model_patch": NOOP}) + "\n" for r in rows))
    return str(path)


def keep_logs(logs: Path, name: str) -> None:
    """A run's logs kept for bench/swebench_conformance.py (``LOGS/<name>/<instance_id>``): each instance judged
    replaces its own folder, so that a run of a subset (``--only``) leaves the other instances' logs as they were."""
    dest = LOGS / name
    dest.mkdir(parents=True, exist_ok=True)
    for judged in logs.iterdir():
        shutil.rmtree(dest / judged.name, ignore_errors=True)
        shutil.copytree(judged, dest / judged.name)


def docker_leftovers() -> dict[str, set[str]]:
    """The docker engine's volumes and containers (after the runs, those that are new were left behind: every
    sandbox and build is removed with its anonymous volumes)."""
    def names(*cmd: str) -> set[str]:
        return set(subprocess.run(["docker", *cmd], capture_output=True, text=True, check=True).stdout.split())
    return {"docker_volumes": names("volume", "ls", "-q"), "containers": names("ps", "-aq")}


def ratio_p50(timing: dict[str, dict], field: str) -> float | None:
    """The median of ``field`` over the tests' seconds."""
    ratios = [t[field] / t["tests_s"] for t in timing.values()]
    return round(statistics.median(ratios), 2) if ratios else None


def evaluate(stack: Stack, rows: list[dict], max_parallel: int) -> dict:
    gold, gold_logs, gold_wall = stack.judge(rows, "gold", "gold", max_parallel)
    empty, _, _ = stack.judge(rows, "empty", "empty", max_parallel)
    noop, noop_logs, _ = stack.judge(rows, noop_predictions(stack, rows), "noop", max_parallel)
    keep_logs(gold_logs, "gold")
    keep_logs(noop_logs, "noop")
    # an instance's cost, with its share of fetching its source's commits ahead: its own workflow's seconds (its
    # work, part of it while another instance was judged) and the seconds it held a judging slot (the
    # evaluation's time it took)
    timing = {i: {**t, "seconds": round(t["seconds"] + t.get("fetch_share_s", 0.0), 2),
                  "held_s": round(t.get("slot_s", 0.0) + t.get("fetch_share_s", 0.0), 2)}
              for i, t in gold["timing"].items()}
    built = [i for i, t in timing.items() if t["environment"]]
    tested = {i: t for i, t in timing.items() if t["tests_s"]}
    by_repo: dict[str, dict[str, int]] = {}
    for r in rows:
        tally = by_repo.setdefault(r["repo"], {"instances": 0, "gold_resolved": 0})
        tally["instances"] += 1
        tally["gold_resolved"] += r["instance_id"] in gold["summary"]["resolved_ids"]
    return {
        "instances_attempted": len(rows), "environments_built": len(built),
        "gold_resolved": f"{len(gold['summary']['resolved_ids'])}/{len(built)}",
        "gold_unresolved_ids": gold["summary"]["unresolved_ids"], "gold_errors": gold["errors"],
        "empty_resolved": len(empty["summary"]["resolved_ids"]),
        "base_and_test_patch_resolved": len(noop["summary"]["resolved_ids"]),
        "empty_patch_ids": len(empty["summary"]["empty_patch_ids"]), "by_repository": by_repo,
        "gold_wall_s": round(gold_wall, 1), "max_parallel": max_parallel,
        "fetch_ahead_s": gold.get("fetch_ahead_s", 0.0),
        "instances_per_hour": round(len(rows) / gold_wall * 3600, 1) if gold_wall else None,
        "per_instance": {i: {"eval_s": t["seconds"], "held_s": t["held_s"], "tests_s": t["tests_s"],
                             "ratio": round(t["seconds"] / t["tests_s"], 2) if t["tests_s"] else None,
                             "held_ratio": round(t["held_s"] / t["tests_s"], 2) if t["tests_s"] else None,
                             "fetch_share_s": t.get("fetch_share_s", 0.0),
                             "waited_s": t.get("waited_s", 0.0), "started_ahead": t.get("started_ahead", False),
                             "set_up_ahead": t.get("set_up_ahead", False),
                             "phases": t.get("phases", {})}
                         for i, t in sorted(timing.items())},
        "eval_over_tests_p50": ratio_p50(tested, "seconds"),
        "over_2x": sorted(i for i, t in tested.items() if t["seconds"] > 2 * t["tests_s"]),
        "held_over_tests_p50": ratio_p50(tested, "held_s"),
        "held_over_2x": sorted(i for i, t in tested.items() if t["held_s"] > 2 * t["tests_s"]),
        "started_ahead": sum(1 for t in timing.values() if t.get("started_ahead")),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rebuild", action="store_true", help="derive the instances again (else reuse the file)")
    ap.add_argument("--pair", action="append", default=[], help="with --rebuild: only these projects")
    ap.add_argument("--max-parallel", type=int, default=2)
    ap.add_argument("--no-eval", action="store_true", help="only build the instances")
    ap.add_argument("--only", action="append", default=[],
                    help="evaluate only the instances whose id starts with this (e.g. pallets__jinja); repeatable")
    args = ap.parse_args()
    before = docker_leftovers()
    with Stack() as stack:
        if args.rebuild or not INSTANCES.exists():
            build_instances(stack, {p.lower() for p in args.pair}, args.max_parallel)
        rows = [json.loads(line) for line in INSTANCES.read_text().splitlines() if line.strip()]
        rows = [r for r in rows if not args.only or r["instance_id"].startswith(tuple(args.only))]
        if not rows:
            ap.error(f"no instance's id starts with {' or '.join(args.only)}")
        if args.no_eval:
            print(json.dumps({"instances": [r["instance_id"] for r in rows]}, indent=2))
            return 0
        out = {"sandbox_backend": stack.sandbox_backend(), **evaluate(stack, rows, args.max_parallel)}
    out["instances"] = {r["instance_id"]: {"FAIL_TO_PASS": len(json.loads(r["FAIL_TO_PASS"])),
                                           "PASS_TO_PASS": len(json.loads(r["PASS_TO_PASS"]))} for r in rows}
    out["left_behind"] = {what: len(names - before[what]) for what, names in docker_leftovers().items()}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
