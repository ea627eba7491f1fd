"""`bosun eval swebench` and `bosun eval run` on the stack, with SWE-bench-format instances made from the example
project's two real bugs (a fix each, a test patch each): gold resolves both, empty resolves none, the report has
the harness's fields; bosun's agents (the scripted test double) judged in two variants, compared."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from infra.artifacts import ArtifactStore
from tests.conftest import BOSUN, EXAMPLE, leftovers, make_example_repo, wait_for
from tests.sandbox.test_network import PUBLIC, internet_host

MEDIAN_FIX = ("    middle = len(ordered) // 2\n    return ordered[middle]\n",
              "    middle = len(ordered) // 2\n    if len(ordered) % 2 == 0:\n"
              "        return (ordered[middle - 1] + ordered[middle]) / 2\n    return ordered[middle]\n")
PERCENT_FIX = ('    return f"{part / whole * 10:.1f}%"\n',
               '    if whole == 0:\n        return "0.0%"\n    return f"{part / whole * 100:.1f}%"\n')


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


def diff_of(repo: Path, path: str, old: str, new: str) -> str:
    """The patch that changes ``old`` to ``new`` in ``path`` (made and undone in the repository)."""
    f = repo / path
    before = f.read_text()
    f.write_text(before.replace(old, new))
    try:
        return git(repo, "diff", "--", path)
    finally:
        f.write_text(before)


def calc_instances(root: Path, copies: int = 1, files: dict[str, str] | None = None) -> tuple[Path, Path]:
    """SWE-bench rows for the example's two bugs (``copies`` times under distinct ids) and the repository
    (``files``: more files committed into it first)."""
    repo = make_example_repo(root / "calc")
    if files:
        for name, text in files.items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "more files")
    base = git(repo, "rev-parse", "HEAD").strip()
    median_test = diff_of(repo, "tests/test_stats.py", "def test_spread():",
                          "def test_median_even_floats():\n    assert median([1.0, 2.0]) == 1.5\n\n\n"
                          "def test_spread():")
    percent_test = diff_of(repo, "tests/test_report.py", "def test_percent_of_nothing():",
                           "def test_percent_small():\n    assert percent(1, 200) == \"0.5%\"\n\n\n"
                           "def test_percent_of_nothing():")
    rows = []
    for n in range(copies):
        suffix = "" if copies == 1 else f"-{n}"
        rows += [
            {"instance_id": f"calc__median-1{suffix}", "repo": "example/calc", "base_commit": base,
             "patch": diff_of(repo, "calc/stats.py", *MEDIAN_FIX), "test_patch": median_test,
             "FAIL_TO_PASS": json.dumps(["tests/test_stats.py::test_median_even",
                                         "tests/test_stats.py::test_median_even_floats"]),
             "PASS_TO_PASS": json.dumps(["tests/test_stats.py::test_mean", "tests/test_stats.py::test_median_odd",
                                         "tests/test_stats.py::test_spread",
                                         "tests/test_stats.py::test_empty_lists_are_refused"]),
             "problem_statement": "median() of an even-length list returns the upper middle value"},
            {"instance_id": f"calc__percent-1{suffix}", "repo": "example/calc", "base_commit": base,
             "patch": diff_of(repo, "calc/report.py", *PERCENT_FIX), "test_patch": percent_test,
             "FAIL_TO_PASS": ["tests/test_report.py::test_percent", "tests/test_report.py::test_percent_of_nothing",
                              "tests/test_report.py::test_percent_small"],
             "PASS_TO_PASS": [], "problem_statement": "percent() is off by 10x and fails on a zero whole"}]
    path = root / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, repo


@pytest.fixture(scope="module")
def instances(tmp_path_factory):
    return calc_instances(tmp_path_factory.mktemp("swe"))


@pytest.mark.slow
def test_gold_resolves_every_instance_and_empty_none(stack, instances, tmp_path):
    path, repo = instances
    report = tmp_path / "report.json"
    logs = tmp_path / "logs"
    gold = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo}", "--report", str(report), "--run-id", "it-gold", "--max-parallel",
                       "2", "--logs", str(logs), timeout=900)
    assert gold.returncode == 0, gold.stderr[-3000:] + (report.read_text()[-3000:] if report.exists() else "")
    summary = json.loads(gold.stdout)
    assert summary["resolved_ids"] == ["calc__median-1", "calc__percent-1"] and summary["error_ids"] == []
    full = json.loads(report.read_text())
    median = full["instances"]["calc__median-1"]
    assert set(median) >= {"patch_is_None", "patch_exists", "patch_successfully_applied", "resolved",
                           "tests_status"}
    assert median["tests_status"]["FAIL_TO_PASS"] == {
        "success": ["tests/test_stats.py::test_median_even", "tests/test_stats.py::test_median_even_floats"],
        "failure": []}
    assert len(median["tests_status"]["PASS_TO_PASS"]["success"]) == 4
    # the harness's per-instance layout: its report, what ran and printed, the prediction judged
    one = logs / "calc__median-1"
    assert json.loads((one / "report.json").read_text()) == {"calc__median-1": median}
    output = (one / "test_output.txt").read_text()
    assert ">>>>> Start Test Output" in output and "PASSED tests/test_stats.py::test_median_even" in output
    assert (one / "patch.diff").read_text() == json.loads(path.read_text().splitlines()[0])["patch"]
    assert "done" in gold.stderr and "resolved" in gold.stderr  # progress on stderr
    # where each instance's time went; the tests' share is the one the verdict waited for
    for t in full["timing"].values():
        assert {"fetch", "environment", "workspace", "checkout", "expose", "sandbox", "ready", "apply",
                "tests"} <= set(t["phases"])
        assert t["phases"]["tests"] == pytest.approx(t["tests_s"], abs=0.02)
        # steps one after the other: the setup (workspace to the prediction's apply) ran in the background from
        # the preparation on, and the judging waited for what was left of it (setup_wait)
        assert t["set_up_ahead"] and not t["started_ahead"] and t["waited_s"] == 0
        steps = sum(t["phases"][k] for k in ("fetch", "environment", "setup_wait", "tests"))
        assert 0 < steps <= t["seconds"]
        setup = sum(v for k, v in t["phases"].items() if k in ("workspace", "ready", "apply"))  # (checkout: "ready")
        assert 0 < t["phases"]["setup_wait"] <= setup
    assert full["fetch_ahead_s"] > 0
    # the evaluation's time each took (it started with a slot: its whole workflow, and its start) and its share
    # of the fetch ahead (both instances come from one source: half of it each)
    for t in full["timing"].values():
        assert t["slot_s"] >= t["seconds"] - 0.01
    shares = [t["fetch_share_s"] for t in full["timing"].values()]
    assert shares[0] == shares[1] and 0 < sum(shares) <= full["fetch_ahead_s"]
    asyncio.run(_fetched_ahead_and_replays(stack, "eval-it-gold", [json.loads(line)["base_commit"]
                                                                   for line in path.read_text().splitlines()]))
    # the same command again: the evaluation finished, so its result is reported and nothing is judged again
    ran = len([e for e in stack.journal() if e.get("workflow_id", "").startswith("eval-it-gold")])
    again = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                        f"example/calc={repo}", "--run-id", "it-gold", "--max-parallel", "2", timeout=300)
    assert again.returncode == 0 and "finished already" in again.stderr, again.stderr[-3000:]
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "wall_s"} == \
        {k: v for k, v in summary.items() if k != "wall_s"}
    assert len([e for e in stack.journal() if e.get("workflow_id", "").startswith("eval-it-gold")]) == ran
    # the same --run-id for other predictions is refused: its result would not be theirs
    other = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                        f"example/calc={repo}", "--run-id", "it-gold", "--ids", "calc__median-1", timeout=300)
    assert other.returncode == 2 and "is not this one (it also judges calc__percent-1)" in other.stderr, \
        other.stderr[-3000:]
    empty = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "empty", "--repo",
                        f"example/calc={repo}", "--run-id", "it-empty", timeout=900)
    assert empty.returncode == 0, empty.stderr[-3000:]
    s = json.loads(empty.stdout)
    assert s["resolved_ids"] == [] and s["empty_patch_ids"] == ["calc__median-1", "calc__percent-1"]
    # empty predictions are not judged (nor their environments prepared), as the harness does not run them
    assert "nothing to judge" in empty.stderr
    assert not [e for e in stack.journal() if e.get("workflow_id", "").startswith("eval-it-empty")]


async def _fetched_ahead_and_replays(stack, wf_id: str, commits: list[str]) -> None:
    """Before any instance started, one activity fetched every instance's commit; the evaluation's result names its
    children instead of holding their outcomes; the recorded histories replay deterministically (temporalio's
    Replayer)."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from evaluation.workflow import EvalInstanceWorkflow, EvalWorkflow

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}",
                                  data_converter=pydantic_data_converter)
    history = await client.get_workflow_handle(wf_id).fetch_history()
    kinds = [(e.event_type, e.activity_task_scheduled_event_attributes.activity_type.name,
              e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name) for e in history.events]
    fetches = [i for i, (k, act, _) in enumerate(kinds)
               if k == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED and act == "eval_fetch"]
    children = [i for i, (k, _, wf) in enumerate(kinds)
                if k == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]
    assert len(fetches) == 1 and children and fetches[0] < min(children), kinds
    scheduled = history.events[fetches[0]].activity_task_scheduled_event_attributes
    fetched = json.loads(scheduled.input.payloads[0].data)
    assert sorted(fetched["commits"]) == sorted(set(commits))
    # the evaluation's result does not hold the outcomes: they are in the artifact store, one per child, in order
    result = await client.get_workflow_handle(wf_id).result()
    started = [history.events[i].start_child_workflow_execution_initiated_event_attributes.workflow_id
               for i in children]
    store = ArtifactStore(stack.data_dir / "artifacts")
    kept = [o["instance_id"] for ref in result["kept"] for o in store.get_json(ref)["outcomes"]]
    assert result["outcomes"] == [] and result["children"] == [] and \
        [f"{wf_id}/{i}" for i in kept] == started
    replayer = Replayer(workflows=[EvalWorkflow, EvalInstanceWorkflow], data_converter=pydantic_data_converter)
    for one in (wf_id, f"{wf_id}/calc__median-1"):
        result = await replayer.replay_workflow(await client.get_workflow_handle(one).fetch_history(),
                                                raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{one}: {result.replay_failure}"


def test_instances_of_one_version_start_from_its_checkout_template(stack, tmp_path):
    """Instances sharing their version's environment_setup_commit: once one is judged, a checkout template of
    that commit is made (sandbox/checkouts.py); the next ones start from a copy of it, moved to their own base
    commit, and are judged as from a fresh checkout."""
    path, repo = calc_instances(tmp_path, copies=2, files={"docs/later.txt": "a file the setup commit lacks\n"})
    setup = git(repo, "rev-parse", "HEAD~1").strip()
    rows = [{**json.loads(line), "environment_setup_commit": setup} for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    templates = stack.data_dir / "workspaces" / ".sources"
    ids = sorted(r["instance_id"] for r in rows)
    for run in ("it-tpl-1", "it-tpl-2"):
        started = time.time()
        proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                           f"example/calc={repo}", "--run-id", run, "--max-parallel", "1", timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert sorted(json.loads(proc.stdout)["resolved_ids"]) == ids
        wait_for(lambda: list(templates.glob(f"*.templates/{setup}-*.img")), timeout=60)
    image = next(templates.glob(f"*.templates/{setup}-*.img"))
    assert image.stat().st_mtime >= started  # the second run's instances were made from it


def test_instances_started_ahead_wait_prepared_and_are_judged_one_slot_at_a_time(stack, tmp_path):
    """With --max-parallel 1, one more instance starts ahead: it is prepared and its workspace and sandbox set
    up while the other's tests run; it waits for the go, so no two instances are ever judged at once, and its
    time leaves the wait out."""
    path, repo = calc_instances(tmp_path, copies=2)
    report = tmp_path / "report.json"
    started = time.monotonic()
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo}", "--run-id", "it-ahead", "--max-parallel", "1", "--report",
                       str(report), timeout=900)
    wall = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    ids = sorted(json.loads(line)["instance_id"] for line in path.read_text().splitlines())
    assert sorted(json.loads(proc.stdout)["resolved_ids"]) == ids
    timing = json.loads(report.read_text())["timing"]
    assert all(t["set_up_ahead"] for t in timing.values()), timing
    assert sum(t["started_ahead"] for t in timing.values()) == len(ids) - 1, timing
    assert any(t["waited_s"] > 0 for t in timing.values()), timing
    for t in timing.values():
        assert t["phases"]["tests"] <= t["seconds"]
        assert t["phases"]["tests"] <= t["slot_s"]
    # one slot, held by one instance at a time: the slots' seconds fit in the command's time
    assert sum(t["slot_s"] for t in timing.values()) < wall
    # judged one at a time: no eval_instance began before the one before it had ended
    judging = 0
    for e in stack.journal():
        if e["type"] == "eval_instance" and e["workflow_id"].startswith("eval-it-ahead/"):
            judging += 1 if e["event"] == "start" else -1
            assert judging <= 1
    asyncio.run(_started_ahead_and_replays(stack, "eval-it-ahead", len(ids)))


