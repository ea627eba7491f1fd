"""Evaluation activities: thin adapters from the evaluation workflows to the task repository, environments and
sandboxes. ``eval_prepare``: the instance's commits are fetched by the host into a host-owned repository (as for a
task), its recipe picked (evaluation/recipes.py) and its environment built or reused. ``eval_instance``:
the steps of evaluation/harness.py run INSIDE a network-off sandbox of that environment -- the patches are
hostile text and the host never applies them --; the tests' output is read on the host as data
(evaluation/testlogs.py)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from temporalio import activity

from activities.agent import sandbox_user
from activities.heartbeat import Progress, heartbeating
from environments.buildrun import BuildFailed
from environments.repofiles import GitTree
from environments.service import Environments
from evaluation import versions
from evaluation.harness import (
    PREDICTION,
    TEST_PATCH,
    apply_script,
    generic_recipe,
    judging_script,
    needs_rebuild,
    prediction_files,
    reset_files,
    statuses,
)
from evaluation.recipes import RECIPES, Recipe, declaration, recipe_for
from evaluation.swebench import Instance, Prediction, instance_report
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.settings import Settings
from sandbox.base import ExecResult, Sandbox
from sandbox.hostgit import OBJECT_ID, find_git_dir
from sandbox.hostrepo import TaskRepo
from sandbox.manager import SandboxManager
from sandbox.sources import SourceStore

log = logging.getLogger(__name__)

RUN = "eval"
"""The run workspace an instance is judged in (``K.runs/eval``)."""
TESTS_OUTPUT_CAP = 64 << 20
"""Bytes of the tests' output kept (the runners' summaries come at the end: nothing the harness would read is
cut short)."""

class KeepOutcomesInput(BaseModel):
    outcomes: list[dict[str, Any]]
    """Outcomes of an evaluation's instances (evaluation/workflow.py's InstanceOutcome, as JSON)."""


class EvalFetchInput(BaseModel):
    source: str
    """The repository: a local path, a mirror or a clone URL."""
    commits: list[str]
    """Every commit an evaluation's instances need from it (abbreviated ids are left to the instances)."""


class EvalFetchResult(BaseModel):
    fetched: int = 0
    """Commits the worker's store did not hold before."""
    seconds: float = 0.0
    error: str = ""
    """Why the fetch failed (each instance then fetches its own commits and reports what is wrong)."""


class EvalPrepareInput(BaseModel):
    key: str
    """The evaluation's id for this instance (its repository and workspaces are kept under it)."""
    source: str
    """The repository: a local path, a mirror or a clone URL."""
    base_commit: str
    repo: str
    """owner/name, as the instance names it (picks the harness's recipe of known repositories)."""
    version: str | None = None
    """The instance's version field (picks the recipe's version)."""
    environment_setup_commit: str | None = None
    """Where the harness builds the version's environment (shared by the version's instances)."""
    created_at: str | None = None
    """The row's ``created_at``: when it has no version, some repositories' versions are found by it."""
    sandbox_ahead: bool = False
    """Start the sandbox that will judge the instance (or its agents' first one) in the background as soon as
    the environment is known: its start overlaps the rest of the preparation and the checkout."""
    build: bool = True
    """False (an instance started ahead, not yet given a judging slot): an environment that is not built yet
    is not built now (``deferred``): builds stay within the evaluation's ``max_parallel``."""
    instance_ref: str = ""
    prediction_ref: str = ""
    """Both given (a prediction to judge, not agents to run): once the environment is known, the instance's
    workspace is made and checked out and its sandbox started in the background, for eval_instance (which
    may wait for a free slot of the evaluation meanwhile). Empty: eval_instance does it."""
    network: bool = False
    """The sandbox judging the instance reaches the public internet (``bosun eval swebench --network``)."""


