"""What a task costs against its real work (issue 50; prints JSON). Starts its own embedded stack (bosun's `up`,
private data dir, free ports) and runs the demo's example (examples/calc) with the scripted model, the test
double, which answers at once: everything a run takes beyond its real work is bosun's.

- ``unit``: one ``bosun sandbox exec --env ENV`` running the example's tests, the smallest real step;
- ``team``: the demo's team task (planner, two fast-edit agents, debugger), warm: its environment built;
- ``solo``: the solo task, warm;
- ``start``: ``bosun run`` (no ``--wait``) until it returns with the task started.

The rounds interleave the four, so the ratios are measured side by side on the same machine under the same load.
Then ``same_inputs``: the example committed again a day later, a code change and no dependency change, and whether
its run built an environment. ``breakdown``: where the last team run's time went, from its trace (the union of
the spans of each kind, so parallel ones count once) and its history (the activities).

Goals (issue 50): team <= 3x unit, solo <= 2x unit, start <= 0.3 s, no build for a commit that changes no
dependency input, orchestration per agent turn <= 10 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXAMPLE = ROOT / "examples" / "calc"
KINDS = {  # span name -> kind, first match wins
    "environment": re.compile(r"environment|env build", re.I),
    "tests": re.compile(r"run_checks|run_tests|checks", re.I),
    "sandbox_start": re.compile(r"sandbox (start|acquire)|acquire", re.I),
    "model": re.compile(r"model|chat|gen_ai", re.I),
    "git_and_workspaces": re.compile(r"workspace|clone|import|merge|deliver|commit|stitch|prepare", re.I),
    "cleanup": re.compile(r"release|cleanup|close|remove", re.I),
}


def bosun(env: dict[str, str], *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).parent / "bosun"), *args], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=timeout)
    return proc, time.perf_counter() - started


def commit(repo: Path, message: str, date: str | None = None) -> None:
    env = {**os.environ, **({"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date} if date else {})}
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@localhost",
           "-c", "commit.gpgsign=false"]
    subprocess.run(git + ["add", "-A"], check=True, env=env)
    subprocess.run(git + ["commit", "-qm", message], check=True, env=env)


def run_task(env: dict[str, str], repo: Path, mode: str, wf_id: str) -> dict:
    proc, wall = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / f'{mode}.jsonl'}",
                       "--mode", mode, "--id", wf_id, "--no-branch", "--wait", "--json", "fix the failing tests")
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        return {"wall_s": round(wall, 3), "error": (proc.stderr or proc.stdout).strip()[-400:]}
    return {"wall_s": round(wall, 3), "status": out.get("status"), "environment": out.get("environment")}


def merged(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of the intervals (parallel spans count once)."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def breakdown(env: dict[str, str], wf_id: str) -> dict:
    """Where a run's time went, by kind of span (``KINDS``), from ``bosun trace --json``."""
    proc, _ = bosun(env, "trace", wf_id, "--json")
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-300:]}
    spans = json.loads(proc.stdout)
    spans = spans.get("spans", spans) if isinstance(spans, dict) else spans
    if not spans:
        return {"error": "no spans"}
    start = min(s["start"] for s in spans)
    end = max(s.get("end") or s["start"] for s in spans)
    by_kind: dict[str, list[tuple[float, float]]] = {k: [] for k in KINDS}
    names: dict[str, list[tuple[float, float]]] = {}
    for s in spans:
        if (s.get("attributes") or {}).get("bosun.background"):
            continue
        iv = (s["start"] / 1e9, (s.get("end") or s["start"]) / 1e9)
        names.setdefault(s["name"], []).append(iv)
        for kind, pattern in KINDS.items():
            if pattern.search(s["name"]):
                by_kind[kind].append(iv)
                break
    top = sorted(((round(merged(v), 3), n, len(v)) for n, v in names.items()), reverse=True)[:15]
    # per agent: its workflow's time not spent in one of its activities (the model's turn, a tool call, its
    # sandbox), over its model turns: what orchestration costs a turn
    agents: dict[str, dict] = {}
    for s in spans:
        wf = str((s.get("attributes") or {}).get("temporalWorkflowID") or "")
        if "/" not in wf.removeprefix(wf_id) or not wf.startswith(wf_id + "/"):
            continue
        a = agents.setdefault(wf, {"start": s["start"], "end": s.get("end") or s["start"], "acts": [], "turns": 0})
        a["start"], a["end"] = min(a["start"], s["start"]), max(a["end"], s.get("end") or s["start"])
        if s["name"].startswith("RunActivity:"):
            a["acts"].append((s["start"] / 1e9, (s.get("end") or s["start"]) / 1e9))
            a["turns"] += s["name"] == "RunActivity:model_call"
    per_turn = [((a["end"] - a["start"]) / 1e9 - merged(a["acts"])) * 1000 / a["turns"] for a in agents.values()
                if a["turns"]]
    return {"trace_s": round((end - start) / 1e9, 3),
            "by_kind_s": {k: round(merged(v), 3) for k, v in by_kind.items()},
            "top_spans": [{"name": n, "s": s, "count": c} for s, n, c in top],
            "orchestration_ms_per_turn": round(statistics.median(per_turn), 1) if per_turn else None,
            "orchestration_ms_per_turn_by_agent": {w.removeprefix(wf_id + "/"): round(x, 1)
                                                   for w, x in zip(agents, per_turn, strict=False)}}


