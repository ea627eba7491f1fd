"""What sharing state costs a run: the demo's team run with ``BOSUN_ARTIFACT_STORE=nats`` against ``files``, in one
invocation. Prints JSON.

    python bench/shared_store.py [--runs 3] [--nats-url URL[,URL...] --replicas N]

Starts a private embedded stack (its own data dir and ports) with the file store, runs the demo's team task
(examples/calc, the scripted model: the test double) ``--runs`` times, then restarts the stack with the shared
store (the stack's own nats-server, or ``--nats-url``: a cluster, e.g. one ``bosun cluster up`` made) and runs it
as often again; the modes alternate run by run so the machine's load falls on both alike. Reported per mode: wall
seconds per run (median, all), and the ratio of the medians. Goal (issue 36): nats / files <= 1.1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.privatestack import private_stack_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TRAJECTORY = ROOT / "examples" / "calc" / "team.jsonl"
GOAL_RATIO = 1.1


def bosun(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout, stdin=subprocess.DEVNULL)


def example_repo(dest: Path) -> Path:
    shutil.copytree(ROOT / "examples" / "calc", dest, ignore=shutil.ignore_patterns("*.jsonl", "__pycache__"))
    g = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "example"]):
        subprocess.run(g + cmd, cwd=dest, check=True)
    return dest


def one_run(env: dict, repo: Path, name: str) -> float:
    t = time.perf_counter()
    proc = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{TRAJECTORY}", "--id", name, "--wait",
                 "--json", "fix the failing tests")
    took = time.perf_counter() - t
    status = json.loads(proc.stdout).get("status") if proc.stdout.strip().startswith("{") else None
    if status != "succeeded":
        raise SystemExit(json.dumps({"error": f"run {name} ended {status}: {proc.stderr[-800:]}"}))
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nats-url", default=None)
    ap.add_argument("--replicas", type=int, default=1)
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-shared-"))
    base = private_stack_env(work / "data", worker_id=f"bench-shared-{os.getpid()}")
    modes = {"files": {**base, "BOSUN_ARTIFACT_STORE": "files"},
             "nats": {**base, "BOSUN_ARTIFACT_STORE": "nats", "BOSUN_NATS_REPLICAS": str(args.replicas),
                      **({"BOSUN_NATS_URL": args.nats_url} if args.nats_url else {})}}
    repo = example_repo(work / "calc")
    times: dict[str, list[float]] = {"files": [], "nats": []}
    try:
        for n in range(args.runs + 1):  # the first round warms both up (environment, images) and is not counted
            for mode, env in modes.items():
                if bosun(env, "up", timeout=180).returncode != 0:
                    raise SystemExit(json.dumps({"error": f"bosun up failed ({mode})"}))
                took = one_run(env, repo, f"bench-shared-{mode}-{n}-{os.getpid()}")
                if n:
                    times[mode].append(round(took, 2))
                bosun(env, "down", timeout=120)
        med = {m: statistics.median(v) for m, v in times.items()}
        out = {"runs": args.runs, "nats_url": args.nats_url or "the stack's own nats-server",
               "replicas": args.replicas,
               "files": {"median_s": med["files"], "all_s": times["files"]},
               "nats": {"median_s": med["nats"], "all_s": times["nats"]},
               "ratio_nats_over_files": round(med["nats"] / med["files"], 3)}
        out["goals"] = {"ratio_le_1_1": out["ratio_nats_over_files"] <= GOAL_RATIO}
        print(json.dumps(out, indent=2))
        return 0
    finally:
        bosun(modes["files"], "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
