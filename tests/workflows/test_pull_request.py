"""PullRequestWorkflow on a real Temporal dev server, its rounds real TaskWorkflows on stub activities: a review of
five inline comments and a summary, every delivery signalled twice, is one round whose report answers each
thread once; a failed check is one round per head, none after a person's push; the closing ends it."""

from __future__ import annotations

import asyncio
import uuid

from temporalio.worker import Worker

from activities.report import CIContextResult
from infra.events.conversation import CONVERSATION_SIGNAL, PREvent
from tests.workflows.conftest import FAIL_FAST, slots_worker, task_input
from tests.workflows.harness import AgentScript, Stubs, Turn, World
from tests.workflows.test_task import _until
from workflows.agent import AgentWorkflow
from workflows.conversation import Limits
from workflows.models import ConversationInput
from workflows.pull_request import PullRequestWorkflow
from workflows.task import TaskWorkflow

LOG = "FAILED tests/test_stats.py::test_median - assert 2 == 2.5"


def review_events() -> list[PREvent]:
    comments = [PREvent(id=f"review_comment:{100 + i}", kind="review_comment", author="alice",
                        body=f"rename variable {i}", review_id=7, comment_id=100 + i, path="calc/stats.py", line=i)
                for i in range(1, 6)]
    summary = PREvent(id="review:7", kind="review", author="alice", body="Please address these.", review_id=7,
                      review_state="changes_requested", actionable=True)
    return [*comments, summary]


async def test_a_review_is_one_round_each_thread_is_answered_once_and_ci_is_guarded(env):
    world = World(agents={"agent-1": AgentScript(turns=[Turn(tools=["str_replace"]), Turn()])},
                  ci_context={"tests": CIContextResult(log_tail=LOG), "flaky": CIContextResult(fails_on_base=True)})
    world.queue = f"pr-test-{uuid.uuid4().hex[:8]}"
    stubs = Stubs(world)
    inp = ConversationInput(repo_name="octo-org/hello-world", number=12, title="bosun: fix #7",
                            head_branch="bosun/gh-octo-org-hello-world-issue-7", base_branch="main",
                            task=task_input(mode="solo"), limits=Limits(quiet_s=0.5, max_ci_rounds=2, max_rounds=10))
    wf_id = f"gh:octo-org/hello-world:conversation:{uuid.uuid4().int % 10_000}"
    async with Worker(env.client, task_queue=world.queue, workflows=[PullRequestWorkflow, TaskWorkflow, AgentWorkflow],
                      workflow_failure_exception_types=FAIL_FAST, activities=stubs.all(),
                      max_concurrent_activities=64), slots_worker(env, world, stubs):
        handle = await env.client.start_workflow(PullRequestWorkflow.run, inp, id=wf_id, task_queue=world.queue)
        for ev in review_events() + review_events():  # every delivery twice
            await handle.signal(CONVERSATION_SIGNAL, ev)
        await _until(lambda: len(world.named("report_status")) == 1)
        # a failed check on the round's commit's predecessor, twice, and a second check of that commit
        sha = "a" * 40
        for ev in (PREvent(id=f"check:{sha}:tests", kind="check_failed", sha=sha, check="tests", actionable=True),
                   PREvent(id=f"check:{sha}:tests", kind="check_failed", sha=sha, check="tests", actionable=True),
                   PREvent(id=f"check:{sha}:lint", kind="check_failed", sha=sha, check="lint", actionable=True),
                   PREvent(id=f"check:{sha}:flaky", kind="check_failed", sha=sha, check="flaky", actionable=True,
                           base_branch="main")):
            await handle.signal(CONVERSATION_SIGNAL, ev)
        await _until(lambda: len(world.named("report_status")) == 2)
        # a person pushes; a later failure is not acted on
        await handle.signal(CONVERSATION_SIGNAL, PREvent(id="push:" + "b" * 40, kind="push", sha="b" * 40,
                                                          author="bob"))
        await handle.signal(CONVERSATION_SIGNAL, PREvent(id="check:" + "b" * 40 + ":tests", kind="check_failed",
                                                          sha="b" * 40, check="tests", actionable=True))
        for _ in range(300):  # (judged once the CI round is over: under load, seconds after its report)
            seen = await handle.query(PullRequestWorkflow.conversation)
            if any("not acted on (bob pushed" in n for n in seen.notes):
                break
            await asyncio.sleep(0.05)
        await handle.signal(CONVERSATION_SIGNAL, PREvent(id="closed", kind="closed", merged=True))
        state = await handle.result()
        first = env.client.get_workflow_handle(wf_id, run_id=handle.result_run_id)
        runs = [e async for e in first.fetch_history_events()]
    reports = world.named("report_status")
    assert len(reports) == 2
    first = reports[0].input.origin
    assert first["push_to_head"] and first["head_branch"] == "bosun/gh-octo-org-hello-world-issue-7"
    assert first["round"] == 1 and first["conversation"] == wf_id
    assert sorted(r["comment_id"] for r in first["replies"] if r["kind"] == "review_comment") == [101, 102, 103,
                                                                                                  104, 105]
    assert [r["id"] for r in first["replies"] if r["kind"] == "review"] == ["review:7"]
    # the round's task quotes every comment once, and works on the pull request's branch
    tasks = [c.input for c in world.named("prepare_workspace")]
    assert tasks[0].ref == "bosun/gh-octo-org-hello-world-issue-7"
    inits = [c.input.task for c in world.named("init_agent")]
    assert all(inits[0].count(f"> rename variable {i}") == 1 for i in range(1, 6))
    assert "Review by @alice (requested changes)" in inits[0]
    assert "The check 'tests' failed at commit aaaaaaaaaaaa" in inits[1] and "'lint'" in inits[1]
    assert "> FAILED tests/test_stats.py::test_median - assert 2 == 2.5" in inits[1]  # the log's tail, quoted
    assert "'flaky'" not in inits[1]  # it fails on the base branch too: said, not acted on
    assert any("'flaky' failed at aaaaaaaaaaaa: not acted on (it fails on the base branch main too" in n
               for n in state.notes)
    assert {c.input.check for c in world.named("ci_context")} == {"tests", "lint", "flaky"}
    assert [r.kind for r in state.rounds] == ["review", "ci"] and state.closed and state.merged
    assert [(c.input.number, c.input.state) for c in world.named("set_label")] == [(12, "working")] * 2
    assert state.ci_paused_by == "bob" and any("not acted on (bob pushed" in n for n in state.notes)
    assert len(state.seen) == 6 + 3 + 2 + 1
    # the history grew past the server's suggestion (40 events here): it continued as new, its state carried over
    assert any(e.HasField("workflow_execution_continued_as_new_event_attributes") for e in runs)
