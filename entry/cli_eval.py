"""``bosun eval``: evaluate the edit engine (``edits``), predictions on SWE-bench-format instances (``swebench``), or
bosun's own agents on them with A/B variants (``run``); the sources they keep (``sources``).

    bosun eval swebench --instances INSTANCES.jsonl --predictions PREDS.jsonl|gold|empty --repo owner/name=PATH_OR_URL
        [--repo ...] [--max-parallel N] [--report REPORT.json] [--logs DIR] [--ids ID,...] [--run-id NAME]
        [--timeout S] [--network]
    bosun eval run --instances FILE --model SPEC [--mode solo|team] [--variant NAME=SETTINGS.json ...]
        --repo owner/name=PATH_OR_URL ... [--max-parallel N] [--ids ...] [--run-id NAME] --out DIR
    bosun eval sources [--prune [--older-than-days D] [--max-gb G] [--dry-run]] [--json]

Both run as an EvalWorkflow on the stack (``bosun up``): one child per instance (and variant), resumable — run the
same command with the same ``--run-id`` to follow a run that is already going, or to have the result of one that
finished reported without judging anything again, while Temporal keeps it (a day on the embedded stack; a new
``--run-id`` judges again, e.g. to retry errors); the same ``--run-id`` with other instances, predictions, variants
or ``--timeout`` is refused. Progress goes to stderr; the
summary (JSON) to stdout. Exit 0 when every instance got a verdict (resolved or not; a prediction that does not
apply is in error_ids, as the harness counts it, but it is a verdict), 1 when some could not be judged (the
repository, the environment or a timeout: ``errors`` in the report says which and why), 2 on bad input.

``sources`` lists the commits this worker host keeps per source (``<workspaces>/.sources``: every evaluation's
instances share them, with up to three checkout templates per source) and, with ``--prune``, removes those not
used for ``--older-than-days`` (default 14) and the least recently used beyond ``--max-gb``; never one used within
the last hour, and not while an evaluation is running (the stack must be up to tell). An evaluation that needs a
removed source later fetches its commits again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from agents.providers import parse_spec
from agents.providers.scripted import load_trajectory
from bench.editcases.eval import eval_main as edits_main
from entry.cli_eval_args import parser
from evaluation.compare import compare, paired_mean
from evaluation.recipes import RECIPES
from evaluation.swebench import (
    Instance,
    Prediction,
    instance_report,
    load_instances,
    load_predictions,
    merge_reports,
    pick,
    summary,
)
from evaluation.workflow import EvalInput, EvalItem, EvalResult, EvalWorkflow, InstanceOutcome, Variant
from infra.artifacts import ArtifactStore
from infra.cliargs import UsageError, check_non_negative, read_json_file
from infra.errors import BosunError, ConfigError
from infra.export import export as export_run
from infra.history import collect_run
from infra.objectstore import open_store
from infra.settings import Settings, load_settings
from infra.temporal import connect
from sandbox.sources import SOURCES, prune_sources, stored_sources
from workflows.models import checked_task


def _repos(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, where = pair.partition("=")
        if not sep or "/" not in name or not where:
            raise ConfigError(f"--repo {pair!r}: expected OWNER/NAME=PATH_OR_URL, e.g. psf/requests=/srv/requests")
        if not where.startswith(("http://", "https://", "ssh://", "git@")):
            path = Path(where).expanduser()
            if not path.is_dir():
                raise ConfigError(f"--repo {pair!r}: {where} is not a directory (or a clone URL)")
            where = str(path.resolve())
        out[name] = where
    return out


def _sources(instances: list[Instance], repos: dict[str, str]) -> None:
    missing = sorted({i.repo for i in instances if i.repo not in repos})
    if missing:
        raise ConfigError(f"no --repo for {', '.join(missing)}: pass --repo OWNER/NAME=PATH_OR_URL for each")


VARIANT_FIELDS = ("model", "mode", "max_turns", "max_parallel", "max_debug_rounds", "budget", "harness")
"""The task fields a variant may set (the evaluation sets each instance's repository, commit, task and
environment); ``harness``: agents/harness_settings.py."""


def _variant(spec: str, model: str, mode: str, store: ArtifactStore) -> Variant:
    """The variant ``NAME=SETTINGS.json`` names, its fields checked as the task will take them: ConfigError naming
    the variant, the file and what is wrong."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise ConfigError(f"--variant {spec!r}: expected NAME=SETTINGS.json")
    fields = read_json_file(path, f"--variant {name}: {path}")
    if not isinstance(fields, dict):
        raise ConfigError(f"--variant {name}: {path} must hold a JSON object of task fields")
    task = {"model": model, "mode": mode, **fields}
    checked = checked_task(task, f"--variant {name}: {path}", allowed=VARIANT_FIELDS,
                           base={"repo": "-", "task": "-"})
    if "harness" in fields:
        task["harness"] = checked.harness.model_dump(mode="json", exclude_none=True)
    try:
        return _with_model(Variant(name=name, task=task), store)
    except ConfigError as e:
        raise ConfigError(f"--variant {name}: {path}: {e}") from None


