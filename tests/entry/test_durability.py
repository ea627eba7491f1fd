"""SIGKILL the worker in the middle of a run: the run finishes, and no completed activity ran twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.conftest import BOSUN, EXAMPLE, make_example_repo, wait_for


def slow_trajectory(tmp_path):
    turns = [json.loads(line) for line in (EXAMPLE / "solo.jsonl").read_text().splitlines()]
    # the 4th tool call sleeps: the worker is killed while it runs
    slow = {"content": "Checking the environment.", "tool_calls": [
        {"name": "run_command", "arguments": {"command": "sleep 8 && echo slept"}}]}
    turns.insert(2, slow)
    turns[3]["expect"] = [{"tool": "run_command", "contains": "slept"}]
    path = tmp_path / "slow.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    return path


@pytest.mark.slow
def test_worker_sigkill_mid_run(stack, example_repo, tmp_path):
    wf = f"it-kill-{int(time.time())}"
    run = subprocess.Popen([BOSUN, "run", "--repo", str(example_repo), "--model",
                            f"scripted:{slow_trajectory(tmp_path)}", "--id", wf, "--mode", "solo", "--wait", "--json",
                            "fix it"],
                           env={**os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)

    def tool_starts():
        return [e for e in stack.journal() if e["workflow_id"] == f"{wf}/agent-1" and e["type"] == "tool_call"
                and e["event"] == "start"]

    def tests_before_done():  # (a solo task runs them alongside its agent: the kill is to land in the tool only)
        return any(e["workflow_id"] == wf and e["type"] == "run_checks" and e["event"] == "complete"
                   for e in stack.journal())

    wait_for(lambda: len(tool_starts()) >= 4 and tests_before_done(), 120, what="the slow tool call to start")
    victim = stack.state()["components"]["worker"]["pid"]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.time()

    out, err = run.communicate(timeout=240)
    assert run.returncode == 0, err + out
    result = json.loads(out)
    assert result["status"] == "succeeded" and result["tests_after"]["green"]
    assert stack.state()["components"]["worker"]["pid"] != victim, "the supervisor restarted the worker"

    journal = [e for e in stack.journal() if e["workflow_id"] in (wf, f"{wf}/agent-1")]
    completed_before_kill = assert_no_completed_activity_ran_twice(journal, killed_at)
    assert completed_before_kill >= 8, "the kill must land mid-run, after several completed activities"
    # the interrupted call was retried (attempt 2) on the restarted worker, and it was the only retry
    retried = {(e["workflow_id"], e["activity_id"]) for e in journal if e["attempt"] > 1}
    assert len(retried) == 1
    model_calls = [e for e in journal if e["type"] == "model_call" and e["event"] == "complete"]
    assert len(model_calls) == 6, "one model call per recorded turn, none repeated"


def team_trajectory_with_sleeps(tmp_path):
    turns = [json.loads(line) for line in (EXAMPLE / "team.jsonl").read_text().splitlines()]
    out = []
    for t in turns:
        if t.get("agent", "").startswith("fast_edit:") and not t.get("expect"):
            # each fast-edit agent first runs a slow command: the worker is killed while both run
            out.append({"agent": t["agent"], "content": "warming up",
                        "tool_calls": [{"name": "run_command", "arguments": {"command": "sleep 4 && echo warm"}}]})
            t = {**t, "expect": [{"tool": "run_command", "contains": "warm"}]}
        out.append(t)
    path = tmp_path / "team-slow.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in out) + "\n")
    return path


LEASES = {"hold_slot", "watch_host"}
"""Activities that do no work but last: a held slot, a host watch. They end when the workflow drops them (a
cancel) or with their worker, never by completing; the journal records them like every activity."""


def assert_no_completed_activity_ran_twice(journal, killed_at):
    """Each activity did its work once: one completion that ran it, and an activity that completed before the
    kill was not started again, unless that start only replayed the recorded result (a file tool call runs as a
    local activity, which runs again when the kill cut off its workflow task: agents/tools/once.py)."""
    by_activity: dict[tuple[str, str], list[dict]] = {}
    for e in journal:
        if e["type"] not in LEASES:
            by_activity.setdefault((e["workflow_id"], e["activity_id"]), []).append(e)
    before = 0
    for key, events in by_activity.items():
        completes = [e for e in events if e["event"] == "complete"]
        worked = [e for e in completes if not e.get("replayed")]
        assert len(worked) == 1, f"activity {key} did its work {len(worked)} times: {events}"
        if worked[0]["ts"] < killed_at:
            before += 1
            starts = [e for e in events if e["event"] == "start"]
            replays = len(completes) - 1
            assert len(starts) == 1 + replays, f"{key} ran again: {events}"
    return before


@pytest.mark.slow
def test_worker_sigkill_mid_fan_out(stack, example_repo, tmp_path):
    wf = f"it-kill-fan-{int(time.time())}"
    run = subprocess.Popen([BOSUN, "run", "--repo", str(example_repo), "--model",
                            f"scripted:{team_trajectory_with_sleeps(tmp_path)}", "--id", wf, "--wait", "--json",
                            "fix the tests"], env={**os.environ, **stack.env}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)

    def fast_edit_sleeping():
        started = {e["workflow_id"] for e in stack.journal() if e["type"] == "tool_call" and e["event"] == "start"
                   and e["workflow_id"].startswith(f"{wf}/fast_edit-")}
        return len(started) == 2

    wait_for(fast_edit_sleeping, 120, what="both fast-edit agents to be running")
    victim = stack.state()["components"]["worker"]["pid"]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.time()
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0, err + out
    result = json.loads(out)
    assert result["status"] == "succeeded"
    assert [(s["id"], s["status"]) for s in result["subtasks"]] == [("median", "merged"), ("percent", "merged")]
    journal = [e for e in stack.journal() if e["workflow_id"].startswith(wf)]
    assert assert_no_completed_activity_ran_twice(journal, killed_at) >= 10
    model_calls = [e for e in journal if e["type"] == "model_call" and e["event"] == "complete"]
    assert len(model_calls) == 3 + 5 + 5 + 5, "one model call per recorded turn, none repeated"


@pytest.mark.slow
def test_temporal_server_restart_mid_run(stack, example_repo, tmp_path):
    wf = f"it-temporal-restart-{int(time.time())}"
    run = subprocess.Popen([BOSUN, "run", "--repo", str(example_repo), "--model",
                            f"scripted:{slow_trajectory(tmp_path)}", "--id", wf, "--mode", "solo", "fix it"],
                           env={**os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    assert run.wait(60) == 0, run.stderr.read()
    wait_for(lambda: len([e for e in stack.journal() if e["workflow_id"] == f"{wf}/agent-1"
                          and e["type"] == "tool_call" and e["event"] == "start"]) >= 4, 120,
             what="the slow tool call to start")
    server = stack.state()["components"]["temporal"]["pid"]
    os.kill(server, signal.SIGKILL)
    killed_at = time.time()
    wait_for(lambda: stack.state()["components"]["temporal"]["pid"] != server, 60, what="Temporal restart")

    def finished():
        proc = stack.bosun("history", wf, "--json")
        return proc.returncode == 0 and json.loads(proc.stdout).get("result")

    result = wait_for(finished, 240, interval=2, what="the run to finish after the server restart")
    assert result["status"] == "succeeded" and result["tests_after"]["green"]
    journal = [e for e in stack.journal() if e["workflow_id"] in (wf, f"{wf}/agent-1")]
    assert assert_no_completed_activity_ran_twice(journal, killed_at) >= 8


def _tool_server_of(pid: int) -> int | None:
    """The sandbox's tool server among the ancestors of ``pid`` (host pids; docker's and bwrap's alike)."""
    while pid > 1:
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace")
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            return None
        if "toolserver" in cmdline:
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # ppid
    return None


