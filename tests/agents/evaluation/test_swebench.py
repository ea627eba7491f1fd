"""SWE-bench rows in, the harness's report out: parsing (list fields as JSON strings), gold/empty predictions,
bad input named by line, and the verdict per instance and per test."""

from __future__ import annotations

import json

import pytest

from agents.evaluation.swebench import (
    Prediction,
    instance_report,
    load_instances,
    load_predictions,
    patched_files,
    summary,
)
from infra.errors import ConfigError

ROW = {"instance_id": "psf__requests-2317", "repo": "psf/requests",
       "base_commit": "091991be0da19de9108dbe5e3752917fea3d7fdc",
       "patch": "diff --git a/requests/sessions.py b/requests/sessions.py\n", "test_patch":
       "diff --git a/test_requests.py b/test_requests.py\n--- a/test_requests.py\n+++ b/test_requests.py\n",
       "FAIL_TO_PASS": json.dumps(["test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET_ALTERNATIVE"]),
       "PASS_TO_PASS": ["test_requests.py::RequestsTestCase::test_basic_building"], "version": "2.4",
       "problem_statement": "method = builtin_str(method) ..."}


def write(tmp_path, rows, name="instances.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_instances_and_predictions(tmp_path):
    [inst] = load_instances(write(tmp_path, [ROW]))
    assert inst.FAIL_TO_PASS == ["test_requests.py::RequestsTestCase::test_HTTP_200_OK_GET_ALTERNATIVE"]
    assert load_predictions("gold", [inst])[inst.instance_id].model_patch == ROW["patch"]
    assert load_predictions("empty", [inst])[inst.instance_id].model_patch == ""
    preds = write(tmp_path, [{"instance_id": inst.instance_id, "model_name_or_path": "m", "model_patch": "x"}],
                  "preds.jsonl")
    assert load_predictions(str(preds), [inst])[inst.instance_id].model_name_or_path == "m"
    as_list = tmp_path / "instances.json"
    as_list.write_text(json.dumps([ROW]))
    assert load_instances(as_list)[0].instance_id == inst.instance_id
    assert patched_files(ROW["test_patch"]) == ["test_requests.py"]


def test_the_test_patch_data_files_are_not_given_to_the_runner():
    """The harness's regex and extension list: repeats kept, ``csv`` without its dot, the path after the last
    `` b/`` of the line."""
    patch = "".join(f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n" for f in
                    ("tests/test_a.py", "tests/res/test_doc.txt", "tests/data/x.json", "tests/conftest.py",
                     "tests/test_a.py"))
    assert patched_files(patch) == ["tests/test_a.py", "tests/conftest.py", "tests/test_a.py"]  # as the harness


@pytest.mark.parametrize("row,message", [
    ({**ROW, "base_commit": "not-a-sha"}, "base_commit"),
    ({**ROW, "FAIL_TO_PASS": "[not json"}, "not a JSON list"),
    ({**ROW, "instance_id": "../../etc"}, "an instance id is"),
    ({**ROW, "repo": "https://github.com/psf/requests"}, "expected owner/name"),
    ({k: v for k, v in ROW.items() if k != "test_patch"}, "test_patch"),
])
def test_bad_instances_are_named_by_line(tmp_path, row, message):
    path = write(tmp_path, [ROW | {"instance_id": "ok-1"}, row])
    with pytest.raises(ConfigError, match=rf"instances.jsonl:2: .*{message}"):
        load_instances(path)


def test_duplicates_unknown_ids_and_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="appears twice"):
        load_instances(write(tmp_path, [ROW, ROW]))
    with pytest.raises(ConfigError, match="--ids: no instance nope"):
        load_instances(write(tmp_path, [ROW]), ids=["nope"])
    with pytest.raises(ConfigError, match="cannot read it"):
        load_instances(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text("{}\nnot json\n")
    with pytest.raises(ConfigError, match="bad.jsonl:2: not valid JSON"):
        load_predictions(str(tmp_path / "bad.jsonl"), [])


def test_the_verdict_per_test_and_instance(tmp_path):
    [inst] = load_instances(write(tmp_path, [ROW]))
    f2p, p2p = inst.FAIL_TO_PASS[0], inst.PASS_TO_PASS[0]
    pred = Prediction(instance_id=inst.instance_id, model_patch="diff ...")
    empty = {"success": [], "failure": []}
    ok = instance_report(inst, pred, applied=True, statuses={f2p: "PASSED", p2p: "XFAIL"})
    assert ok == {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": True,
                  "resolved": True, "tests_status": {"FAIL_TO_PASS": {"success": [f2p], "failure": []},
                                                     "PASS_TO_PASS": {"success": [p2p], "failure": []},
                                                     "FAIL_TO_FAIL": empty, "PASS_TO_FAIL": empty}}
    missing = instance_report(inst, pred, applied=True, statuses={f2p: "PASSED"})  # a test not in the output fails
    assert not missing["resolved"] and missing["tests_status"]["PASS_TO_PASS"]["failure"] == [p2p]
    errored = instance_report(inst, pred, applied=True, statuses={f2p: "ERROR", p2p: "PASSED"})
    assert not errored["resolved"] and errored["tests_status"]["FAIL_TO_PASS"]["failure"] == [f2p]
    # a skipped test counts for nothing either way, as in the harness's grading
    skipped = instance_report(inst, pred, applied=True, statuses={f2p: "PASSED", p2p: "SKIPPED"})
    assert skipped["resolved"] and skipped["tests_status"]["PASS_TO_PASS"] == empty
    all_skipped = instance_report(inst, pred, applied=True, statuses={f2p: "SKIPPED", p2p: "PASSED"})
    assert all_skipped["resolved"] and all_skipped["tests_status"]["FAIL_TO_PASS"] == empty
    not_applied = instance_report(inst, pred, applied=False, statuses=None)
    assert not_applied["resolved"] is False and "tests_status" not in not_applied
    none = instance_report(inst, Prediction(instance_id=inst.instance_id), applied=False, statuses=None)
    assert none["patch_is_None"] and not none["patch_exists"]


def test_the_run_summary_counts_as_the_harness_does():
    reports = {"a": {"patch_exists": True, "resolved": True}, "b": {"patch_exists": True, "resolved": False},
               "c": {"patch_exists": False, "patch_is_None": True}, "e": {"patch_exists": True, "resolved": False}}
    s = summary(reports, errors={"d": "environment failed", "e": "the prediction does not apply"})
    assert s["resolved_ids"] == ["a"] and s["unresolved_ids"] == ["b"] and s["empty_patch_ids"] == ["c"]
    assert s["error_ids"] == ["d", "e"] and s["total_instances"] == 5 and s["completed_instances"] == 2