def _with_model(v: Variant, store: ArtifactStore) -> Variant:
    spec = parse_spec(str(v.task.get("model", "")))
    if spec.kind == "scripted":  # replayed from the artifact store, as bosun run does
        text, _ = load_trajectory(spec.model)
        v.task["trajectory_ref"] = store.put_text(text)
    return v


INPUT_LIMIT = 1_900_000
"""Bytes of the evaluation's input the CLI starts (Temporal refuses a payload over 2 MiB)."""


def check_input_size(inp: EvalInput) -> None:
    """ConfigError when the evaluation's input would not fit in one Temporal payload (agent mode carries the
    problem statements: a couple of thousand instances pass the limit)."""
    [payload] = pydantic_data_converter.payload_converter.to_payloads([inp])
    if len(payload.data) > INPUT_LIMIT:
        held = " with their problem statements" if inp.variants else ""
        raise ConfigError(f"the evaluation's input is {len(payload.data) / 1e6:.1f} MB ({len(inp.items)} instances"
                          f"{held}), more than Temporal takes in one payload (2 MB); split the instances into "
                          "several evaluations with --ids (and a --run-id each)")


async def _run(s: Settings, store: ArtifactStore, inp: EvalInput) -> EvalResult:
    """Start the evaluation, or follow the one ``--run-id`` names: still running, or finished (its result is
    reported, nothing judged again; one that failed, was cancelled or terminated starts afresh). Refused when that
    one judges other instances, predictions, variants or time limit than these, or when its input is too large."""
    check_input_size(inp)
    client = await connect(s)
    wf_id, finished = f"eval-{inp.run_id}", False
    try:
        handle = await client.start_workflow(EvalWorkflow.run, inp, id=wf_id, task_queue=s.task_queue,
                                             id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                                             id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                                             static_summary=f"evaluation {inp.run_id}: {len(inp.items)} instances")
    except WorkflowAlreadyStartedError as e:
        handle, finished = client.get_workflow_handle(wf_id, run_id=e.run_id), True  # (that run, not a later one)
    await _same_evaluation(client, handle, inp)
    if finished:
        print(f"evaluation {wf_id} finished already: its result follows, nothing is judged again (pass a new "
              "--run-id to judge again, e.g. to retry its errors)", file=sys.stderr)
    print(f"evaluation {wf_id}: {len(inp.items)} instances, at most {inp.max_parallel} at once "
          f"(bosun history {wf_id})", file=sys.stderr)
    waiting = asyncio.ensure_future(handle.result())  # (followed through its runs: it continues as new)
    latest = client.get_workflow_handle(wf_id)  # (the run now running, for the progress)
    last = None
    while not waiting.done():
        await asyncio.wait([waiting], timeout=5)
        if waiting.done():
            break
        try:
            p = await latest.query("progress")
        except Exception:  # noqa: BLE001 - not started yet
            continue
        line = f"{p['done']}/{p['total']} done, {p['resolved']} resolved, {p['errors']} errors" + \
            (f", about {p['eta_s'] / 60:.0f} min left" if p.get("eta_s") else "")
        if line != last:
            print(line, file=sys.stderr)
            last = line
    result = EvalResult.model_validate(waiting.result())
    result.outcomes += _kept(store, wf_id, result.kept) + \
        await _outcomes(client, handle, result.children)
    have = {(o.instance_id, o.variant) for o in result.outcomes}
    result.outcomes += [InstanceOutcome(instance_id=i.instance_id, variant=v, error_kind="failed",
                                        error="the evaluation recorded no outcome for it")
                        for i in inp.items for v in [v.name for v in inp.variants] or [""]
                        if (i.instance_id, v) not in have]
    print(f"{len(result.outcomes)}/{len(result.outcomes)} done, {sum(o.resolved for o in result.outcomes)} resolved,"
          f" {sum(1 for o in result.outcomes if o.error)} errors", file=sys.stderr)
    return result


