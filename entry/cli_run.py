"""`bosun run` and `bosun model`: the commands that take a model spec. Everything a run needs is checked before
anything starts (the repository and its ref, the model and its key where the model is called, the router and the
harness settings, a scripted trajectory), then the task starts. Apart from the other run commands (entry/cli_runs.py)
because they load the agents' and workflows' modules, which those do not need."""

from __future__ import annotations

import argparse
import contextlib
import getpass
import os
import secrets
import socket
import sys
import time

from agents.harness_settings import HarnessSettings, load_harness, parse_harness
from agents.providers import KEYS, VENDOR_URLS, ModelSpec, keyed, parse_spec
from agents.providers.scripted import load_trajectory
from agents.router import RouterConfig, load_config
from entry.health import worker_health
from environments.ecosystems import unsupported
from infra import spanfile, temporal_http
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError
from infra.settings import Settings
from infra.temporal_http import TASK_WORKFLOW
from sandbox.hostgit import check_revision, git
from sandbox.hostrepo import check_source_repo as check_repo
from workflows.models import TaskInput, TaskResult, branch_name

# (Temporal's SDK, OpenTelemetry's and the NATS store are imported where they are used: `bosun run` on the
# embedded stack starts its task through Temporal's HTTP API, and a second of imports is most of the command.)


def _validate_run(args: argparse.Namespace, s: Settings):
    """Everything a run needs, checked before anything starts: (repository, model spec, trajectory text, harness
    settings)."""
    if not args.task.strip():
        raise ConfigError("the task is empty; say what bosun should do, e.g. bosun run --repo . \"fix the test\"")
    repo = check_repo(args.repo)
    _check_ref(repo, args.ref)
    spec_text = args.model or s.default_model
    if not spec_text:
        raise ConfigError("no model: pass --model SPEC or set BOSUN_DEFAULT_MODEL")
    # Every agent reads it (fallback chains for any model): a bad one is refused here, before anything starts.
    router = load_config(s.router_config)
    harness = load_harness(args.harness, "--harness") if args.harness else HarnessSettings()
    if getattr(args, "context_window", None) is not None:
        harness = parse_harness({**harness.model_dump(exclude_none=True), "context_window": args.context_window},
                                "--context-window")
    if spec_text == "auto":
        spec: ModelSpec | str = "auto"
        whose = "--harness router" if harness.router is not None else \
            f"BOSUN_ROUTER_CONFIG={s.router_config}" if s.router_config else "the router's default tiers"
        _router_usable(harness.router or router, s, whose)
    else:
        spec = _usable_model(spec_text, s)
    trajectory = None
    if spec != "auto" and spec.kind == "scripted":
        trajectory, _ = load_trajectory(spec.model)
    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError("--max-turns must be at least 1")
    if args.max_parallel < 1:
        raise ConfigError("--max-parallel must be at least 1")
    if (args.budget_usd is not None and args.budget_usd <= 0) or (args.budget_tokens is not None
                                                                  and args.budget_tokens <= 0):
        raise ConfigError("--budget-usd and --budget-tokens must be positive")
    return repo, spec, trajectory, harness


def _check_ref(repo, ref: str) -> None:
    """``--ref`` names a commit of the repository (a branch, tag, commit id or HEAD); ConfigError saying what it
    takes otherwise: found here, not after the start."""
    check_revision(ref, "--ref")
    found = git(None, "-C", str(repo), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}",
                check=False)
    if found.returncode != 0:
        raise ConfigError(f"--ref {ref}: not a branch, tag or commit of {repo} (`git -C {repo} branch -a` and "
                          "`git tag` list what is there)")


def _worker_keys(s: Settings) -> list[str] | None:
    """The providers the embedded stack's worker has a key for (its health record says), or None when it cannot
    tell: no worker runs here, one from before it told, or the workers are elsewhere (BOSUN_TEMPORAL_ADDRESS: a
    task's model calls run on whichever host takes them)."""
    if s.temporal_address:
        return None
    health = worker_health(s)
    keys = health.get("model_keys") if health else None
    return list(keys) if isinstance(keys, list) else None