async def turns_and_activities(settings, wf_id: str) -> dict:
    """Model turns, activities and the time between them from the task's and its agents' histories."""
    from temporalio.api.enums.v1 import EventType

    from infra.temporal import connect
    client = await connect(settings)
    ids, turns, activities, gaps = [wf_id], 0, 0, []
    async for wf in client.list_workflows(f"WorkflowId STARTS_WITH '{wf_id}/'"):
        ids.append(wf.id)
    for wid in ids:
        hist = await client.get_workflow_handle(wid).fetch_history()
        last_done = None
        for e in hist.events:
            t = e.event_time.ToDatetime().timestamp()
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                activities += 1
                name = e.activity_task_scheduled_event_attributes.activity_type.name
                turns += name in ("model_call", "model_turn")
                if last_done is not None:
                    gaps.append(t - last_done)
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                last_done = t
            elif e.event_type == EventType.EVENT_TYPE_MARKER_RECORDED:
                activities += 1  # a local activity
    return {"workflows": len(ids), "activities": activities, "model_turns": turns,
            "gap_between_activities_ms_p50": round(statistics.median(gaps) * 1000, 2) if gaps else None}


async def wait(settings, wf_id: str) -> None:
    from infra.temporal import connect
    client = await connect(settings)
    await client.get_workflow_handle(wf_id).result()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of unit, team, solo and start")
    args = ap.parse_args()

    import asyncio

    from infra.privatestack import private_stack_env
    from infra.settings import load_settings

    work = Path(tempfile.mkdtemp(prefix="bosun-bench-latency-"))
    env = private_stack_env(work / "data", worker_id=f"bench-{os.getpid()}")
    os.environ.update(env)
    up, up_s = bosun(env, "up", timeout=180)
    if up.returncode != 0:
        print(json.dumps({"error": f"bosun up failed: {up.stderr.strip()[-500:]}"}))
        return
    out: dict = {"up_s": round(up_s, 2)}
    try:
        repo = work / "calc"  # the demo's example as a fresh repository (entry/demo.py does the same)
        shutil.copytree(EXAMPLE, repo, ignore=shutil.ignore_patterns("*.jsonl", "__pycache__", ".pytest_cache"))
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        commit(repo, "calc: example with a bug")
        first = run_task(env, repo, "team", "lat-first")
        out["first_team_run"] = first
        built, _ = bosun(env, "env", "build", "--repo", str(repo), "--json", timeout=900)
        env_id = json.loads(built.stdout)["env_id"]
        ws = work / "unit"
        subprocess.run(["git", "clone", "-q", str(repo), str(ws)], check=True)
        subprocess.run(["chown", "-R", "1000:1000", str(ws)], check=False)
        rows: dict[str, list[float]] = {"unit": [], "team": [], "solo": [], "start": []}
        statuses: dict[str, list] = {"team": [], "solo": []}
        for r in range(args.rounds):
            proc, s = bosun(env, "sandbox", "exec", "--env", env_id, "--workspace", str(ws), "--json", "--",
                            "python", "-m", "pytest", "-q", "-p", "no:cacheprovider")
            rows["unit"].append(s)
            for mode in ("team", "solo"):
                res = run_task(env, repo, mode, f"lat-{mode}-{r}")
                rows[mode].append(res["wall_s"])
                statuses[mode].append(res.get("status") or res.get("error"))
            proc, s = bosun(env, "run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}",
                            "--mode", "solo", "--id", f"lat-start-{r}", "--no-branch", "fix the failing tests")
            rows["start"].append(s if proc.returncode == 0 else float("nan"))
            asyncio.run(wait(load_settings(), f"lat-start-{r}"))
        med = {k: round(statistics.median(v), 3) for k, v in rows.items()}
        out.update({"median_s": med, "samples_s": {k: [round(x, 3) for x in v] for k, v in rows.items()},
                    "statuses": statuses,
                    "team_over_unit": round(med["team"] / med["unit"], 2),
                    "solo_over_unit": round(med["solo"] / med["unit"], 2)})
        # the same files committed a day later, with a code change and no dependency change
        (repo / "calc" / "__init__.py").write_text((repo / "calc" / "__init__.py").read_text() + "\n# later\n")
        # a day no earlier run of this bench committed on (an environment of that very day would be found by its
        # own key, not by what it installs)
        days = 2 + secrets.randbelow(3000)
        later = time.strftime("%Y-%m-%dT12:00:00+00:00", time.gmtime(time.time() + 86400 * days))
        commit(repo, "a code change on a later day", date=later)
        after = run_task(env, repo, "solo", "lat-later")
        out["same_inputs_a_later_day"] = {"commit_date": later, "run": after, "built_an_environment": not (
            after.get("environment") or {}).get("cached", False)}
        out["breakdown_team"] = breakdown(env, f"lat-team-{args.rounds - 1}")
        out["history_team"] = asyncio.run(turns_and_activities(load_settings(), f"lat-team-{args.rounds - 1}"))
        out["goals"] = {"team_le_3x_unit": out["team_over_unit"] <= 3, "solo_le_2x_unit": out["solo_over_unit"] <= 2,
                        "start_le_0_3s": med["start"] <= 0.3,
                        "no_build_for_same_inputs": not out["same_inputs_a_later_day"]["built_an_environment"],
                        "orchestration_ms_per_turn": out["breakdown_team"].get("orchestration_ms_per_turn")}
        print(json.dumps(out, indent=2))
    finally:
        bosun(env, "down", timeout=120)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)
