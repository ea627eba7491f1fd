"""Schema renderings (OpenAI strict, Anthropic), tool sets per model family, write keys, invalid arguments."""

from __future__ import annotations

from typing import Any

import pytest

from agents.tools.builtin import BUILTIN_TOOLS, TOOL_SETS, shape_for_model, tools_for_shape
from agents.tools.registry import ANY_FILE, ToolContext
from tests.conftest import ROOT

FORBIDDEN_IN_STRICT = {"default", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                       "maxLength", "title", "$ref", "$defs"}


def walk(node: Any, path: str = "$"):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, f"{path}[{i}]")


@pytest.mark.parametrize("tool", BUILTIN_TOOLS, ids=lambda t: t.name)
def test_openai_strict_rendering(tool):
    wire = tool.openai()
    assert wire["type"] == "function"
    fn = wire["function"]
    assert fn["name"] == tool.name and fn["description"] == tool.description and fn["strict"] is True
    params = fn["parameters"]
    assert params["type"] == "object"
    for where, node in walk(params):
        assert not FORBIDDEN_IN_STRICT & set(node), f"{tool.name} {where} has {FORBIDDEN_IN_STRICT & set(node)}"
        if node.get("type") == "object" or "properties" in node:
            assert node["additionalProperties"] is False, where
            assert node["required"] == list(node["properties"]), where


@pytest.mark.parametrize("tool", BUILTIN_TOOLS, ids=lambda t: t.name)
def test_anthropic_and_plain_renderings(tool):
    wire = tool.anthropic()
    assert set(wire) == {"name", "description", "input_schema"}
    schema = wire["input_schema"]
    assert schema["type"] == "object" and "$defs" not in schema and "title" not in schema
    assert tool.openai(strict=False)["function"]["parameters"] == schema
    assert tool.spec().parameters == schema
    assert tool.result is not None, "every tool declares its result model"


def test_optional_fields_become_nullable_in_strict_mode(reg):
    params = next(t for t in reg.openai_tools(["read_file"]))["function"]["parameters"]
    assert params["properties"]["start_line"]["type"] == ["integer", "null"]
    assert "default 1" in params["properties"]["start_line"]["description"]
    assert ">= 1" in params["properties"]["start_line"]["description"]
    assert reg.anthropic_tools(["read_file"])[0]["input_schema"]["required"] == ["path"]


def test_existing_tool_contract_kept(reg):
    specs = {s.name: s for s in reg.specs()}
    assert specs["str_replace"].parameters["required"] == ["path", "old_str", "new_str"]
    assert specs["read_file"].parameters["required"] == ["path"]
    assert set(specs["run_tests"].parameters["properties"]) == {"args", "timeout_s"}


def test_tool_sets_per_model_family(reg):
    openai, claude = tools_for_shape("apply_patch"), tools_for_shape("str_replace")
    assert "apply_patch" in openai and "str_replace" not in openai
    assert "str_replace" in claude and "apply_patch" not in claude
    for names in TOOL_SETS.values():
        assert set(names) <= set(reg.names())
        assert {"read_file", "run_tests", "check", "search_code", "todo"} <= set(names)
    with pytest.raises(ValueError):
        tools_for_shape("udiff")  # type: ignore[arg-type]
    assert shape_for_model("openai:gpt-5") == "apply_patch"
    assert shape_for_model("openai:gpt-5-codex") == "apply_patch"
    assert shape_for_model("o4-mini") == "apply_patch"
    assert shape_for_model("anthropic:claude-sonnet-4-5") == "str_replace"
    assert shape_for_model("scripted:path.jsonl") == "str_replace"


def test_write_keys(reg):
    assert reg.write_key("read_file", {"path": "a.py"}) is None
    assert reg.write_key("search_code", {"query": "x"}) is None
    assert reg.write_key("str_replace", {"path": "a.py"}) == "a.py"
    assert reg.write_key("write_file", {"path": 3}) == ANY_FILE
    assert reg.write_key("run_command", {"command": "ls"}) == ANY_FILE
    assert reg.write_key("todo", {"action": "list"}) == ":todo"
    one = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    two = "*** Begin Patch\n*** Update File: a.py\n*** Move to: b.py\n@@\n-x\n+y\n*** End Patch"
    assert reg.write_key("apply_patch", {"input": one}) == "a.py"
    assert reg.write_key("apply_patch", {"input": two}) == ANY_FILE
    assert reg.write_key("apply_patch", {"input": 5}) == ANY_FILE
    assert reg.write_key("apply_patch", "not a dict") == ANY_FILE  # type: ignore[arg-type]
    # a model's JSON may hold a lone surrogate ("\udcff"): the key crosses an activity, so it is shown
    assert reg.write_key("write_file", {"path": "odd\udcff.py"}) == "odd\\377.py"


@pytest.mark.parametrize("tool", BUILTIN_TOOLS, ids=lambda t: t.name)
async def test_invalid_arguments_come_back_as_results(reg, tool):
    ctx = ToolContext(sandbox=None)  # never reached: validation fails first
    out = await reg.execute(tool.name, {"no_such_argument": 1}, ctx)
    assert out.is_error and out.error_kind == "InvalidArguments"
    assert "no_such_argument" in out.text and "Extra inputs are not permitted" in out.text
    out = await reg.execute(tool.name, ["not", "an", "object"], ctx)  # type: ignore[arg-type]
    assert out.is_error and out.error_kind == "InvalidArguments" and "JSON object" in out.text
    out = await reg.execute(tool.name, {"__raw__": "{oops"}, ctx)
    assert out.is_error and "not valid JSON" in out.text


@pytest.mark.parametrize("name,args,message", [
    ("read_file", {"path": "a", "start_line": "x"}, "start_line: Input should be a valid integer"),
    ("grep", {"pattern": "x", "max_results": 0}, "max_results: Input should be greater than or equal to 1"),
    ("apply_patch", {}, "input: Field required"),
    ("todo", {"action": "explode"}, "action: Input should be 'set', 'add', 'update' or 'list'"),
    ("todo", {"action": "set", "items": [{"id": 0, "text": "x"}]}, "items.0.id"),
    ("search_code", {"query": ""}, "query: String should have at least 1 character"),
    ("find_symbol", {"name": "x", "kind": "everything"}, "kind:"),
    ("check", {"paths": "a.py"}, "paths: Input should be a valid list"),
])
async def test_validation_messages(reg, name, args, message):
    out = await reg.execute(name, args, ToolContext(sandbox=None))
    assert out.is_error and out.error_kind == "InvalidArguments"
    assert message in out.text


async def test_strict_mode_nulls_mean_defaults(reg, ctx):
    out = await reg.execute("read_file", {"path": "pkg/core.py", "start_line": None, "end_line": None}, ctx)
    assert not out.is_error, out.text
    assert out.data["start_line"] == 1 and out.data["end_line"] == out.data["total_lines"]
    out = await reg.execute("todo", {"action": "set", "texts": None,
                                     "items": [{"id": 1, "text": "a", "status": None}]}, ctx)
    assert not out.is_error, out.text
    assert ctx.todo == [{"id": 1, "text": "a", "status": "pending"}]


def test_every_tool_is_documented(reg):
    """docs/ARCHITECTURE.md's tool table names every built-in and role-defined tool."""

    from agents.roles import ROLE_TOOLS

    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    table = doc[doc.index("## Agent tools"):doc.index("## Durability")]
    missing = [name for name in [*reg.tools, *ROLE_TOOLS] if f"`{name}`" not in table]
    assert missing == []