def _usable_model(text: str, s: Settings, why: str = "") -> ModelSpec:
    """The spec, if it parses and its provider has what it needs (an API key) where the model is called: in the
    worker. The worker of this machine says which keys it has; without one here, this shell's environment stands
    in for it. ConfigError saying what is missing and how to give it. (No key is read into the run's input.)"""
    spec = parse_spec(text)
    if spec.kind not in KEYS or getattr(s, f"{spec.kind}_base_url", None) not in VENDOR_URLS:
        return spec  # (a gateway of the settings' own may need no key)
    names = " or ".join(KEYS[spec.kind])
    mine = spec.kind in keyed(s)
    worker = _worker_keys(s)
    what = f"model {spec}{why}"
    if worker is not None:
        if spec.kind in worker:
            return spec
        if mine:
            raise ConfigError(f"{what}: the running worker has no {spec.kind} API key. This shell has it, but the "
                              "worker reads keys from the environment `bosun up` started in, so restart the stack "
                              "from this shell: `bosun down && bosun up`")
        raise ConfigError(f"{what}: no API key; set {names} and restart the stack (`bosun down && bosun up`): the "
                          "worker reads keys when it starts")
    if not mine:
        raise ConfigError(f"{what}: no API key; set {names} in the environment the worker starts in (`bosun up`)")
    return spec


def _router_usable(router: RouterConfig, s: Settings, whose: str) -> None:
    """``--model auto``: every model the router may pick for an agent is usable (its key present): a run that
    could route to a model without its key would fail only when it did."""
    for spec in router.choices():
        _usable_model(spec, s, f" (one that --model auto may pick: {whose})")


def _failure_chain(e: BaseException) -> str:
    """The innermost causes of a workflow failure, e.g. 'child workflow failed <- ScriptDiverged: ...'."""
    parts: list[str] = []
    cur: BaseException | None = e.cause if hasattr(e, "cause") else e
    while cur is not None:
        msg = str(cur) or type(cur).__name__
        if not parts or parts[-1] != msg:
            parts.append(msg)
        cur = getattr(cur, "cause", None) or cur.__cause__
    return " <- ".join(parts[-2:]) if parts else str(e)


def _undetected(repo, ref: str) -> str:
    """What detection would not see in the repository at ``ref`` (a repository of another language), or ''."""
    listed = git(None, "-C", str(repo), "ls-tree", "-r", "-z", "--name-only", "--end-of-options", ref, check=False,
                 timeout_s=60)
    if listed.returncode != 0:
        return ""
    return unsupported([os.fsdecode(p) for p in listed.stdout.split(b"\0") if p])


async def run(args: argparse.Namespace, s: Settings) -> int:
    repo, spec, trajectory, harness = _validate_run(args, s)
    if warning := _undetected(repo, args.ref):
        print(f"bosun: warning: {repo} at {args.ref}: {warning}", file=sys.stderr)
    trajectory_ref = _store(s).put_text(trajectory) if trajectory is not None else None
    wf_id = args.id or f"task-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    local = not getattr(args, "no_branch", False)
    inp = TaskInput(repo=str(repo), task=args.task, model=str(spec), trajectory_ref=trajectory_ref, ref=args.ref,
                    max_turns=args.max_turns or s.max_turns, mode=args.mode, max_parallel=args.max_parallel,
                    budget={k: v for k, v in (("usd", args.budget_usd), ("tokens", args.budget_tokens))
                            if v is not None}, harness=harness, local_branch=local, local_host=socket.gethostname())
    memo = {"trigger": "cli", "repo": str(repo)}
    if not _start_over_http(s, wf_id, inp, memo, args.task[:200]):
        await _start_with_sdk(s, wf_id, inp, memo, args.task[:200])
    label = " (scripted: the test double, no language model)" if spec != "auto" and spec.is_test_double else ""
    print(f"started {wf_id} with model {spec}{label}", file=sys.stderr)
    if not s.temporal_address:
        print(f"  web UI: http://{s.host}:{s.temporal_ui_port}/namespaces/{s.temporal_namespace}/workflows/{wf_id}",
              file=sys.stderr)
    if local:
        print(f"  the result: the branch {branch_name(wf_id)} in {repo} when the task ends (`bosun history {wf_id}`)",
              file=sys.stderr)
    if not args.wait:
        print(wf_id)
        return 0
    from temporalio.client import WorkflowFailureError

    from infra.temporal import connect  # lazy: Temporal's SDK, after the start (bosun run --wait)
    client = await connect(s)
    try:
        result: TaskResult = await client.get_workflow_handle(wf_id, result_type=TaskResult).result()
    except WorkflowFailureError as e:
        print(f"bosun: run {wf_id} failed: {_failure_chain(e)}", file=sys.stderr)
        print(f"  see every step with: bosun history {wf_id}", file=sys.stderr)
        return 1
    if args.json:
        print(result.model_dump_json(indent=2))
    else:
        print(result.diff or "(no changes)")
        print(f"tests before: {result.tests_before.summary}")
        print(f"tests after:  {result.tests_after.summary}")
        if result.plan:
            print(f"plan ({result.plan.source}): " + "; ".join(f"{s.id}: {s.goal[:60]}" for s in result.plan.subtasks))
        for sub in result.subtasks:
            print(f"  subtask {sub.id}: {sub.status} after {sub.attempts} attempt(s) {sub.note}".rstrip())
        if result.budget_note:
            print(f"  {result.budget_note}")
        for n, dbg in enumerate(result.debug_rounds, 1):
            print(f"  debugger round {n}: {dbg.status} after {dbg.turns} turns")
        turns = sum(a.turns for a in result.all_agents())
        print(f"status: {result.status}; {turns} agent turns; branch {result.branch} "
              f"({(result.commit or 'no commit')[:12]}) in {result.workspace}")
        from entry.cli_runs import result_lines  # lazy: loads Temporal's SDK
        for line in result_lines(result, str(repo)):
            print(line)
    return 0 if result.status == "succeeded" else 1


