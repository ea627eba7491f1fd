"""Scale-out on a cluster on this machine (bosun cluster): the same work on 1 host and on 3, in one run; and what a
host lost for good costs. Prints JSON.

    python bench/cluster.py [--tasks 12] [--wait-s 30] [--slots 2] [--loss-s 20] [--no-loss]

Scale: ``--tasks`` solo tasks whose agent waits ``--wait-s`` seconds in a command (the scripted model, the test
double; a tiny repository whose one test passes), every host with ``--slots`` slots (BOSUN_WORKER_SLOTS). First with
only host h1 running, then with h1, h2 and h3; the wall time of each batch (first start to last end) and their ratio.
Goal (issue 36): 3 hosts / 1 host <= 0.4.

Host loss (unless ``--no-loss``): the batch again on 3 hosts with BOSUN_HOST_LOSS_S=``--loss-s``; h2 is SIGKILLed
once it holds a slot; reported: every task's status, how many agents moved, and the seconds from the kill to the
last task's end. Goal: every task ends as without the loss, within BOSUN_HOST_LOSS_S + 3 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from infra.objectstore import open_store  # noqa: E402
from infra.settings import Settings  # noqa: E402
from infra.temporal import connect  # noqa: E402
from sandbox import diskquota, reap_orphans  # noqa: E402
from workflows.models import TaskInput  # noqa: E402
from workflows.task import TaskWorkflow  # noqa: E402


class Cluster:
    """``bosun cluster`` in a folder of its own, through its command line (bench/ stands below the commands)."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder, self.env = folder, env

    def up(self) -> dict:
        proc = bosun(self.env, "cluster", "up", "--dir", str(self.folder), "--hosts", "3", "--json", timeout=300)
        if proc.returncode != 0:
            raise SystemExit(json.dumps({"error": f"bosun cluster up failed: {proc.stderr[-800:]}"}))
        return json.loads(proc.stdout)

    def status(self) -> dict:
        return json.loads(bosun(self.env, "cluster", "status", "--dir", str(self.folder), "--json").stdout)

    def down(self) -> None:
        bosun(self.env, "cluster", "down", "--dir", str(self.folder))

    def host_env(self, i: int) -> dict[str, str]:
        env = {}
        for line in (self.folder / "hosts" / f"h{i}" / "host.env").read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[7:].partition("=")
                env[key] = shlex.split(value)[0] if value else ""
        return env

    def worker_id(self, i: int) -> str:
        return self.host_env(i)["BOSUN_WORKER_ID"]

    def signal(self, name: str, sig: int) -> None:
        pid = self.status()["processes"][name]["pid"]
        if pid:
            os.kill(pid, sig)
            for _ in range(100):
                if self.status()["processes"][name]["pid"] is None:
                    return
                time.sleep(0.2)

GOAL_RATIO = 0.4


def bosun(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout, stdin=subprocess.DEVNULL)


