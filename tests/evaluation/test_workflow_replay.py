"""Evaluations recorded by earlier versions of the code replay deterministically with today's workflows: a worker
upgraded while an evaluation runs picks it up where it was. Recorded on the embedded stack with ``--max-parallel
1`` (the second instance started ahead and waited for its go signal); the histories are kept in ``histories/``:

- ``eval-old-gated*``: commit fee23af, before the ``eval-outcomes-by-child`` patch, with a prediction of null still
  sent to a child;
- ``eval-bychild*``: commit d419b34, before the ``eval-continue-as-new`` patch (one run; the outcomes of children
  that failed held in the result);
- ``eval-runs*``: with ``BOSUN_EVAL_JOBS_PER_RUN=1``, two runs (``.run1``, ``.run2``) chained by continue-as-new,
  each keeping its outcomes in the artifact store (the form of today's code: a change to its commands fails
  here)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from evaluation.workflow import EvalInstanceWorkflow, EvalWorkflow

HISTORIES = Path(__file__).parent / "histories"
RECORDED = [p for kind in ("eval-old-gated", "eval-bychild", "eval-runs")
            for p in sorted(HISTORIES.glob(f"{kind}*.json"))]


def _history(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(path.stem.split(".")[0].replace("__", "/"), path.read_text())


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_an_evaluation_recorded_before_replays(path):
    replayer = Replayer(workflows=[EvalWorkflow, EvalInstanceWorkflow], data_converter=pydantic_data_converter)
    result = asyncio.run(replayer.replay_workflow(_history(path), raise_on_replay_failure=False))
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_the_recorded_evaluation_returned_every_outcome():
    """What the CLI must still read (an evaluation started before it names its children): the outcomes held in
    the result itself, and no patch marker of the new form in the history."""
    events = json.loads((HISTORIES / "eval-old-gated.json").read_text())["events"]
    assert len(RECORDED) == 10
    done = [e for e in events if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"]
    [payload] = done[0]["workflowExecutionCompletedEventAttributes"]["result"]["payloads"]
    result = pydantic_data_converter.payload_converter.from_payloads([_payload(payload)])[0]
    assert sorted(o["instance_id"] for o in result["outcomes"]) == ["calc__median-1", "calc__percent-1"]
    assert "children" not in result
    assert _patches(events) == {"eval-fetch-ahead", "eval-judge-ahead"}


def _payload(doc: dict):
    from google.protobuf import json_format
    from temporalio.api.common.v1 import Payload
    return json_format.ParseDict(doc, Payload())


def test_the_evaluation_recorded_before_continue_as_new_named_its_children():
    """The form the CLI reads for an evaluation started before ``eval-continue-as-new``: its result names the
    children, one run (no continue-as-new event), no marker of the new patch."""
    events = json.loads((HISTORIES / "eval-bychild.json").read_text())["events"]
    done = [e for e in events if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"]
    [payload] = done[0]["workflowExecutionCompletedEventAttributes"]["result"]["payloads"]
    result = pydantic_data_converter.payload_converter.from_payloads([_payload(payload)])[0]
    assert result["outcomes"] == [] and result["children"] == ["eval-bychild/calc__median-1",
                                                                "eval-bychild/calc__percent-1"]
    assert _patches(events) == {"eval-outcomes-by-child", "eval-fetch-ahead", "eval-judge-ahead"}
    assert not [e for e in events if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"]


def test_the_recorded_evaluation_in_two_runs_kept_its_outcomes():
    """Today's form: the first run continued as new carrying where it was and its outcomes' ref; the second
    returned both refs and no outcome in the result."""
    first = json.loads((HISTORIES / "eval-runs.run1.json").read_text())["events"]
    second = json.loads((HISTORIES / "eval-runs.run2.json").read_text())["events"]
    [cont] = [e for e in first if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"]
    [payload] = cont["workflowExecutionContinuedAsNewEventAttributes"]["input"]["payloads"]
    carried = pydantic_data_converter.payload_converter.from_payloads([_payload(payload)])[0]["carried"]
    assert (carried["start"], carried["done"], carried["resolved"], len(carried["kept"])) == (1, 1, 1, 1)
    done = [e for e in second if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED"]
    [payload] = done[0]["workflowExecutionCompletedEventAttributes"]["result"]["payloads"]
    result = pydantic_data_converter.payload_converter.from_payloads([_payload(payload)])[0]
    assert result["outcomes"] == [] and result["children"] == [] and result["kept"][0] == carried["kept"][0]
    assert len(result["kept"]) == 2
    assert "eval-continue-as-new" in _patches(first) and "eval-continue-as-new" in _patches(second)


def _patches(events: list[dict]) -> set[str]:
    return {json.loads(base64.b64decode(p["data"]))["id"]
            for e in events if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
            for p in e["markerRecordedEventAttributes"]["details"]["patch-data"]["payloads"]}
