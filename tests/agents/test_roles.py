import pytest

from agents.plan import Plan, plan_from_data
from agents.profiles import profile_for
from agents.providers import parse_spec
from agents.roles import (
    ROLE_TOOLS,
    builtin_tools,
    debugger_brief,
    follow_up_brief,
    load_role,
    parse_role,
    role_names,
    subtask_brief,
)
from agents.tools.builtin import BUILTIN_TOOLS, default_registry
from agents.tools.registry import ToolContext
from infra.errors import ConfigError

GPT = profile_for(parse_spec("openai:gpt-5-codex"))
CLAUDE = profile_for(parse_spec("anthropic:claude-sonnet-4-5"))


def test_shipped_roles_load_and_use_existing_tools():
    assert role_names() == ["debugger", "explorer", "fast_edit", "planner"]
    registry = default_registry()
    for name in role_names():
        role = load_role(name)
        assert role.name == name and role.budget.turns and role.budget.usd
        for profile in (GPT, CLAUDE, None):
            names = role.tool_names(profile, role.registry(registry).tools)
            assert names, name
            assert all(n in builtin_tools() or n in ROLE_TOOLS for n in names)
            assert [s.name for s in role.tool_specs(registry, profile)] == names


def test_planner_is_read_only_and_submits_a_plan():
    planner = load_role("planner")
    read_only = {t.name for t in BUILTIN_TOOLS if t.read_only} | {"submit_plan", "spawn_subagents"}
    assert planner.read_only and set(planner.tool_names(GPT)) <= read_only
    assert planner.output == "plan" and planner.final_tool == "submit_plan"
    assert planner.output_schema() == Plan.model_json_schema()


def test_explorers_only_read():
    explorer = load_role("explorer")
    assert explorer.read_only and explorer.output == "report"
    assert {"@edit", "run_command", "run_tests", "spawn_subagents"}.isdisjoint(explorer.tools)


def test_edit_tools_follow_the_model():
    fast = load_role("fast_edit")
    gpt_tools, claude_tools = fast.tool_names(GPT), fast.tool_names(CLAUDE)
    assert "apply_patch" in gpt_tools and "str_replace" not in gpt_tools
    assert {"str_replace", "write_file"} <= set(claude_tools) and "apply_patch" not in claude_tools
    # A registry without apply_patch: the str_replace set, whatever the profile says.
    assert "str_replace" in fast.tool_names(GPT, available=["read_file", "str_replace", "write_file"])
    assert load_role("debugger").output == "report" and fast.output == "patch"


def test_prompts_are_filled_per_edit_tool():
    for name in role_names():
        role = load_role(name)
        for profile in (GPT, CLAUDE):
            text = role.system_prompt(profile)
            assert "{{" not in text and len(text) > 500
    assert "Edit with apply_patch." in load_role("fast_edit").system_prompt(GPT)
    assert "Edit with str_replace." in load_role("debugger").system_prompt(CLAUDE)
    assert "submit_plan" in load_role("planner").system_prompt(None)


@pytest.mark.parametrize("toml,message", [
    ('name = "x"\n', "description"),
    ('name = "x"\ndescription="d"\nprompt="p"\ntools=["rm_rf"]\noutput="text"\n', "output"),
    ('name = "x"\ndescription="d"\nprompt="p"\ntools=["rm_rf"]\noutput="report"\n', "unknown tools rm_rf"),
    ('name = "x"\ndescription="d"\nprompt="p"\ntools=["read_file", "run_command"]\noutput="plan"\nread_only=true\n',
     "read_only but lists writing tools run_command"),
    ('name = "x"\ndescription="d"\nprompt="p"\ntools=["read_file"]\noutput="plan"\nfinal_tool="submit_plan"\n',
     "final_tool 'submit_plan' is not in the role's tools"),
    ('name = "x"\ndescription="d"\nprompt="p"\ntools=["read_file"]\noutput="plan"\n[budget]\ntokenz=1\n', "tokenz"),
    ("name = ", "not valid TOML"),
])
def test_bad_role_files(toml, message):
    with pytest.raises(ConfigError, match=message):
        parse_role(toml, "roles/x.toml")


def test_unknown_role_and_missing_prompt():
    with pytest.raises(ConfigError, match="no role 'reviewer'; known roles: debugger, explorer, fast_edit, planner"):
        load_role("reviewer")
    role = parse_role('name="x"\ndescription="d"\nprompt="nope"\ntools=["read_file"]\noutput="report"\n')
    with pytest.raises(ConfigError, match="prompts/nope.md is missing"):
        role.system_prompt(CLAUDE)


async def test_submit_plan_tool_validates_through_the_registry():
    registry = load_role("planner").registry(default_registry())
    ctx = ToolContext(sandbox=None)
    good = {"subtasks": [{"id": "a", "goal": "fix a", "files": ["a.py"], "depends_on": [],
                          "acceptance": {"tests": ["tests/test_a.py::test_a"], "command": None}},
                         {"id": "b", "goal": "fix b", "files": ["b.py"], "depends_on": ["a"],
                          "acceptance": {"command": "python -m pytest -q tests/test_b.py", "tests": []}}],
            "notes": None}
    out = await registry.execute("submit_plan", good, ctx)
    assert not out.is_error and out.data["waves"] == [["a"], ["b"]]
    assert plan_from_data(out.data["plan"]).get("b").depends_on == ["a"]
    good["subtasks"][0]["depends_on"] = ["b"]
    out = await registry.execute("submit_plan", good, ctx)
    assert out.is_error and out.error_kind == "InvalidArguments" and "dependency cycle" in out.text


def test_briefs():
    text = subtask_brief("Fix both bugs.", "percent", "Fix percent factor.", ["calc/report.py"],
                         "pytest -q tests/test_report.py", others=[("median", "Fix median for even lists.")],
                         note="An earlier attempt failed (ProviderError: 500).")
    assert text.startswith("Your subtask (percent): Fix percent factor.")
    assert "edit only these): calc/report.py" in text and "Done when: pytest -q tests/test_report.py" in text
    assert "- median: Fix median for even lists." in text and "The whole task, for context:\nFix both bugs." in text
    assert text.endswith("An earlier attempt failed (ProviderError: 500).")
    dbg = debugger_brief("T", ["tests/t.py::test_x"], "1 failed", ["subtask b: failed (Timeout)"])
    assert dbg.startswith("The task was: T") and "these tests fail: tests/t.py::test_x" in dbg
    assert "- subtask b: failed (Timeout)" in dbg
    assert "messages below" in follow_up_brief("T")
