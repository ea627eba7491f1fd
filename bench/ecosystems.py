"""Go and Rust environments on real projects: detected, built and tested through `bosun env build` and
`bosun sandbox exec --env` as a user would, and every test's status compared with the runner's own report. Prints
JSON.

Run: ``.venv/bin/python bench/ecosystems.py [--project NAME ...] [--cold]``.

The projects need nothing this network does not reach (Go's module proxy and crates.io are not reachable here):
modules and crates with no dependencies, at their newest stored revision (``fetch`` mirrors under /work/.mirror, or
``--mirrors DIR``). For each: ``build_s`` (``--cold`` removes the environment first; the base root filesystem with
Debian's toolchain is built once and not counted), ``rebuild_s`` (the same revision again: the cache),
``tests``: the detected test command in a sandbox (no network), read by environments/results.py, and
``reference``: the same tests run again with the runner's own machine-readable report (go: ``go test -v`` lines
``--- PASS``/``--- FAIL``, for what ``-json`` gave; cargo: libtest's JSON events through ``RUSTC_BOOTSTRAP=1 ...
-Z unstable-options --format json``). ``agree``: every test has the same status in both.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.results import parse_output  # noqa: E402

BOSUN = str(Path(sys.executable).parent / "bosun")
PROJECTS = [  # name, mirror directory, the reference command
    ("google/uuid", "google+uuid", "go"), ("spf13/pflag", "spf13+pflag", "go"),
    ("BurntSushi/toml", "BurntSushi+toml", "go"),
    ("cuviper/autocfg", "cuviper+autocfg", "rust"), ("alexcrichton/scoped-tls", "alexcrichton+scoped-tls", "rust"),
]
REFERENCE = {"go": "go test -v ./... 2>&1",
             "rust": "RUSTC_BOOTSTRAP=1 cargo test --workspace --no-fail-fast -- -Z unstable-options --format json "
                     "2>/dev/null"}
_GO_V = re.compile(r"^\s*--- (PASS|FAIL): (\S+)")


def bosun(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BOSUN, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def exec_in(env_id: str, ws: Path, command: str) -> dict:
    ran = bosun("sandbox", "exec", "--env", env_id, "--workspace", str(ws), "--json", "--timeout", "1200",
                "--output-cap", str(8 << 20), "--", "sh", "-c", command, timeout=1500)
    try:
        return json.loads(ran.stdout)
    except ValueError:
        return {"exit_code": None, "stdout": "", "stderr": ran.stderr}


def reference(kind: str, output: str) -> Counter:
    """(name, passed|failed) counted from the runner's own report, names as environments/results.py gives them
    without go's package prefix."""
    seen: Counter = Counter()
    if kind == "go":
        for line in output.splitlines():
            if m := _GO_V.match(line):
                seen[(m[2], "passed" if m[1] == "PASS" else "failed")] += 1
        return seen
    for line in output.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("type") == "test" and ev.get("event") in ("ok", "failed"):
            seen[(ev["name"], "passed" if ev["event"] == "ok" else "failed")] += 1
    return seen


def project(name: str, mirror: Path, kind: str, cold: bool) -> dict:
    out: dict = {"project": name}
    with tempfile.TemporaryDirectory(prefix="eco-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", "--shared", str(mirror), str(repo)], check=True)
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                                       text=True).stdout.strip()
        shown = bosun("env", "show", "--repo", str(repo), "--json", timeout=300)
        det = json.loads(shown.stdout)
        if cold and det.get("built"):
            bosun("env", "rm", det["env_id"], timeout=300)
        started = time.monotonic()
        built = bosun("env", "build", "--repo", str(repo), "--json", timeout=3600)
        out["build_s"] = round(time.monotonic() - started, 1)
        if built.returncode != 0:
            return {**out, "error": (built.stderr.strip().splitlines() or ["?"])[-1][:300]}
        env = json.loads(built.stdout)
        started = time.monotonic()
        bosun("env", "build", "--repo", str(repo), "--json", timeout=600)
        out.update(rebuild_s=round(time.monotonic() - started, 2), env_id=env["env_id"],
                   toolchain=env.get("toolchain", {}), test_command=det["spec"]["test"]["argv"])
        ws = Path(tmp) / "ws"
        shutil.copytree(repo, ws, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        subprocess.run(["chown", "-R", "1000:1000", str(ws)], check=True)
        runner = {"go": "go", "rust": "cargo"}[kind]
        started = time.monotonic()
        res = exec_in(env["env_id"], ws, " ".join(det["spec"]["test"]["argv"]))
        out["test_s"] = round(time.monotonic() - started, 1)
        report = parse_output(runner, res.get("stdout", "") + "\n" + res.get("stderr", ""), res.get("exit_code"))
        ref = exec_in(env["env_id"], ws, REFERENCE[kind])
    # go's ids are PACKAGE/Test[/subtest]: its text report names Test[/subtest]
    ours = Counter((_strip_package(tid) if kind == "go" else tid, status)
                   for status, ids in (("passed", report.passed), ("failed", report.failed)) for tid in ids)
    theirs = reference(kind, ref.get("stdout", "") + "\n" + ref.get("stderr", ""))
    out.update(exit_code=res.get("exit_code"), counts=report.counts, reference_tests=sum(theirs.values()),
               agree=ours == theirs and sum(theirs.values()) > 0,
               differ=sorted(f"{n} {s}" for n, s in (ours - theirs) + (theirs - ours))[:10])
    return out


def _strip_package(tid: str) -> str:
    """``example.com/mod/pkg/TestX/sub`` -> ``TestX/sub`` (go's test names start with Test, Example, Fuzz...)."""
    parts = tid.split("/")
    for i, part in enumerate(parts):
        if re.match(r"(Test|Example|Fuzz|Benchmark)", part):
            return "/".join(parts[i:])
    return tid


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--project", action="append", help="only these (owner/name); repeatable")
    p.add_argument("--mirrors", default="/work/.mirror", help="where the bare mirrors are (owner+name/repo)")
    p.add_argument("--cold", action="store_true", help="remove each environment first (a cold build)")
    args = p.parse_args()
    rows = []
    for name, mirror, kind in PROJECTS:
        if args.project and name not in args.project:
            continue
        path = Path(args.mirrors) / mirror / "repo"
        if not path.exists():
            rows.append({"project": name, "error": f"no mirror at {path}"})
            continue
        rows.append(project(name, path, kind, args.cold))
        print(json.dumps(rows[-1]), file=sys.stderr)
    built = sorted(r["build_s"] for r in rows if "rebuild_s" in r)
    print(json.dumps({"projects": rows, "summary": {
        "projects": len(rows), "built": len(built), "agree": sum(1 for r in rows if r.get("agree")),
        "median_build_s": built[len(built) // 2] if built else None,
        "max_rebuild_s": max((r["rebuild_s"] for r in rows if "rebuild_s" in r), default=None)}}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