def _judged(inp: EvalInput) -> dict[str, Any]:
    """What decides an evaluation's verdicts: per instance its row and prediction (by content), the variants, the
    tests' time limit, the network. (Items an earlier CLI sent for an empty or missing prediction are left out:
    they were not judged.)"""
    return {"instances": {i.instance_id: (i.instance_ref, i.prediction_ref) for i in inp.items
                          if not i.empty_prediction},
            "variants": [v.model_dump() for v in inp.variants], "timeout": inp.timeout_s, "network": inp.network}


def _difference(mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    """The first way the earlier evaluation ``theirs`` differs from this command's ``mine``, in words."""
    for iid in sorted(set(mine["instances"]) | set(theirs["instances"])):
        if iid not in theirs["instances"]:
            return f"it does not judge {iid}"
        if iid not in mine["instances"]:
            return f"it also judges {iid}"
        if mine["instances"][iid][0] != theirs["instances"][iid][0]:
            return f"its row of {iid} differs"
        if mine["instances"][iid][1] != theirs["instances"][iid][1]:
            return f"its prediction for {iid} differs"
    if mine["variants"] != theirs["variants"]:
        return f"its variants differ ({', '.join(v['name'] for v in theirs['variants']) or 'none'})"
    if mine["network"] != theirs["network"]:
        return "it judges with network" if theirs["network"] else "it judges without network"
    return f"its --timeout is {theirs['timeout']:g}"


async def _same_evaluation(client: Client, handle: WorkflowHandle, inp: EvalInput) -> None:
    """ConfigError when the evaluation ``handle`` names (started by an earlier command with the same --run-id)
    judges other instances, predictions or variants, or with another --timeout, than ``inp``."""
    async for ev in handle.fetch_history_events(page_size=1):
        started = ev.workflow_execution_started_event_attributes
        if started.workflow_type.name != "EvalWorkflow":
            raise ConfigError(f"--run-id {inp.run_id}: {handle.id} is not an evaluation; pass another --run-id")
        [earlier] = await client.data_converter.decode(list(started.input.payloads), [EvalInput])
        break
    else:
        return
    mine, theirs = _judged(inp), _judged(earlier)
    if mine != theirs:
        raise ConfigError(f"--run-id {inp.run_id}: evaluation {handle.id}, started before with other arguments, is "
                          f"not this one ({_difference(mine, theirs)}); pass a new --run-id, or the same arguments "
                          "to follow it")


def _kept(store: ArtifactStore, wf_id: str, refs: list[str]) -> list[InstanceOutcome]:
    """The outcomes an evaluation stored in the artifact store (``EvalResult.kept``)."""
    out = []
    for ref in refs:
        try:
            out += [InstanceOutcome.model_validate(o) for o in store.get_json(ref)["outcomes"]]
        except (BosunError, OSError, ValueError, KeyError, TypeError) as e:
            raise ConfigError(f"evaluation {wf_id}: its outcomes {ref} cannot be read from the artifact store "
                              f"{store.root} ({e}); run bosun with the data dir its workers share, or pass a new "
                              "--run-id to judge again") from None
    return out


async def _outcomes(client: Client, handle: WorkflowHandle, children: list[str]) -> list[InstanceOutcome]:
    """Evaluations started before ``eval-continue-as-new``: the outcomes of the evaluation's instance workflows,
    read from the evaluation's own history (each child's completion event holds its result): that history lasts
    as long as the evaluation's, where a child's own may be gone (the embedded server keeps a closed workflow for
    a day). A child whose outcome is not there is left to ``_run``'s check for instances without one."""
    if not children:
        return []
    wanted, found = set(children), {}
    async for ev in handle.fetch_history_events():
        done = ev.child_workflow_execution_completed_event_attributes
        child = done.workflow_execution.workflow_id
        if ev.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED and child in wanted:
            [found[child]] = await client.data_converter.decode(list(done.result.payloads), [InstanceOutcome])
    return [found[child] for child in children if child in found]  # (one missing: _run reports it failed)


def _items(instances: list[Instance], repos: dict[str, str], store: ArtifactStore,
           predictions: dict[str, Prediction] | None) -> list[EvalItem]:
    """One item per instance: with its prediction (judging given predictions: each has one, not empty), or without
    it but with the problem statement (agent mode: the agents make it). Judging, the problem statement stays in the
    instance's row (``instance_ref``): the workflow's input holds every item, and SWE-bench's statements average
    a kilobyte or two, which for the 2,294 instances of the full test set would pass Temporal's 2 MB payload
    limit."""
    return [EvalItem(instance_id=inst.instance_id, repo=inst.repo, base_commit=inst.base_commit,
                     version=inst.version, environment_setup_commit=inst.environment_setup_commit,
                     created_at=inst.created_at, source=repos[inst.repo],
                     instance_ref=store.put_json(inst.model_dump()),
                     prediction_ref=store.put_json(predictions[inst.instance_id].model_dump())
                     if predictions is not None else None,
                     task=inst.problem_statement if predictions is None else "")
            for inst in instances]


def _report(store: ArtifactStore, result: EvalResult, variant: str = "", *, empty: dict[str, Any] | None = None,
            incomplete: list[str] | None = None, submitted: list[str] | None = None) -> dict[str, Any]:
    """The report of ``variant``'s outcomes, with the reports of the ``empty`` predictions (not judged) and the
    instances without a prediction (``incomplete``) in the summary."""
    outcomes = [o for o in result.outcomes if o.variant == variant]
    reports = {**(empty or {}), **merge_reports(store, [o.report_ref for o in outcomes if o.report_ref])}
    errors = {o.instance_id: o.error for o in outcomes if o.error}
    # (an evaluation started before the CLI left instances without a prediction out judged them: not incomplete)
    incomplete = [i for i in incomplete or [] if i not in reports and i not in errors]
    return {"summary": summary(reports, errors, incomplete=incomplete, submitted=submitted), "instances": reports,
            "errors": {o.instance_id: {"kind": o.error_kind, "reason": o.error} for o in outcomes if o.error},
            "timing": {o.instance_id: {"seconds": o.seconds, "tests_s": o.test_seconds, "environment": o.env_id,
                                       "build_s": o.build_s, "phases": o.phases, "waited_s": o.waited_s,
                                       "started_ahead": o.started_ahead, "set_up_ahead": o.set_up_ahead,
                                       "slot_s": o.slot_s, "fetch_share_s": o.fetch_share_s}
                       | ({"host": o.host, "moves": [m.model_dump() for m in o.moves]} if o.host else {})
                       for o in outcomes},
            "fetch_ahead_s": result.fetch_ahead_s}


def write_logs(folder: Path, store: ArtifactStore, outcomes: list[InstanceOutcome],
               reports: dict[str, Any]) -> None:
    """Per instance, as the harness lays its logs out: ``report.json`` (``{id: report}``), ``test_output.txt``
    (what ran and what it printed) and ``patch.diff`` (the prediction judged)."""
    for o in outcomes:
        where = folder / o.instance_id  # a checked instance id: letters, digits, '_', '.', '-'
        where.mkdir(parents=True, exist_ok=True)
        if o.instance_id in reports:
            (where / "report.json").write_text(json.dumps({o.instance_id: reports[o.instance_id]}, indent=2))
        if o.log_ref:
            (where / "test_output.txt").write_text(store.get_text(o.log_ref))
        elif o.error:
            (where / "test_output.txt").write_text(f"{o.error}\n")
        if o.prediction_ref:
            (where / "patch.diff").write_text(store.get_json(o.prediction_ref).get("model_patch") or "")


def _output_file(path: Path | None, flag: str) -> None:
    """Refuse a result file that cannot be written, before the evaluation runs rather than after it."""
    if path is None:
        return
    if path.is_dir():
        raise ConfigError(f"{flag} {path}: is a folder; pass a file path")
    if not path.parent.is_dir():
        raise ConfigError(f"{flag} {path}: there is no folder {path.parent}; create it first")


def _output_folder(path: Path | None, flag: str) -> None:
    """Make the folder results go to now: one that cannot be made is refused before the evaluation runs."""
    if path is None:
        return
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{flag} {path}: cannot be made a folder ({e.strerror or e}); pass a folder path") from None


def _exit_code(report: dict[str, Any]) -> int:
    """0 when every instance got a verdict (a prediction that does not apply is one: it is the prediction's
    doing), 1 when some could not be judged (repository, environment, timeout)."""
    return 1 if any(e["kind"] != "apply" for e in report["errors"].values()) else 0


async def swebench(args: argparse.Namespace, s: Settings) -> int:
    everything = load_instances(args.instances)
    instances = pick(everything, [i for i in args.ids.split(",") if i], args.instances)
    predictions = load_predictions(args.predictions, instances, known={i.instance_id for i in everything})
    # as the harness: an instance without a prediction is not run (incomplete), nor one whose prediction is empty
    given = [i for i in instances if i.instance_id in predictions]
    if not given:
        raise ConfigError(f"--predictions {args.predictions}: none of its predictions ({len(predictions)}) is for the "
                          f"instances selected ({len(instances)}); check --ids")
    if len(given) < len(instances):
        print(f"{len(instances) - len(given)} of the {len(instances)} instances selected have no prediction: not run "
              "(incomplete_ids)", file=sys.stderr)
    if args.network and s.sandbox_backend == "bwrap":
        raise ConfigError("--network needs docker sandboxes, and BOSUN_SANDBOX_BACKEND is bwrap (a bwrap sandbox with "
                          "network would share the host's network namespace); set it to docker")
    judged = [i for i in given if predictions[i.instance_id].model_patch]
    versionless = sum(1 for i in judged if not i.version and i.repo in RECIPES)
    if versionless:
        print(f"{versionless} of the instances have no version: each is derived from its repository as the "
              "harness's versioning did, and its report says which (version_derived)", file=sys.stderr)
    repos = _repos(args.repo)
    _sources(judged, repos)
    _output_file(args.report, "--report")
    _output_folder(args.logs, "--logs")
    store = open_store(s)
    run_id = args.run_id or time.strftime("%Y%m%d-%H%M%S")
    inp = EvalInput(run_id=run_id, items=_items(judged, repos, store, predictions),
                    max_parallel=max(1, args.max_parallel), timeout_s=args.timeout,
                    jobs_per_run=s.eval_jobs_per_run, network=args.network)
    started = time.monotonic()
    if judged:
        result = await _run(s, store, inp)
    else:
        print("nothing to judge: every prediction selected is empty", file=sys.stderr)
        result = EvalResult(run_id=run_id, outcomes=[])
    empty = {i.instance_id: instance_report(i, predictions[i.instance_id], applied=False, statuses=None)
             for i in given if not predictions[i.instance_id].model_patch}
    report = _report(store, result, empty=empty, submitted=list(predictions),
                     incomplete=[i.instance_id for i in instances if i.instance_id not in predictions])
    report["summary"]["wall_s"] = round(time.monotonic() - started, 1)
    report["summary"]["network"] = args.network
    if args.network:  # (a worker of a bosun before --network ignores it: its instances say nothing of it)
        without = sorted(i for i, r in report["instances"].items() if r.get("patch_exists") and not r.get("network"))
        if without:
            print(f"warning: {len(without)} instance(s) were judged WITHOUT network by workers that do not know "
                  f"--network (an older bosun): {', '.join(without[:20])}", file=sys.stderr)
    if args.report:
        args.report.write_text(json.dumps(report, indent=2))
    if args.logs:
        write_logs(args.logs, store, result.outcomes, report["instances"])
    print(json.dumps(report["summary"], indent=2))
    return _exit_code(report)


COSTS = ("cost_usd", "tokens", "turns", "tool_calls", "wall_s")
"""What each variant's agents spent per instance, totalled per variant and compared per pair of variants."""


def error_rates(spent: dict[str, Any]) -> dict[str, float]:
    """Tool errors by class over the tool calls made (an agents' run's ``tool_errors`` and ``tool_calls``)."""
    calls = spent.get("tool_calls") or 1
    return {kind: round(n / calls, 4) for kind, n in sorted(spent.get("tool_errors", {}).items())}


async def run_agents(args: argparse.Namespace, s: Settings) -> int:
    instances = load_instances(args.instances, [i for i in args.ids.split(",") if i])
    repos = _repos(args.repo)
    _sources(instances, repos)
    store = open_store(s)
    parse_spec(args.model)
    variants = [_variant(v, args.model, args.mode, store) for v in args.variant] or \
        [_with_model(Variant(name="default", task={"model": args.model, "mode": args.mode}), store)]
    if len({v.name for v in variants}) != len(variants):
        raise ConfigError("--variant names must differ")
    _output_folder(args.out, "--out")
    run_id = args.run_id or time.strftime("%Y%m%d-%H%M%S")
    inp = EvalInput(run_id=run_id, items=_items(instances, repos, store, None), variants=variants,
                    max_parallel=max(1, args.max_parallel), timeout_s=args.timeout,
                    jobs_per_run=s.eval_jobs_per_run)
    result = await _run(s, store, inp)
    client = await connect(s)
    out: dict[str, Any] = {"run_id": run_id, "variants": {}}
    for v in variants:
        report = _report(store, result, v.name)
        mine = [o for o in result.outcomes if o.variant == v.name]
        tasks = [o.task for o in mine if o.task]
        report["settings"] = {k: val for k, val in v.task.items() if k != "trajectory_ref"}
        report["agents"] = {o.instance_id: o.task | {"tool_error_rate": error_rates(o.task)} if o.task else o.task
                            for o in mine}
        report["totals"] = {k: round(sum(t.get(k, 0) for t in tasks), 6) for k in COSTS}
        errs: dict[str, int] = {}
        for t in tasks:
            for kind, n in t.get("tool_errors", {}).items():
                errs[kind] = errs.get(kind, 0) + n
        report["totals"]["tool_error_rate"] = error_rates({"tool_errors": errs,
                                                           "tool_calls": report["totals"]["tool_calls"]})
        out["variants"][v.name] = report
        with open(args.out / f"predictions-{v.name}.jsonl", "w", encoding="utf-8") as f:
            for o in mine:
                if o.prediction_ref:
                    f.write(json.dumps(store.get_json(o.prediction_ref)) + "\n")
        traj = args.out / "trajectories" / v.name
        traj.mkdir(parents=True, exist_ok=True)
        for o in mine:
            if o.task_workflow_id:
                try:
                    doc = export_run(await collect_run(client, o.task_workflow_id), store)
                except ConfigError as e:  # (its history is gone: Temporal keeps a closed run for a day)
                    print(f"no trajectory for {o.instance_id} ({v.name}): {e}", file=sys.stderr)
                    continue
                (traj / f"{o.instance_id}.json").write_text(json.dumps(doc, default=str))
    names = [v.name for v in variants]
    flags = {n: {i: bool(r.get("resolved")) for i, r in out["variants"][n]["instances"].items()} for n in names}
    costs = {n: {k: {i: float(t[k]) for i, t in out["variants"][n]["agents"].items() if t and k in t}
                 for k in COSTS} for n in names}
    out["comparisons"] = [{"a": a, "b": b, **compare(flags[a], flags[b]),
                           "costs": {k: paired_mean(costs[a][k], costs[b][k]) for k in COSTS}}
                          for j, a in enumerate(names) for b in names[j + 1:]]
    (args.out / "report.json").write_text(json.dumps(out, indent=2))
    print(json.dumps({n: out["variants"][n]["summary"] for n in names} | {"comparisons": out["comparisons"]},
                     indent=2))
    return max(_exit_code(out["variants"][n]) for n in names)


SOURCES_MAX_AGE_DAYS = 14.0
"""``bosun eval sources --prune`` without ``--older-than-days``."""


async def _running_evaluations(s: Settings) -> int:
    """How many evaluations are running (ConfigError when the stack cannot tell)."""
    try:
        client = await connect(s, timeout_s=10)
    except BosunError as e:
        raise ConfigError(f"cannot tell whether an evaluation is running, so nothing is pruned: {e} (start the "
                          "stack with `bosun up`)") from None
    try:
        counted = await client.count_workflows("WorkflowType = 'EvalWorkflow' AND ExecutionStatus = 'Running'")
    except RPCError as e:
        raise ConfigError(f"cannot tell whether an evaluation is running (Temporal's visibility: {e}), so nothing "
                          "is pruned") from None
    return counted.count


async def sources(args: argparse.Namespace, s: Settings) -> int:
    """``bosun eval sources``: list (or ``--prune``) this host's source stores."""
    root = s.workspaces_dir
    if not args.prune:
        if args.older_than_days is not None or args.max_gb is not None or args.dry_run:
            raise ConfigError("--older-than-days, --max-gb and --dry-run go with --prune")
        rows = [{"source": st.source, "commits": st.commits, "size_mb": st.size_mb,
                 "last_used": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(st.last_used))}
                for st in stored_sources(root)]
        if args.json:
            print(json.dumps(rows, indent=2))
        elif not rows:
            print(f"no evaluation sources kept on this host ({root / SOURCES})")
        else:
            for r in rows:
                print(f"{r['size_mb']:8.1f} MB  {r['commits']:5} commits  used {r['last_used']}  {r['source']}")
        return 0
    days = SOURCES_MAX_AGE_DAYS if args.older_than_days is None else args.older_than_days
    check_non_negative("--older-than-days", days)
    check_non_negative("--max-gb", args.max_gb, " (--max-gb 0: no size bound)")
    running = await _running_evaluations(s)
    if running and not args.dry_run:
        raise ConfigError(f"{running} evaluation(s) running: their instances read these sources; prune once they "
                          "have ended (or see what would go with --dry-run)")
    out = prune_sources(root, older_than_days=days, max_gb=args.max_gb, dry_run=args.dry_run)
    if args.json:
        print(json.dumps(out))
    else:
        verb = "would remove" if args.dry_run else "removed"
        print(f"{verb} {len(out['sources'])} source(s), {out['freed_mb']:.0f} MB")
        for source in out["sources"]:
            print(f"  {source}")
    return 0


def eval_main(argv: list[str]) -> int:
    if argv[:1] == ["edits"]:
        return edits_main(argv)
    try:
        args = parser().parse_args(argv)
        s = load_settings()
        command = {"swebench": swebench, "run": run_agents, "sources": sources}[args.what]
        return asyncio.run(command(args, s))
    except UsageError as e:
        print(f"bosun eval: {e}", file=sys.stderr)
        return 2
    except BosunError as e:
        print(f"bosun eval: {e}", file=sys.stderr)
        return 2
