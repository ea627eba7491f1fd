"""check, run_tests, run_command, git_diff, git_status and todo through the in-process sandbox (conftest.py)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

RUFF = Path(sys.executable).parent / "ruff"


async def test_check_changed_files_syntax(reg, ctx, repo):
    (repo / "pkg" / "core.py").write_text("def broken(:\n    pass\n")
    (repo / "pkg" / "data.json").write_text('{"a": }\n')
    (repo / "notes.txt").write_text("not code\n")
    out = await reg.execute("check", {}, ctx)
    assert not out.is_error, out.text
    assert sorted(out.data["files_checked"]) == ["pkg/core.py", "pkg/data.json"]
    syntax = [(p["path"], p["line"]) for p in out.data["problems"] if p["code"] == "syntax"]
    assert ("pkg/core.py", 1) in syntax and ("pkg/data.json", 1) in syntax
    assert out.data["ruff"] == "not_installed" and "ruff: not installed" in out.text


async def test_check_paths_and_ruff(reg, ctx, repo):
    venv_bin = repo / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    shutil.copy2(RUFF, venv_bin / "ruff")
    (repo / "pkg" / "lint.py").write_text("import os\n\nX = 1\n")
    out = await reg.execute("check", {"paths": ["pkg", "README.md"]}, ctx)
    assert not out.is_error, out.text
    assert out.data["ruff"] == "ran"
    assert set(out.data["files_checked"]) >= {"pkg/core.py", "pkg/util.py", "pkg/lint.py"}
    assert ("pkg/lint.py", 1, "F401") in {(p["path"], p["line"], p["code"]) for p in out.data["problems"]}
    assert out.data["not_checked"] == ["README.md"]
    out = await reg.execute("check", {"paths": ["pkg/missing.py"]}, ctx)
    assert out.is_error and "missing.py" in out.text


async def test_run_tests_is_structured(reg, ctx):
    out = await reg.execute("run_tests", {}, ctx)
    assert not out.is_error, out.text
    assert out.data["passed"] == ["tests/test_core.py::test_parse"]
    assert out.data["failed"] == ["tests/test_core.py::test_parse_fails"]
    assert "b should be 3" in out.data["messages"]["tests/test_core.py::test_parse_fails"]
    assert out.summary.startswith("pytest: 1 failed, 1 passed")
    assert "tests/test_core.py::test_parse_fails: AssertionError: b should be 3" in out.text
    out = await reg.execute("run_tests", {"args": ["-k", "test_parse and not fails"]}, ctx)
    assert out.data["failed"] == [] and out.data["exit_code"] == 0


async def test_run_command(reg, ctx):
    out = await reg.execute("run_command", {"command": "echo hi; echo err >&2; exit 3"}, ctx)
    assert not out.is_error
    assert out.data["exit_code"] == 3 and not out.data["timed_out"]
    assert "stdout:\nhi" in out.text and "stderr:\nerr" in out.text
    out = await reg.execute("run_command", {"command": "sleep 5", "timeout_s": 0.5}, ctx)
    assert out.data["timed_out"] and "killed (timeout)" in out.text


async def test_git_tools(reg, ctx, repo):
    out = await reg.execute("git_status", {}, ctx)
    assert out.text == "(clean)" and out.data["entries"] == []
    (repo / "pkg" / "core.py").write_text((repo / "pkg" / "core.py").read_text() + "# end\n")
    (repo / "README.md").write_text("# changed\n")
    out = await reg.execute("git_status", {}, ctx)
    assert out.data["entries"] == [" M README.md", " M pkg/core.py"]
    out = await reg.execute("git_diff", {"paths": ["pkg"]}, ctx)
    assert "+# end" in out.text and "README" not in out.text
    out = await reg.execute("git_diff", {"stat": True}, ctx)
    assert "2 files changed" in out.text


async def test_todo(reg, ctx):
    out = await reg.execute("todo", {"action": "add", "texts": ["reproduce", "fix", "run tests"]}, ctx)
    assert not out.is_error and out.text.splitlines()[0] == "checklist: 0/3 done"
    out = await reg.execute("todo", {"action": "update", "items": [{"id": 1, "status": "done"},
                                                                    {"id": 2, "status": "in_progress"}]}, ctx)
    assert out.text.splitlines()[1:3] == ["[x] 1. reproduce", "[~] 2. fix"]
    assert ctx.todo[0] == {"id": 1, "text": "reproduce", "status": "done"}
    out = await reg.execute("todo", {"action": "update", "items": [{"id": 9, "status": "done"}]}, ctx)
    assert out.is_error and out.error_kind == "InvalidArguments" and "no item with id [9]" in out.text
    out = await reg.execute("todo", {"action": "set", "items": [{"id": 1, "text": "only this"}]}, ctx)
    assert out.data["items"] == [{"id": 1, "text": "only this", "status": "pending"}]
    out = await reg.execute("todo", {"action": "list"}, ctx)
    assert out.text == "checklist: 0/1 done\n[ ] 1. only this"
    out = await reg.execute("todo", {"action": "set", "items": [{"id": 1, "text": "a"}, {"id": 1, "text": "b"}]}, ctx)
    assert out.is_error and "unique" in out.text
