"""Environments benchmark: real projects at historical revisions, built and tested through `bosun env build` and
`bosun sandbox exec --env` exactly as an external benchmark would. Prints JSON.

Run: ``.venv/bin/python bench/environments.py [--project NAME ...] [--cold] [--no-reference] [--starts N]``.

Each project is a release's sdist from PyPI turned into a git repository whose one commit carries the release's
upload date (``~/.cache/bosun-bench/envrepos``; BOSUN_BENCH_CACHE overrides), so "the repository at a historical
commit" is what bosun sees: no configuration is added to any of them. For each project:

- ``build_s``: the first `bosun env build` (``--cold`` removes the environment first; the base root filesystems
  are built once and not counted), ``rebuild_s``: a second `bosun env build` of the same revision (cached);
- ``image_mb``/``layer_mb``: the docker image and its own layer over the base; ``bwrap_mb``: the environment's
  directory for bwrap (the base's root filesystem is shared);
- ``sandbox``: the project's test files (all of them, or a named selection for the big suites) run with
  `bosun sandbox exec --env ID --workspace CHECKOUT --json -- python -m pytest ...` (network off, read-only root,
  unprivileged uid...);
- ``reference``: the same tests in the same image run by plain docker as root, with a writable root file system
  and docker's defaults (no bosun rules; no network: this machine reaches only package registries): what the
  tests give without bosun's sandbox. ``kept`` = tests passing in the reference that also pass in the sandbox /
  tests passing in the reference (the goal: >= 0.95). ``pass_rate`` = passed / (passed + failed) in the sandbox.

``starts``: sandbox start-up (acquire -> first answer) of the plain image vs an environment, both backends, and
for docker an environment's sandbox with network (``docker_network_ms``: ``bosun eval swebench --network``, its
routes and packet filter set at each start).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from environments.results import parse_pytest_output  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BOSUN = str(Path(sys.executable).parent / "bosun")
CACHE = Path(os.environ.get("BOSUN_BENCH_CACHE", Path.home() / ".cache" / "bosun-bench")) / "envrepos"

PROJECTS = [
    # name, version, test selection (None: the detected command's own paths), per-run timeout (s)
    ("requests", "2.22.0", None, 900),
    ("Flask", "1.1.1", ["tests"], 900),
    ("click", "8.1.8", None, 900),
    ("attrs", "19.3.0", None, 900),
    ("Jinja2", "3.1.3", None, 900),
    ("sympy", "1.5", ["sympy/core/tests", "sympy/sets/tests", "sympy/logic/tests", "sympy/ntheory/tests"], 1800),
    ("pytest", "5.3.2", ["testing/test_mark.py", "testing/test_collection.py", "testing/python/fixtures.py",
                         "testing/test_assertion.py", "testing/test_runner.py"], 1800),
    ("pylint", "2.4.4", ["tests/unittest_lint.py", "tests/unittest_checker_format.py",
                         "tests/unittest_checker_variables.py", "tests/test_functional.py"], 1800),
    ("xarray", "0.14.1", ["xarray/tests/test_dataset.py", "xarray/tests/test_dataarray.py",
                          "xarray/tests/test_variable.py"], 1800),
    ("astropy", "4.0", ["astropy/units/tests", "astropy/coordinates/tests/test_angles.py",
                        "astropy/table/tests/test_table.py"], 2400),
    ("Sphinx", "2.3.0", ["tests/test_util_inspect.py", "tests/test_build_html.py", "tests/test_markup.py",
                         "tests/test_domain_py.py"], 1800),
    ("seaborn", "0.10.0", ["seaborn/tests/test_distributions.py", "seaborn/tests/test_categorical.py",
                           "seaborn/tests/test_regression.py"], 1800),
]


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def sdist(name: str, version: str) -> tuple[str, str]:
    """(URL, upload time) of the release's sdist, from PyPI's simple JSON index (PEP 691/700); nothing of it is
    run on this host."""
    req = urllib.request.Request(f"https://pypi.org/simple/{name.lower()}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        data = json.load(r)
    wanted = {f"{name}-{version}.tar.gz".lower(), f"{name.lower()}-{version}.tar.gz",
              f"{name.replace('-', '_')}-{version}.tar.gz".lower()}
    found = [f for f in data["files"] if f["filename"].lower() in wanted]
    if not found:
        raise RuntimeError(f"{name} {version} has no .tar.gz sdist on PyPI")
    return found[0]["url"], found[0]["upload-time"]


def repository(name: str, version: str) -> Path:
    """The release as a git repository with one commit dated at its upload (made once, cached)."""
    repo = CACHE / f"{name.lower()}-{version}"
    if (repo / ".git").is_dir():
        return repo
    CACHE.mkdir(parents=True, exist_ok=True)
    url, date = sdist(name, version)
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "sdist.tar.gz"
        with urllib.request.urlopen(url, timeout=300) as r, open(archive, "wb") as f:
            shutil.copyfileobj(r, f)
        unpacked = Path(tmp) / "src"
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        top = next(p for p in unpacked.iterdir() if p.is_dir())
        shutil.move(str(top), repo)
    env = {**os.environ, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    for cmd in (["init", "-q", "-b", "main"], ["add", "-A", "-f"], ["commit", "-q", "-m", f"{name} {version}"]):
        subprocess.run(git + cmd, check=True, env=env, stdin=subprocess.DEVNULL)
    return repo


def bosun_json(*args: str, timeout: float) -> tuple[int, dict | list | None, str, float]:
    started = time.monotonic()
    proc = subprocess.run([BOSUN, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    took = time.monotonic() - started
    try:
        data = json.loads(proc.stdout) if proc.stdout.strip() else None
    except ValueError:
        data = None
    return proc.returncode, data, proc.stderr, took


def checkout(repo: Path, dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    subprocess.run(["git", "clone", "-q", str(repo), str(dest)], check=True, stdin=subprocess.DEVNULL)
    return dest


def pytest_cmd(test: dict, selection: list[str] | None) -> list[str]:
    """The detected test command (runner and options) on ``selection`` (default: its own paths); pytest on the
    selection when the project's own runner was detected (its output is not parsed here)."""
    argv = test["argv"] if test["kind"] == "pytest" else ["python", "-m", "pytest"]
    return [*argv, "-rfEsxXp", "-q", "-p", "no:cacheprovider",
            *(selection if selection is not None else test["paths"])]