class EvalPrepareResult(BaseModel):
    env_id: str | None = None
    python: str = ""
    recipe: Recipe | None = None
    """How the instance is set up and tested (the harness's recipe, or bosun's for a repository it does not
    know)."""
    error: str = ""
    """Why the instance cannot be evaluated (the repository, the commit or the environment)."""
    build_s: float = 0.0
    cached: bool = False
    deferred: bool = False
    """The environment is to be built, which ``build=False`` left for later (no env_id, no error)."""
    phases: dict[str, float] = {}
    """Seconds per step: ``fetch`` (the commits), ``environment`` (detected and found or built)."""
    version_derived: str = ""
    """A row of a repository the harness knows without a version: the version derived from its repository, how,
    and the recipe taken (evaluation/versions.py)."""


class EvalRunInput(BaseModel):
    key: str
    instance_ref: str
    prediction_ref: str
    env_id: str
    recipe: Recipe
    base_commit: str
    timeout_s: float = 1800.0
    version_derived: str = ""
    """Put in the instance's report (``version_derived``)."""
    network: bool = False
    """Judged in a sandbox that reaches the public internet, as the harness's containers do (docker only;
    sandbox/netns.py: public_only); the instance's report says so (``network``)."""


class EvalRunResult(BaseModel):
    instance_id: str
    report_ref: str
    """The harness-compatible report of the instance (artifact store)."""
    resolved: bool
    applied: bool
    log_ref: str | None = None
    seconds: float = 0.0
    test_seconds: float = 0.0
    error: str = ""
    error_kind: str = ""
    """``apply`` (the prediction does not apply: the harness counts it an error too), ``timeout``."""
    set_up_ahead: bool = False
    """The workspace, sandbox and apply were set up from eval_prepare on, in the background: ``workspace`` to
    the prediction's part of ``apply`` ran before this activity (while the instance waited for its slot, if it
    did), and ``setup_wait`` is how long this activity still waited for them."""
    phases: dict[str, float] = {}
    """Seconds per step: ``setup_wait`` (set up ahead: waited for it), ``workspace`` (an earlier attempt's
    removal awaited, the workspace's file system made), ``checkout``, ``expose`` (the files the judging script
    resets lent), ``sandbox`` (started or taken; these three overlap), ``ready`` (all three done), ``apply``
    (the recipe's edits, the prediction, the test patch written), ``rebuild``, ``tests`` (the judging script)."""


class PredictionInput(BaseModel):
    instance_id: str
    model: str
    diff_ref: str


@dataclass
class Judging:
    """An instance's judging workspace, checked out, its sandbox, bound to it, and the prediction applied there
    (``EvalActivities._set_up``)."""
    repo: TaskRepo
    box: Sandbox
    running: list[asyncio.Future]
    """The file system made, the checkout and the lending (done; the cleanup looks at them again)."""
    template: str | None
    """The setup commit worth a checkout template once the instance is judged."""
    phases: dict[str, float]
    given: tuple[str, str, str, Recipe]
    """(instance ref, prediction ref, base commit, recipe) it was set up for."""
    applied: bool = False
    """The prediction applied (else the verdict: it does not apply)."""
    log: str = ""
    """What ran in the sandbox and printed, so far."""

    async def step(self, title: str, script: str, timeout_s: float, cap: int = 1_000_000) -> ExecResult:
        """Run ``script`` in the sandbox; its output goes to the log."""
        res = await self.box.exec(["sh", "-c", script], timeout_s=timeout_s, output_cap=cap)
        self.log += f"$ {title}\n{res.stdout}{res.stderr}"
        if res.truncated:
            self.log += f"\n[output past {cap} bytes dropped]"
        self.log += "\n"
        return res


