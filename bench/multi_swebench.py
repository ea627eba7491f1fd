"""Multi-SWE-bench gold patches in bosun's **detected** environments, judged as its harness judges them. Prints JSON.

Run: ``.venv/bin/python bench/multi_swebench.py --instances ROWS.jsonl [--instances ...] --repo ORG/NAME=MIRROR ...
[--only ID] [--limit N] [--out DIR] [--harness DIR]``.

The rows are Multi-SWE-bench's (``org``, ``repo``, ``number``, ``base.sha``, ``fix_patch``, ``test_patch``,
``f2p_tests``, ``p2p_tests``); each repository comes from a local mirror (a bare clone with the instances'
commits). For each instance, exactly as an external benchmark would drive bosun, through its public commands:

1. a checkout of ``base.sha`` (a local clone of the mirror) and ``bosun env build --repo CHECKOUT --json``:
   the environment bosun **detects** (no declaration is added);
2. a workspace of the checkout with ``test.patch`` and ``fix.patch`` applied (``git apply``, as the harness does);
3. the harness's test command for the repository (bosun eval's recipe, evaluation/recipes.toml ``[multi]``: what
   its ``fix-run.sh`` runs) in the environment's sandbox, ``bosun sandbox exec --env ID --workspace WS --json``
   (no network);
4. the output read as bosun eval reads it (evaluation/testlogs.py ``RUNNER:FORM``: bosun's reader of the runner,
   its test ids in the harness's form: ``FILE`` and ``FILE:TITLE`` for jest, the bare title for mocha);
5. resolved when every ``f2p_tests`` and ``p2p_tests`` id passed (and none of them failed).

Rows of SWE-bench Multimodal (JavaScript/TypeScript repositories; converted to these field names, with the
``test_cmd`` of its ``eval.sh``, its ``log_parser`` and ``eval_type``) are judged by that harness's own code: the
row's test command runs in step 3, and its log parser and grading (``swebench.harness``: ``PARSER_REGISTRY``,
``get_eval_tests_report``, fail-only repositories, "the suite ran", the exit-code cross-check) read the output;
``--harness DIR`` names where ``pip install --target DIR swebench`` put it.

Reported per instance: ``built`` (the environment's build, s), ``env_id``, ``node`` and package manager,
``resolved``, the f2p/p2p ids missing or failed; overall ``resolved`` / ``judged`` and per repository. Logs of each
run go to ``--out`` (default ``~/.cache/bosun-bench/multi-swebench``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.recipes import MULTI, recipe_for  # noqa: E402
from evaluation.testlogs import FAILED, PASSED, parse  # noqa: E402

BOSUN = str(Path(sys.executable).parent / "bosun")
OUT = Path(os.environ.get("BOSUN_BENCH_CACHE", Path.home() / ".cache" / "bosun-bench")) / "multi-swebench"
SANDBOX_UID = 64000
"""The uid the sandboxes run as (the workspace is theirs)."""

def git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-c", "advice.detachedHead=false", *args], cwd=cwd, capture_output=True, text=True)


def bosun(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BOSUN, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def harness_verdict(row: dict, output: str, exit_code: int | None) -> dict:
    """SWE-bench's own reading of a run (its log parser and grading, ``swebench.harness``) for a row that names
    its ``log_parser``: ``resolved`` and the f2p/p2p tests that did not pass."""
    from types import SimpleNamespace  # noqa: PLC0415

    from swebench.harness.constants import EvalType, ResolvedStatus, TestStatus  # noqa: PLC0415
    from swebench.harness.grading import SUITE_RAN, get_eval_tests_report, get_resolution_status  # noqa: PLC0415
    from swebench.harness.log_parsers import PARSER_REGISTRY  # noqa: PLC0415

    spec = SimpleNamespace(instance_id=row.get("instance_id", ""), repo=f"{row['org']}/{row['repo']}",
                           version=row.get("version", ""))
    status = PARSER_REGISTRY[row["log_parser"]](output, spec)
    if not status and not SUITE_RAN.search(output):
        return {"resolved": False, "error": "the suite did not run (no result, no summary)"}
    if exit_code not in (None, 0) and status and not any(
            v in (TestStatus.FAILED.value, TestStatus.ERROR.value) for v in status.values()):
        return {"resolved": False, "error": f"exit {exit_code} with no failure in the log"}
    report = get_eval_tests_report(status, {"FAIL_TO_PASS": row["f2p_tests"], "PASS_TO_PASS": row["p2p_tests"]},
                                   eval_type=EvalType(row.get("eval_type") or "pass_and_fail"))
    missing = report["FAIL_TO_PASS"]["failure"] + report["PASS_TO_PASS"]["failure"]
    return {"resolved": get_resolution_status(report) == ResolvedStatus.FULL.value, "not_passed": missing[:20],
            "not_passed_count": len(missing), "counts": {"parsed": len(status)}}


def judge(row: dict, mirror: Path, out: Path, timeout_s: float, patches: tuple[str, ...] = ("test", "fix")) -> dict:
    key = f"{row['org']}/{row['repo']}"
    iid = f"{row['org']}__{row['repo']}-{row['number']}"
    # (a harness row's command traced into the output, as its eval.sh's ``set -x`` does: parsers split on it)
    recipe = ({"run": f"exec 2>&1\nset -x\n{row['test_cmd']}", "parser": "harness"}
              if row.get("log_parser") and row.get("test_cmd") else
              {"run": (r := recipe_for(key, str(row["number"]))).test_cmd, "parser": r.parser} if key in MULTI else
              None)
    result: dict = {"instance_id": iid, "repo": key, "resolved": False}
    if recipe is None:
        return {**result, "error": f"no recipe for {key}"}
    logs = out / iid
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="msb-") as tmp:
        checkout = Path(tmp) / row["repo"]
        made = git("clone", "-q", "--shared", "--no-checkout", str(mirror), str(checkout))
        sha = row["base"]["sha"]
        if made.returncode or git("checkout", "-q", sha, cwd=checkout).returncode:
            return {**result, "error": f"cannot check out {sha}: {made.stderr[-300:]}"}
        started = time.monotonic()
        built = bosun("env", "build", "--repo", str(checkout), "--json", timeout=3600)
        result["built_s"] = round(time.monotonic() - started, 1)
        (logs / "build.stderr").write_text(built.stderr)
        if built.returncode != 0:
            return {**result, "error": "build failed: " + (built.stderr.strip().splitlines() or ["?"])[-1][:300]}
        env = json.loads(built.stdout)
        result.update(env_id=env["env_id"], toolchain=env.get("toolchain", {}))
        ws = Path(tmp) / "ws"
        shutil.copytree(checkout, ws, ignore=shutil.ignore_patterns(".git"), symlinks=True)
        for name in patches:
            (ws / f".{name}.patch").write_text(row[f"{name}_patch"])
        applied = subprocess.run(["git", "apply", "--whitespace=nowarn", *(f".{n}.patch" for n in patches)], cwd=ws,
                                 capture_output=True, text=True)
        for name in patches:
            (ws / f".{name}.patch").unlink()
        if applied.returncode != 0:
            return {**result, "error": f"the patches do not apply: {applied.stderr[-300:]}"}
        subprocess.run(["chown", "-R", f"{SANDBOX_UID}:{SANDBOX_UID}", str(ws)], check=True)
        started = time.monotonic()
        ran = bosun("sandbox", "exec", "--env", env["env_id"], "--workspace", str(ws), "--json", "--timeout",
                    str(timeout_s), "--output-cap", str(8 << 20), "--", "sh", "-c", recipe["run"],
                    timeout=timeout_s + 300)
        result["test_s"] = round(time.monotonic() - started, 1)
    try:
        res = json.loads(ran.stdout)
    except ValueError:
        return {**result, "error": f"sandbox exec failed: {ran.stderr[-300:]}"}
    output = res.get("stdout", "") + "\n" + res.get("stderr", "")
    (logs / "test_output.txt").write_text(output)
    if recipe["parser"] == "harness":
        f2p, p2p = row["f2p_tests"], row["p2p_tests"]
        return {**result, **harness_verdict(row, output, res.get("exit_code")), "exit_code": res.get("exit_code"),
                "f2p": len(f2p), "p2p": len(p2p)}
    statuses = parse(recipe["parser"], output)  # (bosun eval's own reading: evaluation/testlogs.py)
    passed = {t for t, v in statuses.items() if v == PASSED}
    failed = {t for t, v in statuses.items() if v == FAILED}
    wanted = list(row.get("f2p_tests") or {}) + list(row.get("p2p_tests") or {})
    missing = [t for t in wanted if t not in passed]
    result.update(resolved=not missing, exit_code=res.get("exit_code"), counts={"passed": len(passed),
                                                                                "failed": len(failed)},
                  f2p=len(row.get("f2p_tests") or {}), p2p=len(row.get("p2p_tests") or {}),
                  not_passed=missing[:20], not_passed_count=len(missing), failed_named=sorted(failed)[:10])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--instances", action="append", required=True, type=Path, help="Multi-SWE-bench rows (JSONL)")
    p.add_argument("--repo", action="append", default=[], metavar="ORG/NAME=MIRROR", help="a repository's mirror")
    p.add_argument("--only", action="append", default=[], help="only these instance ids (ORG__REPO-NUMBER)")
    p.add_argument("--limit", type=int, default=0, help="at most this many instances per repository (0: all)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds the tests of one instance may take")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--test-only", action="store_true", help="apply the test patch alone (the judge's check: no "
                                                             "instance may resolve without its fix)")
    p.add_argument("--harness", type=Path, help="where `pip install --target DIR swebench` put SWE-bench's harness "
                                                "(rows that name a log_parser are judged by it)")
    args = p.parse_args()
    if args.harness:
        sys.path.insert(0, str(args.harness))
    mirrors = dict(pair.split("=", 1) for pair in args.repo)
    rows = [json.loads(line) for f in args.instances for line in f.read_text().splitlines() if line.strip()]
    seen: dict[str, int] = {}
    results = []
    for row in rows:
        key = f"{row['org']}/{row['repo']}"
        iid = f"{row['org']}__{row['repo']}-{row['number']}"
        if (args.only and iid not in args.only) or key not in mirrors:
            continue
        if args.limit and seen.get(key, 0) >= args.limit:
            continue
        seen[key] = seen.get(key, 0) + 1
        got = judge(row, Path(mirrors[key]), args.out / ("test-only" if args.test_only else "gold"), args.timeout,
                    ("test",) if args.test_only else ("test", "fix"))
        print(json.dumps(got), file=sys.stderr, flush=True)
        results.append(got)
    per_repo: dict[str, dict[str, int]] = {}
    for r in results:
        s = per_repo.setdefault(r["repo"], {"judged": 0, "resolved": 0})
        s["judged"] += 1
        s["resolved"] += int(r["resolved"])
    print(json.dumps({"judged": len(results), "resolved": sum(r["resolved"] for r in results),
                      "repositories": per_repo, "instances": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