@pytest.mark.slow
def test_a_sandbox_that_dies_mid_call_is_replaced_and_the_call_retried(stack, example_repo, tmp_path):
    """UnexpectedEnvironment (the sandbox's tool server died under a command) re-provisions the sandbox: the
    activity is retried on a fresh one and the run carries on."""
    wf = f"it-sandbox-dies-{int(time.time())}"
    # a duration of its own, so that pgrep finds this run's command and not one of another suite on the machine
    sleep = f"sleep 4.{int.from_bytes(os.urandom(3), 'big'):08d}"
    turns = [{"content": "waiting", "tool_calls": [{"name": "run_command",
                                                    "arguments": {"command": f"{sleep} && echo survived"}}]},
             {"content": "reading", "expect": [{"tool": "run_command", "contains": "survived"}],
              "tool_calls": [{"name": "read_file", "arguments": {"path": "calc/stats.py"}}]},
             {"content": "done"}]
    traj = tmp_path / "dies.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    run = subprocess.Popen([BOSUN, "run", "--repo", str(example_repo), "--model", f"scripted:{traj}", "--id", wf,
                            "--mode", "solo", "--wait", "--json", "look around"],
                           env={**os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def sleeping() -> int | None:
        out = subprocess.run(["pgrep", "-f", f"^{sleep}$"], capture_output=True, text=True).stdout.split()
        return int(out[0]) if out else None

    first = wait_for(sleeping, 120, interval=0.1, what="the command to run in the sandbox")
    server = _tool_server_of(first)
    assert server is not None, "the command runs under a sandbox tool server"
    os.kill(server, signal.SIGKILL)
    second = wait_for(lambda: (p := sleeping()) and p != first and p, 60, what="the command to run again")
    assert _tool_server_of(second) not in (None, server), "the retry ran in a new sandbox"
    out, err = run.communicate(timeout=180)
    assert run.returncode == 1 and json.loads(out)["status"] == "no_changes", err + out
    attempts = [e["attempt"] for e in stack.journal() if e["workflow_id"] == f"{wf}/agent-1"
                and e["type"] == "tool_call" and e["event"] == "start" and not e.get("local")]
    assert attempts == [1, 2]
    steps = json.loads(stack.bosun("history", wf, "--json").stdout)
    agent = next(c for c in steps["children"] if c["kind"] == "child")
    reads = [c for c in agent["children"] if c["name"] == "tool_call" and c["input"]["call"]["name"] == "read_file"]
    assert len(reads) == 1 and not reads[0]["result"]["is_error"]


@pytest.mark.slow
def test_worker_killed_inside_a_batch_of_file_tools_applies_the_edit_once(stack, tmp_path):
    """File tools are local activities: their results reach history only when the workflow task completes. The
    worker is killed after an edit finished but while a slow search in the same workflow task still runs, so the
    restarted worker runs the edit again; the tool-call ledger answers with the recorded result and the file is
    edited once (a second application would write '# checked  # checked')."""
    repo = make_example_repo(tmp_path / "calc")
    salt = os.urandom(4).hex()  # new content: the code search cannot reuse a cached index, so it takes seconds
    for d in range(24):
        (repo / f"gen{d}").mkdir()
        for f in range(50):
            (repo / f"gen{d}" / f"mod{f}.py").write_text("".join(
                f"def func_{salt}_{d}_{f}_{i}(value):\n    return value * {i}\n\n" for i in range(30)))
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "gen"], cwd=repo, check=True)
    edit = {"path": "calc/stats.py", "old_str": "    return ordered[middle]\n",
            "new_str": "    return ordered[middle]  # checked\n"}
    turns = [{"content": "editing, then searching", "tool_calls": [
                {"name": "str_replace", "arguments": edit},
                {"name": "search_code", "arguments": {"query": "median of ordered values"}}]},
             {"content": "done", "expect": [{"tool": "str_replace", "contains": "edited calc/stats.py"}]}]
    traj = tmp_path / "batch.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    wf = f"it-kill-batch-{int(time.time())}"
    run = subprocess.Popen([BOSUN, "run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--mode",
                            "solo", "--wait", "--json", "mark the median"],
                           env={**os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def local(event: str) -> list[dict]:
        return [e for e in stack.journal() if e["workflow_id"] == f"{wf}/agent-1" and e["type"] == "tool_call"
                and e.get("local") and e["event"] == event]

    wait_for(lambda: len(local("start")) == 2 and len(local("complete")) == 1, 120,
             what="the edit to finish and the search to start")
    time.sleep(0.3)
    assert len(local("complete")) == 1, "the kill must land while the search still runs"
    victim = stack.state()["components"]["worker"]["pid"]
    os.kill(victim, signal.SIGKILL)
    killed_at = time.time()

    out, err = run.communicate(timeout=240)
    result = json.loads(out) if out.strip() else {}
    assert result.get("diff", "").count("# checked") == 1, err + out
    journal = [e for e in stack.journal() if e["workflow_id"] in (wf, f"{wf}/agent-1")]
    assert_no_completed_activity_ran_twice(journal, killed_at)
    edit_id = local("complete")[0]["activity_id"]
    replays = [e for e in local("complete") if e["activity_id"] == edit_id and e.get("replayed")]
    assert len(replays) == 1, "the restarted worker ran the edit again and got the recorded result"