def test_an_instance_started_ahead_builds_its_environment_only_in_its_slot(stack, tmp_path):
    """Started ahead, an instance whose environment is not built yet leaves the build for its judging slot: no
    more builds at once than --max-parallel allows."""
    import uuid

    first, repo_a = calc_instances(tmp_path / "a")
    second, repo_b = calc_instances(tmp_path / "b", files={
        ".bosun/environment.toml": f'setup = ["echo {uuid.uuid4().hex} > /dev/null"]\n'})  # a new environment
    a = json.loads(first.read_text().splitlines()[0])
    b = {**json.loads(second.read_text().splitlines()[0]), "repo": "example/calc-b", "instance_id": "calc__b-1"}
    path = tmp_path / "instances.jsonl"
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    report = tmp_path / "report.json"
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo_a}", "--repo", f"example/calc-b={repo_b}", "--run-id", "it-defer",
                       "--max-parallel", "1", "--report", str(report), timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(json.loads(proc.stdout)["resolved_ids"]) == ["calc__b-1", "calc__median-1"]
    timing = json.loads(report.read_text())["timing"]
    assert timing["calc__b-1"]["build_s"] > 0 and timing["calc__b-1"]["set_up_ahead"]
    journal = [e for e in stack.journal() if e["workflow_id"].startswith("eval-it-defer/")]
    first_judged = next(e["ts"] for e in journal if e["type"] == "eval_instance" and e["event"] == "complete"
                        and "median" in e["workflow_id"])
    prepares = [e for e in journal if e["type"] == "eval_prepare" and "calc__b-1" in e["workflow_id"]
                and e["event"] == "start"]
    assert len(prepares) == 2 and prepares[0]["ts"] < first_judged < prepares[1]["ts"], prepares


