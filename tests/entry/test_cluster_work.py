"""Work on a cluster of hosts on this machine (bosun cluster: 3 NATS nodes, the Temporal dev server, worker hosts
sharing their state): twelve tasks spread over three hosts; one host SIGKILLed for good while its agents work,
and every task still ends as it would have (the same diff); no finished agent runs again; nothing of the dead host
is left running; a machine with an empty data dir reads every task's history, export, trace and run page. An
evaluation's instances spread over two hosts by their slots."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter

from sandbox.hostrepo import task_key
from tests.conftest import BOSUN, EXAMPLE, bosun, free_port, make_example_repo, wait_for
from tests.entry.test_eval import calc_instances

TASKS = 12
LOSS_S = 12


def slow_solo(tmp_path: Path) -> Path:
    """The example's solo trajectory (the scripted model: the test double) with an 8-second command first, so the
    agents are at work when the host is killed."""
    lines = (EXAMPLE / "solo.jsonl").read_text().splitlines()
    first = {"content": "Warming up.", "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 8"}}]}
    path = tmp_path / "slow-solo.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines]) + "\n")
    return path


def history(env: dict, wf_id: str) -> dict:
    proc = bosun("history", wf_id, "--json", env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def each(fn, items: list, workers: int = 4) -> list:
    """fn over the items, a few at a time (the commands are separate processes, mostly waiting on the servers);
    the results in order, the first failure raised."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(fn, items))


