"""SWE-bench-format instances and predictions, and the per-instance report.

An instance row has ``instance_id, repo, base_commit, patch, test_patch, FAIL_TO_PASS, PASS_TO_PASS`` (the list
fields may be JSON strings, as in the published data) and optionally ``version``, ``environment_setup_commit``,
``problem_statement``, ``created_at``. A prediction row is ``{instance_id, model_name_or_path, model_patch}``.
Both files are JSONL or a JSON list; predictions may also be a JSON object keyed by instance id (SWE-agent's
``preds.json``), as the harness reads them.

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

from evaluation.testlogs import ERROR, FAILED, PASSING
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
    created_at: str | None = None
    """When the fix's pull request was made (SWE-bench's field): for a row without ``version``, the moment some
    repositories' versions are found by (evaluation/versions.py)."""

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


def _rows(path: Path, what: str, keyed: bool = False) -> list[tuple[str, Any]]:
    """(where, object) of a JSONL file, a JSON list, or -- ``keyed`` -- a JSON object keyed by instance id (SWE-agent's
    ``preds.json``, which the harness reads too; an entry without an ``instance_id`` takes its key, one whose
    ``instance_id`` differs from its key is refused). ``where`` names the row for errors (``FILE:LINE``,
    ``FILE[INDEX]``, ``FILE[KEY]``); ConfigError for a file that is none of these."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigError(f"--{what} {path}: cannot read it ({e.strerror})") from None
    if data[:4] == b"PAR1":
        raise ConfigError(f"--{what} {path}: a Parquet file; bosun reads JSONL or JSON: convert it once, e.g. with "
                          "pandas: read_parquet(the file).to_json(a new .jsonl file, orient='records', lines=True)")
    try:
        text = data.decode("utf-8-sig")  # (a byte order mark is dropped)
    except UnicodeDecodeError:
        raise ConfigError(f"--{what} {path}: not UTF-8 text") from None
    stripped = text.lstrip()
    whole: Any = None
    if stripped.startswith(("[", "{")):
        try:
            whole = _json(text, f"--{what} {path}")
        except ConfigError:
            first = _LINE_END.split(stripped, 1)[0]
            if stripped.startswith("[") or not _is_object(first):
                raise  # (not JSONL either: the whole file's error says where)
            whole = None  # several objects, one per line: JSONL
    if isinstance(whole, list):
        return [(f"{path}[{i}]", item) for i, item in enumerate(whole)]
    if isinstance(whole, dict):
        if "instance_id" in whole:
            return [(f"{path}:1", whole)]
        if not keyed:
            raise ConfigError(f"--{what} {path}: one JSON object without an instance_id; expected one object per "
                              "line (JSONL) or a JSON list of them")
        rows: list[tuple[str, Any]] = []
        for key, item in whole.items():
            where = f"{path}[{json.dumps(key)}]"
            if isinstance(item, dict):
                if "instance_id" not in item:
                    item = {**item, "instance_id": key}
                elif item["instance_id"] != key:
                    raise ConfigError(f"--{what} {where}: its instance_id ({json.dumps(item['instance_id'])}) "
                                      "differs from its key; the object's keys are instance ids")
            rows.append((where, item))
        return rows
    rows = []
    for n, line in enumerate(_LINE_END.split(text), 1):
        if line.strip():
            rows.append((f"{path}:{n}", _json(line, f"--{what} {path}:{n}", "; one JSON object per line")))
    return rows


_LINE_END = re.compile(r"\r\n|\r|\n")
"""What ends a JSONL row: LF, CRLF or a lone CR (none can be inside a row: JSON escapes them in strings). Not
str.splitlines: a patch written with ensure_ascii=False may hold U+2028 or U+0085 unescaped."""


def _json(text: str, where: str, hint: str = "") -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{where}: not valid JSON ({e.msg} at line {e.lineno} column {e.colno}){hint}") from None
    except RecursionError:
        raise ConfigError(f"{where}: JSON nested too deeply") from None


def _is_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (json.JSONDecodeError, RecursionError):
        return False


def from_multi_swebench(row: dict[str, Any]) -> dict[str, Any]:
    """A Multi-SWE-bench row (``org``, ``repo``, ``number``, ``base.sha``, ``fix_patch``, ``test_patch``,
    ``f2p_tests``, ``p2p_tests``) as an instance's fields: ``org__repo-number``, the fix as the gold patch, the
    pull request's number as the version (its harness picks a repository's recipe by it)."""
    base = row.get("base") if isinstance(row.get("base"), dict) else {}
    return {"instance_id": f"{row.get('org')}__{row.get('repo')}-{row.get('number')}",
            "repo": f"{row.get('org')}/{row.get('repo')}", "base_commit": base.get("sha", ""),
            "patch": row.get("fix_patch", ""), "test_patch": row.get("test_patch", ""),
            "FAIL_TO_PASS": _names(row.get("f2p_tests")), "PASS_TO_PASS": _names(row.get("p2p_tests")),
            "version": str(row.get("number", "")), "created_at": row.get("created_at"),
            "problem_statement": _issue_text(row)}


def _names(tests: Any) -> Any:
    """Multi-SWE-bench's tests (an object keyed by test id, or a list) as a list of ids; anything else as it is, for
    the instance's validation to refuse."""
    return list(tests) if isinstance(tests, dict) else [] if tests is None else tests


def _issue_text(row: dict[str, Any]) -> str:
    issues = row.get("resolved_issues")
    if isinstance(issues, list) and issues and isinstance(issues[0], dict):
        return "\n\n".join(str(i.get("title", "")) + "\n" + str(i.get("body", "")) for i in issues[:5]
                           if isinstance(i, dict))
    return str(row.get("body") or row.get("title") or "")


