"""Evaluation workflows: SWE-bench-format instances judged the way the reference harness judges them, on Temporal:
long, parallel and resumable (a worker restart re-runs no finished instance: each is a child workflow whose
result is recorded).

- ``EvalWorkflow``: one child per instance, at most ``max_parallel`` judged at a time; the ``progress`` query
  gives done/total, resolved so far, errors and an ETA. Judging given predictions, up to ``max_parallel`` more
  children start ahead: they prepare (their environment found or built, their workspace checked out and their
  sandbox started, on the worker) while the others' tests run, then wait for the ``go`` signal, which the
  evaluation sends, in order, as judging slots free up. With ``variants`` (``bosun eval run``) each instance runs
  once per variant, the agents' diff as its prediction (no child starts ahead: the agents are the long part).
  Every ``jobs_per_run`` jobs (instance x variant) it waits for its children, stores their outcomes in the
  artifact store and continues as new, carrying where it is, the counts and the outcomes' refs: a run's
  history stays far below Temporal's 51,200 events for any number of instances, and the report does not
  depend on Temporal keeping the earlier runs.
- ``EvalInstanceWorkflow``: bind to a worker host, prepare the repository and its environment, (started ahead:
  wait for the go; an environment not built yet is built only then), (agent mode: run a TaskWorkflow at the base
  commit on the problem statement, its diff becomes the prediction), apply and test. On hosts that share their
  state (a cluster, patch ``eval-slots``), an instance is placed like an agent: preparing and judging it takes a
  slot on whichever host has a free one (workflows/placement.py), and if that host is lost it is prepared and
  judged again on another; it holds no slot while it waits for its go or for its agents (they take their own).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import timedelta
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError, FailureError

with workflow.unsafe.imports_passed_through():
    from activities.models import BindResult, SlotGrant
    from activities.workspace import WorkspaceActivities
    from evaluation.activities import (
        EvalActivities,
        EvalFetchInput,
        EvalPrepareInput,
        EvalPrepareResult,
        EvalRunInput,
        EvalRunResult,
        KeepOutcomesInput,
        PredictionInput,
    )
    from workflows import policies
    from workflows.models import HostMove, TaskInput, TaskResult
    from workflows.placement import HostGone, Placement, drop
    from workflows.task import TaskWorkflow


class EvalItem(BaseModel):
    instance_id: str
    repo: str
    base_commit: str
    version: str | None = None
    environment_setup_commit: str | None = None
    created_at: str | None = None
    source: str
    """Where the repository comes from (a path, a mirror or a URL)."""
    instance_ref: str
    prediction_ref: str | None = None
    """The prediction to judge; None in agent mode (the agents make it)."""
    task: str = ""
    """Agent mode: the problem statement."""
    empty_prediction: bool = False
    """The prediction is empty or missing: it is judged without a sandbox (none is started ahead for it). The CLI
    no longer sends such items (it reports empty predictions without judging them, as the harness does); kept for
    evaluations started before."""


class Variant(BaseModel):
    name: str
    task: dict[str, Any] = {}
    """TaskInput fields for the agents' run (model, mode, max_turns, max_parallel, budget...)."""


class InstanceInput(BaseModel):
    run_id: str
    item: EvalItem
    timeout_s: float
    variant: Variant | None = None
    gated: bool = False
    """Started ahead: prepare, then wait for the evaluation's ``go`` signal (a free judging slot)."""
    network: bool = False
    """Judge in a sandbox that reaches the public internet (EvalInput.network)."""


