"""Attacks on the host boundary, as a prompt-injected model would make them: full `bosun run` scripted trajectories
on both sandbox backends, judged from the host (canary files, the process table, `docker ps`, `git fsck`, object
hashes), never from what the run reports. docs/THREAT-MODEL.md lists the boundary each test covers."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from infra.settings import Settings
from sandbox.slots import mount_points
from tests.conftest import Stack, leftovers, make_example_repo

QUOTA_MB = 48


@pytest.fixture(scope="module", params=["docker", "bwrap"])
def backend_stack(request, tmp_path_factory):
    """A stack per backend, with a small disk quota so that filling it is quick."""
    st = Stack(tmp_path_factory.mktemp(f"boundary-{request.param}"))
    st.env.update({"BOSUN_SANDBOX_BACKEND": request.param, "BOSUN_SANDBOX_DISK_MB": str(QUOTA_MB),
                   "BOSUN_SANDBOX_REAP_S": "2"})
    try:
        st.up()
        yield request.param, st
    finally:
        st.down()


def trajectory(tmp_path: Path, name: str, turns: list[dict]) -> Path:
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return path


def cmd(command: str, expect: list | None = None, content: str = "") -> dict:
    turn = {"content": content or "running a command", "tool_calls": [{"name": "run_command", "arguments": {
        "command": command, "timeout_s": 120}}]}
    if expect:
        turn["expect"] = expect
    return turn


def run(st: Stack, repo: Path, wf: str, traj: Path, mode: str = "solo") -> subprocess.CompletedProcess[str]:
    return st.bosun("run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--wait", "--json",
                    "--mode", mode, "do the task", timeout=400)


def finished(proc: subprocess.CompletedProcess[str]) -> dict:
    """The TaskResult of a run that ended (its status may be failed: the example's tests stay red)."""
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"the run did not finish with a result:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
                             ) from None


def untouched_but_the_branch(repo: Path, before: dict[str, str], branch: str) -> None:
    """The user's repository: every object file it had is as it was, and all it gained is the task's branch
    (bosun's delivery): new packs holding exactly the commits, trees and blobs of ``branch`` that were not there."""
    after = object_hashes(repo / ".git")
    assert {k: after.get(k) for k in before} == before
    new = sorted(k for k in after if k not in before)
    assert all(k.startswith("objects/pack/") for k in new), new

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout
    got = set()
    for idx in (k for k in new if k.endswith(".idx")):
        got |= {line.split()[0] for line in git("verify-pack", "-v", str(repo / ".git" / idx)).splitlines()
                if len(line.split()) >= 3 and len(line.split()[0]) == 40}
    others = [r for r in git("for-each-ref", "--format=%(refname)").split() if r != f"refs/heads/{branch}"]
    branch_has = {line.split()[0] for line in git("rev-list", "--objects", f"refs/heads/{branch}").splitlines()}
    new_in_it = {line.split()[0] for line in git("rev-list", "--objects", f"refs/heads/{branch}", "--not",
                                                 *others).splitlines()}
    assert new_in_it <= got <= branch_has, (sorted(got - branch_has), sorted(new_in_it - got))