@pytest.mark.slow
def test_an_instance_set_up_ahead_whose_evaluation_is_terminated_leaves_nothing(stack, tmp_path):
    """Terminated while one instance's slow tests run and the next waits, set up: termination runs no workflow
    code, so the worker's reaper removes both sandboxes and both workspaces."""
    path, repo = calc_instances(tmp_path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[0]["test_patch"] = diff_of(repo, "tests/test_stats.py", "def test_spread():",
                                    "def test_slow():\n    import time\n    time.sleep(600)\n\n\ndef test_spread():")
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.Popen([BOSUN, "eval", "swebench", "--instances", str(path), "--predictions", "gold",
                            "--repo", f"example/calc={repo}", "--run-id", "it-term", "--max-parallel", "1"],
                           env={**os.environ, **stack.env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workspaces = stack.data_dir / "workspaces"
        wait_for(lambda: list(workspaces.glob("*it-term*percent-1*.runs/eval/calc/report.py")), 300, 0.2,
                 "the waiting instance's workspace to be checked out")
        wait_for(lambda: len(leftovers(stack)) >= 2, 120, 0.2, "both instances' sandboxes")
        # its instances read the worker's store of the source: nothing is pruned while it runs (a dry run says
        # what would go)
        prune = stack.bosun("eval", "sources", "--prune", "--older-than-days", "0", timeout=120)
        assert prune.returncode == 2 and "1 evaluation(s) running" in prune.stderr, prune.stderr[-2000:]
        dry = stack.bosun("eval", "sources", "--prune", "--dry-run", timeout=120)
        assert dry.returncode == 0 and "would remove 0 source(s)" in dry.stdout, dry.stderr[-2000:]

        async def terminate() -> None:
            from temporalio.client import Client

            client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}")
            await client.get_workflow_handle("eval-it-term").terminate("test: terminated")
        asyncio.run(terminate())
        wait_for(lambda: leftovers(stack) == [], 120, 0.5, "the reaper to release both sandboxes")
        wait_for(lambda: not list(workspaces.glob("*it-term*.runs")), 60, 0.5,
                 "the reaper to remove both workspaces")
    finally:
        run.kill()
        run.wait()


async def _started_ahead_and_replays(stack, wf_id: str, n: int) -> None:
    """All but the first child started ahead and got the go; the histories replay."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from evaluation.workflow import EvalInstanceWorkflow, EvalWorkflow

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}",
                                  data_converter=pydantic_data_converter)
    history = await client.get_workflow_handle(wf_id).fetch_history()
    gated = [json.loads(e.start_child_workflow_execution_initiated_event_attributes.input.payloads[0].data)["gated"]
             for e in history.events
             if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]
    signals = [e for e in history.events if e.event_type == EventType.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED]
    assert gated == [False] + [True] * (n - 1) and len(signals) == n - 1
    replayer = Replayer(workflows=[EvalWorkflow, EvalInstanceWorkflow], data_converter=pydantic_data_converter)
    for one in [wf_id] + [e.child_workflow_execution_completed_event_attributes.workflow_execution.workflow_id
                          for e in history.events
                          if e.event_type == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED]:
        result = await replayer.replay_workflow(await client.get_workflow_handle(one).fetch_history(),
                                                raise_on_replay_failure=False)
        assert result.replay_failure is None, f"{one}: {result.replay_failure}"


@pytest.mark.slow
def test_an_evaluation_continues_as_new_and_is_reported_from_all_its_runs(stack, tmp_path):
    """With BOSUN_EVAL_JOBS_PER_RUN=1 each instance is judged in a run of its own: the evaluation continues as new
    after each (a full test set stays within Temporal's history limit this way), each run keeping its outcomes in
    the artifact store. The report has every run's: the first instance resolved, the second a failure (its
    workflow terminated while it is judged); so do the progress and the same command again. With the first run's
    history gone (Temporal's retention), the report is unchanged and `bosun history` says what is missing; with a
    kept outcome gone from the artifact store, the command says so (exit 2)."""
    path, repo = calc_instances(tmp_path)
    args = ["eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo", f"example/calc={repo}",
            "--run-id", "it-runs", "--max-parallel", "2"]
    run = subprocess.Popen([BOSUN, *args, "--report", str(tmp_path / "report.json")],
                           env={**os.environ, **stack.env, "BOSUN_EVAL_JOBS_PER_RUN": "1"}, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: [e for e in stack.journal() if e["type"] == "eval_instance" and e["event"] == "start"
                          and e["workflow_id"] == "eval-it-runs/calc__percent-1"], 300, 0.1,
                 "the second instance's judging to start")
        asyncio.run(_terminate(stack, "eval-it-runs/calc__percent-1"))
        out, err = run.communicate(timeout=300)
    finally:
        run.kill()
    assert run.returncode == 1, err[-3000:]  # (an instance could not be judged)
    summary = json.loads(out)
    assert summary["resolved_ids"] == ["calc__median-1"] and summary["error_ids"] == ["calc__percent-1"]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["errors"]["calc__percent-1"]["kind"] == "failed"
    assert report["errors"]["calc__percent-1"]["reason"] == "its workflow ended: Terminated"
    assert report["timing"]["calc__median-1"]["tests_s"] > 0
    # the fetch ahead ran in the first run; the second run's instance has its share too (carried)
    shares = {i: t["fetch_share_s"] for i, t in report["timing"].items()}
    assert shares["calc__percent-1"] == shares["calc__median-1"] > 0, shares
    children = ["eval-it-runs/calc__median-1", "eval-it-runs/calc__percent-1"]
    asyncio.run(_runs_and_replays(stack, "eval-it-runs", children))
    # the source's commits stay on the worker host; used within the hour, they are not pruned
    listed = stack.bosun("eval", "sources", "--json", timeout=120)
    assert listed.returncode == 0, listed.stderr[-2000:]
    [kept] = [r for r in json.loads(listed.stdout) if r["source"] == str(Path(repo).resolve())]
    assert kept["commits"] >= 1 and kept["size_mb"] > 0
    prune = stack.bosun("eval", "sources", "--prune", "--older-than-days", "0", "--json", timeout=120)
    assert prune.returncode == 0 and kept["source"] not in json.loads(prune.stdout)["sources"], prune.stderr[-2000:]
    for wrong, said in ((["--dry-run"], "go with --prune"), (["--prune", "--max-gb", "nan"], "a number of 0 or more")):
        bad = stack.bosun("eval", "sources", *wrong, timeout=120)
        assert bad.returncode == 2 and said in bad.stderr, bad.stderr[-2000:]
    # `bosun history` shows the steps of every run, the first run's first
    history = stack.bosun("history", "eval-it-runs", "--json", timeout=120)
    assert history.returncode == 0, history.stderr[-3000:]
    steps = json.loads(history.stdout)["children"]
    assert [c["workflow_id"] for c in steps if c["kind"] == "child"] == children
    assert [c["status"] for c in steps if c["kind"] == "child"] == ["completed", "terminated"]
    # again, with the default jobs per run: the finished evaluation (its last run) is reported, nothing judged again
    ran = len(stack.journal())
    again = stack.bosun(*args, timeout=300)
    assert again.returncode == 1 and "finished already" in again.stderr, again.stderr[-3000:]
    assert {k: v for k, v in json.loads(again.stdout).items() if k != "wall_s"} == \
        {k: v for k, v in summary.items() if k != "wall_s"}
    assert not [e for e in stack.journal()[ran:] if e.get("workflow_id", "").startswith("eval-it-runs")]
    # the first run's history gone (as the server's retention drops it a day after the run closed): the report is
    # the same, read from the artifact store; bosun history shows what is kept and says what is not
    first_run = asyncio.run(_previous_run(stack, "eval-it-runs"))
    asyncio.run(_delete(stack, "eval-it-runs", first_run))
    after = stack.bosun(*args, timeout=300)
    assert after.returncode == 1 and json.loads(after.stdout)["resolved_ids"] == ["calc__median-1"], \
        after.stderr[-3000:]
    history = stack.bosun("history", "eval-it-runs", timeout=120)
    assert history.returncode == 0, history.stderr[-3000:]
    assert f"its run {first_run} and any before it are no longer kept" in history.stdout
    assert "eval-it-runs/calc__percent-1" in history.stdout and "eval-it-runs/calc__median-1" not in history.stdout
    # the outcomes gone from the artifact store (another data dir): said, exit 2, no traceback
    result = asyncio.run(_result(stack, "eval-it-runs"))
    (stack.data_dir / "artifacts" / result["kept"][0][7:9] / result["kept"][0][7:]).unlink()
    lost = stack.bosun(*args, timeout=300)
    assert lost.returncode == 2 and f"its outcomes {result['kept'][0]} cannot be read" in lost.stderr, \
        lost.stderr[-3000:]


async def _previous_run(stack, wf_id: str) -> str:
    from temporalio.client import Client

    from infra.history import previous_run

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}")
    return await previous_run(client, wf_id, None)


async def _result(stack, wf_id: str) -> dict:
    from temporalio.client import Client

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}")
    return await client.get_workflow_handle(wf_id).result()


async def _terminate(stack, wf_id: str) -> None:
    from temporalio.client import Client

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}")
    await client.get_workflow_handle(wf_id).terminate("test: terminated")


async def _runs_and_replays(stack, wf_id: str, children: list[str]) -> None:
    """One run per child, chained by continue-as-new; only the first fetched ahead; the last one's result names
    every child and its progress counts them all (the last one terminated); each run's history replays."""
    from temporalio.api.enums.v1 import EventType
    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter
    from temporalio.worker import Replayer

    from evaluation.workflow import EvalInstanceWorkflow, EvalWorkflow

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}",
                                  data_converter=pydantic_data_converter)
    last = client.get_workflow_handle(wf_id)
    histories = [await last.fetch_history()]
    while True:
        previous = histories[0].events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not previous:
            break
        histories.insert(0, await client.get_workflow_handle(wf_id, run_id=previous).fetch_history())
    started, fetches = [], []
    for h in histories:
        kinds = [e.event_type for e in h.events]
        started.append([e.start_child_workflow_execution_initiated_event_attributes.workflow_id for e in h.events
                        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED])
        fetches.append(sum(1 for e in h.events if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
                           and e.activity_task_scheduled_event_attributes.activity_type.name == "eval_fetch"))
        assert kinds[-1] == (EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED if h is histories[-1]
                             else EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)
    assert started == [[c] for c in children] and fetches == [1] + [0] * (len(children) - 1)
    result = await last.result()  # (its outcomes are in the artifact store: a ref per run)
    assert result["children"] == [] and result["outcomes"] == [] and len(result["kept"]) == len(children)
    store = ArtifactStore(stack.data_dir / "artifacts")
    kept = [o["instance_id"] for ref in result["kept"] for o in store.get_json(ref)["outcomes"]]
    assert kept == [c.rsplit("/", 1)[1] for c in children]
    progress = await last.query("progress")
    assert (progress["done"], progress["total"], progress["resolved"], progress["errors"]) == \
        (len(children), len(children), len(children) - 1, 1)
    replayer = Replayer(workflows=[EvalWorkflow, EvalInstanceWorkflow], data_converter=pydantic_data_converter)
    for h in histories:
        replayed = await replayer.replay_workflow(h, raise_on_replay_failure=False)
        assert replayed.replay_failure is None, replayed.replay_failure


@pytest.mark.slow
def test_an_environment_whose_build_leaves_files_in_the_tree_is_judged_with_them(stack, tmp_path):
    """The build's files (compiled extensions, in real projects) are put into each instance's workspace when its
    sandbox starts, after the checkout (the sandbox of an environment without them starts while the checkout
    runs: environments/' writes_on_start); the tests see them."""
    path, repo = calc_instances(tmp_path, files={".bosun/environment.toml": 'setup = ["echo built > calc/BUILT.txt"]\n',
                                                 ".gitignore": "calc/BUILT.txt\n"})
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    # the median row's test patch also checks the build's file is there
    rows[0]["test_patch"] = diff_of(
        repo, "tests/test_stats.py", "def test_spread():",
        "def test_median_even_floats():\n    assert median([1.0, 2.0]) == 1.5\n\n\n"
        "def test_the_build_file_is_there():\n    import pathlib\n"
        "    assert pathlib.Path('calc/BUILT.txt').read_text() == 'built\\n'\n\n\ndef test_spread():")
    rows[0]["PASS_TO_PASS"] = json.dumps(["tests/test_stats.py::test_the_build_file_is_there"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo}", "--run-id", "it-seeded", "--max-parallel", "2", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    assert summary["error_ids"] == [] and summary["resolved_ids"] == ["calc__median-1", "calc__percent-1"]


@pytest.mark.slow
@pytest.mark.docker
def test_network_judges_in_a_sandbox_that_reaches_the_internet_only_when_asked(stack, tmp_path):
    """``--network``: a test that calls a host on the internet (PUBLIC, a namespace behind a link of the host's,
    reached through the bridge's gateway, tests/sandbox/test_network.py) passes only when judged with it; the
    summary and the instance's report say so; the same run id without it is refused; a bwrap worker cannot have
    it."""
    path, repo = calc_instances(tmp_path)
    with internet_host() as port:
        row = json.loads(path.read_text().splitlines()[0])
        row["test_patch"] = diff_of(
            repo, "tests/test_stats.py", "def test_spread():",
            "def test_median_even_floats():\n    assert median([1.0, 2.0]) == 1.5\n\n\n"
            f"def test_the_internet():\n    import socket\n"
            f"    assert socket.create_connection(({PUBLIC!r}, {port}), timeout=3).recv(5) == b'hello'\n\n\n"
            "def test_spread():")
        row["PASS_TO_PASS"] = json.dumps(["tests/test_stats.py::test_the_internet"])
        path.write_text(json.dumps(row) + "\n")
        args = ("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                f"example/calc={repo}")
        report = tmp_path / "net.json"
        proc = stack.bosun(*args, "--network", "--run-id", "it-net", "--report", str(report), timeout=900)
        assert proc.returncode == 0, proc.stderr[-3000:]
        doc = json.loads(report.read_text())
        assert doc["summary"]["resolved_ids"] == ["calc__median-1"] and doc["summary"]["network"] is True
        assert doc["instances"]["calc__median-1"]["network"] is True
        proc = stack.bosun(*args, "--run-id", "it-no-net", "--report", str(report), timeout=900)
        doc = json.loads(report.read_text())
        assert doc["summary"]["network"] is False and "network" not in doc["instances"]["calc__median-1"]
        assert doc["instances"]["calc__median-1"]["tests_status"]["PASS_TO_PASS"]["failure"] == [
            "tests/test_stats.py::test_the_internet"]
    proc = stack.bosun(*args, "--run-id", "it-net")
    assert proc.returncode == 2 and "(it judges with network)" in proc.stderr, proc.stderr
    proc = stack.bosun(*args, "--network", "--run-id", "it-net-bwrap", env_extra={"BOSUN_SANDBOX_BACKEND": "bwrap"})
    assert proc.returncode == 2 and "--network needs docker sandboxes" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_test_files_a_prediction_edits_are_reset_before_the_test_patch(stack, instances, tmp_path):
    """As in the harness, the files the test patch touches are reset to the base commit inside the sandbox (git
    there reads only what the instance's repository lends it: the commit's trees and those files). Here the
    prediction also renames a test the test patch's context names: without the reset the test patch would not
    apply and the instance would not resolve."""
    path, repo = instances
    rename = diff_of(repo, "tests/test_stats.py", "def test_spread():", "def test_spread_renamed():")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "calc__median-1", "model_name_or_path": "both",
                                 "model_patch": diff_of(repo, "calc/stats.py", *MEDIAN_FIX) + rename}) + "\n")
    report, logs = tmp_path / "r.json", tmp_path / "logs"
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", str(preds), "--repo",
                       f"example/calc={repo}", "--report", str(report), "--logs", str(logs), "--run-id", "it-reset",
                       timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    full = json.loads(report.read_text())
    # the other instance has no prediction: not run, as the harness does not run it (incomplete)
    assert full["summary"]["incomplete_ids"] == ["calc__percent-1"] and full["summary"]["total_instances"] == 2
    assert "1 of the 2 instances selected have no prediction" in proc.stderr
    assert full["summary"]["submitted_ids"] == full["summary"]["completed_ids"] == ["calc__median-1"]
    assert set(full["instances"]) == {"calc__median-1"} and set(full["timing"]) == {"calc__median-1"}
    median = full["instances"]["calc__median-1"]
    output = (logs / "calc__median-1" / "test_output.txt").read_text()
    assert median["resolved"], output[-3000:]
    assert "test_spread_renamed" not in output and "error:" not in output, output[-3000:]
    # the judged workspace is removed after the verdict (its file system unmounted), and the source's commits
    # stay in the worker's store for the next evaluation
    workspaces = stack.data_dir / "workspaces"
    wait_for(lambda: not any(p.name == "eval" for p in workspaces.glob("eval-it-reset*.runs/*")), 30,
             what="the judged workspace to be removed")
    assert f"{workspaces}/eval-it-reset" not in Path("/proc/mounts").read_text()
    assert list((workspaces / ".sources").glob("*.git"))


