"""SWE-bench rows in, the harness's report out: parsing (list fields as JSON strings), gold/empty predictions,
bad input named by line, and the verdict per instance and per test."""

from __future__ import annotations

import json

import pytest

from evaluation.swebench import (
    Instance,
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
    assert s["completed_ids"] == ["a", "b"] and s["incomplete_ids"] == [] and s["schema_version"] == 2
    assert s["submitted_ids"] == ["a", "b", "c", "d", "e"] and s["submitted_instances"] == 5
    # an instance without a prediction is incomplete: counted in the total, not run, not empty
    s = summary({"a": reports["a"]}, {}, incomplete=["z"], submitted=["a"])
    assert s["incomplete_ids"] == ["z"] and s["total_instances"] == 2 and s["submitted_ids"] == ["a"]
    assert s["empty_patch_ids"] == [] and s["error_ids"] == []


def test_predictions_as_the_harness_reads_them(tmp_path):
    """JSONL, a JSON list, or SWE-agent's preds.json (an object keyed by instance id: an entry without an
    instance_id takes its key); a later row for an instance replaces an earlier one."""
    rows = [ROW | {"instance_id": f"psf__requests-{n}"} for n in (1, 2)]
    insts = load_instances(write(tmp_path, rows))
    keyed = tmp_path / "preds.json"
    keyed.write_text(json.dumps({"psf__requests-1": {"model_name_or_path": "sweagent", "model_patch": "a"},
                                 "psf__requests-2": {"instance_id": "psf__requests-2", "model_patch": None}},
                                indent=2))
    got = load_predictions(str(keyed), insts)
    assert got["psf__requests-1"].model_patch == "a" and got["psf__requests-1"].instance_id == "psf__requests-1"
    assert got["psf__requests-2"].model_patch is None
    one = tmp_path / "one.json"  # one prediction, pretty-printed
    one.write_text(json.dumps({"instance_id": "psf__requests-2", "model_patch": "b"}, indent=2))
    assert load_predictions(str(one), insts)["psf__requests-2"].model_patch == "b"
    twice = write(tmp_path, [{"instance_id": "psf__requests-1", "model_patch": p} for p in ("old", "new")], "t.jsonl")
    assert load_predictions(str(twice), insts)["psf__requests-1"].model_patch == "new"
    # a prediction for an instance outside --ids is fine when the instances file has it
    assert load_predictions(str(keyed), insts[:1], known={"psf__requests-1", "psf__requests-2"})


@pytest.mark.parametrize("content,message", [
    ({"psf__requests-1": {"instance_id": "psf__requests-2", "model_patch": "a"}},
     r'preds.json\["psf__requests-1"\]: its instance_id \("psf__requests-2"\) differs from its key'),
    ({"psf__requests-1": {"instance_id": None, "model_patch": "a"}}, r"its instance_id \(null\) differs"),
    ({"psf__requests-1": "just a patch"}, r'preds.json\["psf__requests-1"\]: expected a JSON object'),
    ([{"instance_id": "nowhere__x-1", "model_patch": "a"}], r"1 prediction\(s\) for instances --instances does "
                                                            r"not have \(nowhere__x-1\)"),
    ([], "no predictions"),
    ([{"model_patch": "a"}], r"preds.json\[0\]: .*instance_id"),
])
def test_bad_predictions_are_named_where_they_are(tmp_path, content, message):
    insts = load_instances(write(tmp_path, [ROW | {"instance_id": "psf__requests-1"}]))
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(content))
    with pytest.raises(ConfigError, match=message):
        load_predictions(str(path), insts)


def test_files_that_are_not_rows_get_a_clear_error(tmp_path):
    parquet = tmp_path / "test-00000-of-00001.parquet"
    parquet.write_bytes(b"PAR1\x15\x04\x15\x80\x01" + bytes(range(256)))
    with pytest.raises(ConfigError, match=r"a Parquet file; bosun reads JSONL or JSON: .* read_parquet"):
        load_instances(parquet)
    with pytest.raises(ConfigError, match=r"--predictions .*a Parquet file"):
        load_predictions(str(parquet), [])
    keyed = tmp_path / "instances.json"  # instances are rows, not an object keyed by id
    keyed.write_text(json.dumps({ROW["instance_id"]: ROW}))
    with pytest.raises(ConfigError, match="one JSON object without an instance_id"):
        load_instances(keyed)
    assert load_instances(write(tmp_path, [ROW]))[0].instance_id == ROW["instance_id"]  # one row, one line


def test_a_patch_of_whitespace_exists_as_the_harness_sees_it():
    """The harness runs any prediction but "" and null (whitespace then fails to apply: an error, not empty)."""
    inst = Instance.model_validate(ROW)
    report = instance_report(inst, Prediction(instance_id=inst.instance_id, model_patch=" \n"), applied=False,
                             statuses=None)
    assert report["patch_exists"] and not report["patch_is_None"]
    assert not instance_report(inst, Prediction(instance_id=inst.instance_id, model_patch=""), applied=False,
                               statuses=None)["patch_exists"]


@pytest.mark.parametrize("text,message", [
    ("5\n", "expected a JSON object per instance"),
    ("\n  \n", "no instances"),
    ("", "no instances"),
    ("[" * 100_000, "nested too deeply"),
    ('{\n  "instance_id": "a",\n  "repo": \n}\n',
     r"instances.json: not valid JSON \(Expecting value at line 4 column 1\)"),
    ('{"instance_id": "a"}\n{"instance_id": \n', r"instances.json:2: not valid JSON .*one JSON object per line"),
])
def test_files_of_no_rows_or_broken_json_are_refused_saying_where(tmp_path, text, message):
    """A broken pretty-printed object is named by the whole file's line, a broken JSONL row by its own."""
    path = tmp_path / "instances.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_instances(path)


def test_a_byte_order_mark_and_line_separators_in_patches_are_read(tmp_path):
    """A BOM (some Windows tools write one) is dropped; only newlines end a JSONL row: a patch written with
    ensure_ascii=False may hold U+2028 or U+0085, which str.splitlines would split on."""
    patch = "diff --git a/x b/x\n+a line\u2028with a separator\u0085\n"
    rows = [ROW | {"instance_id": "psf__requests-1", "patch": patch}, ROW | {"instance_id": "psf__requests-2"}]
    path = tmp_path / "instances.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + "".join(json.dumps(r, ensure_ascii=False) + "\r\n" for r in rows).encode())
    insts = load_instances(path)
    assert [i.instance_id for i in insts] == ["psf__requests-1", "psf__requests-2"] and insts[0].patch == patch

    # rows ended by a lone CR (old Mac tools), a CR being no more possible inside a row than a newline
    path.write_bytes("".join(json.dumps(r, ensure_ascii=False) + "\r" for r in rows).encode())
    insts = load_instances(path)
    assert [i.instance_id for i in insts] == ["psf__requests-1", "psf__requests-2"] and insts[0].patch == patch
