"""The walking skeleton end to end on the real stack: Temporal dev server, worker, bwrap sandbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE, make_example_repo
from tests.entry.test_messages import sleepy_trajectory


def run_example(stack, repo, wf_id, trajectory=EXAMPLE / "solo.jsonl", mode="solo"):
    return stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{trajectory}", "--id", wf_id, "--wait",
                       "--json", "--mode", mode, "fix the failing tests", timeout=300)


@pytest.fixture(scope="module")
def fixed_run(stack, tmp_path_factory):
    repo = make_example_repo(tmp_path_factory.mktemp("run") / "calc")
    return repo, run_example(stack, repo, "it-run-1")


def test_run_fixes_the_example(stack, fixed_run):
    example_repo, proc = fixed_run
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "scripted: the test double" in proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded"
    assert not result["tests_before"]["green"]
    assert result["tests_before"]["failed"] == ["tests/test_report.py::test_percent",
                                                "tests/test_report.py::test_percent_of_nothing",
                                                "tests/test_stats.py::test_median_even"]
    assert result["tests_after"]["green"] and result["tests_after"]["passed_count"] == 7
    assert result["files_changed"] == ["calc/report.py", "calc/stats.py"]
    assert "+        return (ordered[middle - 1] + ordered[middle]) / 2" in result["diff"]
    assert result["branch"] == "bosun/it-run-1" and result["commit"]
    assert result["agent"]["status"] == "done" and result["agent"]["turns"] == 5
    # the user's repository is untouched; the change lives on the workspace's branch
    assert "ordered[middle - 1]" not in (example_repo / "calc" / "stats.py").read_text()

    hist = stack.bosun("history", "it-run-1")
    assert hist.returncode == 0, hist.stderr
    text = hist.stdout
    assert "TaskWorkflow it-run-1: completed" in text
    assert "model turn 1 [scripted:" in text
    assert "tool str_replace" in text and "edited calc/stats.py" in text
    assert "tests before: 3 failed, 4 passed" in text and "tests after: 7 passed" in text

    steps = json.loads(stack.bosun("history", "it-run-1", "--json").stdout)
    agent = next(c for c in steps["children"] if c["kind"] == "child")
    tools = [c["input"]["call"]["name"] for c in agent["children"] if c["name"] == "tool_call"]
    assert tools == ["run_tests", "read_file", "read_file", "str_replace", "str_replace", "run_tests"]
    assert all(c["duration_s"] is not None for c in agent["children"])


def test_divergent_trajectory_fails_loudly(stack, example_repo, tmp_path):
    bad = tmp_path / "wrong.jsonl"
    bad.write_text('{"content": "run", "tool_calls": [{"name": "run_tests", "arguments": {}}]}\n'
                   '{"expect": [{"tool": "run_tests", "contains": "all green"}], "content": "done"}\n')
    proc = run_example(stack, example_repo, "it-diverge", trajectory=bad)
    assert proc.returncode != 0
    assert "ScriptDiverged" in proc.stderr + proc.stdout
    assert "does not contain 'all green'" in proc.stderr + proc.stdout


def test_bad_input_is_refused_and_starts_nothing(stack, example_repo, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    solo = ["--repo", str(example_repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}"]
    harness = tmp_path / "harness.json"
    harness.write_text(json.dumps({"edit_tool": "apply_patch", "compact_at": 2}))
    cases = [
        ([*solo, "--harness", str(tmp_path / "none.json")], "none.json: cannot read it (No such file"),
        ([*solo, "--harness", str(harness)], "bad harness settings: compact_at: Input should be less than or equal "
                                             "to 1"),
        ([*solo, "--max-turns", "0"], "--max-turns must be at least 1"),
        (["--repo", str(example_repo), "--model", "auto"],
         "(one that --model auto may pick: BOSUN_ROUTER_CONFIG="),
        ([*solo, "--ref", "no-such-branch"], "--ref no-such-branch: not a branch, tag or commit of"),
        ([*solo, "--ref=--upload-pack=x"], "--ref '--upload-pack=x' is not a usable"),
        ([*solo, "--context-window", "100"], "--context-window: bad harness settings: context_window: Input should "
                                             "be greater than or equal to 2048"),
        (["--repo", str(plain), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}"], "not a git repository"),
        (["--repo", str(example_repo), "--model", f"scripted:{tmp_path / 'missing.jsonl'}"], "does not exist"),
        (["--repo", str(example_repo), "--model", "gemini:pro"], "unknown model spec 'gemini:pro'"),
        (["--repo", str(example_repo), "--model", "anthropic:claude-sonnet-4-5"], "no API key"),
        (["--repo", str(tmp_path / "nope"), "--model", "openai:gpt-5"], "no such directory"),
    ]
    for args, message in cases:
        proc = stack.bosun("run", *args, "--id", "it-bad-input", "do something",
                           env_extra={"ANTHROPIC_API_KEY": "", "BOSUN_ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "",
                                      "BOSUN_OPENAI_API_KEY": ""})
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], (args, proc.stderr)
    listed = stack.bosun("history", "it-bad-input")
    assert listed.returncode == 2 and "no run 'it-bad-input'" in listed.stderr
    assert "`bosun runs` lists the recent ones" in listed.stderr


def test_a_key_only_this_shell_has_is_refused_before_the_start(stack, example_repo):
    """The worker reads model keys when `bosun up` starts it: a key exported afterwards in the shell of `bosun run`
    would never reach the model. The run is refused, saying to restart the stack, and nothing starts."""
    keys = json.loads((stack.data_dir / "worker-health.json").read_text())["model_keys"]
    assert keys == [], keys  # (the test stack starts without any key)
    for spec, var in (("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"), ("openai:gpt-5", "BOSUN_OPENAI_API_KEY")):
        proc = stack.bosun("run", "--repo", str(example_repo), "--model", spec, "--id", "it-key-shell", "go",
                           env_extra={var: "sk-only-in-this-shell"})
        assert proc.returncode == 2, proc.stderr
        assert "the running worker has no" in proc.stderr and "`bosun down && bosun up`" in proc.stderr
        assert "sk-only-in-this-shell" not in proc.stderr
    assert stack.bosun("inspect", "it-key-shell").returncode == 2  # nothing started


async def _replay_failures(stack, wf_ids: list[str]) -> dict[str, str]:
    """temporalio's Replayer re-runs today's workflow code against the recorded histories: what did not replay."""
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from workflows.agent import AgentWorkflow
    from workflows.task import TaskWorkflow

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}",
                                  data_converter=pydantic_data_converter)
    replayer = Replayer(workflows=[TaskWorkflow, AgentWorkflow], data_converter=pydantic_data_converter)
    failures = {}
    for wf_id in wf_ids:
        history = await client.get_workflow_handle(wf_id).fetch_history()
        result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
        if result.replay_failure is not None:
            failures[wf_id] = str(result.replay_failure)
    return failures


async def test_recorded_histories_replay_deterministically(stack, fixed_run):
    """Non-determinism in the task's or the agent's workflow code fails here."""
    assert fixed_run[1].returncode == 0
    assert await _replay_failures(stack, ["it-run-1", "it-run-1/agent-1"]) == {}


def test_team_mode_plans_fans_out_stitches_and_debugs(stack, example_repo):
    proc = run_example(stack, example_repo, "it-team-1", trajectory=EXAMPLE / "team.jsonl", mode="team")
    assert proc.returncode == 0, proc.stderr + proc.stdout
    result = json.loads(proc.stdout)
    assert result["status"] == "succeeded" and result["tests_after"]["passed_count"] == 7
    assert [s["id"] for s in result["plan"]["subtasks"]] == ["median", "percent"]
    assert result["plan"]["waves"] == [["median", "percent"]] and result["plan"]["source"] == "planner"
    assert [(s["id"], s["status"]) for s in result["subtasks"]] == [("median", "merged"), ("percent", "merged")]
    assert len(result["debug_rounds"]) == 1 and result["debug_rounds"][0]["status"] == "done"
    assert result["files_changed"] == ["calc/report.py", "calc/stats.py"]
    assert 'return "0.0%"' in result["diff"] and "ordered[middle - 1]" in result["diff"]

    steps = json.loads(stack.bosun("history", "it-team-1", "--json").stdout)
    children = [c for c in steps["children"] if c["kind"] == "child"]
    names = [c["workflow_id"].split("/")[-1] for c in children]
    assert names[0] == "planner" and names[-1] == "debugger-1"
    assert sorted(names[1:3]) == ["fast_edit-median-1", "fast_edit-percent-1"]
    # the two fast-edit agents overlapped in time (parallel fan-out)
    a, b = children[1], children[2]
    assert a["started"] < b["started"] + b["duration_s"] and b["started"] < a["started"] + a["duration_s"]
    merges = [c for c in steps["children"] if c["name"] == "merge_agent_work"]
    assert [(m["input"]["label"], m["result"]["merged"]) for m in merges] == [
        ("subtask median (attempt 1)", True), ("subtask percent (attempt 1)", True),
        ("debugger run debugger-1", True)]
    # the subtasks are merge commits; the debugger, which started at the branch head, moves the branch forward
    assert [m["input"]["fast_forward"] for m in merges] == [False, False, True]
    # the team's histories (the coordinator and its four agents) replay on today's code: the upgrade rule
    # (docs/operations.md, "Upgrading") keeps no older code path, so this is the determinism check of each
    assert asyncio.run(_replay_failures(stack, ["it-team-1"] + [c["workflow_id"] for c in children])) == {}


def test_compaction_is_recorded_in_history(stack, example_repo, tmp_path):
    """The scripted profile has a 4,096-token window: long tool outputs force a compaction, shown in history."""
    noisy = "python3 -c \"import sys; [print('FAILED tests/t.py::test_%d - assert 0' % i) for i in range(200)]\""
    turns = [{"content": f"noise {n}", "tool_calls": [{"name": "run_command", "arguments": {"command": noisy}}]}
             for n in range(4)]
    turns.append({"content": "done"})
    traj = tmp_path / "noisy.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    proc = run_example(stack, example_repo, "it-compact", trajectory=traj)
    assert proc.returncode == 1, proc.stderr  # the tests still fail: nothing was fixed
    text = stack.bosun("history", "it-compact").stdout
    assert "compaction before this call: compacted ~" in text
    steps = json.loads(stack.bosun("history", "it-compact", "--json").stdout)
    agent = next(c for c in steps["children"] if c["kind"] == "child")
    comps = [c["result"]["compaction"] for c in agent["children"]
             if c["name"] == "model_call" and c["result"].get("compaction")]
    assert comps and all(c["after_tokens"] < c["before_tokens"] for c in comps)
    event = json.loads((stack.data_dir / "artifacts" / comps[0]["event_ref"][7:9] / comps[0]["event_ref"][7:])
                       .read_text())
    assert event["kept_counts"]["failing_tests"] >= 200  # every failing test id survived the compaction


@pytest.fixture
def router_config(stack):
    """The stack's router configuration file; put back to the empty default after the test."""
    path = stack.data_dir / "router.json"
    yield path
    path.write_text("{}")