def load_instances(path: Path, ids: list[str] | None = None) -> list[Instance]:
    """The instances of ``path`` (all of them, or those of ``ids``: see ``pick``): SWE-bench's rows, or
    Multi-SWE-bench's (``from_multi_swebench``)."""
    out, seen = [], set()
    for where, row in _rows(path, "instances"):
        if not isinstance(row, dict):
            raise ConfigError(f"--instances {where}: expected a JSON object per instance")
        if "base_commit" not in row and {"org", "number", "base"} <= set(row):
            row = from_multi_swebench(row)
        try:
            inst = Instance.model_validate(row)
        except ValidationError as e:
            raise ConfigError(f"--instances {where}: {describe_validation(e, where='(instance)')}") from None
        if inst.instance_id in seen:
            raise ConfigError(f"--instances {where}: instance {inst.instance_id} appears twice")
        seen.add(inst.instance_id)
        out.append(inst)
    if not out:
        raise ConfigError(f"--instances {path}: no instances")
    return pick(out, ids, path)


def pick(instances: list[Instance], ids: list[str] | None, path: Path) -> list[Instance]:
    """The instances of ``ids`` (``--ids``; all when none), in the file's order; ConfigError naming an id that
    ``path`` does not have."""
    if not ids:
        return instances
    known = {i.instance_id for i in instances}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ConfigError(f"--ids: no instance {', '.join(unknown[:5])} in {path}")
    return [i for i in instances if i.instance_id in set(ids)]


def load_predictions(source: str, instances: list[Instance], known: set[str] | None = None) -> dict[str, Prediction]:
    """Predictions by instance id: from a JSONL file, a JSON list or a JSON object keyed by instance id (as the
    harness reads them; a later row for the same instance replaces an earlier one, as there), or ``gold`` (each
    instance's patch) or ``empty``. A prediction for an instance not in ``known`` (the instances file's ids;
    default: those of ``instances``) is refused, as the harness refuses it."""
    if source == "gold":
        return {i.instance_id: Prediction(instance_id=i.instance_id, model_name_or_path="gold",
                                          model_patch=i.patch) for i in instances}
    if source == "empty":
        return {i.instance_id: Prediction(instance_id=i.instance_id, model_name_or_path="empty", model_patch="")
                for i in instances}
    out: dict[str, Prediction] = {}
    for where, row in _rows(Path(source), "predictions", keyed=True):
        if not isinstance(row, dict):
            raise ConfigError(f"--predictions {where}: expected a JSON object per prediction")
        try:
            pred = Prediction.model_validate(row)
        except ValidationError as e:
            raise ConfigError(f"--predictions {where}: {describe_validation(e, where='(prediction)')}") from None
        out[pred.instance_id] = pred
    if not out:
        raise ConfigError(f"--predictions {source}: no predictions")
    ids = known if known is not None else {i.instance_id for i in instances}
    foreign = sorted(set(out) - ids)
    if foreign:
        raise ConfigError(f"--predictions {source}: {len(foreign)} prediction(s) for instances --instances does not "
                          f"have ({', '.join(foreign[:5])}{', ...' if len(foreign) > 5 else ''}); pass the "
                          "instances file they were made for, or remove them (the harness refuses them too)")
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
    report: dict[str, Any] = {"patch_is_None": patch is None, "patch_exists": bool(patch),
                              "patch_successfully_applied": applied, "resolved": False}
    if applied and statuses is not None:
        status = tests_status(instance, statuses)
        report["tests_status"] = status
        report["resolved"] = resolved(status)
    return report


def summary(reports: dict[str, dict[str, Any]], errors: dict[str, str], *, incomplete: list[str] | None = None,
            submitted: list[str] | None = None) -> dict[str, Any]:
    """The harness's run report (its ``schema_version`` 2): ``{resolved_ids, unresolved_ids, error_ids,
    empty_patch_ids, completed_ids, incomplete_ids, submitted_ids}`` and their counts. An instance is an error when
    it could not be judged, or -- as the harness counts it -- when its prediction does not apply; one whose
    prediction is empty ("" or null) is not run; one without a prediction (``incomplete``) neither; the others
    were completed, resolved or not. ``submitted``: the instances predictions were given for (default: those
    reported)."""
    empty = sorted(i for i, r in reports.items() if not r.get("patch_exists") and i not in errors)
    completed = sorted(i for i, r in reports.items() if r.get("patch_exists") and i not in errors)
    resolved = sorted(i for i in completed if reports[i].get("resolved"))
    unresolved = sorted(i for i in completed if not reports[i].get("resolved"))
    incomplete = sorted(incomplete or [])
    submitted = sorted(submitted if submitted is not None else set(reports) | set(errors))
    return {"total_instances": len(set(reports) | set(errors) | set(incomplete)),
            "submitted_instances": len(submitted), "completed_instances": len(completed),
            "resolved_instances": len(resolved), "unresolved_instances": len(unresolved),
            "empty_patch_instances": len(empty), "error_instances": len(errors),
            "completed_ids": completed, "incomplete_ids": incomplete, "empty_patch_ids": empty,
            "submitted_ids": submitted, "resolved_ids": resolved, "unresolved_ids": unresolved,
            "error_ids": sorted(errors), "schema_version": 2}


def merge_reports(store: ArtifactStore, refs: list[str]) -> dict[str, Any]:
    """The per-instance reports behind ``refs`` as one ``{instance_id: report}`` mapping."""
    out: dict[str, Any] = {}
    for ref in refs:
        try:
            out.update(store.get_json(ref))
        except (BosunError, OSError, json.JSONDecodeError):
            continue
    return out