class InstanceOutcome(BaseModel):
    instance_id: str
    variant: str = ""
    resolved: bool = False
    applied: bool = False
    report_ref: str | None = None
    log_ref: str | None = None
    error: str = ""
    error_kind: str = ""
    """``environment`` (the repository or its environment could not be had), ``apply`` (the prediction does not
    apply), ``timeout``, ``agents`` (agent mode: the agents' run failed), ``failed`` (the instance's workflow
    failed)."""
    prediction_ref: str | None = None
    task_workflow_id: str | None = None
    task: dict[str, Any] = {}
    """Agent mode: what the run cost and did (status, cost, tokens, turns, tool calls, errors by class, wall)."""
    seconds: float = 0.0
    """The instance's workflow's seconds, its wait for a judging slot (``waited_s``) left out."""
    waited_s: float = 0.0
    """Started ahead: seconds it waited, prepared, for a judging slot (its workspace and sandbox were being set
    up meanwhile, on the worker)."""
    started_ahead: bool = False
    """Started beyond the ``max_parallel`` being judged: it prepared, then waited for a judging slot."""
    set_up_ahead: bool = False
    """Its workspace, sandbox and apply were set up from its preparation on, in the background, not when its
    judging began (``phases`` up to the prediction's apply ran before its judging, during ``waited_s`` if it
    waited; ``phases.setup_wait``: how long its judging still waited for them)."""
    test_seconds: float = 0.0
    env_id: str | None = None
    build_s: float = 0.0
    phases: dict[str, float] = {}
    """Seconds per step of the instance (eval_prepare's and eval_instance's ``phases``)."""
    slot_s: float = 0.0
    """Seconds it held one of the evaluation's judging slots, as the evaluation saw it: from its start with a
    slot (or, started ahead, the go sent to it) to its end. The evaluation's time it took: one at a time, the
    instances' slot seconds add up to the evaluation's time after the fetch ahead (its preparation while it
    waited, overlapping another instance's judging, is not in them; the wait for its set-up is)."""
    host: str = ""
    """Hosts that share their state (a cluster): the worker id of the host that judged it, in a slot of its own."""
    moves: list[HostMove] = []
    """Hosts that share their state: hosts lost while they prepared or judged it (it was judged again elsewhere)."""
    fetch_share_s: float = 0.0
    """Its share of the fetch ahead: its source's fetch seconds over that source's jobs. (Both 0 for the
    instances of an evaluation started before ``eval-continue-as-new``: their outcomes are their children's
    results.)"""


JOBS_PER_RUN = 1000
"""Instance jobs one run of an evaluation starts before it continues as new when its input does not say (about
16 history events each: a run stays far below Temporal's 51,200-event limit). A continued run carries the number
it used on (the CLI always says it: a first run started without it by another client takes this at replay too,
so keep it as it is)."""
KEEP_CHUNK = 250
"""Outcomes (about 1 KB each) stored per eval_keep_outcomes call: its input stays far below Temporal's 2 MB."""


class EvalCarried(BaseModel):
    """Where the evaluation's earlier runs got to (it continues as new every ``jobs_per_run`` jobs)."""

    start: int = 0
    """The jobs before this one (in the order of ``items`` times ``variants``) are done."""
    done: int = 0
    resolved: int = 0
    errors: int = 0
    started: float = 0.0
    """When the first run started (workflow time): the progress's elapsed time and ETA count from it."""
    fetch_ahead_s: float = 0.0
    fetch_s: dict[str, float] = {}
    """Seconds the fetch ahead took per source (the instances' ``fetch_share_s``)."""
    kept: list[str] = []
    """The earlier runs' outcomes, in the artifact store (``eval_keep_outcomes``)."""


class EvalInput(BaseModel):
    run_id: str
    items: list[EvalItem]
    max_parallel: int = 2
    timeout_s: float = 1800.0
    variants: list[Variant] = []
    """Empty: judge the given predictions. Otherwise run the agents once per variant and judge their diffs."""
    jobs_per_run: int = 0
    """Jobs (instance x variant) one run starts before it continues as new; 0: ``JOBS_PER_RUN``."""
    carried: EvalCarried | None = None
    """Set by the evaluation itself when it continues as new."""
    network: bool = False
    """Judge each prediction in a sandbox that reaches the public internet, as the harness's containers do
    (``bosun eval swebench --network``; docker workers only). Agents never get network."""