def test_model_auto_routes_each_role_and_history_shows_why(stack, example_repo, router_config):
    team = f"scripted:{EXAMPLE / 'team.jsonl'}"
    router_config.write_text(json.dumps({
        "tiers": {"small": team, "medium": team, "large": team},
        "roles": {"debugger": {"model": team, "fallbacks": []}}}))
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", "auto", "--id", "it-auto", "--wait", "--json",
                       "fix the failing tests", timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    text = stack.bosun("history", "it-auto").stdout
    assert "route planner: scripted:" in text and "-> small tier" in text
    assert "route fast_edit: scripted:" in text and "files_in_scope=1" in text
    assert "route debugger: scripted:" in text and "model fixed to" in text


def test_bad_router_config_is_refused_before_anything_starts(stack, example_repo, router_config):
    router_config.write_text('{"tiers": {"small": "nope"}}')
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", "auto", "--id", "it-auto-bad", "fix")
    assert proc.returncode == 2
    assert proc.stderr.startswith("bosun: BOSUN_ROUTER_CONFIG=") and "tiers" in proc.stderr
    assert stack.bosun("history", "it-auto-bad").returncode == 2


def test_turn_budget_stops_an_agent_cleanly(stack, example_repo):
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}",
                       "--mode", "solo", "--max-turns", "2", "--id", "it-budget", "--wait", "--json", "fix",
                       timeout=300)
    assert proc.returncode == 1, proc.stderr  # delivered, but the tests still fail
    result = json.loads(proc.stdout)
    assert result["agent"]["status"] == "budget_exhausted" and result["agent"]["turns"] == 2
    assert result["agent"]["stopped"] == "turn limit (2)"
    assert result["status"] == "failed" and result["tests_after"]["failed"]
    assert result["problems"] == ["the agent ran out of budget before it finished (turn limit (2))"]


