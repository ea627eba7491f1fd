"""SWE-bench-format instances and predictions, and the per-instance report.

An instance row has ``instance_id, repo, base_commit, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS`` (the list
fields may be JSON strings, as in the published data) and optionally ``version``, ``environment_setup_commit``,
``problem_statement``. A prediction row is ``{instance_id, model_name_or_path, model_patch}``.

The report of an instance matches the SWE-bench harness's ``report.json`` entry::

    {"patch_is_None", "patch_exists", "patch_successfully_applied", "resolved",
     "tests_status": {"FAIL_TO_PASS": {"success": [...], "failure": [...]},
                      "PASS_TO_PASS": {"success": [...], "failure": [...]}}}

resolved = every FAIL_TO_PASS and every PASS_TO_PASS test passes (a test missing from the output fails).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from agents.evaluation.testlogs import ERROR, FAILED, PASSING
from infra.artifacts import ArtifactStore
from infra.errors import BosunError, ConfigError, describe_validation

INSTANCE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$")


def _list(value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else []
        except json.JSONDecodeError:
            raise ValueError("not a JSON list of test names") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("expected a list of test names (or a JSON string holding one)")
    return value


class Instance(BaseModel):
    instance_id: str
    repo: str
    base_commit: str = Field(pattern=r"^[0-9a-f]{7,64}$")
    patch: str = ""
    test_patch: str
    FAIL_TO_PASS: list[str]
    PASS_TO_PASS: list[str] = []
    version: str | None = None
    environment_setup_commit: str | None = None
    problem_statement: str = ""

    model_config = {"extra": "ignore"}

    @field_validator("instance_id")
    @classmethod
    def _id(cls, v: str) -> str:
        if not INSTANCE_ID.match(v):
            raise ValueError("an instance id is letters, digits, '_', '.', '-' (e.g. astropy__astropy-12907)")
        return v

    @field_validator("repo")
    @classmethod
    def _repo(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$", v):
            raise ValueError("expected owner/name, e.g. psf/requests")
        return v

    @field_validator("FAIL_TO_PASS", "PASS_TO_PASS", mode="before")
    @classmethod
    def _tests(cls, v: Any) -> list[str]:
        return _list(v)


class Prediction(BaseModel):
    instance_id: str
    model_name_or_path: str = ""
    model_patch: str | None = None

    model_config = {"extra": "ignore"}


def _rows(path: Path, what: str) -> list[tuple[int, dict]]:
    """(line number, object) of a JSONL file, or of a JSON file holding a list; ConfigError naming the line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"--{what} {path}: cannot read it ({e.strerror})") from None
    except UnicodeDecodeError:
        raise ConfigError(f"--{what} {path}: not UTF-8 text") from None
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as e:
            raise ConfigError(f"--{what} {path}: not valid JSON ({e.msg} at line {e.lineno})") from None
        return [(i + 1, item) for i, item in enumerate(items)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except json.JSONDecodeError as e:
            raise ConfigError(f"--{what} {path}:{n}: not valid JSON ({e.msg} at column {e.colno}); one JSON "
                              "object per line") from None
    return rows


def load_instances(path: Path, ids: list[str] | None = None) -> list[Instance]:
    out, seen = [], set()
    for n, row in _rows(path, "instances"):
        if not isinstance(row, dict):
            raise ConfigError(f"--instances {path}:{n}: expected a JSON object per instance")
        try:
            inst = Instance.model_validate(row)
        except ValidationError as e:
            raise ConfigError(f"--instances {path}:{n}: {describe_validation(e, where='(instance)')}") from None
        if inst.instance_id in seen:
            raise ConfigError(f"--instances {path}:{n}: instance {inst.instance_id} appears twice")
        seen.add(inst.instance_id)
        out.append(inst)
    if ids:
        unknown = [i for i in ids if i not in seen]
        if unknown:
            raise ConfigError(f"--ids: no instance {', '.join(unknown[:5])} in {path}")
        out = [i for i in out if i.instance_id in set(ids)]
    if not out:
        raise ConfigError(f"--instances {path}: no instances")
    return out


def load_predictions(source: str, instances: list[Instance]) -> dict[str, Prediction]:
    """Predictions by instance id: from a JSONL/JSON file, or ``gold`` (each instance's patch) or ``empty``."""
    if source == "gold":
        return {i.instance_id: Prediction(instance_id=i.instance_id, model_name_or_path="gold",
                                          model_patch=i.patch) for i in instances}
    if source == "empty":
        return {i.instance_id: Prediction(instance_id=i.instance_id, model_name_or_path="empty", model_patch="")
                for i in instances}
    out: dict[str, Prediction] = {}
    for n, row in _rows(Path(source), "predictions"):
        try:
            pred = Prediction.model_validate(row)
        except ValidationError as e:
            raise ConfigError(f"--predictions {source}:{n}: {describe_validation(e, where='(prediction)')}") \
                from None
        out[pred.instance_id] = pred
    return out


NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
"""Files of a test patch the harness does not give the test runner (data, not tests; ``csv`` without its dot as
the harness spells it)."""
_PATCHED = re.compile(r"diff --git a/.* b/(.*)")


def patched_files(test_patch: str) -> list[str]:
    """The files a test patch touches, as the harness finds them (the path after the last `` b/`` of each
    ``diff --git`` line), without its data files (a template's ``.txt``, a fixture's ``.json``...): given to
    pytest, ``test*.txt`` would be collected as doctests. In the patch's order, repeats kept, as the harness
    passes them."""
    return [f for f in _PATCHED.findall(test_patch) if not f.endswith(NON_TEST_EXTS)]


def touched_files(test_patch: str) -> list[str]:
    """Every file a test patch touches (data files too), once each: the files reset to the base commit before it
    is applied."""
    return list(dict.fromkeys(_PATCHED.findall(test_patch)))


def tests_status(instance: Instance, statuses: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    """The harness's ``tests_status`` (as in the releases that produced the published SWE-bench Verified results):
    a FAIL_TO_PASS or PASS_TO_PASS test is a success when it passed (or failed as expected), a failure when it
    failed, errored or is missing from the output; a skipped test is neither (it counts for nothing). FAIL_TO_FAIL
    and PASS_TO_FAIL are listed empty, as in the harness's reports."""
    def split(tests: list[str]) -> dict[str, list[str]]:
        success = [t for t in tests if statuses.get(t) in PASSING]
        failure = [t for t in tests if t not in statuses or statuses[t] in (FAILED, ERROR)]
        return {"success": success, "failure": failure}
    return {"FAIL_TO_PASS": split(instance.FAIL_TO_PASS), "PASS_TO_PASS": split(instance.PASS_TO_PASS),
            "FAIL_TO_FAIL": {"success": [], "failure": []}, "PASS_TO_FAIL": {"success": [], "failure": []}}


def resolved(status: dict[str, dict[str, list[str]]]) -> bool:
    """Fully resolved, as the harness decides it: no FAIL_TO_PASS and no PASS_TO_PASS test is a failure."""
    return not status["FAIL_TO_PASS"]["failure"] and not status["PASS_TO_PASS"]["failure"]


def instance_report(instance: Instance, prediction: Prediction | None, *, applied: bool,
                    statuses: dict[str, str] | None) -> dict[str, Any]:
    """The harness-compatible report of one instance. ``applied``: the prediction applied and the tests ran to
    their end (``statuses``: what the output said of each test); a prediction that does not apply, or whose tests
    ran out of time, has no verdict per test."""
    patch = prediction.model_patch if prediction is not None else None
    report: dict[str, Any] = {"patch_is_None": patch is None, "patch_exists": bool(patch and patch.strip()),
                              "patch_successfully_applied": applied, "resolved": False}
    if applied and statuses is not None:
        status = tests_status(instance, statuses)
        report["tests_status"] = status
        report["resolved"] = resolved(status)
    return report


def summary(reports: dict[str, dict[str, Any]], errors: dict[str, str]) -> dict[str, Any]:
    """The harness's run report: ``{resolved_ids, unresolved_ids, error_ids, empty_patch_ids}`` and their counts.
    An instance is an error when it could not be judged, or -- as the harness counts it -- when its prediction
    does not apply; one with an empty prediction is not run; the others were completed, resolved or not."""
    empty = sorted(i for i, r in reports.items() if not r.get("patch_exists") and i not in errors)
    completed = [i for i, r in reports.items() if r.get("patch_exists") and i not in errors]
    resolved = sorted(i for i in completed if reports[i].get("resolved"))
    unresolved = sorted(i for i in completed if not reports[i].get("resolved"))
    return {"total_instances": len(set(reports) | set(errors)), "completed_instances": len(completed),
            "resolved_instances": len(resolved), "unresolved_instances": len(unresolved),
            "empty_patch_instances": len(empty), "error_instances": len(errors),
            "resolved_ids": resolved, "unresolved_ids": unresolved, "error_ids": sorted(errors),
            "empty_patch_ids": empty}


def merge_reports(store: ArtifactStore, refs: list[str]) -> dict[str, Any]:
    """The per-instance reports behind ``refs`` as one ``{instance_id: report}`` mapping."""
    out: dict[str, Any] = {}
    for ref in refs:
        try:
            out.update(store.get_json(ref))
        except (BosunError, OSError, json.JSONDecodeError):
            continue
    return out
