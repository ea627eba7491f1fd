"""Model-call overhead: one provider per turn (bosun before the worker kept its model clients) against the worker's
pool (one provider per endpoint, its connections kept open). Prints one JSON object.

    python bench/model_calls.py [--turns 50] [--agents 4]

Against a local HTTPS fixture (a certificate of a private authority made with openssl, trusted by the client through
``SSL_CERT_FILE``) that streams a short OpenAI-compatible completion and counts the connections it accepts. Each
mode runs ``--agents`` agents one after the other, ``--turns`` model calls each, through the real provider (its
SDK on httpx2, TLS, SSE parsing). Reported per mode: connections opened, and the time of a turn (p50/p95, ms),
which here is almost all overhead: the fixture answers at once. Goal (issue 35): from an agent's second turn on, no new
connection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.messages import Message  # noqa: E402
from agents.providers import ProviderPool, make_provider, parse_spec  # noqa: E402
from infra.devcerts import issue, make_ca  # noqa: E402
from infra.settings import Settings  # noqa: E402
from tests.agents.providers.fixture_server import (  # noqa: E402
    FixtureServer,
    sse,
    sse_reply,  # noqa: E402
)

HELLO = [Message(role="user", content="hi")]


def completion() -> object:
    chunk = {"id": "c1", "object": "chat.completion.chunk", "model": "m"}
    return sse_reply([sse({**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"},
                                                 "finish_reason": None}]}),
                      sse({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
                      "data: [DONE]\n\n"])


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000, 2)


async def run_mode(mode: str, server: FixtureServer, settings: Settings, agents: int, turns: int) -> dict:
    spec = parse_spec(f"openai-compatible:{server.url}/v1#m")
    before = server.connections
    first, later = [], []
    pool = ProviderPool(settings)
    try:
        for _agent in range(agents):
            for turn in range(turns):
                t = time.perf_counter()
                if mode == "per_turn":
                    provider = make_provider(spec, settings=settings)
                    try:
                        await provider.complete(HELLO, [], max_tokens=5)
                    finally:
                        await provider.aclose()
                else:
                    await pool.get(spec).complete(HELLO, [], max_tokens=5)
                (first if turn == 0 else later).append(time.perf_counter() - t)
    finally:
        await pool.aclose()
    return {"connections": server.connections - before, "calls": agents * turns,
            "first_turn_p50_ms": pct(first, 0.5), "later_turn_p50_ms": pct(later, 0.5),
            "later_turn_p95_ms": pct(later, 0.95), "later_turn_mean_ms": round(statistics.mean(later) * 1000, 2)}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=50)
    ap.add_argument("--agents", type=int, default=4)
    args = ap.parse_args()
    if args.turns < 2 or args.agents < 1:
        ap.error("--turns must be at least 2 and --agents at least 1")
    with tempfile.TemporaryDirectory(prefix="bosun-bench-models-") as tmp:
        ca = make_ca(Path(tmp))
        cert = issue(ca, Path(tmp), "server")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert.cert, cert.key)
        os.environ["SSL_CERT_FILE"] = str(ca.cert)
        server = FixtureServer(keep_alive=True, ssl=context)
        server.default = completion()
        await server.start()
        settings = Settings(data_dir=Path(tmp) / "data")
        try:
            await run_mode("pool", server, settings, 1, 3)  # warm-up: imports, TLS context
            out = {mode: await run_mode(mode, server, settings, args.agents, args.turns)
                   for mode in ("per_turn", "pool")}
        finally:
            await server.close()
    pool, per_turn = out["pool"], out["per_turn"]
    out["saved_per_later_turn_ms"] = round(per_turn["later_turn_p50_ms"] - pool["later_turn_p50_ms"], 2)
    out["goals"] = {"no_new_connection_after_an_agents_first_turn": pool["connections"] <= 1}
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
