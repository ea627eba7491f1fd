"""Messages to running workflows: steer, cancel, inspect."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from infra.settings import Settings
from tests.conftest import wait_for


def sleepy_trajectory(tmp_path, seconds: float):
    turns = [
        {"content": "waiting", "tool_calls": [{"name": "run_command", "arguments": {"command": f"sleep {seconds}"}}]},
        {"content": "looking", "tool_calls": [{"name": "list_dir", "arguments": {}}]},
        {"content": "done"},
    ]
    path = tmp_path / "sleepy.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    return path


def start(stack, repo, wf_id, trajectory):
    proc = stack.bosun("run", "--repo", str(repo), "--model", f"scripted:{trajectory}", "--id", wf_id, "--mode",
                       "solo", "go")
    assert proc.returncode == 0, proc.stderr
    return proc


def agent_running_tool(stack, wf_id):
    return any(e["workflow_id"] == f"{wf_id}/agent-1" and e["type"] == "tool_call" and e["event"] == "start"
               for e in stack.journal())


def test_steer_reaches_the_model_and_inspect_shows_progress(stack, example_repo, tmp_path):
    wf = "it-steer"
    start(stack, example_repo, wf, sleepy_trajectory(tmp_path, 30))  # long enough to inspect and steer it under
    # load (the suite runs on several processes): a steer that comes after the last turn reaches no model
    wait_for(lambda: agent_running_tool(stack, wf), 180, what="the agent's first tool call")
    inspect = stack.bosun("inspect", wf)
    assert inspect.returncode == 0 and "phase: agent working" in inspect.stdout
    assert "agent agent-1: running" in inspect.stdout
    steer = stack.bosun("steer", wf, "please also keep the public API unchanged")
    assert steer.returncode == 0, steer.stderr
    done = wait_for(lambda: json.loads(stack.bosun("history", wf, "--json").stdout).get("result"), 120,
                    interval=1, what="the run to finish")
    ref = done["agent"]["transcript_ref"]
    transcript = json.loads((stack.data_dir / "artifacts" / ref[7:9] / ref[7:]).read_text())
    users = [m["content"] for m in transcript if m["role"] == "user"]
    assert users[-1] == "please also keep the public API unchanged"
    # the message came after the first tool result, before the second model turn
    roles = [m["role"] for m in transcript]
    assert roles[:6] == ["system", "user", "assistant", "tool", "user", "assistant"]


def test_cancel_stops_agents_and_releases_the_sandbox(stack, example_repo, tmp_path):
    wf = "it-cancel"
    start(stack, example_repo, wf, sleepy_trajectory(tmp_path, 59.713))  # a duration no other process uses
    wait_for(lambda: agent_running_tool(stack, wf), 180, what="the agent's first tool call")
    cancel = stack.bosun("cancel", wf)
    assert cancel.returncode == 0, cancel.stderr
    wait_for(lambda: "cancel" in stack.bosun("inspect", wf).stdout, 60, interval=0.5, what="the run to be cancelled")
    wait_for(lambda: any(e["workflow_id"] == f"{wf}/agent-1" and e["type"] == "release_sandbox"
                         and e["event"] == "complete" for e in stack.journal()), 60, what="the sandbox release")
    # no process is left running the sleep
    leftovers = subprocess.run(["pgrep", "-f", "sleep 59.713"], capture_output=True, text=True).stdout.split()
    assert [p for p in leftovers if int(p) != os.getpid()] == []
    again = stack.bosun("cancel", wf)
    assert again.returncode == 2 and "is not running (canceled)" in again.stderr


def test_messages_to_unknown_runs_are_refused(stack):
    for cmd in (["steer", "nope-123", "hi"], ["cancel", "nope-123"], ["inspect", "nope-123"]):
        proc = stack.bosun(*cmd)
        assert proc.returncode == 2 and "no run 'nope-123'" in proc.stderr, (cmd, proc.stderr)


def escalation_trajectory(tmp_path, marker, denied: bool):
    ask = {"content": "I need the host for this.", "tool_calls": [{"name": "request_escalation", "arguments": {
        "command": f"echo escalated > {marker}", "justification": "write a file the sandbox cannot reach"}}]}
    expect = {"tool": "request_escalation", "is_error": True, "contains": "EscalationRefused"} if denied else \
        {"tool": "request_escalation", "contains": "exit code: 0"}
    turns = [ask, {"expect": [expect], "content": "done"}]
    path = tmp_path / "escalate.jsonl"
    path.write_text("\n".join(json.dumps(t) for t in turns) + "\n")
    return path


def pending_request(stack, agent):
    proc = stack.bosun("inspect", agent)
    if proc.returncode != 0:
        return None
    pending = json.loads(proc.stdout.split("\n", 1)[1]).get("pending_escalations", {})
    return next(iter(pending), None)


def test_escalation_runs_only_after_approval(stack, example_repo, tmp_path):
    # An approved command runs on the host as the sandbox's uid (not as the worker): a directory that uid may write.
    outside = Path(tempfile.mkdtemp(prefix="bosun-escalation-"))
    outside.chmod(0o777)
    try:
        _escalate_and_decide(stack, example_repo, tmp_path, outside)
    finally:
        shutil.rmtree(outside, ignore_errors=True)


def _escalate_and_decide(stack, example_repo, tmp_path, outside):
    for denied in (False, True):
        wf = f"it-escalate-{'deny' if denied else 'approve'}"
        marker = outside / f"{wf}.txt"
        start(stack, example_repo, wf, escalation_trajectory(tmp_path, marker, denied))
        request = wait_for(lambda wf=wf: pending_request(stack, f"{wf}/agent-1"), 120, interval=0.5,
                           what="the escalation request")
        assert request == f"{wf}/agent-1#call_0_0"
        assert not marker.exists(), "nothing runs outside the sandbox before a person decides"
        bad = stack.bosun("approve", f"{wf}/agent-1#call_9_9")
        assert bad.returncode == 2 and "no pending request" in bad.stderr
        decision = stack.bosun("approve", request, "--by", "reviewer", *(["--deny"] if denied else []))
        assert decision.returncode == 0, decision.stderr
        done = wait_for(lambda wf=wf: json.loads(stack.bosun("history", wf, "--json").stdout).get("result"), 120,
                        interval=1, what="the run to finish")
        assert done["agent"]["status"] == "done"  # the trajectory's expectation on the decision held
        assert marker.exists() != denied
        if not denied:
            assert marker.stat().st_uid == Settings().sandbox_uid  # not the worker's uid (root)
        assert stack.bosun("approve", request).returncode == 2  # decided once; the agent is gone
