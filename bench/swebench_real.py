"""SWE-bench-format instances from real projects' real fixes, judged with `bosun eval swebench` (prints JSON).

Run: ``.venv/bin/python bench/swebench_real.py [--rebuild] [--pair NAME ...] [--max-parallel N]``.

Each instance is a pair of consecutive releases of a project on PyPI whose difference is a small bug fix with a
test. The releases are their sdists turned into git repositories with one commit dated at the upload
(bench/environments.py's ``repository()``); the releases of one project are gathered into one repository (a branch
per release, ``~/.cache/bosun-bench/swebench-real/<project>``; the commits are reproducible, so the checked-in
instances name them by hash). For each pair:

- ``base_commit``: the older release's commit; ``patch``: the newer release's changes to the package's Python
  sources (the version string left alone); ``test_patch``: its changes to the test files;
- FAIL_TO_PASS / PASS_TO_PASS: found by execution, as the SWE-bench data were: the test patch's files are run (the
  command `bosun eval swebench` runs) with `bosun sandbox exec --env` in the older release's environment
  (`bosun env build`), once on base+test_patch and once on base+patch+test_patch. FAIL_TO_PASS = passing only with
  the patch, PASS_TO_PASS = passing in both; a pair without a FAIL_TO_PASS test is dropped, and so is one without
  a PASS_TO_PASS test (there the test patch alone stops the old tests from running: every test "fails to pass").

The instances are written to ``bench/data/swebench_real/instances.jsonl`` (reused unless ``--rebuild``; rows in the
published format, list fields as JSON strings). Then, on a private embedded stack (as bench/swebench.py), the same
commands a user types: ``bosun eval swebench --instances F --predictions gold`` and ``--predictions empty``. Printed:
instances attempted, environments built, gold and empty resolved, per instance the evaluation time against its
tests' time, and instances per hour (the gold pass; environments are warm from the derivation).
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

from agents.evaluation.runners import command  # noqa: E402

from agents.evaluation.swebench import patched_files  # noqa: E402
from agents.evaluation.testlogs import PASSING, parse  # noqa: E402
from bench.environments import BOSUN, CACHE, repository  # noqa: E402
from bench.swebench import bosun, free_port  # noqa: E402

INSTANCES = ROOT / "bench" / "data" / "swebench_real" / "instances.jsonl"
MIRRORS = CACHE.parent / "swebench-real"
SANDBOX_UID = "64000:64000"
MAX_PATCH_LINES = 300
"""A pair whose source change is longer than this is not a small fix: skipped."""

PAIRS = [
    # PyPI name, older release, newer release, owner/name upstream: each a small source change and a test change in
    # the sdists that gave FAIL_TO_PASS and PASS_TO_PASS tests
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
]
# Tried and left out: packaging 21.2 -> 21.3 and Werkzeug 3.0.3 -> 3.0.4 (their new tests spin on the old
# release -- Werkzeug's is a ReDoS test of parse_options_header -- and the run gave no status before the timeout);
# click 8.0.1 -> 8.0.2 (no PASS_TO_PASS); Flask 2.2.2 -> 2.2.3 and 3.0.2 -> 3.0.3 (no FAIL_TO_PASS: their tests
# changed for typing only). The sdists of itsdangerous 2.1.2, click 8.1.7, six 1.16.0 and MarkupSafe 2.0.1 carry
# no test change.

_TEST_DIRS = {"tests", "test", "testing"}
_NOISE = re.compile(r"^[-+]\s*(__version__|version)\s*=")


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                           *args], check=check, capture_output=True, text=True, stdin=subprocess.DEVNULL).stdout


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
        commits[version] = git(repo, "rev-parse", branch).strip()
    return repo, commits


def is_test(path: str) -> bool:
    parts = path.split("/")
    return bool(_TEST_DIRS & set(parts[:-1])) or parts[-1].startswith("test_") or parts[-1] == "conftest.py"


def is_source(path: str) -> bool:
    """A Python source file of the package (not docs, examples, build scripts or packaging metadata)."""
    top = path.split("/")[0]
    return (path.endswith(".py") and not is_test(path) and top not in {"docs", "examples", "artwork", "scripts"}
            and path not in {"setup.py", "conftest.py", "noxfile.py"})


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
    patch = without_version_bumps(git(repo, "diff", "--no-renames", old, new, "--", *sources)) if sources else ""
    test_patch = git(repo, "diff", "--no-renames", old, new, "--", *tests) if tests else ""
    return patch, test_patch


def env_build(repo: Path, commit: str) -> dict:
    proc = subprocess.run([BOSUN, "env", "build", "--repo", str(repo), "--ref", commit, "--json"],
                          capture_output=True, text=True, timeout=7200, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [""]
        raise RuntimeError(f"env build exited {proc.returncode}: {tail[0]}")
    return json.loads(proc.stdout)


def run_tests(repo: Path, commit: str, env_id: str, patches: list[str], test_patch: str) -> tuple[dict, float]:
    """Each test's status after applying ``patches`` at ``commit``, the tests being the test patch's files run as
    `bosun eval swebench` runs them, in a sandbox of the environment; and the tests' seconds."""
    with tempfile.TemporaryDirectory(prefix="bench-swe-real-") as tmp:
        ws = Path(tmp) / "ws"
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(repo), str(ws)], check=True)
        git(ws, "checkout", "-q", "--detach", commit)
        for n, p in enumerate(patches):
            f = Path(tmp) / f"{n}.patch"
            f.write_text(p)
            git(ws, "apply", str(f))
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", SANDBOX_UID, str(ws)], check=False)
        cmd = command("pytest", patched_files(test_patch))
        started = time.monotonic()
        proc = subprocess.run([BOSUN, "sandbox", "exec", "--env", env_id, "--workspace", str(ws), "--timeout",
                               "600", "--json", "--", "sh", "-c", cmd], capture_output=True, text=True,
                              timeout=720, stdin=subprocess.DEVNULL)
        took = time.monotonic() - started
        if proc.returncode != 0:
            raise RuntimeError(f"sandbox exec exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
        data = json.loads(proc.stdout)
        return parse("pytest", data["stdout"] + "\n" + data["stderr"]), took


def derive(name: str, old: str, new: str, owner_name: str) -> dict | None:
    """The instance of one pair of releases, or None when it is not a small fix with a failing test."""
    repo, commits = mirror(name, [old, new])
    patch, test_patch = split_diff(repo, commits[old], commits[new])
    lines = sum(1 for line in patch.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---"))
    if not patch or not test_patch or lines > MAX_PATCH_LINES:
        log(f"{name} {old}->{new}: skipped (patch {lines} lines, test patch {len(test_patch)} chars)")
        return None
    built = env_build(repo, commits[old])
    before, _ = run_tests(repo, commits[old], built["env_id"], [test_patch], test_patch)
    after, _ = run_tests(repo, commits[old], built["env_id"], [patch, test_patch], test_patch)
    f2p = sorted(t for t, s in after.items() if s in PASSING and before.get(t) not in PASSING)
    p2p = sorted(t for t, s in after.items() if s in PASSING and before.get(t) in PASSING)
    log(f"{name} {old}->{new}: {lines} patch lines, {len(f2p)} FAIL_TO_PASS, {len(p2p)} PASS_TO_PASS")
    if not f2p or not p2p:  # no PASS_TO_PASS: the test patch alone breaks the old tests (a collection error)
        return None
    return {"repo": owner_name, "instance_id": f"{owner_name.replace('/', '__')}-{new}",
            "base_commit": commits[old], "patch": patch, "test_patch": test_patch,
            "problem_statement": f"Changes between {name} {old} and {new} (see the project's changelog).",
            "version": old, "environment_setup_commit": commits[old],
            "created_at": git(repo, "log", "-1", "--format=%cI", commits[new]).strip(),
            "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p)}


def build_instances(wanted: set[str]) -> None:
    """Derive the instances of the pairs (``wanted``: only these projects, or ``PROJECT-NEWVERSION``s) into the
    instances file, replacing their rows and keeping the others; written after each pair."""
    rows = {}
    if INSTANCES.exists():
        rows = {r["instance_id"]: r for r in map(json.loads, INSTANCES.read_text().splitlines()) if r}
    INSTANCES.parent.mkdir(parents=True, exist_ok=True)
    for name, old, new, owner_name in PAIRS:
        if wanted and not wanted & {name.lower(), f"{name.lower()}-{new}"}:
            continue
        rows.pop(f"{owner_name.replace('/', '__')}-{new}", None)
        try:
            row = derive(name, old, new, owner_name)
        except (RuntimeError, subprocess.SubprocessError, OSError, ValueError) as e:
            log(f"{name} {old}->{new}: {type(e).__name__}: {e}")
            row = None
        if row is not None:
            rows[row["instance_id"]] = row
        INSTANCES.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))


def sources(rows: list[dict]) -> list[str]:
    """``--repo OWNER/NAME=PATH`` for each project, its releases' repository made (or reused) from PyPI."""
    by_repo: dict[str, tuple[str, list[str]]] = {}
    for name, old, _new, owner_name in PAIRS:
        if any(r["repo"] == owner_name and r["version"] == old for r in rows):
            by_repo.setdefault(owner_name, (name, []))[1].append(old)
    out = []
    for owner_name, (name, versions) in by_repo.items():
        repo, commits = mirror(name, versions)
        for r in rows:
            if r["repo"] == owner_name and r["base_commit"] not in commits.values():
                raise RuntimeError(f"{r['instance_id']}: {name} {r['version']} is not commit {r['base_commit']}")
        out += ["--repo", f"{owner_name}={repo}"]
    return out


def evaluate(rows: list[dict], max_parallel: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-swe-real-"))
    env = {"BOSUN_DATA_DIR": str(work / "data"), "BOSUN_TEMPORAL_PORT": str(free_port()),
           "BOSUN_TEMPORAL_UI_PORT": str(free_port()), "BOSUN_NATS_PORT": str(free_port()),
           "BOSUN_NATS_MONITOR_PORT": str(free_port()), "BOSUN_UI_PORT": str(free_port()),
           "BOSUN_WORKER_ID": f"bench-swe-real-{os.getpid()}"}
    if bosun(env, "up", timeout=120).returncode != 0:
        return {"error": "bosun up failed"}
    try:
        common = ["eval", "swebench", "--instances", str(INSTANCES), "--max-parallel", str(max_parallel),
                  *sources(rows)]
        started = time.monotonic()
        gold = bosun(env, *common, "--predictions", "gold", "--run-id", "gold", "--report", str(work / "gold.json"))
        gold_wall = time.monotonic() - started
        empty = bosun(env, *common, "--predictions", "empty", "--run-id", "empty", "--report",
                      str(work / "empty.json"))
        if not (work / "gold.json").exists() or not (work / "empty.json").exists():
            return {"error": (gold.stderr + empty.stderr)[-2000:]}
        g = json.loads((work / "gold.json").read_text())
        e = json.loads((work / "empty.json").read_text())
        timing = g["timing"]
        built = [i for i, t in timing.items() if t["environment"]]
        ratios = [t["seconds"] / t["tests_s"] for t in timing.values() if t["tests_s"]]
        return {
            "instances_attempted": len(rows), "environments_built": len(built),
            "gold_resolved": f"{len(g['summary']['resolved_ids'])}/{len(built)}",
            "gold_unresolved_ids": g["summary"]["unresolved_ids"], "gold_error_ids": g["summary"]["error_ids"],
            "empty_resolved": len(e["summary"]["resolved_ids"]),
            "empty_patch_ids": len(e["summary"]["empty_patch_ids"]),
            "gold_wall_s": round(gold_wall, 1), "max_parallel": max_parallel,
            "instances_per_hour": round(len(rows) / gold_wall * 3600, 1) if gold_wall else None,
            "per_instance": {i: {"eval_s": t["seconds"], "tests_s": t["tests_s"],
                                 "ratio": round(t["seconds"] / t["tests_s"], 2) if t["tests_s"] else None}
                             for i, t in sorted(timing.items())},
            "eval_over_tests_p50": round(statistics.median(ratios), 2) if ratios else None,
        }
    finally:
        bosun(env, "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rebuild", action="store_true", help="derive the instances again (else reuse the file)")
    ap.add_argument("--pair", action="append", default=[], help="with --rebuild: only these projects")
    ap.add_argument("--max-parallel", type=int, default=2)
    ap.add_argument("--no-eval", action="store_true", help="only build the instances")
    args = ap.parse_args()
    if args.rebuild or not INSTANCES.exists():
        build_instances({p.lower() for p in args.pair})
    rows = [json.loads(line) for line in INSTANCES.read_text().splitlines() if line.strip()]
    if args.no_eval:
        print(json.dumps({"instances": [r["instance_id"] for r in rows]}, indent=2))
        return 0
    out = evaluate(rows, args.max_parallel)
    out["instances"] = {r["instance_id"]: {"FAIL_TO_PASS": len(json.loads(r["FAIL_TO_PASS"])),
                                           "PASS_TO_PASS": len(json.loads(r["PASS_TO_PASS"]))} for r in rows}
    print(json.dumps(out, indent=2))
    return 0 if "error" not in out else 1


if __name__ == "__main__":
    sys.exit(main())
