"""Benchmark of the webhook ingress over loopback; prints JSON.

Starts a private nats-server (JetStream, file store) and the ingress (``python -m entry.events ingress``, its own
process) on free ports in a temporary directory, then drives signed GitHub ``issues`` deliveries (unique delivery ids,
a ~6 KB realistic body) from keep-alive HTTP/1.1 connections:

* ``max``: closed loop, ``--concurrency`` senders as fast as answers come back (sustained throughput);
* ``paced``: open loop at ``--rate`` events/s (latency at the goal rate, queueing included).

Each phase is bounded by ``--seconds`` and ``--max-events``. An event counts as accepted on HTTP 200 (given only after
JetStream's PubAck); the stream's message count is checked against the accepted count at the end.

    .venv/bin/python bench/ingress.py [--concurrency 16] [--seconds 5] [--rate 500]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from infra.privatestack import private_stack_env  # noqa: E402

SECRET = "bench-secret"
GOAL = {"events_per_s": 500, "p99_ms": 50}


def payload() -> bytes:
    """An issues.labeled delivery shaped like GitHub's (about 6 KB, as real ones are)."""
    user = {"login": "octocat", "id": 1, "node_id": "MDQ6VXNlcjE=", "avatar_url": "https://github.com/images/x.gif",
            "url": "https://api.github.com/users/octocat", "html_url": "https://github.com/octocat", "type": "User",
            "site_admin": False}
    repo = {"id": 1296269, "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5", "name": "hello-world",
            "full_name": "octo-org/hello-world", "private": False, "owner": user,
            "html_url": "https://github.com/octo-org/hello-world", "description": "This your first repo!",
            "fork": False, "url": "https://api.github.com/repos/octo-org/hello-world",
            **{f"{k}_url": f"https://api.github.com/repos/octo-org/hello-world/{k}" for k in (
                "archive", "assignees", "blobs", "branches", "collaborators", "comments", "commits", "compare",
                "contents", "contributors", "deployments", "downloads", "events", "forks", "git_commits", "git_refs",
                "git_tags", "hooks", "issue_comment", "issue_events", "issues", "keys", "labels", "languages",
                "merges", "milestones", "notifications", "pulls", "releases", "stargazers", "statuses", "subscribers",
                "subscription", "tags", "teams", "trees")},
            "clone_url": "https://github.com/octo-org/hello-world.git", "default_branch": "main"}
    issue = {"id": 1, "number": 7, "title": "Median of an even list is wrong", "user": user, "labels": [],
             "state": "open", "body": "median([1, 2, 3, 4]) returns 3; it should be 2.5.\n" * 20,
             "html_url": "https://github.com/octo-org/hello-world/issues/7", "author_association": "MEMBER"}
    return json.dumps({"action": "labeled", "issue": issue, "label": {"id": 1, "name": "bosun"},
                       "repository": repo, "sender": user}).encode()


def request_bytes(host: str, port: int, body: bytes, signature: str) -> bytes:
    head = (f"POST /webhooks/github HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: GitHub-Hookshot/bench\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nX-GitHub-Event: issues\r\n"
            f"X-Hub-Signature-256: {signature}\r\nX-GitHub-Delivery: {uuid.uuid4()}\r\n\r\n")
    return head.encode() + body


async def read_response(reader: asyncio.StreamReader) -> int:
    status = int((await reader.readline()).split()[1])
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    if length:
        await reader.readexactly(length)
    return status


class Phase:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.statuses: dict[int, int] = {}
        self.start = self.end = 0.0

    def record(self, status: int, seconds: float) -> None:
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if status == 200:
            self.latencies.append(seconds)

    def summary(self, **extra: object) -> dict:
        lat = sorted(self.latencies)
        elapsed = self.end - self.start

        def pct(p: float) -> float:
            return round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 2) if lat else 0.0

        return {**extra, "duration_s": round(elapsed, 2), "accepted": len(lat),
                "events_per_s": round(len(lat) / elapsed, 1) if elapsed else 0.0,
                "latency_ms": {"p50": pct(0.50), "p90": pct(0.90), "p99": pct(0.99),
                               "max": round(lat[-1] * 1000, 2) if lat else 0.0},
                "non_200": {str(k): v for k, v in self.statuses.items() if k != 200}}


async def closed_loop(host: str, port: int, body: bytes, sig: str, concurrency: int, seconds: float,
                      max_events: int) -> Phase:
    phase = Phase()
    budget = [max_events]
    deadline = time.perf_counter() + seconds

    async def sender() -> None:
        reader, writer = await asyncio.open_connection(host, port)
        try:
            while time.perf_counter() < deadline and budget[0] > 0:
                budget[0] -= 1
                t0 = time.perf_counter()
                writer.write(request_bytes(host, port, body, sig))
                status = await read_response(reader)
                phase.record(status, time.perf_counter() - t0)
        finally:
            writer.close()

    phase.start = time.perf_counter()
    await asyncio.gather(*(sender() for _ in range(concurrency)))
    phase.end = time.perf_counter()
    return phase