class EvalResult(BaseModel):
    run_id: str
    outcomes: list[InstanceOutcome]
    """Outcomes in the result itself: none since outcomes are kept (``kept``). Results of evaluations that older
    builds finished hold every instance's here, or those the evaluation made for children that failed; the CLI
    still reads them."""
    children: list[str] = []
    """Results of evaluations finished by older builds only: the instance workflows whose result is their outcome
    (the CLI reads them from their completion events in the evaluation's history)."""
    kept: list[str] = []
    """Every outcome, in job order, stored in the artifact store by each run before it ends
    (``eval_keep_outcomes``, ``KEEP_CHUNK`` a ref): a run's history goes a while after the run closes, and an
    evaluation that continued as new closed its earlier runs long before it ends."""
    fetch_ahead_s: float = 0.0
    """Seconds spent fetching every instance's commits before the instances started (each instance's share of
    it: its ``fetch_share_s``)."""


async def _bind_worker(config: workflow.ActivityConfig = policies.BIND) -> str:
    """The queue of a worker host (``WorkspaceActivities.bind_worker``) for the activities that follow."""
    return await workflow.execute_activity_method(WorkspaceActivities.bind_worker, summary="bind worker", **config)


def _task_summary(result: TaskResult) -> dict[str, Any]:
    agents = result.all_agents()
    errors: dict[str, int] = {}
    for a in agents:
        for kind, n in a.errors.items():
            errors[kind] = errors.get(kind, 0) + n
    return {"status": result.status, "cost_usd": round(sum(a.cost_usd for a in agents), 6),
            "tokens": sum(a.usage.input_tokens + a.usage.output_tokens for a in agents),
            "turns": sum(a.turns for a in agents), "tool_calls": sum(a.tool_calls for a in agents),
            "tool_errors": errors, "files_changed": result.files_changed}


def _ready(prep: EvalPrepareResult) -> bool:
    """Whether the instance's preparation gave an environment to judge it in."""
    return not prep.error and bool(prep.env_id) and prep.recipe is not None


def _usable(out: InstanceOutcome, prep: EvalPrepareResult) -> bool:
    """Whether the instance's preparation gave an environment to judge it in (else the outcome says why)."""
    if not _ready(prep):
        out.error, out.error_kind = prep.error or "no environment", "environment"
        return False
    return True


def _judged(out: InstanceOutcome, run: EvalRunResult) -> None:
    out.resolved, out.applied, out.report_ref, out.log_ref = run.resolved, run.applied, run.report_ref, run.log_ref
    out.error, out.error_kind = out.error or run.error, out.error_kind or run.error_kind
    out.test_seconds, out.set_up_ahead = run.test_seconds, run.set_up_ahead
    out.phases.update(run.phases)


