"""The agent activities apply a task's harness settings: the router they carry picks the model, the tool shape
decides what a model call offers (the scripted model -- the test double -- refuses to replay a call to a tool it
was not offered), and a call to a tool the request did not offer is refused, not run."""

from __future__ import annotations

import json
import subprocess

import pytest
from temporalio.testing import ActivityEnvironment

from activities.agent import AgentActivities
from activities.models import ModelCallInput, RouteInput, ToolCallInput, ToolCallRef
from agents.harness_settings import HarnessSettings
from agents.messages import Message
from agents.router import RouterConfig
from infra.settings import Settings


@pytest.fixture
def acts(tmp_path):
    a = AgentActivities.standalone(Settings(data_dir=tmp_path / "data", sandbox_backend="bwrap"))
    yield a


async def test_the_router_of_the_settings_picks_the_model(acts):
    router = RouterConfig(tiers={"small": "openai:gpt-5-nano", "medium": "openai:gpt-5-nano",
                                 "large": "openai:gpt-5-nano"})
    mine = await ActivityEnvironment().run(acts.route_model, RouteInput(role="fast_edit", router=router))
    default = await ActivityEnvironment().run(acts.route_model, RouteInput(role="fast_edit"))
    assert mine.model == "openai:gpt-5-nano" and default.model != "openai:gpt-5-nano"
    assert mine.reason.endswith("(the task's router settings)") and "router settings" not in default.reason


def _model_call(acts, tmp_path, role: str, harness: HarnessSettings, tool: str) -> ModelCallInput:
    line = {"content": "editing", "tool_calls": [{"name": tool, "arguments": {"path": "a.py", "old_str": "1",
                                                                              "new_str": "2"}}]}
    path = tmp_path / "edit.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({"content": "done"}) + "\n")
    transcript = [Message(role="system", content="s").model_dump(mode="json"),
                  Message(role="user", content="fix it").model_dump(mode="json")]
    return ModelCallInput(agent_id="t/agent-1", turn=1, model=f"scripted:{path}",
                          trajectory_ref=acts.store.put_text(path.read_text()),
                          transcript_ref=acts.store.put_json(transcript), role=role, harness=harness)


async def test_the_tool_shape_of_the_settings_is_what_a_model_call_offers(acts, tmp_path):
    env = ActivityEnvironment()
    plain = await env.run(acts.model_call, _model_call(acts, tmp_path, "solo", HarnessSettings(), "str_replace"))
    assert [(c.name, c.offered) for c in plain.tool_calls] == [("str_replace", True)]
    with pytest.raises(Exception, match="'str_replace' is not among the offered tools"):
        await env.run(acts.model_call, _model_call(acts, tmp_path, "solo", HarnessSettings(edit_tool="apply_patch"),
                                                   "str_replace"))


async def test_a_call_to_a_tool_not_offered_is_refused_and_changes_nothing(tmp_path):
    """A planner's model that names str_replace (settle marks it not offered: tests/agents/test_harness_settings.py;
    a real model can name any tool, the scripted one refuses to) gets an error, and the file stays."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    acts = AgentActivities.standalone(Settings(data_dir=tmp_path / "data", sandbox_backend="bwrap"))
    args = {"path": "a.py", "old_str": "1", "new_str": "2"}
    call = ToolCallRef(id="c1", name="str_replace", arguments_ref=acts.store.put_json(args), arguments_preview="",
                       write_key="a.py", offered=False)
    try:
        out = await ActivityEnvironment().run(acts.tool_call, ToolCallInput(
            agent_id="t/agent-1", workspace=str(repo), call=call, role="planner"))
        after_refusal = (repo / "a.py").read_text()
        ran = await ActivityEnvironment().run(acts.tool_call, ToolCallInput(
            agent_id="t/agent-2", workspace=str(repo), call=call.model_copy(update={"id": "c2", "offered": True}),
            role="solo"))
    finally:
        await acts.sandboxes.close_all()
    assert out.is_error and out.error_kind == "InvalidArguments"
    assert "'str_replace' was not offered to this agent (planner)" in acts.store.get_text(out.result_ref)
    assert after_refusal == "x = 1\n"
    assert not ran.is_error and (repo / "a.py").read_text() == "x = 2\n"  # the same call, offered, runs
