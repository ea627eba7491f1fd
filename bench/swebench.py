"""Evaluation throughput (prints JSON): `bosun eval swebench` with gold predictions on warm environments.

Starts its own embedded stack (private data dir, free ports). By default the instances are made from the example
project's two real bugs (tests/entry/test_eval.py builds the same), repeated ``--copies`` times under distinct
ids; ``--instances FILE --repo OWNER/NAME=PATH ...`` measures your own. The first pass builds (or reuses) the
environments; the second is timed: instances per hour at ``--max-parallel``, and per instance the time to
evaluate it (environment excluded) against the time its tests took.

Goal (issue 16): evaluating an instance costs at most 2x the time its tests take (build excluded) — which only
means something for test suites that take more than a few seconds: for tiny ones the fixed cost (a checkout, a
sandbox start, two patches) dominates; the figures say both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from infra.privatestack import private_stack_env  # noqa: E402


def bosun(env: dict, *args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


def exit_on_sigterm() -> None:
    """SIGTERM (kill, pkill) leaves like Ctrl-C does, through every ``finally`` and ``with``: a bench's stack goes down
    with it. Left up, its worker went on judging with the code it had started with, into the shared environment
    cache, and the next run used what it built."""
    def _exit(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)
    try:
        signal.signal(signal.SIGTERM, _exit)
    except ValueError:  # not the main thread: the caller handles its own signals
        pass


class Stack:
    """A private embedded stack for a bench (its own data dir, ports and worker id: infra/privatestack.py), up while
    the ``with`` block runs. ``extra``: more settings for it."""

    def __init__(self, name: str, parent: Path | None = None, extra: dict[str, str] | None = None) -> None:
        self.work = Path(tempfile.mkdtemp(prefix=f"bosun-bench-{name}-", dir=parent))
        self.env = {**private_stack_env(self.work / "data", worker_id=f"bench-{name}-{os.getpid()}"), **(extra or {})}

    def __enter__(self):
        exit_on_sigterm()
        try:
            up = bosun(self.env, "up", timeout=180)
            if up.returncode != 0:
                raise RuntimeError(f"bosun up failed: {up.stderr[-1000:]}")
        except BaseException:  # stopped or failed while coming up: `with` calls no __exit__ then, so here
            self.__exit__()
            raise
        return self

    def sandbox_backend(self) -> str:
        """The backend the stack's worker chose (BOSUN_SANDBOX_BACKEND picks it), from the health file it writes
        every two seconds, which `bosun status` reads too."""
        return json.loads((self.work / "data" / "worker-health.json").read_text())["sandbox_backend"]

    def __exit__(self, *_exc: object) -> None:
        bosun(self.env, "down", timeout=120)
        shutil.rmtree(self.work, ignore_errors=True)


def example_instances(work: Path, copies: int) -> tuple[Path, list[str]]:
    from tests.entry.test_eval import calc_instances

    path, repo = calc_instances(work, copies)
    return path, [f"example/calc={repo}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=Path)
    ap.add_argument("--repo", action="append", default=[])
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--max-parallel", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-swe-"))
    env = private_stack_env(work / "data", worker_id=f"bench-swe-{os.getpid()}")
    if bosun(env, "up", timeout=120).returncode != 0:
        print(json.dumps({"error": "bosun up failed"}))
        return
    try:
        path, repos = (args.instances, args.repo) if args.instances else example_instances(work, args.copies)
        common = ["eval", "swebench", "--instances", str(path), "--predictions", "gold",
                  "--max-parallel", str(args.max_parallel), *[a for r in repos for a in ("--repo", r)]]
        warm = bosun(env, *common, "--run-id", "warm", "--report", str(work / "warm.json"))
        started = time.monotonic()
        timed = bosun(env, *common, "--run-id", "timed", "--report", str(work / "timed.json"))
        wall = time.monotonic() - started
        if timed.returncode not in (0, 1):
            print(json.dumps({"error": timed.stderr[-2000:]}))
            return
        report = json.loads((work / "timed.json").read_text())
        timing = report["timing"].values()
        ratios = [t["seconds"] / t["tests_s"] for t in timing if t["tests_s"]]
        n = len(report["instances"])
        print(json.dumps({
            "instances": n, "max_parallel": args.max_parallel, "resolved": len(report["summary"]["resolved_ids"]),
            "errors": report["summary"]["error_ids"], "first_pass_s": json.loads(warm.stdout or "{}").get("wall_s"),
            "timed_wall_s": round(wall, 1), "instances_per_hour": round(n / wall * 3600, 1),
            "per_instance_s_p50": round(statistics.median(t["seconds"] for t in timing), 2),
            "tests_s_p50": round(statistics.median(t["tests_s"] for t in timing), 2),
            "cost_over_tests_p50": round(statistics.median(ratios), 1) if ratios else None,
            "goal_cost_le_2x_tests": bool(ratios) and statistics.median(ratios) <= 2.0}, indent=2))
    finally:
        bosun(env, "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
