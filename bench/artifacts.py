"""The shared artifact store's cost: put and get of 100 KB artifacts on JetStream's Object Store. Prints JSON.

    python bench/artifacts.py [--n 200] [--size 102400] [--nats-url URL[,URL...]] [--replicas N]

Without ``--nats-url`` it starts a private nats-server (JetStream, file store, one node). Two stores stand for two
hosts: A puts ``--n`` distinct artifacts (each put returns once the bucket has it), B, with an empty data dir, gets
each (fetched from the bucket), then gets each again (its local cache). The file store is measured beside it.
Goal (issue 36): put and get p50 <= 5 ms for 100 KB on the local cluster.
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

from infra.artifacts import ArtifactStore  # noqa: E402
from infra.objectstore import NatsArtifactStore  # noqa: E402
from infra.privatestack import private_stack_env  # noqa: E402
from infra.settings import Settings  # noqa: E402

GOAL_P50_MS = 5.0


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 3)


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": ms(values, 0.5), "p95_ms": ms(values, 0.95), "mean_ms": round(statistics.mean(values) * 1000, 3)}


def timed(fn, items) -> tuple[list, list[float]]:
    out, took = [], []
    for item in items:
        t = time.perf_counter()
        out.append(fn(item))
        took.append(time.perf_counter() - t)
    return out, took


def start_nats(work: Path) -> tuple[subprocess.Popen, str]:
    env = private_stack_env(work / "data")
    port, monitor = env["BOSUN_NATS_PORT"], env["BOSUN_NATS_MONITOR_PORT"]
    proc = subprocess.Popen(["nats-server", "-js", "-sd", str(work / "js"), "-a", "127.0.0.1", "-p", port,
                             "-m", monitor], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import httpx

    for _ in range(100):
        try:
            if httpx.get(f"http://127.0.0.1:{monitor}/healthz?js-enabled-only=true", timeout=0.5).status_code == 200:
                return proc, f"nats://127.0.0.1:{port}"
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("nats-server did not start")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--size", type=int, default=100 * 1024)
    ap.add_argument("--nats-url", default=None)
    ap.add_argument("--replicas", type=int, default=1)
    args = ap.parse_args()
    if args.n < 1 or args.size < 1:
        ap.error("--n and --size must be positive")
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-artifacts-"))
    proc = None
    try:
        url = args.nats_url
        if url is None:
            proc, url = start_nats(work)
        bucket = f"bench-{os.getpid()}"
        hosts = [NatsArtifactStore(Settings(data_dir=work / name, nats_url=url, artifact_store="nats",
                                            artifact_bucket=bucket, nats_replicas=args.replicas))
                 for name in ("a", "b")]
        a, b = hosts
        blobs = [os.urandom(args.size) for _ in range(args.n)]
        a.put_bytes(os.urandom(16))  # warm-up: connection, bucket
        refs, put = timed(a.put_bytes, blobs)
        _, get_remote = timed(b.get_bytes, refs)
        _, get_cached = timed(b.get_bytes, refs)
        files = ArtifactStore(work / "files")
        frefs, fput = timed(files.put_bytes, blobs)
        _, fget = timed(files.get_bytes, frefs)
        for h in hosts:
            h.close()
        out = {"nats_url": url, "replicas": args.replicas, "n": args.n, "size_bytes": args.size,
               "nats": {"put": summary(put), "get_from_bucket": summary(get_remote),
                        "get_cached": summary(get_cached)},
               "files": {"put": summary(fput), "get": summary(fget)}}
        out["goals"] = {"put_p50_le_5ms": out["nats"]["put"]["p50_ms"] <= GOAL_P50_MS,
                        "get_p50_le_5ms": out["nats"]["get_from_bucket"]["p50_ms"] <= GOAL_P50_MS}
        print(json.dumps(out, indent=2))
        return 0
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