@workflow.defn
class EvalInstanceWorkflow:
    def __init__(self) -> None:
        self._go = False
        self.place = Placement()
        self.moves: list[HostMove] = []

    @workflow.signal
    def go(self) -> None:
        """A judging slot is free (an instance started ahead waits for it once prepared)."""
        self._go = True

    async def _wait_for_go(self) -> float:
        """Wait for a judging slot; the seconds waited."""
        workflow.set_current_details("prepared; waiting for a judging slot")
        t0 = workflow.time()
        await workflow.wait_condition(lambda: self._go)
        return workflow.time() - t0

    @workflow.run
    async def run(self, inp: InstanceInput) -> InstanceOutcome:
        item = inp.item
        started = workflow.time()
        # a prediction to judge: the worker sets the workspace and sandbox up as soon as it is prepared
        stage = bool(inp.variant is None and item.prediction_ref and not item.empty_prediction)
        out = InstanceOutcome(instance_id=item.instance_id, variant=inp.variant.name if inp.variant else "")
        out.started_ahead = inp.gated
        bound: BindResult = await workflow.execute_activity_method(
            WorkspaceActivities.bind_host, summary="bind worker", **policies.BIND)
        if bound.shared:
            return await self._run_placed(inp, out, started)
        queue = bound.queue

        async def prepare(build: bool) -> EvalPrepareResult:
            return await self._prepare(inp, queue, build=build, stage=stage)
        prep = await prepare(build=not inp.gated)
        waited = 0.0
        if inp.gated and prep.deferred:  # its environment is built in a judging slot
            waited = await self._wait_for_go()
            prep = await prepare(build=True)
        out.env_id, out.build_s, out.phases = prep.env_id, prep.build_s, dict(prep.phases)
        if not _usable(out, prep):
            out.seconds, out.waited_s = round(workflow.time() - started - waited, 2), round(waited, 2)
            return out
        if inp.gated and not self._go:
            waited = await self._wait_for_go()
        out.waited_s = round(waited, 2)
        prediction_ref = item.prediction_ref
        if inp.variant is not None:
            prediction_ref = await self._agents(inp, out, queue)
            if prediction_ref is None:
                return out
        out.prediction_ref = prediction_ref
        _judged(out, await self._judge(inp, queue, prep, prediction_ref))
        out.seconds = round(workflow.time() - started - waited, 2)
        return out

    async def _prepare(self, inp: InstanceInput, queue: str, *, build: bool, stage: bool) -> EvalPrepareResult:
        item = inp.item
        return await workflow.execute_activity_method(
            EvalActivities.eval_prepare,
            EvalPrepareInput(key=workflow.info().workflow_id, source=item.source, base_commit=item.base_commit,
                             repo=item.repo, version=item.version,
                             environment_setup_commit=item.environment_setup_commit, created_at=item.created_at,
                             sandbox_ahead=not item.empty_prediction, build=build, network=inp.network,
                             instance_ref=item.instance_ref if stage else "",
                             prediction_ref=(item.prediction_ref or "") if stage else ""),
            summary=f"repository and environment of {item.instance_id}", task_queue=queue, **policies.EVAL_STEP)

    async def _judge(self, inp: InstanceInput, queue: str, prep: EvalPrepareResult,
                     prediction_ref: str | None) -> EvalRunResult:
        item = inp.item
        return await workflow.execute_activity_method(
            EvalActivities.eval_instance,
            EvalRunInput(key=workflow.info().workflow_id, instance_ref=item.instance_ref,
                         prediction_ref=prediction_ref or "", env_id=prep.env_id, recipe=prep.recipe,
                         base_commit=item.base_commit, timeout_s=inp.timeout_s, version_derived=prep.version_derived,
                         network=inp.network),
            summary=f"apply and test {item.instance_id}", task_queue=queue,
            **policies.longer(policies.EVAL_STEP, inp.timeout_s / 60 + 15))

    # -- hosts that share their state: placed by slots, moved off lost hosts -------------------------------------

    @workflow.signal
    def slot_granted(self, grant: SlotGrant) -> None:
        """A host took the instance's slot claim (activities/hosts.py: hold_slot)."""
        self.place.granted(grant)

    @workflow.query
    def placement(self) -> dict:
        """The hosts lost while they worked on the instance, and the moves."""
        return {"lost": sorted(self.place.lost), "moves": [m.model_dump() for m in self.moves]}

    async def _in_slot(self, what: str, work):
        """``work(queue)`` on the host that takes a slot for it, the slot held meanwhile; when that host is lost,
        again on another (a step of preparing or judging is idempotent: it starts from the repository's commit
        and the environment's recipe). Returns (host's worker id, what ``work`` returned)."""
        attempt = 0
        while True:
            attempt += 1
            grant, lease = await self.place.claim(what if attempt == 1 else f"{what}.m{attempt}")
            try:
                return grant.worker_id, await self.place.on(grant.worker_id, work(grant.queue))
            except HostGone as gone:
                self.moves.append(HostMove(what=what, from_worker=grant.worker_id, at=workflow.now().isoformat(),
                                           why=gone.lost.why))
                workflow.set_current_details(f"{what}: host {grant.worker_id} lost ({gone.lost.why}); again "
                                             "elsewhere")
            finally:
                drop(lease)

    async def _run_placed(self, inp: InstanceInput, out: InstanceOutcome, started: float) -> InstanceOutcome:
        """The instance on hosts that share their state: each step that works (preparing, judging) in a slot of
        its own; the go awaited first (an instance is not set up ahead across hosts)."""
        self.place.shared = True
        try:
            waited = await self._wait_for_go() if inp.gated else 0.0
            out.waited_s = round(waited, 2)
            prediction_ref = inp.item.prediction_ref
            if inp.variant is not None:  # the environment first (the agents' task uses it), then the agents
                _, prep = await self._in_slot("prepare", lambda q: self._prepare(inp, q, build=True, stage=False))
                out.env_id, out.build_s, out.phases = prep.env_id, prep.build_s, dict(prep.phases)
                if not _usable(out, prep):
                    return out
                diff_ref = await self._agents_diff(inp, out)
                if diff_ref is None:
                    return out

            async def judged(queue: str) -> tuple[str | None, EvalPrepareResult, EvalRunResult | None]:
                ref = prediction_ref if inp.variant is None else await self._prediction(inp, out, diff_ref, queue)
                prep = await self._prepare(inp, queue, build=True, stage=False)
                if not _ready(prep):
                    return ref, prep, None
                return ref, prep, await self._judge(inp, queue, prep, ref)
            out.host, (out.prediction_ref, prep, run) = await self._in_slot("judge", judged)
            out.env_id, out.build_s = prep.env_id, prep.build_s
            out.phases.update(prep.phases)
            if _usable(out, prep) and run is not None:
                _judged(out, run)
            out.seconds = round(workflow.time() - started - waited, 2)
            return out
        finally:
            out.moves = list(self.moves)
            self.place.stop_watching()

    async def _agents(self, inp: InstanceInput, out: InstanceOutcome, queue: str) -> str | None:
        """Agent mode: a task at the base commit on the problem statement; its diff, stored, is the prediction."""
        diff_ref = await self._agents_diff(inp, out)
        return None if diff_ref is None else await self._prediction(inp, out, diff_ref, queue)

    async def _prediction(self, inp: InstanceInput, out: InstanceOutcome, diff_ref: str, queue: str) -> str:
        return await workflow.execute_activity_method(
            EvalActivities.eval_prediction,
            PredictionInput(instance_id=inp.item.instance_id, model=out.variant or "bosun", diff_ref=diff_ref),
            summary=f"prediction of {inp.item.instance_id}", task_queue=queue, **policies.ROUTE)

    async def _agents_diff(self, inp: InstanceInput, out: InstanceOutcome) -> str | None:
        """The agents' task at the base commit on the problem statement: its diff's ref, or None when it failed
        (the outcome says why)."""
        item = inp.item
        task_id = f"{workflow.info().workflow_id}/task"
        out.task_workflow_id = task_id
        fields = {"mode": "solo", **(inp.variant.task if inp.variant else {})}
        began = workflow.time()
        try:
            result: TaskResult = await workflow.execute_child_workflow(
                TaskWorkflow.run, TaskInput(**{"repo": item.source, "ref": item.base_commit, "task": item.task,
                                               "env_id": out.env_id, **fields}),
                id=task_id, retry_policy=policies.ONCE,
                static_summary=f"{item.instance_id} ({out.variant}): {item.task[:100]}")
        except ChildWorkflowError as e:
            if policies.cancelling(e):
                raise asyncio.CancelledError() from None
            out.error, out.error_kind = f"the agents' run failed: {e.cause or e}"[:500], "agents"
            return None
        out.task = _task_summary(result) | {"wall_s": round(workflow.time() - began, 2)}
        return result.diff_ref