def test_task_budget_is_checked_before_fan_out(stack, example_repo):
    proc = stack.bosun("run", "--repo", str(example_repo), "--model", f"scripted:{EXAMPLE / 'team.jsonl'}",
                       "--budget-tokens", "1000", "--id", "it-task-budget", "--wait", "--json", "fix the tests",
                       timeout=300)
    result = json.loads(proc.stdout)
    assert result["spent"]["tokens"] > 1000 and result["spent"]["turns"] == 3  # the planner alone spent it
    assert [(s["id"], s["status"]) for s in result["subtasks"]] == [("median", "skipped"), ("percent", "skipped")]
    assert result["budget_note"].startswith("task budget: 2 of 2 fast-edit agents not started")
    # nothing was done because the budget ran out: a failure, with the reason in the result
    assert result["status"] == "failed" and not result["debug_rounds"] and proc.returncode == 1
    assert any("skipped" in p for p in result["problems"])
    bad = stack.bosun("run", "--repo", str(example_repo), "--model", f"scripted:{EXAMPLE / 'team.jsonl'}",
                      "--budget-usd", "0", "fix")
    assert bad.returncode == 2 and "must be positive" in bad.stderr


def test_agents_start_with_static_context_and_pinned_instructions(stack, fixed_run):
    _, proc = fixed_run
    result = json.loads(proc.stdout)
    ref = result["agent"]["transcript_ref"]
    transcript = json.loads((stack.data_dir / "artifacts" / ref[7:9] / ref[7:]).read_text())
    first = next(m["content"] for m in transcript if m["role"] == "user")
    assert "# Environment" in first and "# Git status" in first
    assert "calc/stats.py" in first  # the repo map
    assert "Keep the functions in `calc/` pure" in first  # AGENTS.md, pinned
    assert first.index("# Task") > first.index("# Environment")


