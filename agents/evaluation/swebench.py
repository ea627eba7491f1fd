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

from agents.evaluation.testlogs import PASSING
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


def patched_files(test_patch: str) -> list[str]:
    """The files a test patch touches that the harness runs (for runners that take files): data files (a
    template's ``.txt``, a fixture's ``.json``...) are left out, as the harness leaves them out -- given to pytest,
    ``test*.txt`` would be collected as doctests."""
    files = []
    for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", test_patch, re.MULTILINE):
        if m.group(2) not in files and not m.group(2).endswith(NON_TEST_EXTS):
            files.append(m.group(2))
    return files


def status_by_list(instance: Instance, statuses: dict[str, str]) -> dict[str, dict[str, list[str]]]:
    def split(tests: list[str]) -> dict[str, list[str]]:
        return {"success": [t for t in tests if statuses.get(t) in PASSING],
                "failure": [t for t in tests if statuses.get(t) not in PASSING]}
    return {"FAIL_TO_PASS": split(instance.FAIL_TO_PASS), "PASS_TO_PASS": split(instance.PASS_TO_PASS)}


def instance_report(instance: Instance, prediction: Prediction | None, *, applied: bool,
                    statuses: dict[str, str] | None) -> dict[str, Any]:
    """The harness-compatible report of one instance."""
    patch = prediction.model_patch if prediction is not None else None
    report: dict[str, Any] = {"patch_is_None": patch is None, "patch_exists": bool(patch and patch.strip()),
                              "patch_successfully_applied": applied, "resolved": False}
    if applied and statuses is not None:
        status = status_by_list(instance, statuses)
        report["tests_status"] = status
        report["resolved"] = not status["FAIL_TO_PASS"]["failure"] and not status["PASS_TO_PASS"]["failure"]
    return report


def summary(reports: dict[str, dict[str, Any]], errors: dict[str, str]) -> dict[str, Any]:
    """``{resolved_ids, unresolved_ids, error_ids, empty_patch_ids}`` and counts, as the harness's run report."""
    empty = sorted(i for i, r in reports.items() if not r.get("patch_exists"))
    resolved = sorted(i for i, r in reports.items() if r.get("resolved"))
    unresolved = sorted(i for i, r in reports.items() if not r.get("resolved") and r.get("patch_exists")
                        and i not in errors)
    return {"total_instances": len(reports) + len([e for e in errors if e not in reports]),
            "completed_instances": len(reports) - len([e for e in errors if e in reports]),
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
