"""The tool-call ledger: a call that runs again (activity retry, replayed local activity) has one effect."""

from __future__ import annotations

import pytest

from agents.tools.once import CallLedger
from agents.tools.registry import ToolContext
from infra.artifacts import ArtifactStore

# old text that is still in the file after the edit: applying the edit twice would corrupt the file
GROW = {"path": "pkg/core.py", "old_str": "return value.upper()", "new_str": "return value.upper().strip()"}


def box(ctx: ToolContext):
    async def get():
        return ctx.sandbox
    return get


class WorkerDied(Exception):
    """Stands for the worker process dying right after the tool's effect (the attempt never reports back)."""


@pytest.fixture
def ledger(tmp_path) -> CallLedger:
    return CallLedger(tmp_path / "calls", ArtifactStore(tmp_path / "artifacts"))


def runner(reg, ctx: ToolContext, name: str, args: dict, *, die_after: bool = False, counter: list | None = None):
    async def execute(sandbox) -> dict:
        if counter is not None:
            counter.append(1)
        out = await reg.execute(name, args, ToolContext(sandbox=sandbox))
        if die_after:
            raise WorkerDied()
        return {"text": out.text, "is_error": out.is_error}
    return execute


async def test_the_hazard_is_real_without_the_ledger(reg, ctx, repo):
    for _ in range(2):
        await reg.execute("str_replace", GROW, ctx)
    assert "value.upper().strip().strip()" in (repo / "pkg/core.py").read_text()


async def test_a_completed_call_returns_its_record_and_runs_nothing(reg, ctx, repo, ledger):
    runs: list = []
    acquired: list = []

    async def get():
        acquired.append(1)
        return ctx.sandbox

    first, replayed1 = await ledger.run("agent-1", "run:c1", get, runner(reg, ctx, "str_replace", GROW, counter=runs))
    second, replayed2 = await ledger.run("agent-1", "run:c1", get, runner(reg, ctx, "str_replace", GROW, counter=runs))
    assert (replayed1, replayed2) == (False, True) and first == second and len(runs) == 1
    assert len(acquired) == 1  # a replay needs no sandbox
    text = (repo / "pkg/core.py").read_text()
    assert text.count("value.upper().strip()") == 1 and ".strip().strip()" not in text
    # another call id is another call
    _, replayed3 = await ledger.run("agent-1", "run:c2", box(ctx), runner(reg, ctx, "read_file",
                                                                              {"path": "README.md"}, counter=runs))
    assert not replayed3 and len(runs) == 2


async def test_a_cut_off_edit_is_put_back_before_it_runs_again(reg, ctx, repo, ledger):
    before = (repo / "pkg/core.py").read_text()
    with pytest.raises(WorkerDied):
        await ledger.run("agent-1", "run:c1", box(ctx), runner(reg, ctx, "str_replace", GROW, die_after=True))
    assert (repo / "pkg/core.py").read_text() != before  # the first attempt's edit landed
    result, replayed = await ledger.run("agent-1", "run:c1", box(ctx), runner(reg, ctx, "str_replace", GROW))
    assert not replayed and not result["is_error"], result
    assert (repo / "pkg/core.py").read_text() == before.replace("return value.upper()", "return value.upper().strip()")


async def test_a_file_created_by_a_cut_off_call_is_removed_first(reg, ctx, repo, ledger):
    patch = ("*** Begin Patch\n*** Add File: pkg/new.py\n+X = 1\n*** Update File: pkg/util.py\n@@\n"
             "-def run(text: str) -> dict[str, str]:\n+def run(text: str) -> dict[str, str]:  # edited\n"
             "*** End Patch\n")
    util_before = (repo / "pkg/util.py").read_text()
    with pytest.raises(WorkerDied):
        await ledger.run("a", "r:p1", box(ctx), runner(reg, ctx, "apply_patch", {"input": patch}, die_after=True))
    assert (repo / "pkg/new.py").exists()
    # a different second attempt would see the state before the call: put back, then run
    seen: dict = {}

    async def look(sandbox) -> dict:
        seen["new_exists"] = (repo / "pkg/new.py").exists()
        seen["util"] = (repo / "pkg/util.py").read_text()
        return {}

    await ledger.run("a", "r:p1", box(ctx), look)
    assert seen == {"new_exists": False, "util": util_before}


async def test_deleted_files_come_back_and_forget_drops_the_records(reg, ctx, repo, ledger, tmp_path):
    patch = "*** Begin Patch\n*** Delete File: README.md\n*** End Patch\n"
    with pytest.raises(WorkerDied):
        await ledger.run("a", "r:d1", box(ctx), runner(reg, ctx, "apply_patch", {"input": patch}, die_after=True))
    assert not (repo / "README.md").exists()
    result, _ = await ledger.run("a", "r:d1", box(ctx), runner(reg, ctx, "apply_patch", {"input": patch}))
    assert not result["is_error"] and not (repo / "README.md").exists()
    assert any((tmp_path / "calls").rglob("*.json"))
    ledger.forget("a")
    assert not any((tmp_path / "calls").rglob("*.json"))


