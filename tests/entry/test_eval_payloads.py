"""The evaluation's workflow input stays within Temporal's payload limit for the largest SWE-bench set: every item
travels in one payload (the EvalWorkflow's input), so what an item holds is bounded (no model, no stack)."""

from __future__ import annotations

import json

import pytest
from temporalio.contrib.pydantic import pydantic_data_converter

from entry.cli_eval import _items, check_input_size
from evaluation.swebench import Instance, Prediction
from evaluation.workflow import EvalInput, Variant
from infra.artifacts import ArtifactStore
from infra.errors import ConfigError

PAYLOAD_ERROR_BYTES = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server refuses a workflow input above it)."""
FULL_TEST_SET = 2294
"""Instances in SWE-bench's full test set."""


def _instances(n: int, statement_bytes: int) -> list[Instance]:
    return [Instance(instance_id=f"scikit-learn__scikit-learn-{10000 + i}", repo="scikit-learn/scikit-learn",
                     base_commit=f"{i:040x}", environment_setup_commit="f" * 40, version="1.3",
                     patch="diff --git a/x b/x\n", test_patch="diff --git a/t b/t\n",
                     FAIL_TO_PASS=["sklearn/tests/test_x.py::test_one"],
                     problem_statement="A problem statement, as long as the long ones are. " * (statement_bytes // 52))
            for i in range(n)]


def test_judging_the_full_test_set_fits_one_workflow_input(tmp_path):
    """Judging given predictions, the problem statements stay in the instances' rows: the 2,294 instances of the
    full test set with 2 KB statements (SWE-bench's average is about half that) fit in one input; with the
    statements inline they would not."""
    store = ArtifactStore(tmp_path)
    insts = _instances(FULL_TEST_SET, 2048)
    preds = {i.instance_id: Prediction(instance_id=i.instance_id, model_name_or_path="m", model_patch=i.patch)
             for i in insts}
    repos = {"scikit-learn/scikit-learn": "/srv/mirrors/scikit-learn/scikit-learn"}
    items = _items(insts, repos, store, preds)
    [payload] = pydantic_data_converter.payload_converter.to_payloads(
        [EvalInput(run_id="full", items=items, max_parallel=2, timeout_s=1800)])
    assert len(payload.data) < 0.6 * PAYLOAD_ERROR_BYTES, len(payload.data)  # about 1.1 MB
    check_input_size(EvalInput(run_id="full", items=items))  # (accepted)
    assert all(not it.task for it in items)
    # the row the instance's judging reads still holds everything, the statement included
    assert store.get_json(items[0].instance_ref)["problem_statement"] == insts[0].problem_statement
    inline = sum(len(json.dumps(i.problem_statement)) for i in insts)
    assert len(payload.data) + inline > PAYLOAD_ERROR_BYTES  # what the statements would have added


def test_agent_mode_keeps_the_problem_statement_for_the_agents(tmp_path):
    [inst] = _instances(1, 300)
    [item] = _items([inst], {inst.repo: "/srv/x"}, ArtifactStore(tmp_path), None)
    assert item.task == inst.problem_statement and item.prediction_ref is None


def test_an_input_too_large_for_one_payload_is_refused_before_anything_starts(tmp_path):
    """Agent mode carries each problem statement in the input: 1,000 instances of 2 KB pass Temporal's payload
    limit, so the CLI refuses them (exit 2) instead of the server refusing the start, saying how to split them."""
    insts = _instances(1000, 2048)
    items = _items(insts, {insts[0].repo: "/srv/x"}, ArtifactStore(tmp_path), None)
    inp = EvalInput(run_id="big", items=items, variants=[Variant(name="default")])
    with pytest.raises(ConfigError, match=r"input is 2\.\d MB \(1000 instances with their problem statements\), "
                                          r"more than Temporal takes .* split the instances .* with --ids"):
        check_input_size(inp)
    check_input_size(EvalInput(run_id="half", items=items[:500], variants=[Variant(name="default")]))