@workflow.defn
class EvalWorkflow:
    def __init__(self) -> None:
        self.total = 0
        self.outcomes: list[InstanceOutcome] = []
        """This run's outcomes (the earlier runs' are counted in ``carried``)."""
        self.carried = EvalCarried()
        self.started = 0.0
        self._judging: set[str] = set()
        """Children given a judging slot (started with it, or sent the go) and not over."""
        self._waiting: list[workflow.ChildWorkflowHandle] = []
        """Children started ahead, not yet sent the go, in the order they started."""
        self._granted: dict[str, float] = {}
        """When each child in ``_judging`` was given its slot (workflow time)."""
        self._fetch_s: dict[str, float] = {}
        """Seconds the fetch ahead took per source."""

    @workflow.query
    def progress(self) -> dict:
        """done/total, resolved so far, errors and the expected time left."""
        done, resolved, errors = self._counts()
        elapsed = workflow.time() - self.started if self.started else 0.0
        eta = (elapsed / done) * (self.total - done) if done else None
        return {"done": done, "total": self.total, "resolved": resolved, "errors": errors,
                "elapsed_s": round(elapsed, 1), "eta_s": round(eta, 1) if eta is not None else None}

    def _counts(self) -> tuple[int, int, int]:
        """Instances done, resolved and in error, over all of the evaluation's runs."""
        c = self.carried
        return (c.done + len(self.outcomes), c.resolved + sum(o.resolved for o in self.outcomes),
                c.errors + sum(1 for o in self.outcomes if o.error))

    @workflow.run
    async def run(self, inp: EvalInput) -> EvalResult:
        self.carried = carried = inp.carried or EvalCarried()
        self.started = carried.started or workflow.time()
        variants: list[Variant | None] = list(inp.variants) or [None]
        jobs = [(item, v) for item in inp.items for v in variants]
        self.total = len(jobs)
        base = workflow.info().workflow_id
        ids = [f"{base}/{item.instance_id}" + (f"/{v.name}" if v else "") for item, v in jobs]
        # a run starts at most jobs_per_run jobs, then continues as new (its history stays within Temporal's limits)
        first = carried.start
        last = min(len(jobs), first + max(1, inp.jobs_per_run or JOBS_PER_RUN))
        limit = asyncio.Semaphore(max(1, inp.max_parallel))
        fetch_ahead_s, self._fetch_s = carried.fetch_ahead_s, dict(carried.fetch_s)
        if first == 0:
            await self._fetch_ahead(inp, limit)
            fetch_ahead_s = round(workflow.time() - self.started, 2)
        per_source = Counter(item.source for item, _ in jobs)

        # judging given predictions, as many children again start ahead and wait, prepared, for a slot
        slots = max(1, inp.max_parallel)
        ahead = 0 if inp.variants else slots
        children = asyncio.Semaphore(slots + ahead)

        async def one(item: EvalItem, variant: Variant | None, child_id: str) -> InstanceOutcome:
            async with children:
                policies.stop_if_cancelled()  # (no new instance once the evaluation is cancelled)
                gated = bool(ahead) and len(self._judging) >= slots
                if not gated:
                    self._judging.add(child_id)
                    self._granted[child_id] = workflow.time()
                try:
                    handle = await workflow.start_child_workflow(
                        EvalInstanceWorkflow.run, InstanceInput(run_id=inp.run_id, item=item, timeout_s=inp.timeout_s,
                                                                variant=variant, gated=gated,
                                                                network=inp.network),
                        id=child_id, static_summary=child_id[len(base) + 1:])
                    if gated:
                        self._waiting.append(handle)
                        await self._let_in(slots)  # (a slot freed while it was starting)
                    outcome = await handle
                except ChildWorkflowError as e:
                    if policies.cancelling(e):  # the evaluation is cancelled: stop, no outcome to make
                        raise asyncio.CancelledError() from None
                    outcome = InstanceOutcome(instance_id=item.instance_id, variant=variant.name if variant else "",
                                              error=f"its workflow ended: {policies.failure(e).message}"[:500],
                                              error_kind="failed")
                finally:
                    self._waiting = [h for h in self._waiting if h.id != child_id]
                    granted, ended = self._granted.pop(child_id, None), workflow.time()
                    if child_id in self._judging:
                        self._judging.discard(child_id)
                        await self._let_in(slots)  # (the next one's slot begins when this one's ends)
            if granted is not None:
                outcome.slot_s = round(ended - granted, 2)
            outcome.fetch_share_s = round(self._fetch_s.get(item.source, 0.0) / per_source[item.source], 3)
            self.outcomes.append(outcome)
            done, resolved, _ = self._counts()
            workflow.set_current_details(f"{done}/{self.total} done, {resolved} resolved")
            return outcome

        results = await policies.gather(*[one(item, v, child_id) for (item, v), child_id
                                         in zip(jobs[first:last], ids[first:last], strict=True)])
        kept = carried.kept + await self._keep(list(results))
        if last < len(jobs):
            done, resolved, errors = self._counts()
            workflow.continue_as_new(inp.model_copy(update={"jobs_per_run": last - first, "carried": EvalCarried(
                start=last, done=done, resolved=resolved, errors=errors, started=self.started,
                fetch_ahead_s=fetch_ahead_s, fetch_s=self._fetch_s, kept=kept)}))
        return EvalResult(run_id=inp.run_id, outcomes=[], kept=kept, fetch_ahead_s=fetch_ahead_s)

    async def _keep(self, outcomes: list[InstanceOutcome]) -> list[str]:
        """This run's outcomes, in the artifact store on a worker: their refs, ``KEEP_CHUNK`` outcomes each, one
        call at a time (a workflow task's commands stay far below Temporal's 4 MB). Never gives up: each call is
        retried until it succeeds, and a worker that does not take it within 10 minutes (gone) is replaced by
        another one bound."""
        refs: list[str] = []
        queue = ""
        for i in range(0, len(outcomes), KEEP_CHUNK):
            chunk = outcomes[i:i + KEEP_CHUNK]
            while True:
                if not queue:
                    queue = await _bind_worker(policies.BIND_TO_KEEP)
                try:
                    refs.append(await workflow.execute_activity_method(
                        EvalActivities.eval_keep_outcomes, KeepOutcomesInput(outcomes=[o.model_dump() for o in chunk]),
                        task_queue=queue, summary=f"keep {len(chunk)} outcomes", **policies.KEEP_OUTCOMES))
                    break
                except ActivityError as e:  # (its worker did not take it, or it cannot: another one, a bit later)
                    if policies.cancelling(e):
                        raise asyncio.CancelledError() from None
                    workflow.logger.warning("keeping outcomes on %s failed: %s; binding another worker in a "
                                            "minute", queue, e.cause or e)
                    queue = ""
                    await workflow.sleep(timedelta(minutes=1))
        return refs

    async def _let_in(self, slots: int) -> None:
        """Send the go to the children started ahead, oldest first, while judging slots are free."""
        while self._waiting and len(self._judging) < slots:
            handle = self._waiting.pop(0)
            self._judging.add(handle.id)
            self._granted[handle.id] = workflow.time()
            try:
                await handle.signal(EvalInstanceWorkflow.go)
            except FailureError as e:  # it is over already (its preparation failed): its end frees the slot
                workflow.logger.info("%s ended before its go: %s", handle.id, e)

    async def _fetch_ahead(self, inp: EvalInput, limit: asyncio.Semaphore) -> None:
        """Every instance's commits, fetched per source in one go on a worker before the instances start: one
        negotiation and one pack per source instead of one per instance (which would also queue on the
        source's lock). Best effort: an instance whose commit this misses fetches it itself, and reports why
        it cannot."""
        by_source: dict[str, list[str]] = {}
        for item in inp.items:
            wanted = by_source.setdefault(item.source, [])
            for commit in (item.base_commit, item.environment_setup_commit):
                if commit and commit not in wanted:
                    wanted.append(commit)
        if not by_source:
            return
        workflow.set_current_details(f"fetching the commits of {len(inp.items)} instances")
        queue = await _bind_worker()

        async def fetch(source: str, commits: list[str]) -> None:
            async with limit:
                try:
                    fetched = await workflow.execute_activity_method(
                        EvalActivities.eval_fetch, EvalFetchInput(source=source, commits=commits),
                        summary=f"{len(commits)} commits from {source}"[:200], task_queue=queue, **policies.EVAL_STEP)
                    self._fetch_s[source] = fetched.seconds
                except ActivityError as e:  # (a worker lost for good...): the instances fetch for themselves
                    if policies.cancelling(e):
                        raise asyncio.CancelledError() from None
                    workflow.logger.warning("fetching ahead from %s failed: %s", source, e.cause or e)
        await policies.gather(*[fetch(source, commits) for source, commits in by_source.items()])
