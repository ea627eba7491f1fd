"""The starter on real JetStream and the embedded stack's Temporal: starts, follow-ups, cancels, dedupe across
redeliveries and restarts, dead-lettering, retries while Temporal is unreachable, and a starter killed between
the start and the ack."""

from __future__ import annotations

import asyncio
import json
import uuid

import nats
import pytest
from temporalio.api.enums.v1 import EventType

from entry.starter import Starter
from infra.events import bus
from infra.events.gateway import TransientError, WorkflowGateway
from tests.infra.events.conftest import (
    make_cfg,
    running_ingress,
    running_starter,
    runs_of,
    settled_runs,
    stream_messages,
    wait_until,
)
from tests.infra.events.samples import (
    REPO,
    github_request,
    issue_comment,
    issues_labeled,
    linear_agent_session,
    linear_request,
)

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def unique_issue() -> int:
    return uuid.uuid4().int % 10_000_000


async def history_events(client, workflow_id: str) -> list:
    return [e async for e in client.get_workflow_handle(workflow_id).fetch_history_events()]


async def test_labelled_issue_starts_one_workflow_with_input_memo_and_trace(tsettings, cfg, temporal_client):
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        body, headers = github_request("issues", issues_labeled(n), delivery=f"d-{n}")
        r = await ing.github(body, {**headers, "traceparent": TRACEPARENT})
        assert r.status_code == 200
        runs = await settled_runs(temporal_client, wf_id)
        assert starter.stats.outcomes[f"github:d-{n}"] == "started"
    assert len(runs) == 1
    desc = await temporal_client.get_workflow_handle(wf_id).describe()
    assert desc.workflow_type == "TaskWorkflow" and desc.task_queue == tsettings.task_queue
    memo = await desc.memo()
    assert memo["delivery"] == f"github:d-{n}" and memo["event"] == "github.issues"
    assert memo["origin"] == {"source": "github", "repo": REPO, "number": n,
                              "url": f"https://github.com/{REPO}/issues/{n}"}
    assert memo["traceparent"].startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")
    first = (await history_events(temporal_client, wf_id))[0].workflow_execution_started_event_attributes
    inp = json.loads(first.input.payloads[0].data)
    assert inp["repo"] == "/srv/repos/hello-world" and inp["task"].startswith("Median of an even list is wrong")
    assert inp["model"].startswith("scripted:") and inp["trajectory_ref"].startswith("sha256:")
    tracer = json.loads(first.header.fields["_tracer-data"].data)
    assert tracer["traceparent"].startswith("00-4bf92f3577b34da6a3ce929d0e0e4736-")


async def test_50_concurrent_identical_deliveries_start_exactly_one_workflow(tsettings, cfg, temporal_client):
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    body, headers = github_request("issues", issues_labeled(n))
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        answers = await asyncio.gather(*(ing.github(body, headers) for _ in range(50)))
        assert [a.status_code for a in answers] == [200] * 50
        assert sum(not a.json()["duplicate"] for a in answers) == 1
        runs = await settled_runs(temporal_client, wf_id)
    assert len(runs) == 1
    assert await stream_messages(tsettings) == 1


async def test_distinct_deliveries_for_one_issue_reach_one_workflow(tsettings, cfg, temporal_client):
    """Two labelled events (distinct delivery ids) and a concurrent burst still make one run (USE_EXISTING)."""
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        answers = await asyncio.gather(*(ing.github(*github_request("issues", issues_labeled(n))) for _ in range(10)))
        assert all(a.status_code == 200 for a in answers)
        await wait_until(lambda: _count(starter, {"started", "existing"}, 10), what="10 handled deliveries")
        runs = await settled_runs(temporal_client, wf_id)
    assert len(runs) == 1
    assert starter.stats.started == 1 and starter.stats.existing == 9


async def _count(starter: Starter, outcomes: set[str], n: int) -> bool:
    return sum(o in outcomes for o in starter.stats.outcomes.values()) >= n