@pytest.mark.slow
def test_a_prediction_that_does_not_fix_everything_is_judged_per_test(stack, instances, tmp_path):
    path, repo = instances
    # the factor fixed, the zero whole not: one FAIL_TO_PASS test still fails
    half = diff_of(repo, "calc/report.py", PERCENT_FIX[0], '    return f"{part / whole * 100:.1f}%"\n')
    # SWE-agent's preds.json: an object keyed by instance id (the harness reads it too); the second prediction is
    # whitespace, which the harness judges (it is not empty there) and which does not apply
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({"calc__percent-1": {"model_name_or_path": "half", "model_patch": half},
                                 "calc__median-1": {"instance_id": "calc__median-1", "model_name_or_path": "half",
                                                    "model_patch": " \n"}}, indent=2))
    report = tmp_path / "r.json"
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", str(preds), "--repo",
                       f"example/calc={repo}", "--report", str(report), "--run-id", "it-half", timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(report.read_text())
    full = doc["instances"]
    percent = full["calc__percent-1"]
    assert percent["patch_successfully_applied"] and not percent["resolved"]
    assert percent["tests_status"]["FAIL_TO_PASS"]["failure"] == ["tests/test_report.py::test_percent_of_nothing"]
    assert full["calc__median-1"]["patch_successfully_applied"] is False
    assert doc["summary"]["error_ids"] == ["calc__median-1"] and doc["errors"]["calc__median-1"]["kind"] == "apply"
    assert doc["summary"]["empty_patch_ids"] == [] and doc["summary"]["unresolved_ids"] == ["calc__percent-1"]


