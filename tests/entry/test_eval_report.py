"""The evaluation's report as the CLI assembles it (no stack): the judged instances' reports, the empty predictions
reported without a child, the instances without a prediction counted as the harness counts them."""

from __future__ import annotations

import pytest

from entry.cli_eval import _difference, _judged, _report, _variant, error_rates
from evaluation.swebench import Instance, Prediction, instance_report
from evaluation.workflow import EvalInput, EvalItem, EvalResult, InstanceOutcome, Variant
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError

ROW = {"repo": "psf/requests", "base_commit": "091991be0da19de9108dbe5e3752917fea3d7fdc", "test_patch": "",
       "FAIL_TO_PASS": ["t.py::test_a"]}


def _outcome(store: ArtifactStore, iid: str, resolved: bool) -> InstanceOutcome:
    inst = Instance(instance_id=iid, **ROW)
    report = instance_report(inst, Prediction(instance_id=iid, model_patch="diff"), applied=True,
                             statuses={"t.py::test_a": "PASSED" if resolved else "FAILED"})
    return InstanceOutcome(instance_id=iid, resolved=resolved, applied=True, report_ref=store.put_json({iid: report}))


def test_judged_empty_and_missing_predictions_are_each_counted_once(tmp_path):
    store = ArtifactStore(tmp_path)
    result = EvalResult(run_id="r", outcomes=[
        _outcome(store, "a-1", True), _outcome(store, "b-1", False),
        InstanceOutcome(instance_id="c-1", error="the prediction does not apply", error_kind="apply")])
    empty = {"d-1": instance_report(Instance(instance_id="d-1", **ROW), Prediction(instance_id="d-1", model_patch=""),
                                    applied=False, statuses=None)}
    report = _report(store, result, empty=empty, incomplete=["e-1"], submitted=["a-1", "b-1", "c-1", "d-1", "x-9"])
    s = report["summary"]
    assert (s["resolved_ids"], s["unresolved_ids"], s["error_ids"], s["empty_patch_ids"], s["incomplete_ids"]) == \
        (["a-1"], ["b-1"], ["c-1"], ["d-1"], ["e-1"])
    assert s["total_instances"] == 5 and s["completed_ids"] == ["a-1", "b-1"] and s["submitted_instances"] == 5
    assert set(report["instances"]) == {"a-1", "b-1", "d-1"} and set(report["timing"]) == {"a-1", "b-1", "c-1"}
    assert report["errors"]["c-1"]["kind"] == "apply"


def test_an_instance_judged_by_an_earlier_cli_is_not_also_incomplete(tmp_path):
    """Following an evaluation started before instances without a prediction were left out (the same --run-id):
    its child reported such an instance (patch null); it is counted once, as empty."""
    store = ArtifactStore(tmp_path)
    inst = Instance(instance_id="e-1", **ROW)
    old = instance_report(inst, Prediction(instance_id="e-1"), applied=False, statuses=None)
    outcome = InstanceOutcome(instance_id="e-1", report_ref=store.put_json({"e-1": old}))
    result = EvalResult(run_id="r", outcomes=[outcome])
    s = _report(store, result, incomplete=["e-1"], submitted=[])["summary"]
    assert s["incomplete_ids"] == [] and s["empty_patch_ids"] == ["e-1"] and s["total_instances"] == 1


def _input(**over) -> EvalInput:
    items = [EvalItem(instance_id=i, repo="psf/requests", base_commit="0" * 40, source="/srv/r",
                      instance_ref=f"sha256:{i}-row", prediction_ref=f"sha256:{i}-pred") for i in ("a-1", "b-1")]
    return EvalInput(**{"run_id": "r", "items": items, "max_parallel": 2, "timeout_s": 1800.0, **over})


def test_an_earlier_evaluation_is_the_same_only_when_it_judges_the_same_things():
    """What the same --run-id may follow or report: the same rows and predictions (by content), variants and time
    limit; --max-parallel may differ; items an earlier CLI sent for empty or missing predictions do not count."""
    mine = _input()
    assert _judged(_input(max_parallel=8)) == _judged(mine)
    older = _input(items=[*mine.items, EvalItem(instance_id="c-1", repo="psf/requests", base_commit="0" * 40,
                                                source="/srv/r", instance_ref="sha256:c", empty_prediction=True)])
    assert _judged(older) == _judged(mine)
    cases = {
        "it does not judge b-1": _input(items=mine.items[:1]),
        "it also judges b-1": None,
        "its row of a-1 differs": _input(items=[mine.items[0].model_copy(update={"instance_ref": "sha256:x"}),
                                                 mine.items[1]]),
        "its prediction for b-1 differs": _input(items=[mine.items[0],
                                                        mine.items[1].model_copy(update={"prediction_ref": "y"})]),
        "its variants differ (fast)": _input(variants=[Variant(name="fast", task={"model": "m"})]),
        "its --timeout is 60": _input(timeout_s=60),
    }
    for said, theirs in cases.items():
        if theirs is None:  # this command judges less than the earlier one
            assert _difference(_judged(_input(items=mine.items[:1])), _judged(mine)) == said
            continue
        assert _judged(theirs) != _judged(mine) and _difference(_judged(mine), _judged(theirs)) == said


def test_tool_error_rates_are_errors_by_class_over_tool_calls():
    assert error_rates({"tool_calls": 8, "tool_errors": {"ToolFailed": 2, "InvalidArguments": 1}}) == {
        "InvalidArguments": 0.125, "ToolFailed": 0.25}
    assert error_rates({"tool_calls": 0, "tool_errors": {}}) == {} and error_rates({}) == {}


def test_a_variant_file_that_cannot_be_read_or_is_not_json_is_refused(tmp_path):
    store, bad = ArtifactStore(tmp_path / "store"), tmp_path / "bad.json"
    bad.write_text("{model: gpt}")
    with pytest.raises(ConfigError, match=r"^--variant v: .*bad.json: not JSON \(Expecting property name"):
        _variant(f"v={bad}", "openai:gpt-5", "solo", store)
    with pytest.raises(ConfigError, match=r"^--variant v: .*none.json: cannot read it \(No such file"):
        _variant(f"v={tmp_path / 'none.json'}", "openai:gpt-5", "solo", store)