def object_hashes(git_dir: Path) -> dict[str, str]:
    """sha256 of every loose object and pack file: what an attacker who wrote into the object store would change."""
    out = {}
    for p in sorted((git_dir / "objects").rglob("*")):
        if p.is_file():
            out[str(p.relative_to(git_dir))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def fsck(git_dir: Path) -> None:
    proc = subprocess.run(["git", f"--git-dir={git_dir}", "fsck", "--full", "--strict"], capture_output=True,
                          text=True)
    assert proc.returncode == 0 and "error" not in proc.stderr.lower(), proc.stderr


def test_workspace_git_metadata_never_runs_on_the_host(backend_stack, tmp_path):
    """Defect 1: commondir, config.worktree, filters, diff.external, fsmonitor, hooksPath, alternates written by
    the agent; the host then imports, merges, verifies and delivers. No canary may appear on the host."""
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    before = object_hashes(repo / ".git")
    canary = tmp_path / "canary"
    evil = (f'[filter "x"]\n\tclean = sh -c \\"id > {canary}; cat\\"\n\tsmudge = sh -c \\"id > {canary}; cat\\"\n'
            f'\trequired = true\n[diff "x"]\n\ttextconv = sh -c \\"id > {canary}\\"\n[diff]\n'
            f'\texternal = sh -c \\"id > {canary}\\"\n[core]\n\tfsmonitor = sh -c \\"id > {canary}\\"\n'
            f'\thooksPath = /workspace/hooks\n\tsshCommand = sh -c \\"id > {canary}\\"\n[merge "x"]\n'
            f'\tdriver = sh -c \\"id > {canary}\\"\n')
    attack = (
        "mkdir -p evil hooks && printf '%s' \"$EVIL\" > evil/config && echo ../evil > .git/commondir; "
        "printf '%s' \"$EVIL\" > .git/config.worktree; cp evil/config .git/config 2>&1; "
        f"for h in pre-commit post-checkout pre-push reference-transaction; do printf '#!/bin/sh\\nid > {canary}\\n'"
        " > hooks/$h; chmod +x hooks/$h; cp hooks/$h .git/hooks/$h 2>/dev/null; done; "
        "echo '* filter=x diff=x merge=x' > .gitattributes; mkdir -p .git/info; "
        "echo '* filter=x diff=x merge=x' > .git/info/attributes 2>&1; echo /etc > .git/objects/info/alternates; "
        "echo 'x = 1' >> calc/stats.py; echo 'CHANGED' > NEW.py; echo done"
    )
    traj = trajectory(tmp_path, "git-rce", [cmd(f"EVIL='{evil}'; {attack}"), {"content": "done"}])
    result = finished(run(st, repo, f"hb-git-{backend}", traj))
    assert not canary.exists(), f"host git ran workspace-controlled config: {canary.read_text()}"
    assert "NEW.py" in result["files_changed"]  # the work itself was imported
    # The gitattributes line is repository content (git itself would commit it); with no filter defined by the
    # host, it does nothing on the host.
    assert ".gitattributes" in result["files_changed"]
    fsck(Path(result["workspace"]) / ".git")
    fsck(Settings(data_dir=st.data_dir).workspaces_dir / f"hb-git-{backend}.git")
    untouched_but_the_branch(repo, before, f"bosun/hb-git-{backend}")  # the user's repository: only the branch
    assert not canary.exists()


def test_read_output_cannot_read_host_files(backend_stack, tmp_path):
    """Defect 2: artifact refs that resolve outside the store are refused as InvalidArguments; no host file
    reaches the transcript."""
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    bad_refs = ["sha256:" + "/" * 55 + "etc/shadow", "sha256:" + "/" * 47 + "proc/self/environ",
                "sha256:../../../../../../../../../../../../../../../../../../../../../../etc/passwd",
                "sha256:" + "0" * 63 + "G", "SHA256:" + "0" * 64]
    turns = [{"content": "reading stored outputs", "tool_calls": [
        {"name": "read_output", "arguments": {"ref": r}} for r in bad_refs]},
        {"expect": [{"tool": "read_output", "is_error": True, "contains": "not an artifact ref"}] * len(bad_refs),
         "content": "done"}]
    finished(run(st, repo, f"hb-ref-{backend}", trajectory(tmp_path, "refs", turns)))
    hist = json.loads(st.bosun("history", f"hb-ref-{backend}", "--json").stdout)
    agent = next(c for c in hist["children"] if c["kind"] == "child")
    results = [c["result"] for c in agent["children"] if c["name"] == "tool_call"]
    assert len(results) == len(bad_refs)
    assert all(r["is_error"] and r["error_kind"] == "InvalidArguments" for r in results)
    store = Settings(data_dir=st.data_dir).artifacts_dir
    shadow = Path("/etc/shadow").read_text().splitlines()[0]
    for r in results:
        text = (store / r["result_ref"][7:9] / r["result_ref"][7:]).read_text()
        assert shadow not in text and "BOSUN_DATA_DIR" not in text


def test_agents_cannot_write_the_repository_or_each_other(backend_stack, tmp_path):
    """Defect 3: the object store a sandbox sees is read-only and shared with nothing writable; a sandbox that
    tries to change every object it can reach changes nothing on the host."""
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    before = object_hashes(repo / ".git")
    attack = ("for f in $(find .git/objects /run/bosun/objects -type f 2>/dev/null); do chmod u+w $f 2>/dev/null; "
              "echo garbage >> $f 2>/dev/null && echo WROTE $f; done; "
              "f=$(find /run/bosun/objects -type f | head -1); ln $f hardlink 2>&1; "
              "touch /run/bosun/objects/x 2>&1; echo 'y = 2' >> calc/stats.py; echo end")
    plan = {"subtasks": [{"id": "a", "goal": "attack", "files": ["calc/stats.py"], "depends_on": [],
                          "acceptance": {"command": "true"}},
                         {"id": "b", "goal": "attack too", "files": ["calc/report.py"], "depends_on": [],
                          "acceptance": {"command": "true"}}]}
    turns = [
        {"agent": "planner", "content": "plan", "tool_calls": [{"name": "submit_plan", "arguments": plan}]},
        {"agent": "planner", "content": "planned"},
        {"agent": "fast_edit:a", **cmd(attack)}, {"agent": "fast_edit:a", "content": "done"},
        {"agent": "fast_edit:b", **cmd(attack.replace("calc/stats.py", "calc/report.py"))},
        {"agent": "fast_edit:b", "content": "done"},
        {"agent": "debugger", "content": "nothing to do"},
    ]
    result = finished(run(st, repo, f"hb-objects-{backend}", trajectory(tmp_path, "objects", turns), mode="team"))
    assert [s["status"] for s in result["subtasks"]] == ["merged", "merged"]
    task_repo = Settings(data_dir=st.data_dir).workspaces_dir / f"hb-objects-{backend}.git"
    fsck(task_repo)
    fsck(repo / ".git")
    untouched_but_the_branch(repo, before, f"bosun/hb-objects-{backend}")
    hist = st.bosun("history", f"hb-objects-{backend}").stdout
    assert "WROTE /run/bosun" not in hist


def test_a_failed_agent_leaves_no_sandbox_running(backend_stack, tmp_path):
    """Defect 4: one fast-edit agent fails (its script diverges) while its sibling is still working; when the run
    is over no sandbox of it is left (containers by label, bwrap processes), and no process it started lives."""
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    marker = f"bosun-leak-{backend}-{os.getpid()}"
    plan = {"subtasks": [{"id": "slow", "goal": "slow", "files": ["calc/stats.py"], "depends_on": [],
                          "acceptance": {"command": "true"}},
                         {"id": "bad", "goal": "diverges", "files": ["calc/report.py"], "depends_on": [],
                          "acceptance": {"command": "true"}}]}
    turns = [
        {"agent": "planner", "content": "plan", "tool_calls": [{"name": "submit_plan", "arguments": plan}]},
        {"agent": "planner", "content": "planned"},
        {"agent": "fast_edit:slow", **cmd(f"(exec -a {marker} sleep 600) >/dev/null 2>&1 & sleep 20; echo ok")},
        {"agent": "fast_edit:slow", "content": "done"},
        {"agent": "fast_edit:bad", **cmd("echo hi")},
        {"agent": "fast_edit:bad", "expect": [{"tool": "run_command", "contains": "NOT THERE"}], "content": "x"},
    ]
    wf = f"hb-leak-{backend}"
    proc = run(st, repo, wf, trajectory(tmp_path, "leak", turns), mode="team")
    assert proc.returncode != 0  # the task fails (a failed agent fails it, for now)
    assert leftovers(st, wf) == []
    ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout
    assert marker not in ps


def test_hostile_names_links_and_special_files_are_data(backend_stack, tmp_path):
    """Names that look like options, control characters, symlinks to host secrets and FIFOs: the indexers and the
    import read them as data, never follow a link, never block."""
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    canary = tmp_path / "canary-names"
    attack = ("touch -- '--upload-pack=touch canary' '-rf' \"$(printf 'a\\nb.py')\" \"$(printf 'tab\\tc.py')\"; "
              "ln -s /etc/shadow shadow.py; ln -s / rootlink; ln -s /proc/self/environ env.py; mkfifo fifo.py; "
              "mkdir -p deep && cd deep && for i in $(seq 1 40); do mkdir d && cd d; done; echo 'z = 1' > z.py; "
              "echo done")
    search = {"content": "searching", "tool_calls": [
        {"name": "search_code", "arguments": {"query": "shadow environ root password"}},
        {"name": "repo_map", "arguments": {"query": "shadow"}},
        {"name": "find_symbol", "arguments": {"name": "root"}}]}
    turns = [cmd(attack), search, {"content": "done"}]
    result = finished(run(st, repo, f"hb-names-{backend}", trajectory(tmp_path, "names", turns)))
    assert not canary.exists()
    files = set(result["files_changed"])
    assert {"--upload-pack=touch canary", "-rf", "a\nb.py", "tab\tc.py", "shadow.py", "rootlink"} <= files
    assert not (Path(result["workspace"]) / "canary").exists()
    assert "fifo.py" not in files
    shadow = Path("/etc/shadow").read_text().splitlines()[0]
    diff = (Settings(data_dir=st.data_dir).artifacts_dir / result["diff_ref"][7:9] / result["diff_ref"][7:]).read_text()
    assert shadow not in diff and "+/etc/shadow" in diff.replace("\\ No newline at end of file\n", "")
    view = Path(result["workspace"])
    assert (view / "shadow.py").is_symlink() and os.readlink(view / "shadow.py") == "/etc/shadow"
    hist = st.bosun("history", f"hb-names-{backend}").stdout
    assert shadow not in hist


def test_disk_quota_caps_what_a_sandbox_writes(backend_stack, tmp_path):
    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    turns = [cmd(f"dd if=/dev/zero of=big bs=1M count={QUOTA_MB * 4} 2>&1 | tail -2; "
                 "for i in $(seq 1 300000); do : > f$i || break; done 2>&1 | tail -1; ls | wc -l; "
                 "rm -f big f*; echo cleaned",
                 expect=None), {"expect": [{"tool": "run_command", "contains": "No space left"}], "content": "done"}]
    result = finished(run(st, repo, f"hb-quota-{backend}", trajectory(tmp_path, "quota", turns)))
    assert result["files_changed"] == []


def test_a_terminated_task_leaves_no_sandbox_running(backend_stack, tmp_path):
    """Termination runs no workflow code at all: the worker's reaper releases the sandboxes of runs that are over."""
    import asyncio

    from tests.conftest import wait_for

    backend, st = backend_stack
    repo = make_example_repo(tmp_path / "calc")
    marker = f"bosun-term-{backend}-{os.getpid()}"
    traj = trajectory(tmp_path, "term", [cmd(f"(exec -a {marker} sleep 600) >/dev/null 2>&1 & sleep 300"),
                                         {"content": "done"}])
    wf = f"hb-term-{backend}"
    proc = st.bosun("run", "--repo", str(repo), "--model", f"scripted:{traj}", "--id", wf, "--mode", "solo", "go")
    assert proc.returncode == 0, proc.stderr
    wait_for(lambda: marker in subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout, 120,
             interval=0.5, what="the sandboxed command to start")
    assert leftovers(st, wf), "the check must see the live sandbox, or it proves nothing"

    async def terminate() -> None:
        from temporalio.client import Client

        client = await Client.connect(f"127.0.0.1:{st.env['BOSUN_TEMPORAL_PORT']}")
        await client.get_workflow_handle(wf).terminate("test: terminated")

    asyncio.run(terminate())
    wait_for(lambda: leftovers(st, wf) == [], 60, interval=0.5, what="the reaper to release the sandbox")
    wait_for(lambda: marker not in subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True,
                                                  text=True).stdout, 30, interval=0.5,
             what="the sandboxed process to be gone")
    runs = Settings(data_dir=st.data_dir).workspaces_dir / f"{wf}.runs"
    wait_for(lambda: not runs.exists(), 30, interval=0.5, what="the reaper to remove the task's run workspaces")
    assert not [m for m in mount_points() if m.startswith(str(st.data_dir))]