async def open_loop(host: str, port: int, body: bytes, sig: str, rate: float, seconds: float, max_events: int,
                    connections: int) -> Phase:
    """Send at a fixed rate over a pool of keep-alive connections; latency includes waiting for a free one."""
    phase = Phase()
    pool: asyncio.Queue = asyncio.Queue()
    for _ in range(connections):
        pool.put_nowait(await asyncio.open_connection(host, port))
    total = min(int(rate * seconds), max_events)

    async def one(due: float) -> None:
        reader, writer = await pool.get()
        try:
            writer.write(request_bytes(host, port, body, sig))
            status = await read_response(reader)
            phase.record(status, time.perf_counter() - due)
        finally:
            pool.put_nowait((reader, writer))

    tasks = []
    phase.start = time.perf_counter()
    for i in range(total):
        due = phase.start + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(due)))
    await asyncio.gather(*tasks)
    phase.end = time.perf_counter()
    while not pool.empty():
        _, writer = pool.get_nowait()
        writer.close()
    return phase


def wait_http(url: str, timeout: float, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{proc.args[0]} exited with {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(url, timeout=0.5) as r:
                if r.status == 200:
                    return
        except Exception:  # noqa: BLE001 - not up yet
            pass
        time.sleep(0.05)
    raise SystemExit(f"{url} did not answer within {timeout}s; see {log}")


async def stream_count(nats_url: str) -> int:
    import nats

    nc = await nats.connect(nats_url)
    try:
        return (await nc.jetstream().stream_info("EVENTS")).state.messages
    finally:
        await nc.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--concurrency", type=int, default=16, help="senders in the closed-loop phase (default 16)")
    ap.add_argument("--seconds", type=float, default=5.0, help="length of each phase (default 5)")
    ap.add_argument("--max-events", type=int, default=20_000, help="cap on events per phase (default 20000)")
    ap.add_argument("--rate", type=float, default=500.0, help="rate of the paced phase, events/s (default 500)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bosun-bench-ingress-"))
    ports = private_stack_env(tmp / "data")
    nats_port, nats_mon, ing_port = ports["BOSUN_NATS_PORT"], ports["BOSUN_NATS_MONITOR_PORT"], \
        ports["BOSUN_INGRESS_PORT"]
    procs: list[subprocess.Popen] = []
    try:
        nats_log = tmp / "nats.log"
        procs.append(subprocess.Popen(
            ["nats-server", "-js", "-sd", str(tmp / "js"), "-a", "127.0.0.1", "-p", str(nats_port),
             "-m", str(nats_mon)], stdout=open(nats_log, "wb"), stderr=subprocess.STDOUT))
        wait_http(f"http://127.0.0.1:{nats_mon}/healthz?js-enabled-only=true", 10, procs[-1], nats_log)
        env = {**os.environ, **ports, "BOSUN_HOST": "127.0.0.1", "BOSUN_GITHUB_WEBHOOK_SECRET": SECRET}
        ing_log = tmp / "ingress.log"
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "entry.events", "--log-level", "WARNING", "ingress", "--port", str(ing_port)],
            cwd=ROOT, env=env, stdout=open(ing_log, "wb"), stderr=subprocess.STDOUT))
        wait_http(f"http://127.0.0.1:{ing_port}/healthz", 30, procs[-1], ing_log)

        body = payload()
        sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()

        async def run() -> dict:
            await closed_loop("127.0.0.1", ing_port, body, sig, 4, 1.0, 500)  # warm-up
            warm = await stream_count(f"nats://127.0.0.1:{nats_port}")
            mx = await closed_loop("127.0.0.1", ing_port, body, sig, args.concurrency, args.seconds, args.max_events)
            paced = await open_loop("127.0.0.1", ing_port, body, sig, args.rate, args.seconds, args.max_events,
                                    connections=max(args.concurrency, 32))
            stored = await stream_count(f"nats://127.0.0.1:{nats_port}") - warm
            m = mx.summary(phase="max", concurrency=args.concurrency)
            pc = paced.summary(phase="paced", target_events_per_s=args.rate)
            return {
                "bench": "ingress", "cpus": os.cpu_count(), "body_bytes": len(body),
                "phases": [m, pc],
                "stored_equals_accepted": stored == m["accepted"] + pc["accepted"],
                "goal": {**GOAL, "met": m["events_per_s"] >= GOAL["events_per_s"]
                         and pc["latency_ms"]["p99"] < GOAL["p99_ms"] and not pc["non_200"]},
            }

        print(json.dumps(asyncio.run(run()), indent=2))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