def test_a_second_run_with_the_same_id_continues_on_the_branch(stack, example_repo, tmp_path):
    """A follow-up after the task finished starts a run under the same id (the business key): it starts from the
    branch's head, so the earlier work is kept and the new change lands on top of it."""
    first = run_example(stack, example_repo, "it-continue")
    assert first.returncode == 0, first.stderr
    turns = [{"content": "Adding the mode function.", "tool_calls": [{"name": "str_replace", "arguments": {
                 "path": "calc/stats.py", "old_str": "def spread(",
                 "new_str": "def mode(values: list[float]) -> float:\n    \"\"\"The most common value.\"\"\"\n"
                            "    return max(set(values), key=values.count)\n\n\ndef spread("}}]},
             {"expect": [{"tool": "str_replace", "contains": "edited calc/stats.py"}], "content": "Done."}]
    traj = tmp_path / "more.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    second = run_example(stack, example_repo, "it-continue", trajectory=traj)
    assert second.returncode == 0, second.stderr + second.stdout
    result = json.loads(second.stdout)
    assert result["tests_before"]["green"]  # it started where the first run ended
    assert result["status"] == "succeeded" and result["branch"] == "bosun/it-continue"
    assert "+def mode(values" in result["diff"] and "ordered[middle - 1] + ordered[middle]" in result["diff"]



def _long_arguments_then_long_outputs() -> list[dict]:
    """The issue's repro: one run_command whose heredoc is over compaction's argument cap (1,200 characters), a
    write_file over it too, then four turns whose outputs push the transcript past the scripted profile's window, so
    that the long calls' turns are old when compaction runs."""
    body = "\n".join(f"line {i:03d}: the quick brown fox jumps over the lazy dog" for i in range(27))
    command = f"cat > notes.txt <<'EOF'\n{body}\nEOF"
    content = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(60))
    assert len(command) > 1200 and len(content) > 1200
    turns = [{"content": "Writing the notes.", "tool_calls": [{"name": "run_command", "arguments": {
                 "command": command}}]},
             {"content": "Writing the module.", "tool_calls": [{"name": "write_file", "arguments": {
                 "path": "calc/many.py", "content": content}}]}]
    turns += [{"content": f"Counting {n}.", "tool_calls": [{"name": "run_command",
                                                             "arguments": {"command": "seq 1 2500"}}]}
              for n in range(4)]
    turns.append({"expect": [{"tool": "run_command", "contains": "\n2500\n"}], "content": "Done."})
    return turns


