"""The evaluation's report as the CLI assembles it (no stack): the judged instances' reports, the empty predictions
reported without a child, the instances without a prediction counted as the harness counts them."""

from __future__ import annotations

from agents.evaluation.swebench import Instance, Prediction, instance_report
from infra.artifacts import ArtifactStore
from infra.entry.cli_eval import _report
from workflows.eval import EvalResult, InstanceOutcome

ROW = {"repo": "psf/requests", "base_commit": "091991be0da19de9108dbe5e3752917fea3d7fdc", "test_patch": "",
       "FAIL_TO_PASS": ["t.py::test_a"]}


def _judged(store: ArtifactStore, iid: str, resolved: bool) -> InstanceOutcome:
    inst = Instance(instance_id=iid, **ROW)
    report = instance_report(inst, Prediction(instance_id=iid, model_patch="diff"), applied=True,
                             statuses={"t.py::test_a": "PASSED" if resolved else "FAILED"})
    return InstanceOutcome(instance_id=iid, resolved=resolved, applied=True, report_ref=store.put_json({iid: report}))


def test_judged_empty_and_missing_predictions_are_each_counted_once(tmp_path):
    store = ArtifactStore(tmp_path)
    result = EvalResult(run_id="r", outcomes=[
        _judged(store, "a-1", True), _judged(store, "b-1", False),
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
