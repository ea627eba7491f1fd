"""The workspace activities: thin adapters from Temporal to the task's repository on this host
(sandbox/hostrepo.py) and to the test runs in sandboxes.

Every path is derived here from the workflow id and the host's settings; the workflow passes names and commits,
never host paths of its own choosing. Errors are raised as bosun's classes (activities/interceptor.py maps them).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import tempfile
from pathlib import Path

from temporalio import activity

from activities.agent import sandbox_user
from activities.heartbeat import Progress, heartbeating
from activities.models import (
    AgentWorkspaceInput,
    BindResult,
    BranchInput,
    Checkpoint,
    ChecksInput,
    ChecksResult,
    CleanupInput,
    CollectInput,
    CollectResult,
    DiffInput,
    EnvironmentInput,
    EnvironmentState,
    FinalizeInput,
    FinalizeResult,
    MergeInput,
    MergeResult,
    PrepareInput,
    PrepareResult,
    RestoreInput,
    RestoreResult,
)
from agents.tools.commands import PYTEST_ENV, read_report, test_invocation
from environments.buildrun import BuildFailed, read_tail
from environments.models import Detection, EnvRecord, env_id_for
from environments.repofiles import GitTree
from environments.service import Environments, ensure_timeout_s
from environments.store import key_of
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.settings import Settings
from sandbox.delivery import Delivered
from sandbox.hostrepo import TaskRepo
from sandbox.manager import SandboxManager
from sandbox.runimport import Imported
from sandbox.snapshot import SnapshotRefused

DIFF_INLINE_MAX = 32_000
"""A task's diff is returned whole up to this size (the whole diff is always in the artifact store)."""
LOG_ARTIFACT_BYTES = 1 << 20
"""The end of a build log put in the artifact store (build.log itself is capped by the builder)."""