@pytest.fixture(scope="module")
def long_arguments_run(stack, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("long-args")
    traj = tmp / "long.jsonl"
    traj.write_text("\n".join(json.dumps(t) for t in _long_arguments_then_long_outputs()) + "\n")
    return run_example(stack, make_example_repo(tmp / "calc"), "it-long-args", trajectory=traj)


def test_a_replay_survives_compaction_of_long_arguments(stack, long_arguments_run):
    """Compaction stores the long old tool-call arguments and leaves placeholders in the transcript; the replay still
    matches the recording (and a last output compacted to its summary still meets the trajectory's expectation),
    so the agent's work is kept."""
    proc = long_arguments_run
    assert proc.returncode == 1, proc.stderr + proc.stdout  # the example's tests still fail: nothing was fixed
    result = json.loads(proc.stdout)
    assert result["agent"]["status"] == "done", result["agent"]
    assert result["files_changed"] == ["calc/many.py", "notes.txt"]
    assert "+line 026: the quick brown fox" in result["diff"] and "+def f59(x):" in result["diff"]
    steps = json.loads(stack.bosun("history", "it-long-args", "--json").stdout)
    agent = next(c for c in steps["children"] if c["kind"] == "child")
    comps = [c["result"]["compaction"] for c in agent["children"]
             if c["name"] == "model_call" and c["result"].get("compaction")]
    events = [json.loads((stack.data_dir / "artifacts" / c["event_ref"][7:9] / c["event_ref"][7:]).read_text())
              for c in comps]
    stored = {s["what"] for e in events for s in e["stored"]}
    assert {"argument:command", "argument:content", "output"} <= stored


def test_an_export_of_a_run_with_long_arguments_replays_to_the_same_diff(stack, long_arguments_run, tmp_path):
    assert long_arguments_run.returncode == 1, long_arguments_run.stderr
    out = tmp_path / "run.json"
    exported = stack.bosun("export", "it-long-args", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    again = run_example(stack, make_example_repo(tmp_path / "calc"), "it-long-args-replay", trajectory=out)
    assert again.returncode == 1, again.stderr + again.stdout
    replayed = json.loads(again.stdout)
    assert replayed["agent"]["status"] == "done", replayed["agent"]
    assert replayed["diff"] == json.loads(long_arguments_run.stdout)["diff"]


def _work_state(repo: Path) -> dict:
    import subprocess

    def git(*args: str) -> bytes:
        return subprocess.run(["git", "--no-optional-locks", *args], cwd=repo, capture_output=True, check=True).stdout
    files = {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*")
             if p.is_file() and ".git" not in p.relative_to(repo).parts}
    return {"head": git("symbolic-ref", "HEAD"), "tip": git("rev-parse", "HEAD"), "index": git("ls-files", "-s"),
            "status": git("status", "--porcelain=v1", "-z", "--untracked-files=all"),
            "staged": git("diff", "--cached", "--binary"), "files": files}


def test_the_result_is_a_branch_in_your_repository_and_your_work_is_untouched(stack, tmp_path):
    """`bosun run --wait` on a repository with work in progress (an unstaged edit, a staged file, an untracked
    file, on its own branch): the branch bosun/<id> is there afterwards at the result's commit, and the working
    tree, index and checked-out branch are exactly as they were. `--no-branch` leaves the repository alone."""
    import subprocess
    repo = make_example_repo(tmp_path / "calc")
    g = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*g, "checkout", "-qb", "my-work"], cwd=repo, check=True)
    (repo / "README.md").write_text("my unfinished notes\n")
    (repo / "staged.txt").write_text("staged\n")
    subprocess.run([*g, "add", "staged.txt"], cwd=repo, check=True)
    (repo / "scratch.txt").write_text("untracked\n")
    before = _work_state(repo)
    proc = stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}", "--id",
                       "it-branch", "--wait", "--mode", "solo", "fix the failing tests", timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert f"result: the branch bosun/it-branch in your repository {repo}" in proc.stdout
    assert f"git -C {repo} diff HEAD...bosun/it-branch" in proc.stdout
    assert _work_state(repo) == before
    shown = subprocess.run(["git", "show", "bosun/it-branch:calc/stats.py"], cwd=repo, capture_output=True,
                           text=True, check=True).stdout
    assert "ordered[middle - 1]" in shown
    history = stack.bosun("history", "it-branch")
    assert "result: the branch bosun/it-branch in your repository" in history.stdout
    quiet = stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}", "--id",
                        "it-no-branch", "--wait", "--json", "--mode", "solo", "--no-branch", "fix the failing tests",
                        timeout=300)
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["local_branch"] == ""
    refs = subprocess.run(["git", "for-each-ref", "--format=%(refname)", "refs/heads/bosun"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout.split()
    assert refs == ["refs/heads/bosun/it-branch"]


def test_bosun_runs_lists_the_recent_runs_newest_first(stack, fixed_run, tmp_path):
    assert fixed_run[1].returncode == 0
    listed = stack.bosun("runs", "--json", "--limit", "50")
    assert listed.returncode == 0, listed.stderr
    runs = json.loads(listed.stdout)
    mine = next(r for r in runs if r["id"] == "it-run-1")
    assert mine["status"] == "succeeded" and mine["trigger"] == "cli" and mine["kind"] == "task"
    assert mine["repository"] == str(fixed_run[0]) and mine["duration_s"] > 0 and mine["closed"]
    assert [r["started"] for r in runs] == sorted((r["started"] for r in runs), reverse=True)
    assert not any("/" in r["id"] for r in runs)  # no agents, no evaluation instances
    only = json.loads(stack.bosun("runs", "--json", "--status", "succeeded").stdout)
    assert only and {r["status"] for r in only} == {"succeeded"}
    text = stack.bosun("runs", "--limit", "1").stdout.splitlines()
    assert text[0].split()[:3] == ["ID", "STATUS", "TRIGGER"] and len(text) == 2
    bad = stack.bosun("runs", "--status", "finished")
    assert bad.returncode == 2 and "--status 'finished': one of running, succeeded" in bad.stderr


def test_a_repository_bosun_cannot_detect_is_said_so_as_the_run_starts(stack, tmp_path):
    from tests.sandbox.envfixtures import make_repo
    repo = make_repo(tmp_path / "ruby", {"Gemfile": "source 'https://rubygems.org'\n", "lib/x.rb": "puts 1\n"})
    done = tmp_path / "done.jsonl"
    done.write_text('{"content": "nothing to do"}\n')
    proc = stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{done}", "--id", "it-node", "--wait",
                       "--mode", "solo", "look around", timeout=300)
    assert (f"bosun: warning: {repo} at HEAD: not detected: this is not a Python project "
            "(found Gemfile (Ruby)") in proc.stderr, proc.stderr
    assert "status: no_changes" in proc.stdout, proc.stdout + proc.stderr


def test_a_run_whose_http_api_does_not_answer_starts_through_the_sdk_and_a_running_id_is_refused(stack, fixed_run,
                                                                                                 tmp_path):
    """The HTTP API is a shortcut (infra/temporal_http.py): with nothing there, the SDK starts the task the same way;
    either way the id of a run still running is refused in one line, and nothing more starts."""
    from infra.privatestack import held_port
    repo, first = fixed_run
    assert first.returncode == 0
    run = ("run", "--repo", str(repo), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}", "--mode", "solo",
           "--no-branch", "fix the failing tests")
    with held_port() as port:
        sdk = {"BOSUN_TEMPORAL_HTTP_PORT": str(port)}
        proc = stack.bosun(*run, "--id", "it-run-sdk", "--wait", "--json", env_extra=sdk, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["status"] == "succeeded"
    sleepy = sleepy_trajectory(tmp_path, 60)  # (running for the whole check below, then cancelled)
    started = stack.bosun(*run[:3], "--model", f"scripted:{sleepy}", *run[5:], "--id", "it-run-twice")
    assert started.returncode == 0, started.stderr
    try:
        with held_port() as port:
            for extra in ({"BOSUN_TEMPORAL_HTTP_PORT": str(port)}, {}):  # the SDK's way, then the HTTP API's
                again = stack.bosun(*run, "--id", "it-run-twice", env_extra=extra)
                assert again.returncode == 2 and again.stderr.strip() == (
                    "bosun: a run with the id it-run-twice is running: pick another --id (`bosun history "
                    "it-run-twice` shows it)"), again.stderr
    finally:
        stack.bosun("cancel", "it-run-twice")
