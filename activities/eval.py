"""Evaluation activities: thin adapters from the evaluation workflows to the task repository, environments and
sandboxes. The instance's repository is cloned by the host at ``base_commit`` into a host-owned repository (as
for a task); its environment is built or reused; the prediction and the test patch are applied INSIDE a
network-off sandbox of that environment (``git apply``, then ``patch --fuzz`` as the reference harness does: the
patches are hostile text and the host never applies them); the tests run there with a timeout; their output is
parsed on the host as data (agents/evaluation/testlogs.py)."""

from __future__ import annotations

import asyncio
import time

from pydantic import BaseModel
from temporalio import activity

from activities.agent import sandbox_user
from activities.heartbeat import heartbeating
from agents.evaluation.runners import command, runner_for
from agents.evaluation.swebench import Instance, Prediction, instance_report, patched_files
from agents.evaluation.testlogs import parse
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError
from infra.settings import Settings
from sandbox.environments.builder import BuildFailed
from sandbox.environments.repofiles import GitTree
from sandbox.environments.service import Environments
from sandbox.hostrepo import TaskRepo
from sandbox.manager import SandboxManager

APPLY = "git apply --verbose .git/bosun-eval.patch || patch --batch --fuzz=5 -p1 -i .git/bosun-eval.patch"
"""How a prediction is applied (as the SWE-bench harness does: git apply, then patch with fuzz), in the sandbox."""


class EvalPrepareInput(BaseModel):
    key: str
    """The evaluation's id for this instance (its repository and workspaces are kept under it)."""
    source: str
    """The repository: a local path, a mirror or a clone URL."""
    base_commit: str
    repo: str
    """owner/name, as the instance names it (picks the test runner of known repositories)."""


class EvalPrepareResult(BaseModel):
    env_id: str | None = None
    python: str = ""
    runner: str = "pytest"
    error: str = ""
    """Why the instance cannot be evaluated (the repository, the commit or the environment)."""
    build_s: float = 0.0
    cached: bool = False


class EvalRunInput(BaseModel):
    key: str
    instance_ref: str
    prediction_ref: str
    env_id: str
    runner: str
    base_commit: str
    timeout_s: float = 1800.0


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


class PredictionInput(BaseModel):
    instance_id: str
    model: str
    diff_ref: str


class EvalActivities:
    """Given: the settings, the artifact store and the worker's sandboxes."""

    def __init__(self, settings: Settings, store: ArtifactStore, sandboxes: SandboxManager) -> None:
        self.settings = settings
        self.store = store
        self.sandboxes = sandboxes

    def all(self) -> list:
        return [self.eval_prepare, self.eval_instance, self.eval_prediction]

    def repo(self, key: str) -> TaskRepo:
        return TaskRepo(self.settings.workspaces_dir, key)

    @activity.defn
    async def eval_prepare(self, inp: EvalPrepareInput) -> EvalPrepareResult:
        """The instance's repository at its base commit, and its environment (built or reused; heartbeats)."""
        def work() -> EvalPrepareResult:
            repo = self.repo(inp.key)
            try:
                base = repo.prepare(inp.source, inp.base_commit)
            except ConfigError as e:
                return EvalPrepareResult(error=f"repository {inp.source} at {inp.base_commit[:12]}: {e}")
            envs = Environments(self.settings, progress=lambda m: activity.heartbeat(m[:200]))
            tree = GitTree.of_repository(repo.git_dir, base)
            try:
                det = envs.detect(tree, inp.repo)
                prepared = envs.ensure(det, tree)
            except BuildFailed as e:
                return EvalPrepareResult(error=f"environment: {e}")
            repo.set_environment(prepared.record.env_id, envs.cache)  # the instance's sandboxes run in it
            has = set(tree.paths()) & {"bin/test", "tests/runtests.py"}
            return EvalPrepareResult(env_id=prepared.record.env_id, python=prepared.record.python,
                                     runner=runner_for(inp.repo, has), build_s=prepared.seconds,
                                     cached=prepared.cached)
        async with heartbeating():
            return await asyncio.to_thread(work)

    @activity.defn
    async def eval_prediction(self, inp: PredictionInput) -> str:
        """An agents' diff as a prediction row (artifact store)."""
        diff = self.store.get_text(inp.diff_ref) if inp.diff_ref else ""
        return self.store.put_json(Prediction(instance_id=inp.instance_id, model_name_or_path=inp.model,
                                              model_patch=diff).model_dump())

    @activity.defn
    async def eval_instance(self, inp: EvalRunInput) -> EvalRunResult:
        """Apply the prediction and the test patch in a sandbox of the environment, run the tests, judge them."""
        started = time.monotonic()
        instance = Instance.model_validate(self.store.get_json(inp.instance_ref))
        prediction = Prediction.model_validate(self.store.get_json(inp.prediction_ref))
        patch = prediction.model_patch

        def done(applied: bool, statuses: dict[str, str] | None, log: str, error: str = "",
                 test_s: float = 0.0) -> EvalRunResult:
            report = instance_report(instance, prediction, applied=applied, statuses=statuses)
            if error:
                report["error"] = error
            return EvalRunResult(instance_id=instance.instance_id,
                                 report_ref=self.store.put_json({instance.instance_id: report}),
                                 resolved=report["resolved"], applied=applied,
                                 log_ref=self.store.put_text(log) if log else None,
                                 seconds=round(time.monotonic() - started, 2), test_seconds=round(test_s, 2),
                                 error=error)

        if not patch or not patch.strip():
            return done(False, None, "", "")
        name = "eval"
        sandbox_key = activity.info().workflow_id  # the instance's workflow: the worker's reaper knows it
        async with heartbeating():
            workspace = await asyncio.to_thread(self.repo(inp.key).materialize, name, inp.base_commit,
                                                owner=sandbox_user(self.settings),
                                                quota_mb=self.settings.sandbox_disk_mb)
            box = await self.sandboxes.get(sandbox_key, str(workspace))
            try:
                await box.write(".git/bosun-eval.patch", _text(patch))
                applied = await box.exec(["sh", "-c", APPLY], timeout_s=300, output_cap=100_000)
                log = f"$ apply the prediction\n{applied.stdout}{applied.stderr}\n"
                if applied.exit_code != 0:
                    return done(False, None, log, "")
                if instance.test_patch.strip():
                    await box.write(".git/bosun-eval.patch", _text(instance.test_patch))
                    tests = await box.exec(["sh", "-c", "git apply --verbose .git/bosun-eval.patch"],
                                           timeout_s=300, output_cap=100_000)
                    log += f"$ apply the test patch\n{tests.stdout}{tests.stderr}\n"
                    if tests.exit_code != 0:
                        return done(True, {}, log, "the test patch does not apply on top of the prediction")
                cmd = command(inp.runner, patched_files(instance.test_patch))
                t0 = time.monotonic()
                res = await box.exec(["sh", "-c", cmd], timeout_s=inp.timeout_s,
                                     output_cap=self.settings.tool_output_cap * 10)
                test_s = time.monotonic() - t0
                output = f"{res.stdout}\n{res.stderr}"
                log += f"$ {cmd}\n{output}"
                if res.timed_out:
                    log += f"\n[timed out after {inp.timeout_s:g} s]"
                return done(True, parse(inp.runner, output), log, "tests timed out" if res.timed_out else "",
                             test_s)
            finally:
                await self.sandboxes.release(sandbox_key)
                await asyncio.to_thread(self.repo(inp.key).drop_run, name)


def _text(patch: str) -> str:
    return patch if patch.endswith("\n") else patch + "\n"
