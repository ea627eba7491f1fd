"""read_file, list_dir, glob, grep, write_file through the in-process sandbox (conftest.py)."""

from __future__ import annotations

import os


async def test_glob(reg, ctx):
    out = await reg.execute("glob", {"pattern": "**/*.py"}, ctx)
    assert not out.is_error, out.text
    assert out.data["paths"] == ["pkg/__init__.py", "pkg/core.py", "pkg/util.py", "tests/test_core.py"]
    out = await reg.execute("glob", {"pattern": "*.py", "path": "pkg", "max_results": 1}, ctx)
    assert out.data["truncated"] and "[stopped at 1 paths" in out.text
    out = await reg.execute("glob", {"pattern": "../*"}, ctx)
    assert out.is_error and out.error_kind == "InvalidArguments" and "must not contain '..'" in out.text
    out = await reg.execute("glob", {"pattern": "*.rs"}, ctx)
    assert out.text == "(no matches)"


async def test_list_dir_marks_dirs_and_symlinks(reg, ctx, repo):
    os.symlink("core.py", repo / "pkg" / "alias.py")
    out = await reg.execute("list_dir", {"path": "pkg"}, ctx)
    assert out.text.splitlines() == ["__init__.py", "alias.py@", "core.py", "util.py"]
    assert {e["name"]: e["type"] for e in out.data["entries"]}["alias.py"] == "symlink"
    out = await reg.execute("list_dir", {}, ctx)
    assert "pkg/" in out.text.splitlines()


async def test_grep_fixed_and_ignore_case(reg, ctx):
    out = await reg.execute("grep", {"pattern": "partition(", "fixed": True}, ctx)
    assert not out.is_error and out.data["matches"][0]["path"] == "pkg/core.py"
    out = await reg.execute("grep", {"pattern": "partition("}, ctx)
    assert out.is_error and out.error_kind == "InvalidArguments" and "fixed=true" in out.text
    out = await reg.execute("grep", {"pattern": "PARSER", "ignore_case": True, "glob": "*.py", "path": "pkg"}, ctx)
    assert {m["path"] for m in out.data["matches"]} == {"pkg/core.py", "pkg/util.py"}


async def test_read_file_result_and_past_end(reg, ctx):
    out = await reg.execute("read_file", {"path": "pkg/util.py", "start_line": 4, "end_line": 5}, ctx)
    assert out.text.splitlines()[0] == "     4\tdef run(text: str) -> dict[str, str]:"
    assert out.data == {"path": "pkg/util.py", "start_line": 4, "end_line": 5, "total_lines": 7, "truncated": True}
    out = await reg.execute("read_file", {"path": "pkg/util.py", "start_line": 99}, ctx)
    assert out.is_error and out.error_kind == "ToolFailed" and "past the end" in out.text


async def test_write_file_creates_and_guards_syntax(reg, ctx, repo):
    out = await reg.execute("write_file", {"path": "pkg/new/mod.py", "content": "X = 1\n"}, ctx)
    assert not out.is_error and out.data == {"path": "pkg/new/mod.py", "created": True, "size": 6}
    assert (repo / "pkg/new/mod.py").read_text() == "X = 1\n"
    out = await reg.execute("write_file", {"path": "pkg/new/mod.py", "content": "def broken(:\n"}, ctx)
    assert out.is_error and out.error_kind == "ToolFailed"
    assert "new syntax error" in out.text and "nothing was written" in out.text
    assert (repo / "pkg/new/mod.py").read_text() == "X = 1\n"
    out = await reg.execute("write_file", {"path": "pkg/bad.py", "content": "def broken(:\n"}, ctx)
    assert out.is_error and not (repo / "pkg/bad.py").exists()
    out = await reg.execute("write_file", {"path": "notes.txt", "content": "def broken(:\n"}, ctx)
    assert not out.is_error, "no syntax check for plain text"
    out = await reg.execute("write_file", {"path": "../escape.py", "content": "x = 1\n"}, ctx)
    assert out.is_error and "outside the workspace" in out.text
    assert not (repo.parent / "escape.py").exists()