class EvalActivities:
    """Given: the settings, the artifact store and the worker's sandboxes."""

    def __init__(self, settings: Settings, store: ArtifactStore, sandboxes: SandboxManager) -> None:
        self.settings = settings
        self.store = store
        self.sandboxes = sandboxes
        self._cleanups: dict[str, asyncio.Future] = {}
        """Per instance key: the removal of its judged workspace and sandbox, still going."""
        self._staged: dict[str, asyncio.Future[Judging]] = {}
        """Per instance key: its workspace and sandbox set up ahead by eval_prepare, for eval_instance."""

    async def close(self) -> None:
        """Wait for the workspaces still being set up or removed (a worker that stops leaves none half-made or
        half-removed; the reaper removes the set-up ones of instances that are over)."""
        if self._staged:
            await asyncio.wait(list(self._staged.values()))
        if self._cleanups:
            await asyncio.wait(list(self._cleanups.values()))

    def all(self) -> list:
        return [self.eval_fetch, self.eval_prepare, self.eval_instance, self.eval_prediction, self.eval_keep_outcomes]

    @activity.defn
    async def eval_keep_outcomes(self, inp: KeepOutcomesInput) -> str:
        """Outcomes of an evaluation's instances into the artifact store (their ref): the CLI reads them from
        there, whatever Temporal still keeps of the evaluation's runs (a run's history goes a while after it
        closes, and an evaluation that continued as new closed its earlier runs long before it ends)."""
        return self.store.put_json({"outcomes": inp.outcomes})

    @activity.defn
    async def eval_fetch(self, inp: EvalFetchInput) -> EvalFetchResult:
        """The commits of an evaluation's instances from one source, into this worker's store in one fetch
        (sandbox/sources.py: SourceStore); heartbeats. Never fails the evaluation: what goes wrong is reported
        again, per instance, by eval_prepare."""
        def work() -> EvalFetchResult:
            t0 = time.monotonic()
            store = SourceStore(self.settings.workspaces_dir, inp.source)
            try:
                need = store.missing([c for c in inp.commits if OBJECT_ID.match(c)])
                store.ensure(need)
            except Exception as e:  # noqa: BLE001 - best effort: the instances fetch what is missing themselves
                log.info("fetching ahead from %s failed (the instances fetch their own commits): %s", inp.source, e)
                return EvalFetchResult(seconds=round(time.monotonic() - t0, 2), error=str(e)[:500])
            return EvalFetchResult(fetched=len(need), seconds=round(time.monotonic() - t0, 2))
        async with heartbeating():
            return await asyncio.to_thread(work)

    def repo(self, key: str) -> TaskRepo:
        return TaskRepo(self.settings.workspaces_dir, key)

    @activity.defn
    async def eval_prepare(self, inp: EvalPrepareInput) -> EvalPrepareResult:
        """The instance's repository at its base commit, its recipe, and its environment (built or reused;
        heartbeats). A project that compiles code gets the environment of its base commit; any other, the one of
        its version's setup commit (the harness's choice: one environment per version)."""
        def work() -> EvalPrepareResult:
            repo, t0 = self.repo(inp.key), time.monotonic()
            wanted = [c for c in (inp.base_commit, inp.environment_setup_commit) if c]
            try:
                if all(OBJECT_ID.match(c) for c in wanted):  # just these commits, not the whole history
                    base = repo.prepare_commits(inp.source, wanted)
                    setup = wanted[-1]
                else:  # an abbreviated id is resolved in a full clone
                    base = repo.prepare(inp.source, inp.base_commit)
                    setup = repo.resolve(inp.environment_setup_commit) if inp.environment_setup_commit else base
            except ConfigError as e:
                return EvalPrepareResult(error=f"repository {inp.source} at {inp.base_commit[:12]}: {e}")
            t1 = time.monotonic()
            envs = Environments(self.settings, progress=progress)
            version, derived = inp.version, ""
            if not version and inp.repo in RECIPES:
                version, derived = self._version_of(inp, repo.objects_git, base)
            recipe = recipe_for(inp.repo, version)
            if derived and recipe is not None:
                derived += f"; judged with the recipe of {recipe.repo} {recipe.version}"
            tree = GitTree(repo.objects_git, setup if recipe and not recipe.rebuild else base, refs=False)
            try:
                present = set(tree.paths())
                declared = None
                if recipe is not None and not recipe.detected:
                    declared = (f"the SWE-bench harness's recipe for {recipe.repo} {recipe.version}",
                                declaration(recipe, present, tree.read))
                det = envs.detect(tree, inp.repo, declared=declared,
                                  version=f"{version}.0" if version and version[:1].isdigit() and not
                                  (recipe and recipe.detected) else None)
                prepared = envs.ensure(det, tree) if inp.build else envs.find(det)
                if prepared is None:  # not built yet: its build waits for a judging slot
                    return EvalPrepareResult(deferred=True, phases=_rounded(fetch=t1 - t0,
                                                                            environment=time.monotonic() - t1))
            except (BuildFailed, ConfigError) as e:
                return EvalPrepareResult(error=f"environment: {e}")
            repo.set_environment(prepared.record.env_id, envs.cache)  # the instance's sandboxes run in it
            recipe = recipe or generic_recipe(inp.repo, present & {"bin/test", "tests/runtests.py"},
                                              prepared.record.python, tuple(prepared.record.spec.standins))
            return EvalPrepareResult(env_id=prepared.record.env_id, python=prepared.record.python, recipe=recipe,
                                     build_s=prepared.seconds, cached=prepared.cached, version_derived=derived,
                                     phases=_rounded(fetch=t1 - t0, environment=time.monotonic() - t1))
        progress = Progress()
        async with heartbeating(details=progress.details):
            result = await asyncio.to_thread(work)
        if result.env_id and result.recipe is not None and inp.instance_ref and inp.prediction_ref:
            self._stage(inp, result.recipe, activity.info().workflow_id)
        elif inp.sandbox_ahead and result.env_id:
            self._sandbox_ahead(self.repo(inp.key), RUN, sandbox_user(self.settings), inp.network)
        return result

    @staticmethod
    def _version_of(inp: EvalPrepareInput, objects: Path, base: str) -> tuple[str | None, str]:
        """The version of a row without one, derived from its repository as the harness's versioning did: the
        commit's files, and the source's tags when the source is a repository on this host (read without its
        config, sandbox/hostgit.py); (None, why) when nothing gave one."""
        tree, tags = GitTree(objects, base, refs=False), None
        try:
            source = Path(inp.source).expanduser()
            git_dir = find_git_dir(source.resolve()) if source.is_dir() else None
            tags = GitTree(git_dir, base) if git_dir is not None else None
            return versions.of_commit(inp.repo, tree, tags, inp.created_at)
        finally:
            tree.close()
            if tags is not None:
                tags.close()

    def _stage(self, inp: EvalPrepareInput, recipe: Recipe, sandbox_key: str) -> None:
        """Set the instance's judging workspace and sandbox up in the background (``_staged``)."""
        for key, job in list(self._staged.items()):  # set up for instances that never came: the reaper took them
            if job.done() and (job.cancelled() or job.exception() is not None or key not in self.sandboxes.keys()):
                del self._staged[key]
        if inp.key in self._staged:  # (eval_prepare again after its result was lost: set up already)
            return

        async def stage() -> Judging:
            instance = Instance.model_validate(self.store.get_json(inp.instance_ref))
            prediction = Prediction.model_validate(self.store.get_json(inp.prediction_ref))
            return await self._set_up(inp.key, sandbox_key, instance, prediction.model_patch, recipe,
                                      inp.base_commit, (inp.instance_ref, inp.prediction_ref, inp.base_commit, recipe),
                                      network=inp.network)
        self._staged[inp.key] = asyncio.ensure_future(stage())

    @activity.defn
    async def eval_prediction(self, inp: PredictionInput) -> str:
        """An agents' diff as a prediction row (artifact store)."""
        diff = self.store.get_text(inp.diff_ref) if inp.diff_ref else ""
        return self.store.put_json(Prediction(instance_id=inp.instance_id, model_name_or_path=inp.model,
                                              model_patch=diff).model_dump())

    @activity.defn
    async def eval_instance(self, inp: EvalRunInput) -> EvalRunResult:
        """Judge the prediction as the harness does (evaluation/harness.py): in a network-off sandbox of
        the environment (``network``: one that reaches the public internet), the recipe's edits, the prediction,
        a rebuild if it needs one, the test files reset, the test patch, the tests; their output read by the
        recipe's parser."""
        started = time.monotonic()
        instance = Instance.model_validate(self.store.get_json(inp.instance_ref))
        prediction = Prediction.model_validate(self.store.get_json(inp.prediction_ref))
        patch, recipe = prediction.model_patch, inp.recipe
        phases: dict[str, float] = {}
        mark = started

        def lap(name: str) -> None:
            nonlocal mark
            now = time.monotonic()
            phases[name] = phases.get(name, 0.0) + now - mark
            mark = now

        def done(applied: bool, statuses: dict[str, str] | None, log: str, error: str = "", kind: str = "",
                 test_s: float = 0.0) -> EvalRunResult:
            report = instance_report(instance, prediction, applied=applied, statuses=statuses)
            if error:
                report["error"] = error
            if inp.version_derived:
                report["version_derived"] = inp.version_derived
            if inp.network:
                report["network"] = True
            return EvalRunResult(instance_id=instance.instance_id,
                                 report_ref=self.store.put_json({instance.instance_id: report}),
                                 resolved=report["resolved"], applied=applied,
                                 log_ref=self.store.put_text(self.environment_notice(inp.env_id) + log)
                                 if log else None,
                                 seconds=round(time.monotonic() - started, 2), test_seconds=round(test_s, 2),
                                 error=error, error_kind=kind, phases=_rounded(**phases), set_up_ahead=ahead)

        ahead = False
        # "" or null is not judged, as the harness does not run it; a patch of whitespace is (it does not apply,
        # as there)
        if not patch:
            return done(False, None, "")
        sandbox_key = activity.info().workflow_id  # the instance's workflow: the worker's reaper knows it
        async with heartbeating():
            given = (inp.instance_ref, inp.prediction_ref, inp.base_commit, recipe)
            t0 = time.monotonic()
            judging = await self._staged_for(inp.key, given)
            ahead = judging is not None
            if judging is None:
                judging = await self._set_up(inp.key, sandbox_key, instance, patch, recipe, inp.base_commit, given,
                                             network=inp.network)
            else:
                phases["setup_wait"] = time.monotonic() - t0
            phases.update(judging.phases)
            mark = time.monotonic()
            box, repo, template, owner = judging.box, judging.repo, judging.template, sandbox_user(self.settings)
            try:
                if not judging.applied:
                    return done(False, None, judging.log, "the prediction does not apply", "apply")
                deadline = time.monotonic() + inp.timeout_s
                if needs_rebuild(recipe, patch):
                    await judging.step(f"rebuild: {recipe.rebuild}", recipe.rebuild, inp.timeout_s)
                    lap("rebuild")
                if instance.test_patch.strip():  # (after the rebuild: the prediction's build never sees it)
                    await box.write(TEST_PATCH, _text(instance.test_patch))
                lap("apply")
                # with network the public test services answer themselves, as in the harness's containers
                script = judging_script(recipe.model_copy(update={"standin": ()}) if inp.network else recipe,
                                        instance)
                t0 = time.monotonic()
                res = await judging.step(script, script, max(1.0, deadline - time.monotonic()), TESTS_OUTPUT_CAP)
                test_s = time.monotonic() - t0
                lap("tests")
                if res.timed_out:
                    judging.log += f"[timed out: the evaluation's {inp.timeout_s:g} s were up]\n"
                    return done(False, None, judging.log, f"tests timed out after {inp.timeout_s:g} s", "timeout",
                                test_s)
                return done(True, statuses(recipe, res.stdout + res.stderr), judging.log, test_s=test_s)
            finally:
                self._clean_up_later(inp.key, judging.running, sandbox_key, repo, RUN,
                                     lambda: template and repo.make_template(
                                         template, owner=owner, quota_mb=self.settings.sandbox_disk_mb))

    def environment_notice(self, env_id: str) -> str:
        """The environment's warnings (what its workspaces do not get), for the top of an instance's log: a verdict
        they may explain should say so where it is read. They are those the instance's sandbox was made from, which
        the sandbox manager keeps (no second read of the record); "" when the environment is gone."""
        try:
            run = self.sandboxes.environment(env_id, self.settings.env_cache).run
        except UnexpectedEnvironment:
            return ""
        return "".join(f"[environment {env_id}: warning: {w}]\n" for w in run.warnings)

    async def _staged_for(self, key: str, given: tuple[str, str, str, Recipe]) -> Judging | None:
        """The workspace and sandbox eval_prepare set up ahead for this instance, if it did (on this worker),
        once finished, when they are for the same instance, prediction, commit and recipe and the sandbox is
        alive; None: set them up here (``_set_up`` starts by removing what was there). Taken once: a later
        attempt sets up afresh. An attempt cancelled while the setup runs leaves it to the next one."""
        job = self._staged.get(key)
        if job is None:
            return None
        try:
            judging = await asyncio.shield(job)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - set up again (what is wrong shows there)
            log.info("setting %s up ahead failed (setting it up again): %s", key, e)
            judging = None
        self._staged.pop(key, None)
        return judging if judging is not None and judging.given == given and judging.box.alive else None

    async def _set_up(self, key: str, sandbox_key: str, instance: Instance, patch: str, recipe: Recipe,
                      base_commit: str, given: tuple[str, str, str, Recipe], *, network: bool = False) -> Judging:
        """The instance's judging workspace at ``base_commit`` (from the version's checkout template when there
        is one), the files the judging script resets lent to its git, and its sandbox bound to it: the three
        overlap; then the recipe's edits (committed) and the prediction applied in the sandbox (``git apply``
        and its fallbacks, evaluation/harness.py: no code of the prediction's runs). Whatever was made is
        removed again when this fails. ``network``: the sandbox reaches the public internet."""
        phases: dict[str, float] = {}
        t0 = time.monotonic()
        if (earlier := self._cleanups.get(key)) is not None:
            await asyncio.wait([earlier])  # an earlier attempt's workspace is still being removed
        # A retry (the worker died mid-instance) starts from the base commit again: the workspace an earlier
        # attempt left holds the patches it applied, and would refuse them a second time.
        repo, owner = self.repo(key), sandbox_user(self.settings)
        self._sandbox_ahead(repo, RUN, owner, network)
        await self.sandboxes.release(sandbox_key)  # (a sandbox set up ahead that is not taken)
        await asyncio.to_thread(repo.drop_run, RUN)
        # the version's setup commit, which its other instances share, is the one worth a checkout template
        setup = instance.environment_setup_commit or ""
        template = setup if OBJECT_ID.match(setup) and setup != base_commit else None
        running = [asyncio.ensure_future(asyncio.to_thread(
            repo.open_run, RUN, base_commit, owner=owner, quota_mb=self.settings.sandbox_disk_mb,
            template=template))]  # (a future: when this is cancelled, the cleanup waits for it)
        try:
            workspace = await asyncio.shield(running[0])
            t1 = time.monotonic()
            phases["workspace"] = t1 - t0
            # what git in the sandbox reads (its repository holds only trees): the files the judging script
            # resets, those the prediction names (the apply's retries reset them, --3way merges from them), and
            # everything when a rebuild runs (a build may read the commit with git: setuptools_scm); lent while
            # the sandbox starts, before anything runs in it
            lending = asyncio.ensure_future(timed(phases, "expose", repo.expose, base_commit,
                                                  reset_files(instance.test_patch) + prediction_files(patch),
                                                  everything=needs_rebuild(recipe, patch)))
            # The sandbox starts while the files are checked out (SandboxManager.get: filling).
            checkout = asyncio.ensure_future(timed(phases, "checkout", repo.check_out, RUN, base_commit,
                                                   owner=owner))
            running += [checkout, lending]
            box = await timed(phases, "sandbox", self.sandboxes.get, sandbox_key, str(workspace), filling=checkout,
                              network=network)
            await lending
            t2 = time.monotonic()
            phases["ready"] = t2 - t1
            judging = Judging(repo=repo, box=box, running=running, template=template, phases=phases, given=given)
            await box.write(PREDICTION, _text(patch))
            script = apply_script(recipe)
            applied = await judging.step(f"the recipe's edits, committed, and the prediction applied:\n{script}",
                                         script, 300)
            judging.applied = applied.exit_code == 0
            phases["apply"] = time.monotonic() - t2
        except BaseException:
            self._clean_up_later(key, running, sandbox_key, repo, RUN, lambda: None)
            raise
        return judging

    def _sandbox_ahead(self, repo: TaskRepo, name: str, owner: tuple[int, int] | None, network: bool = False
                       ) -> None:
        """Have the instance's sandbox start while its workspace is made (eval_prepare started one already,
        unless agents ran in between and took it)."""
        found = TaskRepo.environment_for(repo.run_dir(name))
        if found is not None:
            with contextlib.suppress(UnexpectedEnvironment, ConfigError):  # (then it starts cold, or says why)
                self.sandboxes.prestart(*found, owner or (os.geteuid(), os.getegid()), network=network)

    def _clean_up_later(self, key: str, running: list[asyncio.Future], sandbox_key: str, repo: TaskRepo,
                        name: str, then: Callable[[], object]) -> None:
        """Release the sandbox and remove the workspace after the verdict is returned: unmounting a large
        checkout's file system takes a third of a second or more, which no verdict needs to wait for; ``then``
        (the source's checkout template made, for the next instances) runs after. The next attempt of the same
        instance and a stopping worker wait for it; if the worker dies first, its reaper removes what is left
        (the instance's workflow is over)."""
        async def clean() -> None:
            await asyncio.wait(running)  # nothing is removed under a checkout still writing
            for job in running:
                if not job.cancelled():
                    job.exception()  # (raised in the activity when it mattered)
            await self.sandboxes.release(sandbox_key)
            await asyncio.to_thread(repo.drop_run, name)
            try:
                await asyncio.to_thread(then)
            except Exception as exc:  # noqa: BLE001 - an optimisation: the next instances check out in full
                log.warning("making the checkout template for %s failed: %s", key, exc)

        def done(task: asyncio.Future) -> None:
            if self._cleanups.get(key) is task:
                del self._cleanups[key]
            if not task.cancelled() and task.exception() is not None:
                log.warning("removing the judged workspace of %s failed (the reaper tries again): %s", key,
                            task.exception())
        task = asyncio.ensure_future(clean())
        self._cleanups[key] = task
        task.add_done_callback(done)


async def timed(phases: dict[str, float], name: str, fn, *args, **kwargs):
    """``fn``'s result (a coroutine function's, or a blocking one's run in a thread); its seconds in
    ``phases[name]``."""
    t0 = time.monotonic()
    try:
        if asyncio.iscoroutinefunction(fn):
            return await fn(*args, **kwargs)
        return await asyncio.to_thread(fn, *args, **kwargs)
    finally:
        phases[name] = time.monotonic() - t0


def _rounded(**seconds: float) -> dict[str, float]:
    return {k: round(v, 3) for k, v in seconds.items()}


def _text(patch: str) -> str:
    return patch if patch.endswith("\n") else patch + "\n"