def summarize(output: str, exit_code: int | None) -> dict:
    report = parse_pytest_output(output, exit_code)
    return {"exit_code": exit_code, "summary": report.summary, "passed": len(report.passed),
            "failed": len(report.failed), "passed_ids": report.passed, "failed_ids": report.failed}


def run_sandbox(env_id: str, ws: Path, cmd: list[str], timeout: float, backend: str = "docker") -> dict:
    rc, data, err, took = bosun_json("sandbox", "exec", "--env", env_id, "--workspace", str(ws), "--backend",
                                     backend, "--timeout", str(timeout), "--json", "--", *cmd, timeout=timeout + 120)
    if not isinstance(data, dict):
        return {"error": f"sandbox exec exited {rc}: {err.strip()[-500:]}"}
    out = summarize(data["stdout"] + "\n" + data["stderr"], None if data["timed_out"] else data["exit_code"])
    out["duration_s"] = round(took, 1)
    out["pass_rate"] = round(out["passed"] / (out["passed"] + out["failed"]), 4) if out["passed"] else 0.0
    return out


def run_reference(image: str, ws: Path, cmd: list[str], timeout: float) -> dict:
    """The same tests in the same image with plain docker: root, a writable root file system, docker's default
    capabilities and seccomp, no resource limits; no network either (this machine reaches nothing but package
    registries, so tests that need the internet fail everywhere here -- with a network they only wait longer)."""
    started = time.monotonic()
    proc = subprocess.run(["docker", "run", "--rm", "--network", "none", "--label", "bosun.sandbox=reference",
                           "--user", "0:0", "-v", f"{ws}:/workspace",
                           "-w", "/workspace",
                           "-e", "HOME=/root", image, "timeout", str(int(timeout)), *cmd], capture_output=True,
                          text=True, timeout=timeout + 120, stdin=subprocess.DEVNULL)
    out = summarize(proc.stdout + "\n" + proc.stderr, proc.returncode if proc.returncode != 124 else None)
    out["duration_s"] = round(time.monotonic() - started, 1)
    return out