async def test_same_delivery_after_restart_and_after_the_run_finished_is_still_one(tsettings, temporal_client):
    """A redelivery days later (outside JetStream's duplicate window, after the run closed): the ledger catches it."""
    cfg = make_cfg(duplicate_window_s=1.0)
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    body, headers = github_request("issues", issues_labeled(n), delivery=f"redeliver-{n}")
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        assert (await ing.github(body, headers)).status_code == 200
        await settled_runs(temporal_client, wf_id, settle_s=0)
    await temporal_client.get_workflow_handle(wf_id).terminate("finished (simulated)")
    await asyncio.sleep(1.2)  # past the duplicate window: JetStream takes the redelivery as a new message
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        r = await ing.github(body, headers)
        assert r.status_code == 200 and r.json()["duplicate"] is False
        await wait_until(lambda: _count(starter, {"duplicate"}, 1), what="the redelivery to be recognised")
        runs = await settled_runs(temporal_client, wf_id)
    assert len(runs) == 1
    assert await stream_messages(tsettings) == 2
    # a NEW trigger (another delivery) after the run finished starts a new run (id reuse policy allow_duplicate)
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        assert (await ing.github(*github_request("issues", issues_labeled(n)))).status_code == 200
        runs = await settled_runs(temporal_client, wf_id, expect_at_least=2)
    assert len(runs) == 2


async def test_follow_up_signals_the_running_workflow_once(tsettings, cfg, temporal_client):
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        assert (await ing.github(*github_request("issues", issues_labeled(n)))).status_code == 200
        await settled_runs(temporal_client, wf_id, settle_s=0)
        comment = issue_comment("@bosun also handle empty lists", number=n)
        assert (await ing.github(*github_request("issue_comment", comment, delivery=f"c-{n}"))).status_code == 200
        await wait_until(lambda: _count(starter, {"signalled"}, 1), what="the follow-up")
    signals = [e.workflow_execution_signaled_event_attributes for e in await history_events(temporal_client, wf_id)
               if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    assert [s.signal_name for s in signals] == ["follow_up"]
    assert json.loads(signals[0].input.payloads[0].data) == "@bosun also handle empty lists"
    assert len(await runs_of(temporal_client, wf_id)) == 1


async def test_repeated_signal_with_start_of_one_delivery_is_dropped_by_temporal(tsettings, temporal_client):
    """The crash window between signal and ack: the request id (from the delivery) makes the repeat a no-op."""
    from workflows.models import TaskInput

    gw = WorkflowGateway(temporal_client, task_queue=tsettings.task_queue)
    wf_id = f"gh:{REPO}:issue:{unique_issue()}"
    inp = TaskInput(repo="/x", task="t", model="scripted:/x")
    first = await gw.start(workflow_id=wf_id, task_input=inp, dedupe_key="github:a", memo={})
    assert first.started
    for _ in range(3):
        await gw.start(workflow_id=wf_id, task_input=inp, dedupe_key="github:b", memo={}, follow_up="again")
    await gw.start(workflow_id=wf_id, task_input=inp, dedupe_key="github:c", memo={}, follow_up="new one")
    signals = [e for e in await history_events(temporal_client, wf_id)
               if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]
    assert len(signals) == 2


async def test_linear_session_created_prompted_and_stopped(tsettings, cfg, temporal_client):
    sid = f"sess-{uuid.uuid4().hex[:8]}"
    wf_id = f"linear:session:{sid}"
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg) as starter:
        assert (await ing.linear(*linear_request(linear_agent_session("created", sid)))).status_code == 200
        await settled_runs(temporal_client, wf_id, settle_s=0)
        prompt = linear_agent_session("prompted", sid, text="use statistics.median")
        assert (await ing.linear(*linear_request(prompt))).status_code == 200
        await wait_until(lambda: _count(starter, {"signalled"}, 1), what="the prompt")
        stop = linear_agent_session("prompted", sid, text="", signal="stop")
        assert (await ing.linear(*linear_request(stop))).status_code == 200
        await wait_until(lambda: _count(starter, {"cancelled"}, 1), what="the stop")
    kinds = [e.event_type for e in await history_events(temporal_client, wf_id)]
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED in kinds
    assert EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED in kinds
    desc = await temporal_client.get_workflow_handle(wf_id).describe()
    assert (await desc.memo())["origin"]["agent_session_id"] == sid


async def publish_raw(settings, subject: str, data: bytes, headers: dict[str, str]) -> None:
    nc = await nats.connect(settings.nats_target)
    try:
        await nc.jetstream().publish(subject, data, headers=headers)
    finally:
        await nc.close()


