"""Events on a 3-node NATS cluster (bosun cluster: entry/cluster.py) with BOSUN_NATS_REPLICAS=3: every stream and
bucket bosun makes has 3 replicas (an existing R1 one is raised), and SIGKILL of the node that leads the EVENTS
stream while signed webhooks arrive through the ingress loses no event and starts none twice."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections import Counter

import pytest
from nats.js.api import KeyValueConfig, StorageType, StreamConfig
from temporalio.client import WorkflowExecutionStatus

from infra.events import bus
from infra.settings import Settings
from infra.temporal import connect
from tests.infra.events.conftest import TRAJECTORY, make_cfg, running_ingress, running_starter, runs_of, wait_until
from tests.infra.events.samples import REPO, github_request, issues_labeled


def cluster_settings(cluster, tmp_path, replicas: int = 3) -> Settings:
    """Settings of a process on the cluster; the task queue is private: no worker runs the workflows, so every
    start stays visible (open) and a second start of one id would be a second run or a USE_EXISTING answer."""
    return Settings(data_dir=tmp_path / "data", nats_url=",".join(cluster.nats_urls), nats_replicas=replicas,
                    temporal_address=cluster.temporal_address, task_queue=f"cluster-events-{uuid.uuid4().hex[:8]}",
                    default_model=f"scripted:{TRAJECTORY}")


@pytest.mark.slow
async def test_every_stream_and_bucket_has_the_configured_replicas_and_r1_ones_are_raised(make_cluster, tmp_path):
    cluster = make_cluster(hosts=0)
    s = cluster_settings(cluster, tmp_path)
    cfg = make_cfg(s)
    nc = await bus.connect_nats(s, name="test")
    try:
        js = nc.jetstream()
        # made by an older bosun (or BOSUN_NATS_REPLICAS=1): one replica each
        await js.add_stream(StreamConfig(name="EVENTS", subjects=["events.>"], storage=StorageType.FILE,
                                         num_replicas=1))
        await js.create_key_value(KeyValueConfig(bucket=cfg.ledger_bucket, history=1, replicas=1))
        assert (await js.stream_info("EVENTS")).config.num_replicas == 1
        await js.publish("events.github.issues", b"{}", headers={"Nats-Msg-Id": "kept"})

        await bus.ensure_events_stream(js, cfg)
        await bus.ensure_deadletter_stream(js, cfg)
        await bus.Ledger.open(js, cfg)
        for stream in ("EVENTS", "DEADLETTER", f"KV_{cfg.ledger_bucket}"):
            info = await js.stream_info(stream)
            assert info.config.num_replicas == 3, stream
            assert info.cluster.leader and len(info.cluster.replicas) == 2, (stream, info.cluster)
        events = await js.stream_info("EVENTS")
        assert events.state.messages == 1 and events.config.duplicate_window == cfg.duplicate_window_s

        # a process with fewer replicas configured never lowers what is there
        await bus.ensure_events_stream(js, make_cfg(cluster_settings(cluster, tmp_path, replicas=1)))
        assert (await js.stream_info("EVENTS")).config.num_replicas == 3
        assert await bus.ensure_replicas(js, "EVENTS", 1) == 3
        described = await bus.describe_nats(nc)
        assert described["cluster_size"] == 3 and described["cluster"] == cluster.name
        assert {n: v["replicas"] for n, v in described["streams"].items()} == {
            "EVENTS": 3, "DEADLETTER": 3, f"KV_{cfg.ledger_bucket}": 3}
    finally:
        await nc.close()
    assert cluster.stream_leader("EVENTS") in ("n1", "n2", "n3")


@pytest.mark.slow
async def test_the_events_stream_survives_sigkill_of_its_leader_while_webhooks_arrive(make_cluster, tmp_path):
    """60 distinct signed deliveries (and 15 redeliveries of accepted ones) through the ingress, 25 a second; the
    EVENTS leader is SIGKILLed after the 20th. A sender retries a 503 (Retry-After) with the same delivery, as
    Linear does and as GitHub's redelivery does. Then: every delivery made exactly one workflow, the stream holds
    each delivery once, nothing is pending, and the node, restarted, catches up."""
    cluster = make_cluster(hosts=0)
    s = cluster_settings(cluster, tmp_path)
    cfg = make_cfg(s)  # the default publish_timeout_s: 8 s
    base = uuid.uuid4().int % 10_000_000
    n_events, kill_after, rate = 60, 20, 25.0
    stats = {"requests": 0, "answered_200": 0, "answered_503": 0, "duplicates_answered": 0}
    outage: list[float] = []  # when a 503 was answered
    latency: list[float] = []
    reasons: Counter[str] = Counter()

    async def deliver(ing, i: int, delivery: str) -> dict:
        for _ in range(60):
            stats["requests"] += 1
            started = time.monotonic()
            r = await ing.github(*github_request("issues", issues_labeled(base + i), delivery=delivery))
            latency.append(time.monotonic() - started)
            if r.status_code == 200:
                stats["answered_200"] += 1
                return r.json()
            assert r.status_code == 503, r.text
            stats["answered_503"] += 1
            outage.append(time.monotonic())
            reasons[r.json()["error"].split("(", 1)[-1].split(":")[0]] += 1
            await asyncio.sleep(0.5)
        raise AssertionError(f"delivery {delivery} refused 60 times")

    killed = None
    async with running_ingress(s, cfg) as ing, running_starter(s, cfg):
        assert cluster.stream_leader("EVENTS") is not None
        t0 = time.monotonic()
        sends = []
        for i in range(n_events):
            sends.append(asyncio.create_task(deliver(ing, i, f"k-{base}-{i}")))
            if i == kill_after:
                killed = await asyncio.to_thread(cluster.kill_stream_leader, "EVENTS")
                killed_at = time.monotonic()
            if i % 4 == 0 and i >= 10:  # a redelivery of an earlier delivery, across the leader's loss
                sends.append(asyncio.create_task(deliver(ing, i - 10, f"k-{base}-{i - 10}")))
            await asyncio.sleep(1 / rate)
        answers = await asyncio.gather(*sends)
        stats["duplicates_answered"] = sum(1 for a in answers if a.get("duplicate"))
        new_leader = cluster.stream_leader("EVENTS")
        assert killed and new_leader and new_leader != killed

        client = await connect(s)

        async def all_started() -> bool:
            for i in range(n_events):
                if not await runs_of(client, f"gh:{REPO}:issue:{base + i}"):
                    return False
            return True

        await wait_until(all_started, timeout=90, interval=0.5, what="a workflow for every delivery")
        await asyncio.sleep(2 * cfg.ack_wait_s)  # anything redelivered after the loss has had its chance
        runs = {i: await runs_of(client, f"gh:{REPO}:issue:{base + i}") for i in range(n_events)}
        nc = await bus.connect_nats(s, name="test")
        try:
            js = nc.jetstream()
            events = await js.stream_info("EVENTS")
            consumer = await js.consumer_info("EVENTS", cfg.consumer)
        finally:
            await nc.close()

    lost = [i for i, r in runs.items() if not r]
    duplicated = [i for i, r in runs.items() if len(r) > 1]
    assert all(r[0].status == WorkflowExecutionStatus.RUNNING for r in runs.values() if r)
    unavailable = (max(outage) - min(outage)) if outage else 0.0
    report = {**stats, "distinct_deliveries": n_events, "workflows": sum(len(r) for r in runs.values()),
              "lost": len(lost), "duplicated": len(duplicated), "stream_messages": events.state.messages,
              "killed_leader": killed, "new_leader": new_leader,
              "refused_window_s": round(unavailable, 2),
              "first_503_after_kill_s": round(min(outage) - killed_at, 2) if outage else None,
              "slowest_answer_s": round(max(latency), 2),
              "wall_s": round(time.monotonic() - t0, 1), "refusals": dict(reasons)}
    print("leader-kill:", json.dumps(report))
    assert lost == [] and duplicated == [], report
    assert events.state.messages == n_events, report  # each delivery stored once (Nats-Msg-Id, replicated window)
    assert (consumer.num_pending, consumer.num_ack_pending) == (0, 0), report

    # the killed node comes back and catches up: the stream has 3 current copies again
    await asyncio.to_thread(cluster.start_node, killed)
    nc = await bus.connect_nats(s, name="test")
    try:
        async def three_current() -> bool:
            info = await nc.jetstream().stream_info("EVENTS")
            peers = info.cluster.replicas or []
            return len(peers) == 2 and all(p.current and not p.offline for p in peers)

        await wait_until(three_current, timeout=60, interval=0.5, what=f"{killed} to catch up")
    finally:
        await nc.close()