def tiny_repo(dest: Path) -> Path:
    dest.mkdir(parents=True)
    (dest / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    g = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(g + cmd, cwd=dest, check=True)
    return dest


def waiting_agent(dest: Path, seconds: float) -> Path:
    turns = [{"content": "waiting", "tool_calls": [{"name": "run_command",
                                                    "arguments": {"command": f"sleep {seconds:g}"}}]},
             {"content": "done waiting"}]
    dest.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return dest


async def batch(cluster: Cluster, repo: Path, trajectory: Path, tasks: int, tag: str,
                during=None) -> dict:
    """Start ``tasks`` tasks at once, as the event starter does (one Temporal client, the trajectory in the shared
    store once: not a `bosun run` process per task, whose start-up on this machine's two cores would weigh on a
    batch of 12 as much as the work), and wait for all of them."""
    env = cluster.host_env(1)
    settings = Settings(**{k.removeprefix("BOSUN_").lower(): v for k, v in env.items() if k.startswith("BOSUN_")})
    store = open_store(settings)
    trajectory_ref = await asyncio.to_thread(store.put_text, trajectory.read_text())
    store.close()
    client = await connect(settings)
    ids = [f"bench-{tag}-{i}-{os.getpid()}" for i in range(tasks)]
    t0 = time.time()
    await asyncio.gather(*[client.start_workflow(
        TaskWorkflow.run, TaskInput(repo=str(repo), task="wait for it", model=f"scripted:{trajectory}",
                                    trajectory_ref=trajectory_ref, mode="solo"),
        id=wf_id, task_queue=settings.task_queue) for wf_id in ids])
    extra = await during() if during else {}
    results = await asyncio.gather(*[client.get_workflow_handle(i).result() for i in ids])
    wall = time.time() - t0
    statuses: dict[str, int] = {}
    moved = 0
    for r in results:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
        moved += sum(1 for m in r.get("moves", []) if m["what"] != "task")
    return {"tasks": tasks, "wall_s": round(wall, 1), "statuses": statuses, "agents_moved": moved,
            "tasks_moved": sum(1 for r in results if any(m["what"] == "task" for m in r.get("moves", []))),
            "ended_at": time.time(), **extra}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=12)
    ap.add_argument("--wait-s", type=float, default=30)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--loss-s", type=float, default=20)
    ap.add_argument("--no-loss", action="store_true")
    args = ap.parse_args()
    if args.tasks < 1 or args.wait_s < 0 or args.slots < 1:
        ap.error("--tasks and --slots must be positive, --wait-s not negative")
    work = Path(tempfile.mkdtemp(prefix="bosun-bench-cluster-"))
    repo = tiny_repo(work / "repo")
    trajectory = waiting_agent(work / "wait.jsonl", args.wait_s)
    cluster = Cluster(work / "cluster", {"BOSUN_WORKER_SLOTS": str(args.slots), "BOSUN_HOST_LOSS_S": str(args.loss_s)})
    out: dict = {"tasks": args.tasks, "wait_s": args.wait_s, "slots_per_host": args.slots}
    try:
        cluster.up()
        await batch(cluster, repo, trajectory, 2, "warm")  # environment, images, buckets: not counted
        cluster.signal("h2", signal.SIGTERM)
        cluster.signal("h3", signal.SIGTERM)
        out["one_host"] = await batch(cluster, repo, trajectory, args.tasks, "one")
        cluster.up()  # h2 and h3 again
        out["three_hosts"] = await batch(cluster, repo, trajectory, args.tasks, "three")
        out["ratio_three_over_one"] = round(out["three_hosts"]["wall_s"] / out["one_host"]["wall_s"], 3)
        if not args.no_loss:
            victim = cluster.worker_id(2)

            async def kill_when_busy() -> dict:
                env = cluster.host_env(1)
                for _ in range(600):
                    hosts = json.loads(bosun(env, "status", "--json").stdout or "{}").get("hosts", [])
                    if any(h["worker_id"] == victim and h["in_use"] > 0 for h in hosts):
                        break
                    await asyncio.sleep(0.5)
                cluster.signal("h2", signal.SIGKILL)
                killed = time.time()
                # what the lost machine takes with it: its sandboxes, its workspaces' file systems
                await asyncio.to_thread(reap_orphans)
                await asyncio.to_thread(diskquota.unmount_under, Path(cluster.host_env(2)["BOSUN_DATA_DIR"]) /
                                        "workspaces")
                return {"killed_at": killed}
            lost = await batch(cluster, repo, trajectory, args.tasks, "loss", during=kill_when_busy)
            lost["from_kill_to_last_end_s"] = round(lost.pop("ended_at") - lost.pop("killed_at"), 1)
            out["host_loss"] = {"loss_s": args.loss_s, **lost}
        for part in ("one_host", "three_hosts"):
            out[part].pop("ended_at", None)
        out["goals"] = {"ratio_le_0_4": out["ratio_three_over_one"] <= GOAL_RATIO}
        if "host_loss" in out:
            h = out["host_loss"]
            out["goals"]["host_loss_all_ended_alike"] = set(h["statuses"]) == set(out["three_hosts"]["statuses"])
            out["goals"]["host_loss_within_loss_s_plus_180"] = h["from_kill_to_last_end_s"] <= args.loss_s + 180
        print(json.dumps(out, indent=2))
        return 0
    finally:
        cluster.down()
        diskquota.unmount_under(work)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
