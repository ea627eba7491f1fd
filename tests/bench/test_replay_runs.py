"""bench/replay_runs.py's pure parts: a published mini-swe-agent run (psf__requests-2317 of the
20251118_gemini-3-pro-74pct results, its observations trimmed) read as actions and a scripted trajectory, exit codes
read from an export, and patches compared as trees in a real git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from agents.providers.scripted import parse_trajectory
from bench.replay_runs import (
    Action,
    Source,
    actions_of,
    exit_codes,
    exit_differences,
    patch_differences,
    summary,
    trajectory,
)

RUN = json.loads((Path(__file__).parent / "data" / "psf__requests-2317.traj.json").read_text())


def test_a_published_run_becomes_one_run_command_turn_per_action():
    actions = actions_of(RUN["messages"])
    assistant = [m for m in RUN["messages"] if m["role"] == "assistant"]
    assert len(assistant) == 33 and len(actions) == 32  # one turn had two bash blocks: a format error, nothing ran
    assert actions[0].recorded == 0 and actions[27].recorded == "timeout"
    assert actions[27].command == "python3 test_requests.py"
    assert actions[-1].recorded is None  # the submission: its output is the patch, no return code
    assert actions[-1].command == "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached"
    turns = parse_trajectory(trajectory([*actions, Action("cd /testbed && ls", 0, "look")]), "replay.jsonl")
    assert len(turns) == 34 and not turns[-1].tool_calls
    assert all([c.name for c in t.tool_calls] == ["run_command"] for t in turns[:-1])
    assert turns[-2].tool_calls[0].arguments == {"command": "cd /workspace && ls", "timeout_s": 60}
    assert turns[0].content == assistant[0]["content"]


def test_exit_codes_are_read_from_an_export_and_compared():
    def call(result: str, is_error: bool = False) -> dict:
        return {"name": "run_command", "result": result, "is_error": is_error}
    export = {"agents": [{"turns": [
        {"tool_calls": [call("exit code: 0\nstdout:\nok")]},
        {"tool_calls": [call("exit code: killed (timeout)\nstdout:\n...")]},
        {"tool_calls": [{"name": "read_file", "result": "1| x"}, call("exit code: 2")]},
        {"tool_calls": [call("InvalidArguments: timeout_s: ...", is_error=True)]},
        {"tool_calls": []}]}]}
    got, outputs = exit_codes(export)
    assert got == [0, "timeout", 2, None] and outputs[1].startswith("exit code: killed")
    outputs[2] += "\nurllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"
    actions = [Action("a", 0, ""), Action("b", "timeout", ""), Action("c", 1, ""), Action("d", None, ""),
               Action("e", 0, "")]
    compared, differ = exit_differences(actions, got, outputs)
    assert compared == 4
    assert [(d["action"], d["recorded"], d["bosun"], d["cause"]) for d in differ] == [
        (3, 1, 2, "network"), (5, 0, "not run", "other")]
    row = {"instance_id": "x", "compared": compared, "exit_differs": differ, "reproduced": True, "patch_differs": [],
           "agent_status": "done"}
    shown = summary([row, {"instance_id": "y", "excluded": "environment build failed: ..."}])
    assert shown["runs"] == {"replayed": 1, "reproduced": 1, "share": 1.0}
    assert shown["actions"] == {"compared": 4, "same_exit_code": 2, "share": 0.5,
                                "differ_by_cause": {"network": 1, "other": 1}}
    assert shown["excluded"] == {"y": "environment build failed: ..."}


def test_a_source_reads_a_folder_or_a_git_revision(tmp_path: Path):
    folder = tmp_path / "runs"
    (folder / "trajs" / "a__a-1").mkdir(parents=True)
    (folder / "trajs" / "a__a-1" / "a__a-1.traj.json").write_text("{}")
    _git(folder, "init", "-q")
    _git(folder, "add", "-A")
    _git(folder, "commit", "-qm", "runs")
    for spec in (str(folder), f"{folder}/.git:HEAD:"):
        src = Source(spec)
        assert src.exists() and src.names("trajs") == ["a__a-1"] and src.read("trajs/a__a-1/a__a-1.traj.json") == "{}"
    assert not Source(f"{folder}/.git:HEAD:nothing").exists() and not Source(str(tmp_path / "none")).exists()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True,
                          capture_output=True, text=True).stdout


def test_patches_are_compared_as_trees(tmp_path: Path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "a.py").write_text("x = 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    base = _git(repo, "rev-parse", "HEAD").strip()
    (repo / "a.py").write_text("x = 2\n")
    (repo / "img.png").write_bytes(b"\x89PNG\r\n\x00\x01")
    _git(repo, "add", "-A")
    published = _git(repo, "diff", "--cached", base)  # as mini-swe-agent submits: no --binary
    assert "Binary files /dev/null and b/img.png differ" in published
    _git(repo, "commit", "-qm", "same")
    same = _git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert patch_differences(repo, base, published, same) == []
    (repo / "a.py").write_text("x = 3\n")
    (repo / "img.png").write_bytes(b"\x89PNG\r\n\x00\x02")
    _git(repo, "commit", "-qam", "other")
    other = _git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert patch_differences(repo, base, published, other) == ["a.py", "img.png"]
    assert patch_differences(repo, base, "", same) == ["a.py", "img.png"]  # nothing published, two files changed
    (repo / "a.py").write_text("x = 2\r\n")  # a checkout's eol=crlf kept by an import
    _git(repo, "commit", "-qam", "crlf")
    crlf = _git(repo, "rev-parse", "HEAD^{tree}").strip()
    assert patch_differences(repo, base, published, crlf) == ["a.py (line endings only)", "img.png"]
    bad = published.replace("-x = 1", "-x = 9")
    assert patch_differences(repo, base, bad, same)[0].startswith("(the published patch does not apply")