def _store(s: Settings) -> ArtifactStore:
    if s.artifact_store == "files":
        return ArtifactStore(s.artifacts_dir)
    from infra.objectstore import open_store  # lazy: the NATS client, for the shared store only
    return open_store(s)


def _start_over_http(s: Settings, wf_id: str, inp: TaskInput, memo: dict, summary: str) -> bool:
    """Start the task through the embedded Temporal's HTTP API, the start's span written to the offline span store
    by hand (the trace begins here, as with the SDK); False when that way is not open (a cluster's Temporal, spans
    wanted elsewhere too: OTLP or the shared store; or nothing answers there): then the SDK starts it."""
    if not temporal_http.usable(s) or spanfile.otlp_wanted("traces") or s.artifact_store == "nats":
        return False
    traced = spanfile.enabled(s)
    trace_id, span_id, began = secrets.token_hex(16), secrets.token_hex(8), time.time_ns()
    try:
        temporal_http.start_workflow(s, TASK_WORKFLOW, wf_id, task_queue=s.task_queue, arg=inp.model_dump(mode="json"),
                                     memo=memo, summary=summary,
                                     trace={"traceparent": f"00-{trace_id}-{span_id}-01"} if traced else None)
    except temporal_http.Unreachable:
        return False
    if traced:
        record = {"trace_id": trace_id, "span_id": span_id, "parent_id": None, "name": f"StartWorkflow:{TASK_WORKFLOW}",
                  "start": began, "end": time.time_ns(), "status": "UNSET", "error": None,
                  "attributes": {"temporalWorkflowID": wf_id}, "service": "cli"}
        with contextlib.suppress(OSError):
            spanfile.append(spanfile.span_file(s, "cli"), [record])
    return True


async def _start_with_sdk(s: Settings, wf_id: str, inp: TaskInput, memo: dict, summary: str) -> None:
    from temporalio.exceptions import WorkflowAlreadyStartedError

    from infra import telemetry  # lazy: OpenTelemetry's SDK, on this path only
    from infra.temporal import connect  # lazy: Temporal's SDK, on this path only
    tel = telemetry.setup(s, "cli")  # the trace of the task starts here (StartWorkflow:TaskWorkflow)
    client = await connect(s, tracing=tel.on)
    try:
        await client.start_workflow(TASK_WORKFLOW, inp, id=wf_id, task_queue=s.task_queue, static_summary=summary,
                                    memo=memo)
    except WorkflowAlreadyStartedError:
        raise ConfigError(f"a run with the id {wf_id} is running: pick another --id (`bosun history {wf_id}` "
                          "shows it)") from None
    finally:
        tel.flush()


async def model(args: argparse.Namespace, s: Settings) -> int:
    """Switch a running task's agents (or one agent: TASK/NAME) to another model from their next turn on."""
    spec = _usable_model(args.spec, s)
    if spec.kind == "scripted":
        raise ConfigError("cannot switch to a scripted: model: a run replays the trajectory it started with")
    from entry.cli_runs import handle_of  # lazy: loads Temporal's SDK, which bosun run's start does not
    handle, desc, running = await handle_of(s, args.id)
    if not running:
        raise ConfigError(f"run {args.id} is not running ({desc.status.name.lower()}); nothing to switch")
    who = args.by or getpass.getuser()
    await handle.signal("switch_model", args=[str(spec), who, args.reason])
    scope = "its running agents and every agent it starts" if desc.workflow_type == "TaskWorkflow" else "the agent"
    print(f"{args.id} ({desc.workflow_type}): {scope} switch to {spec} at the next turn (by {who}); "
          f"`bosun history {args.id}` records it")
    return 0
