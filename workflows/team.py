"""The team phase of a task (TaskWorkflow, workflows/task.py): the planner, then the plan's waves of fast-edit
agents in parallel (bounded by the task's max_parallel and its budget), each subtask's work merged onto the branch,
and one more attempt for a subtask whose agent failed or whose work conflicted.

``TeamPhase`` is a part of TaskWorkflow and runs only as one: it uses the task's placement (``place``), its agent
and merge steps (``_placed``, ``_merge``), its phase and budget (``_enter``, ``_fits``, ``budget_note``) and keeps
the plan in ``plan_info``. Deterministic orchestration only, as every workflow module.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from activities.agent import AgentActivities
    from activities.models import Attachment, ChecksResult, PlanInfo, ReadPlanInput, SubtaskInfo
    from agents.roles import subtask_brief
    from workflows import policies
    from workflows.models import AgentResult, SubtaskOutcome, TaskInput


class TeamPhase:
    """The planner and the fast-edit waves of a TaskWorkflow (see the module's docstring)."""

    async def _team(self, inp: TaskInput, queue: str, base: str, head: str, branch: str,
                    before: ChecksResult) -> tuple[list[SubtaskOutcome], str]:
        self._enter("planning")
        attach = [Attachment(title="Test results before any change", ref=before.output_ref)] \
            if before.output_ref else []
        planner, _ = await self._placed(inp, "planner", "planner", inp.task, head, ["planner"], attachments=attach)
        if planner.status == "failed":
            self.plan_info = PlanInfo(subtasks=[SubtaskInfo(id="task", goal=inp.task)], waves=[["task"]],
                                      source="fallback", note=f"the planner failed ({planner.error_kind}: "
                                                              f"{planner.reason[:300]}); running the whole task "
                                                              "as one subtask")
        else:
            self.plan_info = await self.place.act(AgentActivities.read_plan,
                                                  ReadPlanInput(transcript_ref=planner.transcript_ref, task=inp.task,
                                                                workflow_id=workflow.info().workflow_id,
                                                                max_parallel=inp.max_parallel),
                                                  summary="read the plan")
        by_id = {s.id: s for s in self.plan_info.subtasks}
        outcomes: dict[str, SubtaskOutcome] = {}
        limit = asyncio.Semaphore(max(1, inp.max_parallel))
        for w, wave in enumerate(self.plan_info.waves, 1):
            self._enter(f"editing: wave {w}/{len(self.plan_info.waves)}, {len(wave)} agents")
            wave_base = head

            async def bounded(sid: str, start: str = wave_base) -> tuple:
                async with limit:
                    return await self._subtask(inp, queue, by_id[sid], start, 1, "")

            fits = self._fits(len(wave), "fast-edit agents")
            for sid in wave[fits:]:
                outcomes[sid] = SubtaskOutcome(id=sid, status="skipped", attempts=0, note=self.budget_note)
            wave = wave[:fits]
            done = await policies.gather(*[bounded(sid) for sid in wave])
            self._enter(f"stitching: wave {w}")
            for sid, (collect, result) in zip(wave, done, strict=True):
                outcomes[sid], head = await self._settle(inp, queue, branch, by_id[sid], head, collect, result)
        return [outcomes[s.id] for s in self.plan_info.subtasks if s.id in outcomes], head

    async def _settle(self, inp: TaskInput, queue: str, branch: str, sub: SubtaskInfo, head: str, collect,
                      result: AgentResult) -> tuple[SubtaskOutcome, str]:
        """Merge a subtask's work; a failed agent or a conflict gets one more attempt on a fresh workspace at the
        current head (with what went wrong in its prompt). Returns the outcome and the new head."""
        note = ""
        if result.status == "failed":
            note = (f"An earlier attempt at this subtask failed ({result.error_kind}: {result.reason[:500]}). "
                    "Start again from the current tree.")
        elif result.status == "cancelled":
            return SubtaskOutcome(id=sub.id, status="failed", attempts=1, agent=result, note="cancelled"), head
        elif not collect.commit:
            return SubtaskOutcome(id=sub.id, status="no_changes", attempts=1, agent=result,
                                  note="; ".join(collect.notes[:5])), head
        else:
            merged = await self._merge(queue, branch, collect.commit, f"subtask {sub.id} (attempt 1)",
                                       f"bosun: merge subtask {sub.id} (attempt 1): {sub.goal[:60]}")
            if merged.merged:
                return SubtaskOutcome(id=sub.id, status="merged", attempts=1, files=collect.files,
                                      agent=result), merged.head
            note = (f"Your earlier attempt at this subtask conflicted with other agents' changes in "
                    f"{', '.join(merged.conflicts)}. The tree now holds their changes; redo the subtask on it.")
        first = result
        collect, result = await self._subtask(inp, queue, sub, head, 2, note)
        why = (f"after a failure ({first.error_kind})" if first.status == "failed" else "after a conflict")
        if result.status == "failed":
            return SubtaskOutcome(id=sub.id, status="failed", attempts=2, agent=result,
                                  note=f"failed twice: {result.error_kind}: {result.reason[:300]}"), head
        if not collect.commit:
            return SubtaskOutcome(id=sub.id, status="no_changes", attempts=2, agent=result, note=why), head
        again = await self._merge(queue, branch, collect.commit, f"subtask {sub.id} (attempt 2)",
                                  f"bosun: merge subtask {sub.id} (attempt 2): {sub.goal[:60]}")
        if again.merged:
            return SubtaskOutcome(id=sub.id, status="merged", attempts=2, files=collect.files, agent=result,
                                  note=f"re-run {why}"), again.head
        return SubtaskOutcome(id=sub.id, status="conflict", attempts=2, agent=result,
                              note=f"conflicts in {', '.join(again.conflicts)}"), head

    async def _subtask(self, inp: TaskInput, queue: str, sub: SubtaskInfo, start: str, attempt: int,
                       note: str) -> tuple:
        name = f"fast_edit-{sub.id}-{attempt}"
        others = [(o.id, o.goal) for o in self.plan_info.subtasks if o.id != sub.id] if self.plan_info else []
        task = subtask_brief(inp.task, sub.id, sub.goal, sub.files, sub.acceptance, others=others, note=note)
        keys = [f"fast_edit:{sub.id}#{attempt}", f"fast_edit:{sub.id}"]
        result, collect = await self._placed(inp, name, "fast_edit", task, start, keys, files_in_scope=len(sub.files),
                                             collect=f"bosun subtask {sub.id}: {sub.goal[:60]}")
        return collect, result