def agents_of(root: dict) -> list[dict]:
    return [c for c in root.get("children", []) if c.get("kind") == "child"]


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 140 s alone, over 300 s under a loaded CI run; the bound that counts is `took`
async def test_twelve_tasks_over_three_hosts_one_killed_for_good(make_cluster, tmp_path):
    cluster = make_cluster(hosts=3, extra_env={"BOSUN_HOST_LOSS_S": str(LOSS_S), "BOSUN_WORKER_SLOTS": "2",
                                               "BOSUN_SANDBOX_REAP_S": "5"})
    env = cluster.host_env(1)
    repo = make_example_repo(tmp_path / "calc")
    trajectory = slow_solo(tmp_path)
    ids = [f"cl-{i}-{int(time.time())}" for i in range(TASKS)]

    def start(wf_id: str) -> None:
        started = bosun("run", "--repo", str(repo), "--model", f"scripted:{trajectory}", "--mode", "solo",
                        "--id", wf_id, "fix the failing tests", env=env, timeout=120)
        assert started.returncode == 0, started.stderr
    each(start, ids)  # started as a team's scripts would: at once

    def busy_on(worker_id: str) -> bool:  # h2 holds a slot: one of its agents is at work
        hosts = json.loads(bosun("status", "--json", env=env, timeout=60).stdout or "{}").get("hosts", [])
        return any(h["worker_id"] == worker_id and h["in_use"] > 0 for h in hosts)
    victim = cluster.worker_id(2)
    wait_for(lambda: busy_on(victim), 180, 1.0, f"an agent at work on {victim}")
    killed_at = time.time()
    cluster.kill_host(2)

    client = await Client.connect(env["BOSUN_TEMPORAL_ADDRESS"], data_converter=pydantic_data_converter)
    results = {}
    for wf_id in ids:
        try:
            result = await asyncio.wait_for(client.get_workflow_handle(wf_id).result(), LOSS_S + 300)
        except WorkflowFailureError as e:  # said with its causes and its steps, to be read from a CI log
            causes, cause = [], e.cause
            while cause is not None:
                causes.append(f"{type(cause).__name__}: {cause}")
                cause = cause.__cause__
            steps = bosun("history", wf_id, env=env, timeout=120).stdout
            pytest.fail(f"{wf_id} failed ({victim} killed {time.time() - killed_at:.0f} s ago): "
                        f"{' <- '.join(causes)}\n{steps[-6000:]}")
        results[wf_id] = result if isinstance(result, dict) else result.model_dump()
    took = time.time() - killed_at
    assert all(r.get("status") == "succeeded" for r in results.values()), results
    diffs = {r["diff"] for r in results.values()}
    assert len(diffs) == 1  # the same change, whether or not its task or agent moved
    assert took < LOSS_S + 180, f"the tasks ended {took:.0f} s after the host was killed"

    moved, homes = 0, set()
    roots = dict(zip(ids, each(lambda wf_id: history(env, wf_id), ids), strict=True))
    for wf_id in ids:
        root = roots[wf_id]
        runs = agents_of(root)
        done = [a for a in runs if (a.get("result") or {}).get("status") == "done"]
        assert len(done) == 1, (wf_id, runs)  # one agent finished; one that finished never ran again
        ended = [a for a in runs if a.get("status") == "terminated"]
        moved += len(ended)
        homes |= {(s.get("result") or {}).get("worker_id") for s in root["children"] if s["name"] == "bind_host"}
        for a in ended:  # an agent ended only because its host was lost, and run again
            assert any(m["what"] == a["workflow_id"].rsplit("/", 1)[-1] and m["from_worker"] == victim
                       for m in results[wf_id]["moves"]), results[wf_id]["moves"]
    assert moved >= 1 and len(homes - {None}) >= 2  # work spread over the hosts, and some of it moved
    # nothing of the dead host left running: containers by its workers' label, bwrap processes on its data dir
    victim_dir = str(Path(cluster.host_env(2)["BOSUN_DATA_DIR"]))
    left = subprocess.run(["pgrep", "-f", victim_dir], capture_output=True, text=True).stdout.split()
    assert left == [], left

    # the lost host comes back: its tasks moved and are over, so its reaper removes their run workspaces and its
    # copies of their repositories (it is home to none of them now)
    # copies of their repositories, but for the tasks it is still home to (ended there before it was killed)
    workspaces = Path(cluster.host_env(2)["BOSUN_DATA_DIR"]) / "workspaces"
    held = {p.name for p in workspaces.glob("*.git")}
    homes = {wf_id: (await client.get_workflow_handle(wf_id).query("placement"))["home"] for wf_id in ids}
    kept = {task_key(wf_id) + ".git" for wf_id in ids if homes[wf_id] == victim}
    assert held - kept, "the killed host held no copy of a task it is not home to"
    cluster.start_host(2)
    wait_for(lambda: {p.name for p in workspaces.glob("*.git")} == kept and not list(workspaces.glob("*.runs")),
             120, 1.0, f"the returning host to drop {sorted(held - kept)} and keep {sorted(kept)}")

    # a machine with an empty data dir (the same settings) reads every task: history, export, trace, run page
    port = free_port()
    reader = {**env, "BOSUN_DATA_DIR": str(tmp_path / "empty-reader"), "BOSUN_UI_PORT": str(port)}
    ui = subprocess.Popen([BOSUN, "ui"], env={**os.environ, **reader}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _answers(port), 60, 0.5, "the web view")

        def read(wf_id: str) -> None:
            assert history(reader, wf_id)["children"]
            exported = bosun("export", wf_id, env=reader, timeout=120)
            assert exported.returncode == 0 and json.loads(exported.stdout)["agents"], exported.stderr
            drawn = bosun("trace", wf_id, env=reader, timeout=120)
            assert drawn.returncode == 0 and f"TaskWorkflow {wf_id}" in drawn.stdout, drawn.stderr
            page = httpx.get(f"http://127.0.0.1:{port}/run?id={wf_id}", timeout=60)
            assert page.status_code == 200 and "agent-1" in page.text
        each(read, ids)
    finally:
        ui.terminate()
        ui.wait(10)


def _answers(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/", timeout=2).status_code < 500
    except httpx.HTTPError:
        return False


@pytest.mark.slow
def test_an_evaluation_spreads_its_instances_over_the_hosts_one_slot_each(make_cluster, tmp_path):
    """Placement of evaluation instances by capacity: two hosts with one slot each judge four gold instances;
    each instance is judged on the host that took its slot, both hosts judge, and every one resolves."""
    cluster = make_cluster(hosts=2, extra_env={"BOSUN_WORKER_SLOTS": "1"})
    env = cluster.host_env(1)
    path, repo = calc_instances(tmp_path, copies=2)
    report = tmp_path / "report.json"
    proc = bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                 f"example/calc={repo}", "--report", str(report), "--run-id", f"cl-eval-{int(time.time())}",
                 "--max-parallel", "4", env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    full = json.loads(report.read_text())
    assert sorted(full["summary"]["resolved_ids"]) == sorted(
        f"calc__{bug}-1-{n}" for bug in ("median", "percent") for n in range(2))
    assert {t["host"] for t in full["timing"].values()} == {cluster.worker_id(1), cluster.worker_id(2)}
    assert all(t["moves"] == [] for t in full["timing"].values())
