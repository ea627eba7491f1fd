"""Stitching agents' work: real git 3-way merges between per-agent clones."""

import subprocess

from activities.workspace import clone_for_agent, commit_agent_work, merge_agent_work, prepare, start_branch


def make_repo(path):
    path.mkdir()
    (path / "a.py").write_text("".join(f"line {i}\n" for i in range(30)))
    (path / "b.py").write_text("b\n")
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i"]):
        subprocess.run(["git", *cmd], cwd=path, check=True)
    return path


def test_parallel_edits_merge_and_conflicts_are_reported(tmp_path):
    repo = make_repo(tmp_path / "r")
    main, base = prepare(tmp_path / "ws", "t", str(repo), "HEAD")
    start_branch(main, "bosun/t")
    one = clone_for_agent(main, tmp_path / "ws" / "agents" / "s1", base)
    two = clone_for_agent(main, tmp_path / "ws" / "agents" / "s2", base)
    three = clone_for_agent(main, tmp_path / "ws" / "agents" / "s3", base)
    assert clone_for_agent(main, one, base) == one  # idempotent
    # s1 and s2 change different regions of the same file, s3 conflicts with s1
    (one / "a.py").write_text((one / "a.py").read_text().replace("line 2\n", "LINE TWO\n"))
    (two / "a.py").write_text((two / "a.py").read_text().replace("line 27\n", "LINE 27\n"))
    (two / "c.py").write_text("new\n")
    (three / "a.py").write_text((three / "a.py").read_text().replace("line 2\n", "line two!\n"))
    for ws, name in ((one, "s1"), (two, "s2"), (three, "s3")):
        commit, files = commit_agent_work(ws, f"agent/{name}", name)
        assert commit and files
    assert merge_agent_work(main, one, "agent/s1", "merge s1")[0]
    merged, conflicts, head = merge_agent_work(main, two, "agent/s2", "merge s2")
    assert merged and not conflicts
    assert merge_agent_work(main, two, "agent/s2", "merge s2") == (True, [], head)  # idempotent
    merged, conflicts, head2 = merge_agent_work(main, three, "agent/s3", "merge s3")
    assert not merged and conflicts == ["a.py"] and head2 == head
    text = (main / "a.py").read_text()
    assert "LINE TWO" in text and "LINE 27" in text and "line two!" not in text and "<<<<<<<" not in text
    assert (main / "c.py").exists()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=main, capture_output=True, text=True).stdout
    assert status == ""
    # re-running the conflicting subtask on the merged tree then merges cleanly
    redo = clone_for_agent(main, tmp_path / "ws" / "agents" / "s3-2", head)
    (redo / "a.py").write_text((redo / "a.py").read_text().replace("LINE TWO\n", "line two!\n"))
    commit_agent_work(redo, "agent/s3-2", "s3 again")
    assert merge_agent_work(main, redo, "agent/s3-2", "merge s3 again")[0]
    assert "line two!" in (main / "a.py").read_text()


def test_branch_names_are_valid_git_refs(tmp_path):
    from activities.models import branch_name

    repo = make_repo(tmp_path / "r")
    for wf_id in ("gh:acme/app:issue:12", "linear:session:abc..def", "task-1", "a/.hidden/x.lock", "::"):
        name = branch_name(wf_id)
        assert name.startswith("bosun/")
        ok = subprocess.run(["git", "check-ref-format", "--branch", name], cwd=repo, capture_output=True)
        assert ok.returncode == 0, name
    assert branch_name("task-1") == "bosun/task-1"