class WorkspaceActivities:
    """Given: the settings (where workspaces live, the sandbox user and quota), the artifact store, this worker's
    sandboxes (for test runs and clean-up)."""

    def __init__(self, settings: Settings, store: ArtifactStore, sandboxes: SandboxManager) -> None:
        self.settings = settings
        self.store = store
        self.sandboxes = sandboxes

    def all(self) -> list:
        return [self.prepare_workspace, self.build_environment, self.run_checks, self.prepare_agent_workspace,
                self.collect_agent_work, self.merge_agent_work, self.start_branch, self.diff_since, self.finalize,
                self.cleanup_task, self.restore_task]

    def repo(self, workflow_id: str) -> TaskRepo:
        """The task's authoritative repository and run workspaces on this host."""
        return TaskRepo(self.settings.workspaces_dir, workflow_id)

    async def _materialize(self, workflow_id: str, name: str, commit: str) -> Path:
        return await asyncio.to_thread(self.repo(workflow_id).materialize, name, commit,
                                       owner=sandbox_user(self.settings), quota_mb=self.settings.sandbox_disk_mb)

    @activity.defn
    async def bind_worker(self) -> str:
        """Runs on the shared queue; answers with this host's own queue, where the task's activities go."""
        return self.settings.worker_queue

    @activity.defn
    async def bind_host(self) -> BindResult:
        """Runs on the shared queue: this host, for a task (its coordinator's steps go to the host's own queue),
        and whether it shares its state with other hosts."""
        return BindResult(queue=self.settings.worker_queue, worker_id=self.settings.worker_id,
                          shared=self.store.shared)

    async def _checkpoint(self, repo: TaskRepo, tips: list[str], parents: list[str]) -> Checkpoint | None:
        """What ``tips`` add to the task's repository as a bundle in the shared store (None on a host that does
        not share its state, or when nothing is new)."""
        if not self.store.shared:
            return None

        def work() -> Checkpoint | None:
            with tempfile.TemporaryDirectory(dir=self.settings.workspaces_dir, prefix=".ckpt-") as tmp:
                bundle = Path(tmp) / "checkpoint.bundle"
                if not repo.checkpoint(tips, parents, bundle):
                    return None
                return Checkpoint(ref=self.store.put_file(bundle), tips=list(tips))
        return await asyncio.to_thread(work)

    @activity.defn
    async def restore_task(self, inp: RestoreInput) -> RestoreResult:
        """Bring this host's copy of the task's repository up to date from its checkpoints (an agent placed here,
        or the task moved here from a lost host), the branch at the task's head, and the task's environment found
        or built here."""
        repo = self.repo(inp.workflow_id)
        meta = {"base": inp.base_commit, "source": inp.source, "ref": inp.ref}

        def fetcher(ref: str):
            return lambda dest: self.store.get_file(ref, dest)

        self.settings.workspaces_dir.mkdir(parents=True, exist_ok=True)
        async with heartbeating():
            applied = await asyncio.to_thread(repo.restore, meta, [(c.tips, fetcher(c.ref)) for c in inp.checkpoints],
                                              inp.branch, inp.head)
        env = inp.environment
        if env is not None and env.status == "ready":
            env = await asyncio.to_thread(self._find_environment, repo, inp.base_commit, inp.source, env.env_id)
            if env.status == "needed":
                env = await self.build_environment(EnvironmentInput(workflow_id=inp.workflow_id))
        return RestoreResult(applied=applied, environment=env)

    @activity.defn
    async def prepare_workspace(self, inp: PrepareInput) -> PrepareResult:
        """Clone the repository into the task's repository, resolve the ref, and find the base commit's
        environment: cached (ready), to be built (needed), or why there is none."""
        repo = self.repo(inp.workflow_id)
        base = await asyncio.to_thread(repo.prepare, inp.repo, inp.ref)
        env = await asyncio.to_thread(self._find_environment, repo, base, inp.repo, inp.env_id)
        return PrepareResult(repository=str(repo.git_dir), base_commit=base, environment=env,
                             checkpoint=await self._checkpoint(repo, [base], []))

    # -- the task's environment (environments/) -------------------------------------------------------

    def _environments(self, progress=lambda _m: None) -> Environments:
        return Environments(self.settings, progress=progress)

    def _detect(self, envs: Environments, repo: TaskRepo, base: str, source: str) -> Detection:
        return envs.detect(GitTree(repo.git_dir, base), source)

    def _ready(self, envs: Environments, repo: TaskRepo, record: EnvRecord, cached: bool,
               build_s: float = 0.0) -> EnvironmentState:
        repo.set_environment(record.env_id, envs.cache)
        return EnvironmentState(status="ready", env_id=record.env_id, python=record.python,
                                test_command=record.test_command, origin=record.spec.origin, cached=cached,
                                build_s=round(build_s or record.build_s, 2), log_ref=self._log_ref(envs.log_of(record)))

    def _log_ref(self, log: Path | None) -> str | None:
        """A build log's end (at most ``LOG_ARTIFACT_BYTES``) in the artifact store."""
        if log is None or not log.is_file():
            return None
        return self.store.put_text(read_tail(log, LOG_ARTIFACT_BYTES))

    def _find_environment(self, repo: TaskRepo, base: str, source: str,
                          env_id: str | None = None) -> EnvironmentState:
        if not self.settings.environments:
            repo.set_environment(None, None)
            return EnvironmentState(status="off", reason="BOSUN_ENVIRONMENTS=false: the plain sandbox image")
        envs = self._environments()
        if env_id:
            with contextlib.suppress(ConfigError, UnexpectedEnvironment):
                given = envs.cached(key_of(env_id), need_docker=self.sandboxes.provider().backend == "docker")
                if given is not None:
                    envs.store.touch(given.key)
                    return self._ready(envs, repo, given, cached=True)
        try:
            det = self._detect(envs, repo, base, source)
            key = envs.key(det)
        except ConfigError as exc:  # a declared environment that is not valid: nothing is built from it
            repo.set_environment(None, None)
            return EnvironmentState(status="failed", step="detect", reason=str(exc).splitlines()[0][:500])
        try:
            found = envs.find(det, need_docker=self.sandboxes.provider().backend == "docker")
        except UnexpectedEnvironment as exc:
            repo.set_environment(None, None)
            return EnvironmentState(status="unavailable", reason=str(exc).splitlines()[0][:500])
        if found is not None:
            return self._ready(envs, repo, found.record, cached=True)
        repo.set_environment(None, None)
        return EnvironmentState(status="needed", env_id=env_id_for(key), python=det.spec.python,
                                test_command=det.spec.test.text, origin=det.spec.origin,
                                build_timeout_s=ensure_timeout_s(self.settings))

    @activity.defn
    async def build_environment(self, inp: EnvironmentInput) -> EnvironmentState:
        """Build the environment of the task's base commit (or find it built meanwhile): the repository's setup
        runs in a build container with network (environments/builder.py); heartbeats carry the progress.
        The build log goes to the artifact store. A failing build is a result (``failed``, with the step and the
        log's tail), never retried; a host that cannot build gives ``unavailable``."""
        repo = self.repo(inp.workflow_id)
        meta = repo.prepared() or {}
        base, source = meta.get("base"), meta.get("source", "")
        if not base:
            raise UnexpectedEnvironment(f"task {inp.workflow_id}: its repository is not prepared on this host")
        progress = Progress()
        envs = self._environments(progress=progress)
        try:
            async with heartbeating(details=progress.details):
                try:
                    det = await asyncio.to_thread(self._detect, envs, repo, base, source)
                    key = envs.key(det)
                except ConfigError as exc:
                    return EnvironmentState(status="failed", step="detect", reason=str(exc).splitlines()[0][:500])
                try:
                    prepared = await asyncio.to_thread(envs.ensure, det, GitTree(repo.git_dir, base))
                except BuildFailed as exc:
                    return EnvironmentState(status="failed", env_id=env_id_for(key), python=det.spec.python,
                                            test_command=det.spec.test.text, origin=det.spec.origin, step=exc.step,
                                            reason=str(exc).splitlines()[0][:1000], tail=exc.tail[-4000:],
                                            log_ref=self._log_ref(exc.log))
                except ConfigError as exc:  # the build's own input was refused (a base's packages, the source)
                    return EnvironmentState(status="failed", env_id=env_id_for(key), python=det.spec.python,
                                            test_command=det.spec.test.text, origin=det.spec.origin, step="build",
                                            reason=str(exc).splitlines()[0][:500])
        except UnexpectedEnvironment as exc:
            repo.set_environment(None, None)
            return EnvironmentState(status="unavailable", reason=str(exc).splitlines()[0][:500])
        return await asyncio.to_thread(self._ready, envs, repo, prepared.record, prepared.cached, prepared.seconds)

    @activity.defn
    async def run_checks(self, inp: ChecksInput) -> ChecksResult:
        """The tests on a fresh checkout of ``inp.commit``, in a sandbox (the checkout is dropped afterwards)."""
        info = activity.info()
        key = f"checks:{info.workflow_id}:{info.activity_id}:{info.attempt}"
        name = f"checks-{info.activity_id}-{info.attempt}"  # (a retry's checkout is not the one still being dropped)
        repo = self.repo(inp.workflow_id)
        async with heartbeating():
            try:
                workspace = await self._materialize(inp.workflow_id, name, inp.commit)
                box = await self.sandboxes.get(key, str(workspace))
                cmd, is_pytest = test_invocation(box.environment, [])
                res = await box.exec(cmd, timeout_s=self.settings.tool_timeout_s,
                                     output_cap=self.settings.tool_output_cap, env=PYTEST_ENV)
            finally:  # the sandbox and the checkout go in the background, after the result
                self.sandboxes.release_later(key, then=lambda: repo.drop_run(name))
        output = res.stdout + ("\n" + res.stderr if res.stderr else "")
        report = read_report(box.environment, output, None if res.timed_out else res.exit_code)
        return ChecksResult(green=report.green, exit_code=report.exit_code, summary=report.headline(is_pytest),
                            failed=report.failed, passed_count=report.counts.get("passed", len(report.passed)),
                            output_ref=self.store.put_text(output))

    @activity.defn
    async def prepare_agent_workspace(self, inp: AgentWorkspaceInput) -> str:
        """A fresh workspace for one agent run: a checkout of ``inp.commit`` made by the host before any sandbox
        sees it, owned by the sandbox user, on its own size-capped file system where the host allows it."""
        return str(await self._materialize(inp.workflow_id, inp.name, inp.commit))

    @activity.defn
    async def collect_agent_work(self, inp: CollectInput) -> CollectResult:
        """Import what an agent left in its run workspace as a commit, reading the files as data (no git runs
        there; sandbox/snapshot.py). The files the task's environment put there that git does not ignore are left
        out (the record its sandboxes were made from lists them)."""
        repo = self.repo(inp.workflow_id)

        def work() -> Imported:
            env = TaskRepo.environment_for(repo.run_dir(inp.name))
            unignored = list(self.sandboxes.environment(*env).run.unignored) if env else []
            return repo.import_run(inp.name, inp.parent, inp.message, unignored=unignored)

        try:
            imported = await asyncio.to_thread(work)
        except SnapshotRefused as e:
            return CollectResult(commit=None, files=[], notes=[f"the work could not be imported: {e}"])
        checkpoint = await self._checkpoint(repo, [imported.commit], [inp.parent]) if imported.commit else None
        return CollectResult(commit=imported.commit, files=imported.files, notes=imported.notes[:50],
                             checkpoint=checkpoint)

    @activity.defn
    async def merge_agent_work(self, inp: MergeInput) -> MergeResult:
        """3-way merge of a run's commit into the task branch, inside the task repository (no work tree)."""
        repo = self.repo(inp.workflow_id)

        def work() -> tuple[MergeResult, str | None]:
            head = repo.head(inp.branch)
            if inp.fast_forward and head is not None and repo.is_ancestor(head, inp.commit):
                repo.set_branch(inp.branch, inp.commit, expect=head if head != inp.commit else None)
                return MergeResult(merged=True, head=inp.commit), head
            m = repo.merge(inp.branch, inp.commit, inp.message)
            return MergeResult(merged=m.merged, conflicts=m.conflicts, head=m.head), head

        merged, before = await asyncio.to_thread(work)
        if merged.merged and merged.head not in (inp.commit, before):  # a merge commit: new objects
            merged.checkpoint = await self._checkpoint(repo, [merged.head], [inp.commit, *([before] if before else [])])
        return merged

    @activity.defn
    async def start_branch(self, inp: BranchInput) -> str:
        """The task branch at ``inp.commit`` unless it exists; returns its head."""
        return await asyncio.to_thread(self.repo(inp.workflow_id).start_branch, inp.branch, inp.commit)

    @activity.defn
    async def diff_since(self, inp: DiffInput) -> str:
        """The changes from the base to ``inp.head`` as an artifact ref (for the debugger)."""
        diff, _ = await asyncio.to_thread(self.repo(inp.workflow_id).diff, inp.base_commit, inp.head)
        return self.store.put_text(diff or "(no changes yet)")

    @activity.defn
    async def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        """The task's result: the diff from the base to the branch head, and a checkout of the branch for people."""
        repo = self.repo(inp.workflow_id)

        def work() -> tuple[str, list[str], str | None, str]:
            at = repo.head(inp.branch)
            if inp.head is not None and at != inp.head:
                if not repo.has(inp.head) or (at is not None and not repo.is_ancestor(at, inp.head)):
                    raise UnexpectedEnvironment(
                        f"task {inp.workflow_id}: this host's branch {inp.branch} is at {at or 'nothing'}, not at the "
                        f"task's head {inp.head}, and cannot be moved there (the host lacks it or it is not ahead); "
                        "nothing was delivered")
                activity.logger.warning("task %s: branch %s was at %s here, behind the task's head %s: moved forward",
                                        inp.workflow_id, inp.branch, at, inp.head)
                repo.set_branch(inp.branch, inp.head, expect=at)
                at = inp.head
            head = at or inp.base_commit
            diff, files = repo.diff(inp.base_commit, head)
            view = repo.deliver_view(inp.branch)
            local = Delivered("", "")
            here = socket.gethostname()
            if inp.deliver_to and head != inp.base_commit and inp.deliver_host not in ("", here):
                local = Delivered("", f"{inp.deliver_to} is on {inp.deliver_host} and the task ended on {here}: the "
                                      f"branch stays in bosun's copy there ({repo.view})")
            elif inp.deliver_to and head != inp.base_commit:
                local = repo.deliver_to_source(inp.deliver_to, inp.branch, inp.base_commit, head)
            return diff, files, (head if head != inp.base_commit else None), str(view), local

        diff, files, commit, view, local = await asyncio.to_thread(work)
        shown = diff if len(diff) <= DIFF_INLINE_MAX else diff[:DIFF_INLINE_MAX] + "\n[... diff truncated ...]\n"
        return FinalizeResult(diff_ref=self.store.put_text(diff), files_changed=files, commit=commit, workspace=view,
                              diff=shown, local_branch=local.branch, local_note=local.note)

    @activity.defn
    async def cleanup_task(self, inp: CleanupInput) -> None:
        """At the end of a task, whatever its outcome: release every sandbox of its agents and test runs and remove
        its run workspaces (their work is in the task repository as commits)."""
        await self.sandboxes.release_prefix(f"{inp.workflow_id}/")
        await self.sandboxes.release_prefix(f"checks:{inp.workflow_id}:")
        await asyncio.to_thread(self.repo(inp.workflow_id).drop_runs)
        if inp.drop_repository:
            await asyncio.to_thread(self.repo(inp.workflow_id).remove)
