"""The built-in tools through a real bwrap sandbox: results, and errors that go back to the model."""

from __future__ import annotations

import pytest

from agents.tools.builtin import default_registry
from agents.tools.registry import ToolContext
from sandbox.bwrap import BwrapProvider


@pytest.fixture
async def ctx(example_repo):
    box = await BwrapProvider().acquire(example_repo)
    yield ToolContext(sandbox=box)
    await box.close()


REG = default_registry()


async def test_read_file_numbers_lines_and_ranges(ctx):
    out = await REG.execute("read_file", {"path": "calc/stats.py", "start_line": 11, "end_line": 12}, ctx)
    assert not out.is_error
    assert out.text.splitlines()[0] == "    11\tdef median(values: list[float]) -> float:"
    assert "[showing lines 11-12 of" in out.text


@pytest.mark.parametrize("args,kind,message", [
    ({}, "InvalidArguments", "path: Field required"),
    ({"path": 3}, "InvalidArguments", "path: Input should be a valid string"),
    ({"path": "a", "start_line": 0}, "InvalidArguments", "start_line: Input should be greater than or equal to 1"),
    ({"__raw__": "{'path':"}, "InvalidArguments", "not valid JSON"),
    ({"path": "../../etc/passwd"}, "ToolFailed", "outside the workspace"),
    ({"path": "missing.py"}, "ToolFailed", "missing.py"),
])
async def test_bad_calls_come_back_as_results(ctx, args, kind, message):
    out = await REG.execute("read_file", args, ctx)
    assert out.is_error and out.error_kind == kind
    assert message in out.text


async def test_unknown_tool(ctx):
    out = await REG.execute("rm_rf", {}, ctx)
    assert out.is_error and "unknown tool 'rm_rf'" in out.text


async def test_run_tests_is_structured(ctx):
    out = await REG.execute("run_tests", {}, ctx)
    assert out.data["failed"] == ["tests/test_report.py::test_percent", "tests/test_report.py::test_percent_of_nothing",
                                  "tests/test_stats.py::test_median_even"]
    assert len(out.data["passed"]) == 4
    assert out.summary.startswith("pytest: 3 failed, 4 passed")


async def test_str_replace_edits_and_refuses(ctx, example_repo):
    ok = await REG.execute("str_replace", {"path": "calc/stats.py", "old_str": "return ordered[middle]",
                                           "new_str": "return ordered[middle]  # checked"}, ctx)
    assert not ok.is_error, ok.text
    assert "# checked" in (example_repo / "calc" / "stats.py").read_text()
    ambiguous = await REG.execute("str_replace", {"path": "calc/stats.py", "old_str": "if not values:",
                                                  "new_str": "if values is None:"}, ctx)
    assert ambiguous.is_error and ambiguous.error_kind == "ToolFailed"
    assert "if values is None" not in (example_repo / "calc" / "stats.py").read_text()


async def test_write_then_grep(ctx):
    assert not (await REG.execute("write_file", {"path": "new/dir/x.py", "content": "TOKEN = 1\n"}, ctx)).is_error
    out = await REG.execute("grep", {"pattern": "TOKEN", "glob": "*.py"}, ctx)
    assert "new/dir/x.py:1:TOKEN = 1" in out.text


def test_registry_schemas_render():
    specs = {s.name: s for s in REG.specs()}
    assert specs["str_replace"].parameters["required"] == ["path", "old_str", "new_str"]
    assert REG.write_key("str_replace", {"path": "a.py"}) == "a.py"
    assert REG.write_key("run_command", {"command": "ls"}) == "*"
    assert REG.write_key("read_file", {"path": "a.py"}) is None