def test_bad_input_is_refused_before_anything_starts(stack, instances, tmp_path):
    path, repo = instances
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold")
    assert proc.returncode == 2 and "no --repo for example/calc" in proc.stderr
    proc = stack.bosun("eval", "swebench", "--instances", str(tmp_path / "none.jsonl"), "--predictions", "gold",
                       "--repo", f"example/calc={repo}")
    assert proc.returncode == 2 and "cannot read it" in proc.stderr
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold",
                       "--repo", "example/calc=/nonexistent/repo")
    assert proc.returncode == 2 and "is not a directory" in proc.stderr
    proc = stack.bosun("eval", "swebench", "--instances", str(path))
    assert proc.returncode == 2 and "--predictions" in proc.stderr
    # a run id names eval-<run id>, whose children are eval-<run id>/<instance>: no '/' in it
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo}", "--run-id", "it-gold/calc__median-1")
    assert proc.returncode == 2 and "letters, digits, '_', '.', '-' only" in proc.stderr, proc.stderr
    # predictions for instances the file does not have are refused (as the harness refuses them); predictions
    # none of which is for the instances selected leave nothing to evaluate
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"instance_id": "other__repo-9", "model_patch": "x"}) + "\n")
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", str(preds),
                       "--repo", f"example/calc={repo}", "--run-id", "it-bad-foreign")
    assert proc.returncode == 2 and "for instances --instances does not have (other__repo-9)" in proc.stderr
    preds.write_text(json.dumps({"instance_id": "calc__percent-1", "model_patch": "x"}) + "\n")
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", str(preds), "--ids",
                       "calc__median-1", "--repo", f"example/calc={repo}", "--run-id", "it-bad-none")
    assert proc.returncode == 2 and "none of its predictions (1) is for the instances selected (1)" in proc.stderr
    # where the results go is checked before the evaluation runs, not after
    a_file = tmp_path / "a-file"
    a_file.write_text("mine\n")
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold",
                       "--repo", f"example/calc={repo}", "--logs", str(a_file), "--run-id", "it-bad-logs")
    assert proc.returncode == 2 and f"--logs {a_file}: cannot be made a folder" in proc.stderr
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold",
                       "--repo", f"example/calc={repo}", "--report", str(tmp_path), "--run-id", "it-bad-report")
    assert proc.returncode == 2 and "is a folder; pass a file path" in proc.stderr
    proc = stack.bosun("eval", "swebench", "--instances", str(path), "--predictions", "gold", "--repo",
                       f"example/calc={repo}", "--report", str(tmp_path / "no" / "r.json"), "--run-id", "it-bad-dir")
    assert proc.returncode == 2 and "there is no folder" in proc.stderr
    proc = stack.bosun("eval", "run", "--instances", str(path), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}",
                       "--repo", f"example/calc={repo}", "--out", str(a_file / "out"), "--run-id", "it-bad-out")
    assert proc.returncode == 2 and "--out" in proc.stderr and "cannot be made a folder" in proc.stderr
    assert a_file.read_text() == "mine\n" and not (tmp_path / "no").exists()
    # a variant's settings are checked as its task will take them
    for fields, message in [({"repo": "elsewhere", "modle": "x"}, "sets 'modle', 'repo', which it cannot set; it may "
                                                                   "set model, mode,"),
                            ({"max_turns": 0}, "max_turns: Input should be greater than or equal to 1"),
                            ({"budget": {"dollars": 1}}, "budget.dollars: Extra inputs are not permitted"),
                            ({"harness": {"compact_at": 0}}, "harness.compact_at: Input should be greater than 0"),
                            ({"harness": {"edit_tool": "sed"}}, "harness.edit_tool: Input should be 'apply_patch'"),
                            ({"model": "gemini:pro"}, "unknown model spec 'gemini:pro'")]:
        settings = tmp_path / "variant.json"
        settings.write_text(json.dumps(fields))
        proc = stack.bosun("eval", "run", "--instances", str(path), "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}",
                           "--repo", f"example/calc={repo}", "--out", str(tmp_path / "out"), "--run-id", "it-bad-var",
                           "--variant", f"v={settings}")
        assert proc.returncode == 2 and f"--variant v: {settings}" in proc.stderr and message in proc.stderr, \
            (fields, proc.stderr)
    assert not [e for e in stack.journal() if e.get("workflow_id", "").startswith("eval-it-bad")]  # nothing ran