async def test_the_checklist_survives_a_worker_restart(repo, tmp_path):
    """The todo tool's list is kept in the ledger: a new Activities (a restarted worker) still has it."""
    from temporalio.testing import ActivityEnvironment

    from activities.agent import AgentActivities as Activities
    from activities.models import ToolCallInput, ToolCallRef
    from infra.settings import Settings

    settings = Settings(data_dir=tmp_path / "data", sandbox_backend="bwrap")

    def call(acts: Activities, cid: str, args: dict) -> ToolCallInput:
        ref = acts.store.put_json(args)
        return ToolCallInput(agent_id="t/agent-1", workspace=str(repo), call=ToolCallRef(
            id=cid, name="todo", arguments_ref=ref, arguments_preview="", write_key=":todo"))

    first = Activities.standalone(settings)
    try:
        out = await ActivityEnvironment().run(first.tool_call, call(first, "c1", {"action": "add",
                                                                                  "texts": ["fix median"]}))
        assert not out.is_error and not out.replayed
    finally:
        await first.sandboxes.close_all()
    restarted = Activities.standalone(settings)
    try:
        listed = await ActivityEnvironment().run(restarted.tool_call, call(restarted, "c2", {"action": "list"}))
        assert "fix median" in restarted.store.get_text(listed.result_ref)
        again = await ActivityEnvironment().run(restarted.tool_call, call(restarted, "c1", {"action": "add",
                                                                                           "texts": ["fix median"]}))
        assert again.replayed and again.result_ref == out.result_ref  # a repeated call: its recorded result
        assert len(restarted.calls.load_state("t/agent-1", "todo", [])) == 1
    finally:
        await restarted.sandboxes.close_all()


async def test_large_structured_results_go_to_the_store_not_to_history(repo, tmp_path):
    from temporalio.testing import ActivityEnvironment

    from activities.agent import AgentActivities as Activities
    from activities.models import DATA_INLINE_MAX, ToolCallInput, ToolCallRef
    from infra.settings import Settings

    (repo / "many.py").write_text("".join(f"value_{i} = {i}\n" for i in range(300)))
    acts = Activities.standalone(Settings(data_dir=tmp_path / "data", sandbox_backend="bwrap"))

    def call(cid: str, args: dict) -> ToolCallInput:
        return ToolCallInput(agent_id="t/agent-2", workspace=str(repo), call=ToolCallRef(
            id=cid, name="grep", arguments_ref=acts.store.put_json(args), arguments_preview=""))

    try:
        big = await ActivityEnvironment().run(acts.tool_call, call("g1", {"pattern": "value_"}))
        small = await ActivityEnvironment().run(acts.tool_call, call("g2", {"pattern": "value_7 "}))
    finally:
        await acts.sandboxes.close_all()
    assert big.data == {} and big.data_ref is not None
    assert len(acts.store.get_json(big.data_ref)["matches"]) == 200  # the tool's cap, all kept in the store
    assert len(big.model_dump_json()) < DATA_INLINE_MAX + 600
    assert small.data_ref is None and small.data["matches"][0]["line"] == 8


def test_prune_drops_only_idle_agents(ledger, tmp_path):
    import os
    import time

    ledger.save_state("idle-agent", "todo", [])
    ledger.save_state("busy-agent", "todo", [{"id": 1, "text": "x", "status": "pending"}])
    old = time.time() - 8 * 24 * 3600
    idle = next(d for d in (tmp_path / "calls").iterdir() if (d / "todo.state").read_text() == "[]")
    for p in [*idle.iterdir(), idle]:
        os.utime(p, (old, old))
    assert ledger.prune(7 * 24 * 3600) == 1
    assert not idle.exists() and ledger.load_state("busy-agent", "todo", None) is not None
    assert ledger.prune(7 * 24 * 3600) == 0


class Counting:
    """The real sandbox, with the tool-server round trips counted by op."""

    def __init__(self, sandbox) -> None:
        self._sandbox, self.ops = sandbox, []
        self.id, self.backend, self.workspace = sandbox.id, sandbox.backend, sandbox.workspace

    async def request(self, op, args=None, **kw):
        self.ops.append(op)
        return await self._sandbox.request(op, args, **kw)

    def __getattr__(self, name):
        return getattr(self._sandbox, name)


async def test_an_edit_is_two_round_trips_and_still_put_back(reg, ctx, repo, ledger):
    counted = Counting(ctx.sandbox)

    async def get():
        return counted

    with pytest.raises(WorkerDied):
        await ledger.run("agent-1", "run:rt", get, runner(reg, ctx, "str_replace", GROW, die_after=True))
    assert counted.ops == ["read", "write"], counted.ops  # the intent came from the edit's own read
    # the retry puts the file back from that record, then edits it once
    await ledger.run("agent-1", "run:rt", get, runner(reg, ctx, "str_replace", GROW))
    text = (repo / "pkg/core.py").read_text()
    assert text.count("value.upper().strip()") == 1 and ".strip().strip()" not in text