def project(name: str, version: str, selection: list[str] | None, timeout: float, args: argparse.Namespace) -> dict:
    result: dict = {"project": name, "version": version}
    repo = repository(name, version)
    result["commit_date"] = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%cI"], text=True,
                                           capture_output=True).stdout.strip()
    _rc, shown, _err, _t = bosun_json("env", "show", "--repo", str(repo), "--json", timeout=120)
    if not isinstance(shown, dict):
        result["error"] = f"env show failed: {_err.strip()[-300:]}"
        return result
    result["detected_python"] = shown["spec"]["python"]
    if args.cold and shown.get("built"):
        subprocess.run([BOSUN, "env", "rm", shown["env_id"]], capture_output=True)
    rc, built, err, took = bosun_json("env", "build", "--repo", str(repo), "--json", timeout=7200)
    if rc != 0 or not isinstance(built, dict):
        result["error"] = f"env build exited {rc}: {err.strip().splitlines()[-1] if err.strip() else ''}"
        result["build_log_tail"] = err.strip().splitlines()[-15:]
        return result
    result.update(env_id=built["env_id"], python=built["python"], test_command=built["test_command"],
                  cached_first=built["cached"], build_s=round(took, 1))
    _rc, again, _err, took2 = bosun_json("env", "build", "--repo", str(repo), "--json", timeout=600)
    result["rebuild_s"] = round(took2, 2)
    result["rebuild_cached"] = bool(isinstance(again, dict) and again.get("cached"))
    _rc, listed, _err, _t = bosun_json("env", "list", "--json", timeout=120)
    for row in listed or []:
        if row["env_id"] == built["env_id"]:
            result["image_mb"] = row["size_mb"].get("docker_image")
            result["layer_mb"] = row["size_mb"].get("docker_layer")
            result["bwrap_mb"] = row["size_mb"].get("bwrap")
            result["first_build_s"] = row["build_s"]
    cmd = pytest_cmd(shown["spec"]["test"], selection)
    result["tests"] = " ".join(cmd)
    work = Path(tempfile.mkdtemp(prefix=f"bench-env-{name.lower()}-"))
    try:
        ws = checkout(repo, work / "sandbox")
        if os.geteuid() == 0:  # sandboxes run as the workspace's owner: the unprivileged sandbox uid
            subprocess.run(["chown", "-R", "64000:64000", str(ws)], check=False)
        result["sandbox"] = run_sandbox(built["env_id"], ws, cmd, timeout, args.backend)
        if not args.no_reference:
            ref_ws = checkout(repo, work / "reference")
            result["reference"] = run_reference(built["backend_refs"]["docker"], ref_ws, cmd, timeout)
            ref_passed = set(result["reference"].get("passed_ids", []))
            kept = ref_passed & set(result["sandbox"].get("passed_ids", []))
            result["kept"] = round(len(kept) / len(ref_passed), 4) if ref_passed else None
            result["lost"] = sorted(ref_passed - kept)[:30]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for part in ("sandbox", "reference"):
        if part in result:
            result[part].pop("passed_ids", None)
            result[part]["failed_ids"] = result[part].get("failed_ids", [])[:15]
    return result


def starts(env_id: str | None, n: int) -> dict:
    """Median start-up (acquire until the tool server answers) of the plain image and of an environment."""
    code = r"""
import asyncio, json, statistics, sys, tempfile, time
from pathlib import Path
from sandbox import get_provider
from environments.runtime import provider_for
from environments.store import EnvStore, default_cache
async def main(env_id, n):
    out = {}
    ws = Path(tempfile.mkdtemp()); (ws / "x").write_text("x")
    record = EnvStore(default_cache()).find(env_id) if env_id else None
    for backend in ("bwrap", "docker"):
        for label, provider in (("plain", get_provider(backend)),
                                ("environment", provider_for(record, backend) if record else None),
                                ("network", provider_for(record, backend, network=True)
                                 if record and backend == "docker" else None)):
            if provider is None:
                continue
            times = []
            for _ in range(n + 1):
                t = time.monotonic(); box = await provider.acquire(ws); times.append(time.monotonic() - t)
                await box.close()
            out[f"{backend}_{label}_ms"] = round(statistics.median(times[1:]) * 1000, 1)
    print(json.dumps(out))
asyncio.run(main(sys.argv[1] or None, int(sys.argv[2])))
"""
    proc = subprocess.run([sys.executable, "-c", code, env_id or "", str(n)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": proc.stderr.strip()[-500:]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--project", action="append", help="only these projects (repeatable)")
    p.add_argument("--cold", action="store_true", help="remove each environment first (measure the full build)")
    p.add_argument("--no-reference", action="store_true", help="skip the plain-docker reference runs")
    p.add_argument("--backend", default="docker", choices=["docker", "bwrap"])
    p.add_argument("--starts", type=int, default=10, help="start-up samples per backend (0: skip)")
    args = p.parse_args()
    wanted = {w.lower() for w in args.project or []}
    results = []
    for name, version, selection, timeout in PROJECTS:
        if wanted and name.lower() not in wanted:
            continue
        log(f"{name} {version}")
        try:
            results.append(project(name, version, selection, timeout, args))
        except Exception as exc:  # noqa: BLE001 - one project's trouble is its row, not the end of the bench
            results.append({"project": name, "version": version, "error": f"{type(exc).__name__}: {exc}"})
        log(json.dumps({k: v for k, v in results[-1].items() if k not in ("sandbox", "reference", "lost")}))
    env_for_starts = next((r["env_id"] for r in results if r.get("env_id")), None)
    ok = [r for r in results if r.get("kept") is not None]
    summary = {"projects": len(results), "built": sum(1 for r in results if r.get("env_id")),
               "kept_ge_95": sum(1 for r in ok if r["kept"] >= 0.95),
               "nothing_passed_in_reference": [r["project"] for r in results if r.get("kept") is None],
               "median_build_s": statistics.median([r["build_s"] for r in results if "build_s" in r] or [0]),
               "max_rebuild_s": max([r["rebuild_s"] for r in results if "rebuild_s" in r] or [0])}
    out = {"summary": summary, "projects": results}
    if args.starts > 0:
        out["starts"] = starts(env_for_starts, args.starts)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