async def deadletters(settings) -> list:
    nc = await nats.connect(settings.nats_target)
    try:
        js = nc.jetstream()
        try:
            info = await js.stream_info("DEADLETTER")
        except nats.js.errors.NotFoundError:
            return []
        return [await js.get_msg("DEADLETTER", seq) for seq in range(info.state.first_seq, info.state.last_seq + 1)
                if info.state.messages]
    finally:
        await nc.close()


async def consumer_pending(settings) -> tuple[int, int]:
    nc = await nats.connect(settings.nats_target)
    try:
        info = await nc.jetstream().consumer_info("EVENTS", "starter")
        return info.num_pending, info.num_ack_pending
    finally:
        await nc.close()


async def test_poison_messages_are_dead_lettered_and_terminated(tsettings, cfg):
    async with running_starter(tsettings, cfg) as starter:
        # not JSON: dead-lettered at once
        await publish_raw(tsettings, "events.github.issues", b"\x00garbage", {
            bus.H_MSG_ID: "poison-1", bus.H_SOURCE: "github", bus.H_EVENT: "issues", bus.H_DELIVERY: "poison-1"})
        # a known event without its documented fields: retried, dead-lettered after poison_after (3) deliveries
        await publish_raw(tsettings, "events.github.issues", json.dumps({"action": "labeled"}).encode(), {
            bus.H_MSG_ID: "poison-2", bus.H_SOURCE: "github", bus.H_EVENT: "issues", bus.H_DELIVERY: "poison-2"})
        await wait_until(lambda: _dl(starter, 2), timeout=20, what="two dead letters")
    dead = await deadletters(tsettings)
    by_id = {m.headers[bus.H_MSG_ID]: m for m in dead}
    assert set(by_id) == {"dl:poison-1", "dl:poison-2"}
    assert by_id["dl:poison-1"].subject == "deadletter.events.github.issues"
    assert by_id["dl:poison-1"].data == b"\x00garbage"
    assert "body is not JSON" in by_id["dl:poison-1"].headers[bus.H_DL_REASON]
    assert by_id["dl:poison-1"].headers[bus.H_DL_DELIVERIES] == "1"
    assert "unknown shape" in by_id["dl:poison-2"].headers[bus.H_DL_REASON]
    assert by_id["dl:poison-2"].headers[bus.H_DL_DELIVERIES] == "3"
    assert await consumer_pending(tsettings) == (0, 0)  # terminated: never redelivered


async def _dl(starter: Starter, n: int) -> bool:
    return starter.stats.deadlettered >= n


class FlakyGateway(WorkflowGateway):
    """Temporal 'unreachable' for the first ``failures`` starts."""

    def __init__(self, *a, failures: int = 2, **kw) -> None:
        super().__init__(*a, **kw)
        self.failures = failures

    async def start(self, **kw):
        if self.failures > 0:
            self.failures -= 1
            raise TransientError("Temporal UNAVAILABLE: connection refused (simulated)")
        return await super().start(**kw)


async def test_temporal_unreachable_naks_with_delay_then_starts(tsettings, cfg, temporal_client):
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    gw = FlakyGateway(temporal_client, task_queue=tsettings.task_queue, failures=4)
    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg, gateway=gw) as starter:
        assert (await ing.github(*github_request("issues", issues_labeled(n)))).status_code == 200
        runs = await settled_runs(temporal_client, wf_id, settle_s=0.5)
    assert len(runs) == 1
    assert starter.stats.retried == 4 and starter.stats.deadlettered == 0  # transient: never dead-lettered


class CrashBeforeAck(Starter):
    """Dies (as far as NATS can tell) right after Temporal accepted the start: no ack, no nak."""

    async def _ack(self, msg, env, outcome):
        self.crashed_after = outcome
        await asyncio.Event().wait()  # hang until cancelled, then the connection is closed without an ack


