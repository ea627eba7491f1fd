"""Sandbox benchmark: prints one JSON object with p50/p99 (ms) per backend.

    python bench/sandbox.py [--backends bwrap,docker] [--samples 30] [--concurrency 64] [--image TAG]

Measures, per backend: cold start (acquire until the tool server answers ping), warm acquire (from a warm pool,
workspace bound into a running sandbox), command round trip (exec ``true``), tool-server round trip (ping), release,
and N concurrent sandboxes each running a short command (failures counted, wall time). Goals are reported next to
the numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox import get_provider  # noqa: E402
from sandbox.base import Limits  # noqa: E402
from sandbox.pool import PooledProvider, summary  # noqa: E402

GOALS = {"warm_acquire_p50_ms": 20, "toolserver_roundtrip_p50_ms": 5, "docker_cold_start_p50_ms": 400,
         "bwrap_cold_start_p50_ms": 50, "concurrent_failures": 0}
LIMITS = Limits(memory_mb=1024, pids=256, cpus=1.0, tmp_mb=64)


async def timed(coro_fn, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.monotonic()
        await coro_fn()
        out.append(time.monotonic() - t)
    return out


async def bench_backend(backend: str, ws: Path, samples: int, concurrency: int, image: str | None
                        ) -> dict[str, Any]:
    provider = get_provider(backend, image=image, limits=LIMITS)
    res: dict[str, Any] = {}
    # Cold start, and release of a cold sandbox.
    cold, release = [], []
    for _ in range(samples):
        t = time.monotonic()
        sb = await provider.acquire(ws)
        cold.append(time.monotonic() - t)
        t = time.monotonic()
        await sb.close()
        release.append(time.monotonic() - t)
        await asyncio.sleep(0.02)
    res["cold_start"] = summary(cold)
    res["release"] = summary(release)
    # Round trips in one sandbox.
    sb = await provider.acquire(ws)
    try:
        await sb.request("ping")
        res["toolserver_roundtrip"] = summary(await timed(lambda: sb.request("ping"), samples * 10))
        res["command_roundtrip"] = summary(await timed(lambda: sb.exec(["true"], timeout_s=30), samples * 2))
        res["read_roundtrip"] = summary(await timed(lambda: sb.request("read", {"path": "README"}), samples * 5))
    finally:
        await sb.close()
    # Warm acquire from a pool (paced so the pool can refill: we measure the warm path).
    pool = PooledProvider(provider, size=4, refill_per_s=20)
    key = provider.pool_key(ws)  # type: ignore[attr-defined]
    await pool.start([key])
    ready = await pool.wait_ready(key, timeout_s=60)
    for _ in range(samples):
        await pool.wait_ready(key, timeout_s=30)
        sb = await pool.acquire(ws)
        await sb.close()
    stats = pool.stats()
    res["warm_acquire"] = {**stats["acquire"], "hits": stats["hits"], "misses": stats["misses"],
                           "warm_binding": ready > 0}
    res["warm_release"] = stats["release"]
    await pool.close()
    # N concurrent sandboxes, each running a short command.
    async def one(i: int) -> bool:
        try:
            sbx = await provider.acquire(ws)
            try:
                r = await sbx.exec(["sh", "-c", f"echo {i}"], timeout_s=60)
                return r.exit_code == 0 and r.stdout == f"{i}\n"
            finally:
                await sbx.close()
        except Exception as exc:  # noqa: BLE001 - counted
            print(f"concurrent sandbox {i} failed: {exc}", file=sys.stderr)
            return False
    t = time.monotonic()
    oks = await asyncio.gather(*(one(i) for i in range(concurrency)))
    res["concurrent"] = {"n": concurrency, "failures": oks.count(False), "wall_s": round(time.monotonic() - t, 3)}
    res["limits"] = {k: v.get("enforced") for k, v in provider.limits_report().items() if isinstance(v, dict)
                     and "enforced" in v}
    return res


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="bwrap,docker")
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--image", default=None)
    args = ap.parse_args()
    out: dict[str, Any] = {"goals": GOALS}
    with tempfile.TemporaryDirectory(prefix="bosun-bench-") as tmp:
        ws = Path(tmp)
        (ws / "README").write_text("bench workspace\n")
        for backend in args.backends.split(","):
            try:
                out[backend] = await bench_backend(backend, ws, args.samples, args.concurrency, args.image)
            except Exception as exc:  # noqa: BLE001 - reported in the JSON
                out[backend] = {"error": f"{type(exc).__name__}: {exc}"}
    checks = {}
    for backend in args.backends.split(","):
        r = out.get(backend, {})
        if "error" in r:
            continue
        checks[f"{backend}_warm_acquire"] = r["warm_acquire"]["p50_ms"] <= GOALS["warm_acquire_p50_ms"]
        checks[f"{backend}_toolserver_roundtrip"] = (r["toolserver_roundtrip"]["p50_ms"]
                                                     <= GOALS["toolserver_roundtrip_p50_ms"])
        checks[f"{backend}_cold_start"] = r["cold_start"]["p50_ms"] <= GOALS[f"{backend}_cold_start_p50_ms"]
        checks[f"{backend}_concurrent"] = r["concurrent"]["failures"] == 0
    out["goals_met"] = checks
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
