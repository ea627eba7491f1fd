"""Orchestration benchmark (prints JSON). Starts its own embedded stack (bosun's `up`, private data dir, free ports).

1. per-tool-call overhead: N sequential `tool_call` calls (read_file through the worker's sandbox backend), as
   local activities (how agents run file tools: reads, searches, edits) and as activities (how they run commands),
   vs the same tool calls made directly in-process through the same backend; overhead = difference per call (p50).
   Also: a no-op activity (the dev server's floor for any activity hop), and the p50 over all tool calls with
   commands at their share of the tool calls in examples/*/*.jsonl ("mixed").
2. parallel turn: 8 read-only tool calls of 200 ms each, scheduled the way AgentWorkflow schedules a turn, vs one.
3. fan-out: a team task whose plan has 16 subtasks (scripted model, the test double), each editing its own file;
   checks every patch landed exactly once.
4. history size of a 300-tool-call agent run (scripted: 100 turns x read_file, grep and a command).

Goals (issue 6): overhead p50 <= 15 ms; 8 x 200 ms in <= 1.3x one; 16-agent fan-out with zero lost or duplicated
patches; a 300-tool-call run's history < 2 MB.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.worker import Worker

ROOT = Path(__file__).parent.parent  # no resolve(): the workflow sandbox re-imports this module and forbids it
sys.path.insert(0, str(ROOT))

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities as Activities
    from activities.models import ToolCallInput, ToolCallRef
    from agents.tools.scheduling import plan_batches


@activity.defn
async def sleep_tool(ms: int) -> int:
    """A stand-in read-only tool that takes ``ms`` milliseconds."""
    await asyncio.sleep(ms / 1000)
    return ms


@workflow.defn
class SequentialToolsWorkflow:
    @workflow.run
    async def run(self, calls: list[ToolCallInput], local: bool = False) -> list[float]:
        """Milliseconds from scheduling each tool call to the workflow resuming with its result. ``local``: as a
        local activity (how AgentWorkflow runs file tools), else as an activity (how it runs commands)."""
        out = []
        for c in calls:
            start = workflow.time()
            if local:
                await workflow.execute_local_activity_method(Activities.tool_call, c,
                                                             start_to_close_timeout=timedelta(minutes=1))
            else:
                await workflow.execute_activity_method(Activities.tool_call, c,
                                                       start_to_close_timeout=timedelta(minutes=1))
            out.append((workflow.time() - start) * 1000)
        return out


@workflow.defn
class SequentialNoopWorkflow:
    @workflow.run
    async def run(self, n: int) -> list[float]:
        """The floor: milliseconds per sequential activity that does nothing (sleep_tool(0))."""
        out = []
        for _ in range(n):
            start = workflow.time()
            await workflow.execute_activity(sleep_tool, 0, start_to_close_timeout=timedelta(seconds=30))
            out.append((workflow.time() - start) * 1000)
        return out


@workflow.defn
class ParallelTurnWorkflow:
    @workflow.run
    async def run(self, n: int) -> float:
        start = workflow.time()
        for batch in plan_batches([None] * n):
            await asyncio.gather(*[workflow.execute_activity(sleep_tool, 200, start_to_close_timeout=timedelta(
                seconds=30)) for _ in batch])
        return workflow.time() - start


def command_share() -> tuple[float, int]:
    """The share of tool calls that are commands (run as activities) in the example trajectories, and the count."""
    from agents.tools.builtin import default_registry
    from agents.tools.scheduling import ANY_FILE

    reg = default_registry()
    keys = [reg.write_key(c["name"], c.get("arguments", {}))
            for f in sorted((ROOT / "examples").glob("*/*.jsonl"))
            for line in f.read_text().splitlines() if line.strip()
            for c in json.loads(line).get("tool_calls", [])]
    return sum(k == ANY_FILE for k in keys) / len(keys), len(keys)


def weighted_median(groups: list[tuple[list[float], float]]) -> float:
    """Median of a mixture: each group's samples carry the group's share."""
    pairs = sorted((v, share / len(vals)) for vals, share in groups for v in vals)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= 0.5:
            return v
    return pairs[-1][0]


def git_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    g = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(g + cmd, cwd=path, check=True)
    return path


def bosun(env: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)


async def bench_overhead(client, settings, work: Path, rounds: int = 5, n: int = 40) -> dict:
    from agents.tools.builtin import default_registry
    from agents.tools.registry import ToolContext
    from infra.objectstore import open_store
    from sandbox import get_provider

    repo = git_repo(work / "ovh", {"a.py": "x = 1\n" * 50})
    store = open_store(settings)
    args_ref = store.put_json({"path": "a.py"})
    calls = [ToolCallInput(agent_id="bench-ovh", workspace=str(repo), call=ToolCallRef(
        id=f"c{i}", name="read_file", arguments_ref=args_ref, arguments_preview="a.py")) for i in range(n)]
    provider = get_provider(settings.sandbox_backend, image=settings.sandbox_image)  # the worker's choice
    box = await provider.acquire(repo)
    reg = default_registry()
    ctx = ToolContext(sandbox=box)
    direct: list[float] = []
    via: dict[str, list[float]] = {"local_activity": [], "activity": []}
    floor: list[float] = []
    for r in range(rounds):
        for _ in range(n):
            t = time.perf_counter()
            await reg.execute("read_file", {"path": "a.py"}, ctx)
            direct.append((time.perf_counter() - t) * 1000)
        for kind in via:
            via[kind] += (await client.execute_workflow(
                SequentialToolsWorkflow.run, args=[calls, kind == "local_activity"],
                id=f"bench-ovh-{kind}-{r}-{time.time()}", task_queue=settings.worker_queue,
            ))[1:]  # the first call of a round also starts the sandbox
        floor += await client.execute_workflow(SequentialNoopWorkflow.run, n, id=f"bench-noop-{r}-{time.time()}",
                                               task_queue=settings.worker_queue)
    await box.close()
    d50 = statistics.median(direct)
    out: dict = {"sandbox_backend": provider.backend, "calls_per_path": len(via["activity"]),
                 "direct_ms_p50": round(d50, 2)}
    for kind, ms in via.items():
        p50, p99 = statistics.median(ms), statistics.quantiles(ms, n=100)[98]
        out[kind] = {"round_trip_ms_p50": round(p50, 2), "round_trip_ms_p99": round(p99, 2),
                     "overhead_ms_p50": round(p50 - d50, 2), "goal_overhead_p50_le_15ms": p50 - d50 <= 15}
    out["noop_activity_ms_p50"] = round(statistics.median(floor), 2)  # what any activity hop costs here
    share, n_calls = command_share()
    mixed = weighted_median([([x - d50 for x in via["local_activity"]], 1 - share),
                             ([x - d50 for x in via["activity"]], share)])
    out["mixed"] = {"command_share": round(share, 3), "from_example_tool_calls": n_calls,
                    "overhead_ms_p50": round(mixed, 2), "goal_overhead_p50_le_15ms": mixed <= 15}
    out["note"] = ("AgentWorkflow runs file tool calls (read, list, grep, search, check, edits) as local activities "
                   "and commands (run_command, run_tests) as activities")
    return out


async def bench_parallel(client, settings) -> dict:
    one = [await client.execute_workflow(ParallelTurnWorkflow.run, 1, id=f"bench-par1-{i}-{time.time()}",
                                         task_queue=settings.worker_queue) for i in range(3)]
    eight = [await client.execute_workflow(ParallelTurnWorkflow.run, 8, id=f"bench-par8-{i}-{time.time()}",
                                           task_queue=settings.worker_queue) for i in range(3)]
    ratio = statistics.median(eight) / statistics.median(one)
    return {"one_call_s": round(statistics.median(one), 3), "eight_parallel_s": round(statistics.median(eight), 3),
            "ratio": round(ratio, 2), "goal_ratio_le_1_3": ratio <= 1.3}


def bench_fan_out(env: dict, work: Path, n: int = 16) -> dict:
    files = {f"mod{i:02d}.py": f"VALUE_{i} = 0\n" for i in range(n)}
    files["test_values.py"] = "".join(
        f"from mod{i:02d} import VALUE_{i}\n" for i in range(n)) + "\n\ndef test_values():\n" + "".join(
        f"    assert VALUE_{i} == {i + 1}\n" for i in range(n))
    repo = git_repo(work / "fan", files)
    plan = {"subtasks": [{"id": f"s{i:02d}", "goal": f"set VALUE_{i} to {i + 1}", "files": [f"mod{i:02d}.py"],
                          "acceptance": {"command": "true"}} for i in range(n)]}
    turns = [{"agent": "planner", "content": json.dumps(plan)}]
    for i in range(n):
        turns.append({"agent": f"fast_edit:s{i:02d}", "content": "edit", "tool_calls": [{"name": "str_replace",
                      "arguments": {"path": f"mod{i:02d}.py", "old_str": f"VALUE_{i} = 0",
                                    "new_str": f"VALUE_{i} = {i + 1}"}}]})
        turns.append({"agent": f"fast_edit:s{i:02d}", "expect": [{"tool": "str_replace", "contains": "edited"}],
                      "content": "done"})
    traj = work / "fan.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    t = time.perf_counter()
    proc = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", f"bench-fan-{time.time()}",
                 "--max-parallel", str(n), "--wait", "--json", "set every value")
    elapsed = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        return {"error": proc.stderr[-2000:]}
    result = json.loads(proc.stdout)
    diff = result["diff"]
    landed = [diff.count(f"+VALUE_{i} = {i + 1}") for i in range(n)]
    return {"agents": n, "wall_s": round(elapsed, 2), "status": result["status"],
            "subtasks_merged": sum(s["status"] == "merged" for s in result["subtasks"]),
            "patches_lost": landed.count(0), "patches_duplicated": sum(1 for c in landed if c > 1),
            "tests_after": result["tests_after"]["summary"],
            "goal_zero_lost_or_duplicated": landed == [1] * n}


async def bench_history(client, env: dict, work: Path, calls: int = 300) -> dict:
    repo = git_repo(work / "hist", {f"f{i}.py": f"# file {i}\n" + "x = 1\n" * 200 for i in range(3)})
    turns = [{"content": f"turn {t}", "tool_calls": [
        {"name": "read_file", "arguments": {"path": f"f{t % 3}.py"}},
        {"name": "grep", "arguments": {"pattern": "x = 1", "path": "."}},
        {"name": "run_command", "arguments": {"command": f"echo turn {t}"}}]} for t in range(calls // 3)]
    turns.append({"content": "done"})
    traj = work / "hist.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    wf = f"bench-hist-{time.time()}"
    t = time.perf_counter()
    proc = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--mode", "solo",
                 "--max-turns", str(calls), "--wait", "--json", "read a lot")
    elapsed = time.perf_counter() - t
    json_bytes, proto_bytes, events = 0, 0, 0
    for wid in (wf, f"{wf}/agent-1"):
        hist = await client.get_workflow_handle(wid).fetch_history()
        json_bytes += len(hist.to_json().encode())
        proto_bytes += sum(e.ByteSize() for e in hist.events)
        events += len(hist.events)
    try:
        status = json.loads(proc.stdout)["status"]  # "no_changes": the trajectory only reads
    except (ValueError, KeyError):
        status = f"exit {proc.returncode}: {proc.stderr.strip()[-300:]}"
    return {"tool_calls": calls, "wall_s": round(elapsed, 2), "status": status,
            "history_proto_bytes": proto_bytes, "history_json_bytes": json_bytes, "history_events": events,
            "goal_history_lt_2MB": proto_bytes < 2_000_000 and json_bytes < 2_000_000}


async def main() -> None:
    from activities.interceptor import plugin
    from activities.telemetry import Observer
    from infra import telemetry
    from infra.privatestack import private_stack_env
    from infra.settings import load_settings
    from infra.temporal import connect

    work = Path(tempfile.mkdtemp(prefix="bosun-bench-orch-"))
    env = private_stack_env(work / "data", worker_id=f"bench-{os.getpid()}")
    os.environ.update(env)
    up = bosun(env, "up", timeout=120)
    if up.returncode != 0:
        print(json.dumps({"error": f"bosun up failed: {up.stderr}"}))
        return
    try:
        settings = load_settings()
        bench_queue = settings.model_copy(update={"worker_id": f"bench-inproc-{os.getpid()}"})
        acts = Activities.standalone(settings)
        measured = {}
        for tel_on in (False, True):  # off first: once installed, OpenTelemetry's providers stay for the process
            tel = telemetry.setup(settings, "bench") if tel_on else None
            client = await connect(settings, tracing=tel_on)
            # the worker's one interceptor (journal off: the bench measures the workflow, not the disk)
            layers = [plugin(observer=Observer.for_settings(settings, "bench") if tel_on else None)]
            # the default (sandboxed) workflow runner, as the bosun worker uses
            async with Worker(client, task_queue=bench_queue.worker_queue, activities=[acts.tool_call, sleep_tool],
                              workflows=[SequentialToolsWorkflow, SequentialNoopWorkflow, ParallelTurnWorkflow],
                              max_concurrent_activities=64, plugins=layers):
                measured[tel_on] = await bench_overhead(client, bench_queue, work / ("on" if tel_on else "off"))
                if tel_on:
                    parallel = await bench_parallel(client, bench_queue)
            if tel is not None:
                tel.flush()
        await acts.sandboxes.close_all()
        off, on = measured[False], measured[True]
        overhead = {**on, "telemetry_off": {k: off[k] for k in ("local_activity", "activity", "mixed")},
                    "telemetry_p50_increase_ms": {
                        k: round(on[k]["overhead_ms_p50"] - off[k]["overhead_ms_p50"], 2)
                        for k in ("local_activity", "activity", "mixed")}}
        overhead["goal_telemetry_increase_le_1ms"] = all(
            v <= 1.0 for v in overhead["telemetry_p50_increase_ms"].values())
        fan = await asyncio.to_thread(bench_fan_out, env, work)
        history = await bench_history(client, env, work)
        print(json.dumps({"tool_call_overhead": overhead, "parallel_turn": parallel, "fan_out": fan,
                          "history": history}, indent=2))
    finally:
        bosun(env, "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.stdout.flush()
    os._exit(0)