@pytest.mark.slow
def test_eval_run_compares_two_variants_of_the_agents(stack, instances, tmp_path):
    """Two variants on one instance, each judged in a run of the evaluation of its own (BOSUN_EVAL_JOBS_PER_RUN=1:
    it continues as new between them), compared in one report."""
    path, repo = instances
    idle = tmp_path / "idle.jsonl"
    idle.write_text(json.dumps({"content": "Nothing to do."}) + "\n")
    fixer, lazy, tight = tmp_path / "fixer.json", tmp_path / "lazy.json", tmp_path / "tight.json"
    fixer.write_text(json.dumps({"model": f"scripted:{EXAMPLE / 'solo.jsonl'}"}))
    lazy.write_text(json.dumps({"model": f"scripted:{idle}", "max_turns": 2}))
    # the fixer's trajectory again, compacting past 46% of the scripted profile's 4,096-token window (only its
    # last model call gets there)
    tight.write_text(json.dumps({"model": f"scripted:{EXAMPLE / 'solo.jsonl'}",
                                 "harness": {"compact_at": 0.46, "keep_recent_turns": 1, "edit_tool": "str_replace"}}))
    out = tmp_path / "out"
    proc = stack.bosun("eval", "run", "--instances", str(path), "--ids", "calc__median-1", "--model",
                       f"scripted:{idle}", "--variant", f"fixer={fixer}", "--variant", f"lazy={lazy}",
                       "--variant", f"tight={tight}", "--repo", f"example/calc={repo}", "--run-id", "it-agents",
                       "--out", str(out), env_extra={"BOSUN_EVAL_JOBS_PER_RUN": "1"}, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["variants"]["fixer"]["summary"]["resolved_ids"] == ["calc__median-1"]
    assert report["variants"]["lazy"]["summary"]["resolved_ids"] == []
    assert report["variants"]["tight"]["summary"]["resolved_ids"] == ["calc__median-1"]
    assert report["variants"]["tight"]["settings"]["harness"] == {"compact_at": 0.46, "keep_recent_turns": 1,
                                                                  "edit_tool": "str_replace"}
    agents = report["variants"]["fixer"]["agents"]["calc__median-1"]
    assert agents["status"] == "succeeded" and agents["turns"] == 5 and agents["tool_calls"] == 6
    assert agents["wall_s"] > 0 and report["variants"]["fixer"]["totals"]["wall_s"] == agents["wall_s"]
    assert agents["tool_error_rate"] == {k: round(n / 6, 4) for k, n in sorted(agents["tool_errors"].items())}
    fixer_lazy, fixer_tight, lazy_tight = report["comparisons"]
    assert (fixer_lazy["a"], fixer_lazy["b"], fixer_lazy["only_a"], fixer_lazy["only_b"]) == ("fixer", "lazy", 1, 0)
    assert fixer_lazy["ci95"][0] < fixer_lazy["difference"] == 1.0 <= fixer_lazy["ci95"][1]
    turns = fixer_lazy["costs"]["turns"]
    assert (turns["instances"], turns["mean_a"], turns["difference"], turns["ci95"]) == (1, 5.0, 5.0 - 1, None)
    assert (fixer_tight["only_a"], fixer_tight["only_b"], lazy_tight["only_b"]) == (0, 0, 1)

    def compactions(variant: str) -> list:
        traj = json.loads((out / "trajectories" / variant / "calc__median-1.json").read_text())
        return [t["compaction"] for a in traj["agents"] for t in a["turns"] if t.get("compaction")]
    assert compactions("tight") and not compactions("fixer")  # the harness settings reached the agent
    pred = json.loads((out / "predictions-fixer.jsonl").read_text())
    assert "ordered[middle - 1] + ordered[middle]" in pred["model_patch"]
    traj = json.loads((out / "trajectories" / "fixer" / "calc__median-1.json").read_text())
    assert traj["schema"] == "bosun.trajectory/1" and traj["agents"][0]["turns"]
    # the same command again: the evaluation is reported from its history, no agent runs again
    ran = len(stack.journal())
    again = tmp_path / "again"
    proc = stack.bosun("eval", "run", "--instances", str(path), "--ids", "calc__median-1", "--model",
                       f"scripted:{idle}", "--variant", f"fixer={fixer}", "--variant", f"lazy={lazy}",
                       "--variant", f"tight={tight}", "--repo", f"example/calc={repo}", "--run-id", "it-agents",
                       "--out", str(again), timeout=300)
    assert proc.returncode == 0 and "finished already" in proc.stderr, proc.stderr[-3000:]
    assert json.loads((again / "report.json").read_text())["comparisons"] == report["comparisons"]
    assert (again / "trajectories" / "fixer" / "calc__median-1.json").exists()
    assert not [e for e in stack.journal()[ran:] if e.get("workflow_id", "").startswith("eval-it-agents")]


@pytest.mark.slow
def test_a_finished_agent_evaluation_whose_trajectory_is_gone_is_still_reported(stack, instances, tmp_path):
    """The same `eval run` again after Temporal dropped closed runs (it keeps one for a day; deleted here, which
    takes the dev server about 30 s each): without an agent's history the trajectory is still exported, that
    agent's record saying its history is gone; without the task's, the report is written from the evaluation's
    history and the missing trajectory is named on stderr."""
    path, repo = instances
    args = ["eval", "run", "--instances", str(path), "--ids", "calc__median-1", "--model",
            f"scripted:{EXAMPLE / 'solo.jsonl'}", "--repo", f"example/calc={repo}", "--run-id", "it-gone"]
    first = stack.bosun(*args, "--out", str(tmp_path / "first"), timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    traj = json.loads((tmp_path / "first" / "trajectories" / "default" / "calc__median-1.json").read_text())
    [(agent, status)] = [(a["agent_id"], a["status"]) for a in traj["agents"] if a["turns"]]
    asyncio.run(_delete(stack, agent))
    proc = stack.bosun(*args, "--out", str(tmp_path / "agent-gone"), timeout=300)
    assert proc.returncode == 0 and "finished already" in proc.stderr, proc.stderr[-3000:]
    traj = json.loads((tmp_path / "agent-gone" / "trajectories" / "default" / "calc__median-1.json").read_text())
    [gone] = [a for a in traj["agents"] if a["agent_id"] == agent]
    assert gone["turns"] == [] and "no longer kept" in gone["history_missing"] and gone["status"] == status
    assert traj["task"]["diff"] and traj["task"]["status"] == "succeeded"
    asyncio.run(_delete(stack, "eval-it-gone/calc__median-1/default/task"))
    proc = stack.bosun(*args, "--out", str(tmp_path / "again"), timeout=300)
    assert proc.returncode == 0 and "finished already" in proc.stderr, proc.stderr[-3000:]
    assert "no trajectory for calc__median-1 (default)" in proc.stderr
    report = json.loads((tmp_path / "again" / "report.json").read_text())
    assert report["variants"]["default"]["summary"]["resolved_ids"] == ["calc__median-1"]
    assert not (tmp_path / "again" / "trajectories" / "default" / "calc__median-1.json").exists()


async def _delete(stack, wf_id: str, run_id: str = "") -> None:
    """Delete a closed workflow (its run ``run_id``; "": the latest), as the server's retention does, and wait
    until it is gone."""
    from temporalio.api.common.v1 import WorkflowExecution
    from temporalio.api.workflowservice.v1 import DeleteWorkflowExecutionRequest
    from temporalio.client import Client
    from temporalio.service import RPCError

    client = await Client.connect(f"127.0.0.1:{stack.env['BOSUN_TEMPORAL_PORT']}")
    await client.workflow_service.delete_workflow_execution(DeleteWorkflowExecutionRequest(
        namespace=client.namespace, workflow_execution=WorkflowExecution(workflow_id=wf_id, run_id=run_id)))
    for _ in range(1200):
        try:
            await client.get_workflow_handle(wf_id, run_id=run_id or None).describe()
        except RPCError:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{wf_id} {run_id} was not deleted within 120 s")


@pytest.mark.slow
def test_a_worker_killed_mid_evaluation_re_runs_no_finished_instance(stack, instances, tmp_path):
    import signal

    path, repo = instances
    # the second instance's tests take a few seconds, so that the kill lands while they run (its prediction is
    # applied ahead, while the first instance is judged)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[1]["test_patch"] = diff_of(repo, "tests/test_report.py", "def test_percent_of_nothing():",
                                    "def test_percent_small():\n    assert percent(1, 200) == \"0.5%\"\n\n\n"
                                    "def test_takes_a_while():\n    import time\n    time.sleep(5)\n\n\n"
                                    "def test_percent_of_nothing():")
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = subprocess.Popen([BOSUN, "eval", "swebench", "--instances", str(path), "--predictions", "gold",
                            "--repo", f"example/calc={repo}", "--run-id", "it-kill", "--max-parallel", "1"],
                           env={**os.environ, **stack.env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)

    def finished(instance: str, event: str = "complete") -> list[dict]:
        return [e for e in stack.journal() if e["type"] == "eval_instance" and e["event"] == event
                and e["workflow_id"].startswith(f"eval-it-kill/{instance}")]
    wait_for(lambda: finished("calc__percent-1", "start"), 300, 0.5, "the second instance's judging to begin")
    assert finished("calc__median-1")  # (one at a time: the first is over)
    # Killed once the second instance's workspace holds the applied prediction: its retry must start afresh.
    applied = stack.data_dir / "workspaces"
    wait_for(lambda: any("if whole == 0" in p.read_text()
                         for p in applied.glob("*percent-1*.runs/eval/calc/report.py")), 300, 0.05,
             "the second instance's prediction to be applied")
    victim = stack.state()["components"]["worker"]["pid"]
    os.kill(victim, signal.SIGKILL)
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err[-3000:]
    assert json.loads(out)["resolved_ids"] == ["calc__median-1", "calc__percent-1"]
    assert stack.state()["components"]["worker"]["pid"] != victim
    assert len(finished("calc__median-1")) == 1  # judged once, before the kill; not again after it
    assert len(finished("calc__percent-1")) == 1