async def test_starter_killed_between_start_and_ack_makes_one_workflow(tsettings, cfg, temporal_client):
    n = unique_issue()
    wf_id = f"gh:{REPO}:issue:{n}"
    async with running_ingress(tsettings, cfg) as ing:
        crashing = CrashBeforeAck(tsettings, cfg)
        stop = asyncio.Event()
        task = asyncio.create_task(crashing.run(stop))
        await asyncio.wait_for(crashing.ready.wait(), 30)
        assert (await ing.github(*github_request("issues", issues_labeled(n), delivery=f"k-{n}"))).status_code == 200
        await wait_until(lambda: _attr(crashing, "crashed_after"), what="the start before the crash")
        task.cancel()  # the "kill": the in-flight message is neither acked nor nak'ed
        with pytest.raises(asyncio.CancelledError):
            await task
        await crashing.nc.close()
        assert crashing.crashed_after == "started"
        assert len(await settled_runs(temporal_client, wf_id, settle_s=0)) == 1
        # a new starter gets the message again after ack_wait (2 s) and finds the run
        async with running_starter(tsettings, cfg) as fresh:
            await wait_until(lambda: _count(fresh, {"duplicate", "existing"}, 1), timeout=20,
                             what="the redelivery")
            assert fresh.stats.outcomes[f"github:k-{n}"] in ("duplicate", "existing")
        runs = await settled_runs(temporal_client, wf_id)
    assert len(runs) == 1
    assert await consumer_pending(tsettings) == (0, 0)


async def _attr(obj, name: str):
    return getattr(obj, name, None)


@pytest.mark.slow
async def test_nats_restarted_mid_stream_every_acknowledged_event_is_processed(tsettings, cfg, temporal_client,
                                                                                 nats_server):
    cfg = make_cfg(publish_timeout_s=1.0)
    base = unique_issue()
    accepted: list[int] = []
    refused: list[int] = []

    async def send(ing, i: int) -> None:
        r = await ing.github(*github_request("issues", issues_labeled(base + i), delivery=f"m-{base}-{i}"))
        (accepted if r.status_code == 200 else refused).append(i)
        assert r.status_code in (200, 503), r.text

    async with running_ingress(tsettings, cfg) as ing, running_starter(tsettings, cfg):
        sends = []
        for i in range(60):
            sends.append(asyncio.create_task(send(ing, i)))
            if i == 20:
                await asyncio.to_thread(nats_server.restart)
            await asyncio.sleep(0.02)
        await asyncio.gather(*sends)
        print(f"accepted {len(accepted)}, refused {len(refused)} (503 while NATS restarted)")
        assert len(accepted) >= 30, (accepted, refused)

        async def all_started() -> bool:
            for i in accepted:
                if not await runs_of(temporal_client, f"gh:{REPO}:issue:{base + i}"):
                    return False
            return True

        await wait_until(all_started, timeout=60, interval=0.5, what="a workflow for every accepted event")
    for i in accepted:
        assert len(await runs_of(temporal_client, f"gh:{REPO}:issue:{base + i}")) == 1


@pytest.mark.parametrize("defaults,message", [
    ({"mdoe": "solo"}, "sets 'mdoe', which it cannot set; it may set repo, task, model"),
    ({"max_parallel": 0}, "max_parallel: Input should be greater than or equal to 1"),
    ({"harness": {"compact_at": 3}}, "harness.compact_at: Input should be less than or equal to 1"),
    ({"budget": {"euros": 5}}, "budget.euros: Extra inputs are not permitted"),
])
def test_task_defaults_that_do_not_fit_a_task_are_refused_at_start(tmp_path, defaults, message):
    """A typo in BOSUN_EVENTS_TASK_DEFAULTS would otherwise be ignored (or fail every start): refused up front."""
    from infra.errors import ConfigError
    from infra.settings import Settings

    starter = Starter(Settings(data_dir=tmp_path), make_cfg(model="openai:gpt-5", task_defaults=defaults))
    with pytest.raises(ConfigError) as e:
        starter.check_config()
    assert str(e.value).startswith(f"BOSUN_EVENTS_TASK_DEFAULTS={json.dumps(defaults)}") and message in str(e.value)
    good = Starter(Settings(data_dir=tmp_path), make_cfg(model="openai:gpt-5", task_defaults={
        "mode": "solo", "harness": {"edit_tool": "apply_patch"}}))
    good.check_config()
    assert good._task_input(repo="/r", task="t").harness.edit_tool == "apply_patch"
