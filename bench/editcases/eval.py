"""``bosun eval edits``: run an edit corpus through the engine (or a baseline) and score it.

Usage (``argv`` as given to :func:`eval_main`, i.e. without the leading ``eval``)::

    edits --cases CASES.jsonl [--out RESULTS.jsonl] [--strategy bosun|first-match|replace-all|exact-count]

Each input line is ``{"id", "format", "path", "original", "edit", "expected"}`` (plus optional ``category``):
``format`` is ``str_replace`` (``edit`` = ``{"old_str", "new_str", "replace_all"}``), ``search_replace`` (SEARCH/
REPLACE blocks), ``udiff`` (unified diff) or ``apply_patch`` (``*** Begin Patch`` text); ``expected`` is the file
after the edit, or null when the edit must be refused. Each output line is ``{"id", "status", "result",
"message"}`` with status ``applied``, ``refused`` or ``already_applied``. The summary table goes to stderr (to stdout
when ``--out`` is given). Bad input prints one line naming the line number and exits 2.

The baselines mimic well-known appliers on every format: diffs and patches are turned into old/new pairs (context
plus removed lines -> context plus added lines) applied one after the other, without line numbers or anchors.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.edits.apply_patch import apply_patch_detailed, parse_apply_patch
from agents.edits.engine import apply_str_replace
from agents.edits.model import EditOutcome, EditRefused, UpdateFile
from agents.edits.search_replace import apply_search_replace, parse_blocks
from agents.edits.udiff import apply_udiff, parse_udiff
from bench.editcases.baselines import exact_count, first_match, replace_all
from infra.cliargs import Page, Parser, UsageError

FORMATS = ("str_replace", "search_replace", "udiff", "apply_patch")
STRATEGIES = ("bosun", "first-match", "replace-all", "exact-count")
_REQUIRED = ("id", "format", "path", "original", "edit", "expected")


class CaseError(Exception):
    """Bad input: the message names the file and line."""


@dataclass
class Case:
    id: str
    format: str
    path: str
    original: str
    edit: Any
    expected: str | None
    category: str = ""
    line: int = 0
    hunks: int = 1
    """How many regions of the file the edit changes (several hunks or SEARCH/REPLACE blocks: more than one)."""


@dataclass
class Outcome:
    """What a strategy did with one case."""

    status: str  # applied | refused | already_applied
    result: str | None
    message: str
    ms: float = 0.0


# ---- input ------------------------------------------------------------------------------------------------------


def _check_case(obj: Any, where: str) -> Case:
    if not isinstance(obj, dict):
        raise CaseError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in _REQUIRED if k not in obj]
    if missing:
        raise CaseError(f"{where}: missing field(s) {', '.join(missing)}")
    for key in ("id", "format", "path", "original"):
        if not isinstance(obj[key], str):
            raise CaseError(f"{where}: field '{key}' must be a string, got {type(obj[key]).__name__}")
    fmt = obj["format"]
    if fmt not in FORMATS:
        raise CaseError(f"{where}: unknown format {fmt!r} (expected one of {', '.join(FORMATS)})")
    if obj["expected"] is not None and not isinstance(obj["expected"], str):
        raise CaseError(f"{where}: field 'expected' must be a string or null")
    edit = obj["edit"]
    if fmt == "str_replace":
        if not isinstance(edit, dict) or not isinstance(edit.get("old_str"), str) \
                or not isinstance(edit.get("new_str"), str):
            raise CaseError(f"{where}: a str_replace edit must be an object with string fields old_str and new_str")
        if not isinstance(edit.get("replace_all", False), bool):
            raise CaseError(f"{where}: edit.replace_all must be a boolean")
    elif not isinstance(edit, str):
        raise CaseError(f"{where}: a {fmt} edit must be a string, got {type(edit).__name__}")
    category = obj.get("category", "")
    hunks = obj.get("hunks", 1)
    if not isinstance(hunks, int) or isinstance(hunks, bool) or hunks < 1:
        raise CaseError(f"{where}: field 'hunks' must be a positive integer")
    return Case(obj["id"], fmt, obj["path"], obj["original"], edit, obj["expected"],
                category if isinstance(category, str) else "", hunks=hunks)


def parse_cases(lines: Iterable[str], source: str = "<cases>") -> list[Case]:
    """Cases from JSONL text lines (blank lines skipped); raises ``CaseError`` naming the line."""
    cases: list[Case] = []
    seen: set[str] = set()
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{source}:{n}"
        try:
            obj = json.loads(raw)
        except ValueError as e:
            raise CaseError(f"{where}: invalid JSON ({e})") from None
        case = _check_case(obj, where)
        if case.id in seen:
            raise CaseError(f"{where}: duplicate id {case.id!r}")
        seen.add(case.id)
        case.line = n
        cases.append(case)
    if not cases:
        raise CaseError(f"{source}: no cases")
    return cases


def load_cases(path: Path) -> list[Case]:
    """Cases from a JSONL file (gzip-compressed when the name ends in ``.gz``)."""
    try:
        if str(path).endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                text = f.read()
        else:
            text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise CaseError(f"cannot read {path}: {e}") from None
    return parse_cases(text.split("\n"), str(path))


# ---- strategies -------------------------------------------------------------------------------------------------


def _bosun(case: Case) -> EditOutcome | tuple[str, str | None, str]:
    if case.format == "str_replace":
        e = case.edit
        return apply_str_replace(case.original, e["old_str"], e["new_str"], replace_all=bool(e.get("replace_all")))
    if case.format == "search_replace":
        return apply_search_replace(case.original, case.edit)
    if case.format == "udiff":
        return apply_udiff(case.original, case.edit)
    res = apply_patch_detailed(case.edit, lambda p: case.original if p == case.path else None)
    if case.path not in res.files:
        raise EditRefused(f"the patch does not touch {case.path}", "no_such_file")
    return res.statuses.get(case.path, "applied"), res.files[case.path], " ".join(res.messages)


def _lines_text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def edit_pairs(case: Case) -> list[tuple[str, str, bool]]:
    """The edit as ``(old, new, replace_all)`` pairs, for the baselines (raises ``EditRefused`` on bad syntax)."""
    if case.format == "str_replace":
        e = case.edit
        return [(e["old_str"], e["new_str"], bool(e.get("replace_all")))]
    if case.format == "search_replace":
        return [(b.search, b.replace, False) for b in parse_blocks(case.edit)]
    if case.format == "udiff":
        hunks, _, _ = parse_udiff(case.edit)
        return [(_lines_text(h.old), _lines_text(h.new), False) for h in hunks if h.changes]
    pairs: list[tuple[str, str, bool]] = []
    for op in parse_apply_patch(case.edit):
        if not isinstance(op, UpdateFile) or op.path != case.path or op.move_to:
            raise EditRefused("the baselines only apply '*** Update File' of the case's own path", "unsupported")
        for chunk in op.chunks:
            old = [t for k, t in chunk.lines if k != "+"]
            new = [t for k, t in chunk.lines if k != "-"]
            pairs.append((_lines_text(old), _lines_text(new), False))
    return pairs


def _baseline(fn: Callable[..., EditOutcome]) -> Callable[[Case], EditOutcome]:
    def run(case: Case) -> EditOutcome:
        text = case.original
        for old, new, rall in edit_pairs(case):
            text = fn(text, old, new, replace_all=rall).text
        return EditOutcome("applied", text, "baseline applied every pair", "exact")

    return run


RUNNERS: dict[str, Callable[[Case], Any]] = {
    "bosun": _bosun,
    "first-match": _baseline(first_match),
    "replace-all": _baseline(replace_all),
    "exact-count": _baseline(exact_count),
}


def run_case(case: Case, strategy: str) -> Outcome:
    """Apply one case with one strategy, timing the apply call."""
    runner = RUNNERS[strategy]
    start = time.perf_counter()
    try:
        got = runner(case)
    except EditRefused as e:
        return Outcome("refused", None, e.message, (time.perf_counter() - start) * 1000)
    ms = (time.perf_counter() - start) * 1000
    if isinstance(got, EditOutcome):
        return Outcome(got.status, got.text, got.message, ms)
    status, text, message = got
    return Outcome(status, text, message, ms)


# ---- scoring ----------------------------------------------------------------------------------------------------


def verdict(case: Case, out: Outcome) -> str:
    """``ok``, ``misapply`` (wrote something else), ``false_already`` (claimed done, wrong text), ``missed``
    (refused an edit that should apply) or ``not_refused`` (already_applied on a must-refuse case)."""
    if case.expected is None:
        if out.status == "refused":
            return "ok"
        if out.status == "applied" and out.result != case.original:
            return "misapply"
        return "not_refused"
    if out.status == "refused":
        return "missed"
    if out.result == case.expected:
        return "ok"
    return "misapply" if out.status == "applied" else "false_already"


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 3) if den else None


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


@dataclass
class Tally:
    """Counts of one slice of the cases (a format, a category, single- or multi-hunk)."""

    should_apply: int = 0
    correct_apply: int = 0
    should_refuse: int = 0
    correct_refusal: int = 0
    silent_misapply: int = 0

    def add(self, case: Case, v: str) -> None:
        if case.expected is None:
            self.should_refuse += 1
            self.correct_refusal += v == "ok"
        else:
            self.should_apply += 1
            self.correct_apply += v == "ok"
        self.silent_misapply += v == "misapply"

    def to_dict(self) -> dict[str, Any]:
        return {
            "should_apply": self.should_apply,
            "correct_apply_pct": _pct(self.correct_apply, self.should_apply),
            "should_refuse": self.should_refuse,
            "correct_refusal_pct": _pct(self.correct_refusal, self.should_refuse),
            "silent_misapply": self.silent_misapply,
        }


def slices(case: Case) -> dict[str, str]:
    """The slices a case is counted in: its format, its category, ``single``/``multi`` hunk."""
    return {"format": case.format, "category": case.category or "-", "hunks": "multi" if case.hunks > 1 else "single"}


@dataclass
class Summary:
    strategy: str
    cases: int = 0
    should_apply: int = 0
    correct_apply: int = 0
    should_refuse: int = 0
    correct_refusal: int = 0
    silent_misapply: int = 0
    false_already_applied: int = 0
    latencies: list[float] = field(default_factory=list)
    apply_latencies: list[float] = field(default_factory=list)
    refusal_latencies: list[float] = field(default_factory=list)
    """Latencies of the should-refuse cases (a refusal computes the closest-region hint, which costs more)."""
    failures: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    """``category/format/verdict`` -> ids of failed cases."""
    by: dict[str, dict[str, Tally]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(Tally)))
    """slice kind (``format``, ``category``, ``hunks``) -> slice -> counts."""

    def add(self, case: Case, out: Outcome) -> str:
        v = verdict(case, out)
        self.cases += 1
        self.latencies.append(out.ms)
        if case.expected is None:
            self.refusal_latencies.append(out.ms)
            self.should_refuse += 1
            self.correct_refusal += v == "ok"
        else:
            self.apply_latencies.append(out.ms)
            self.should_apply += 1
            self.correct_apply += v == "ok"
        self.silent_misapply += v == "misapply"
        self.false_already_applied += v == "false_already"
        if v != "ok":
            self.failures[f"{case.category or '-'}/{case.format}/{v}"].append(case.id)
        for kind, key in slices(case).items():
            self.by[kind][key].add(case, v)
        return v

    def to_dict(self, examples: int = 3) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "cases": self.cases,
            "should_apply": self.should_apply,
            "correct_apply_pct": _pct(self.correct_apply, self.should_apply),
            "should_refuse": self.should_refuse,
            "correct_refusal_pct": _pct(self.correct_refusal, self.should_refuse),
            "silent_misapply": self.silent_misapply,
            "false_already_applied": self.false_already_applied,
            "latency_p50_ms": round(statistics.median(self.latencies), 3) if self.latencies else 0.0,
            "latency_p99_ms": round(_percentile(self.latencies, 99), 3),
            "latency_p99_ms_should_apply": round(_percentile(self.apply_latencies, 99), 3),
            "latency_p99_ms_should_refuse": round(_percentile(self.refusal_latencies, 99), 3),
            "failures": {k: {"count": len(v), "examples": v[:examples]}
                         for k, v in sorted(self.failures.items(), key=lambda kv: (-len(kv[1]), kv[0]))},
            **{f"by_{kind}": {key: tally.to_dict() for key, tally in sorted(self.by[kind].items())}
               for kind in ("format", "hunks", "category")},
        }


def evaluate(cases: list[Case], strategy: str, sink: Callable[[Case, Outcome], None] | None = None) -> Summary:
    """Run every case with ``strategy``; ``sink`` receives each outcome (for the output lines)."""
    if strategy not in RUNNERS:
        raise CaseError(f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})")
    summary = Summary(strategy)
    for case in cases:
        out = run_case(case, strategy)
        summary.add(case, out)
        if sink is not None:
            sink(case, out)
    return summary


#: The failure classes of issues 38 and 52 (the held-out and external corpora's last silent misapplies and false
#: refusals), each a set of corpus categories (``bench.editcases.mistakes``).
CLASSES: dict[str, tuple[str, ...]] = {
    "repeated_block": ("repeated_block_pinned", "repeated_block_unpinned"),
    "reindent": ("reindent_shifted", "reindent_bare", "indent_shift_bare", "indent_mismatch_bare"),
    "trailing_ws_and_elision": ("trailing_ws_two_places", "elision_marker_styles"),
    "blank_line_omitted": ("blank_line_omitted", "blank_line_omitted_ambiguous"),
    "blank_line_old_side": ("blank_line_missing_old", "blank_line_extra_old"),
    "already_applied": ("already_applied", "already_applied_fuzzy", "already_applied_deletion",
                        "already_applied_elision"),
}


def by_class(summaries: list[Summary], classes: dict[str, tuple[str, ...]] = CLASSES) -> dict[str, Any]:
    """``class -> {"categories", "strategies": {strategy: counts}}``: every strategy's counts on each class's cases,
    side by side (the categories' tallies added up)."""
    out: dict[str, Any] = {}
    for name, categories in classes.items():
        row: dict[str, Any] = {}
        for s in summaries:
            total = Tally()
            for category in categories:
                tally = s.by["category"].get(category)
                if tally is not None:
                    for key in ("should_apply", "correct_apply", "should_refuse", "correct_refusal",
                                "silent_misapply"):
                        setattr(total, key, getattr(total, key) + getattr(tally, key))
            row[s.strategy] = total.to_dict()
        out[name] = {"categories": list(categories), "strategies": row}
    return out


def format_classes(table: dict[str, Any]) -> str:
    """The per-class table: one row per class and strategy (apply ok, refuse ok, silent)."""
    head = ("class", "strategy", "apply ok", "refuse ok", "silent")
    rows = [head]
    for name, entry in table.items():
        for strategy, d in entry["strategies"].items():
            if not d["should_apply"] and not d["should_refuse"]:
                continue
            rows.append((
                name, strategy,
                f"{d['correct_apply_pct']}% of {d['should_apply']}" if d["should_apply"] else "-",
                f"{d['correct_refusal_pct']}% of {d['should_refuse']}" if d["should_refuse"] else "-",
                str(d["silent_misapply"]),
            ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def format_table(summaries: list[Summary], max_failure_rows: int = 12) -> str:
    """A fixed-width table, one row per strategy, then the failing categories of each."""
    head = ("strategy", "cases", "apply ok", "refuse ok", "misapply", "false done", "p50 ms", "p99 ms")
    rows = [head]
    for s in summaries:
        d = s.to_dict()
        rows.append((
            s.strategy, str(s.cases),
            f"{d['correct_apply_pct']}% of {s.should_apply}" if s.should_apply else "-",
            f"{d['correct_refusal_pct']}% of {s.should_refuse}" if s.should_refuse else "-",
            str(s.silent_misapply), str(s.false_already_applied),
            f"{d['latency_p50_ms']:.3f}", f"{d['latency_p99_ms']:.3f}",
        ))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    for s in summaries:
        if not s.failures:
            continue
        lines.append(f"{s.strategy}: failures by category/format/verdict (count, example ids)")
        ordered = sorted(s.failures.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        for key, ids in ordered[:max_failure_rows]:
            lines.append(f"  {key}: {len(ids)}  e.g. {', '.join(ids[:2])}")
        if len(ordered) > max_failure_rows:
            lines.append(f"  ... {len(ordered) - max_failure_rows} more")
    return "\n".join(lines)


# ---- CLI --------------------------------------------------------------------------------------------------------


PAGE = Page(
    description="Score an edit corpus with bosun's edit engine or a baseline applier: each case (one JSON line "
                "{id, format, path, original, edit, expected}, in the formats str_replace, search_replace, udiff "
                "and apply_patch) is applied and compared with the file expected (or its refusal). Writes one "
                "result line per case {id, status, result, message} to stdout (or --out), and a summary table "
                "(correct apply, correct refusal, silent misapply, latency) to stderr (to stdout when --out is "
                "given). Needs no stack; bench/edits_eval.py makes corpora from real PyPI releases.",
    exit_codes={0: "scored (whatever the results)",
                2: "bad input: a case file that cannot be read or a bad line (the message names its number), an "
                   "unknown --strategy, an --out that cannot be written"},
    examples=("bosun eval edits --cases cases.jsonl --out results.jsonl",
              "bosun eval edits --cases cases.jsonl.gz --strategy first-match"))
"""The page of ``bosun eval edits`` (entry/cli_eval.py lists it among the evaluations)."""


def parser() -> argparse.ArgumentParser:
    ap = Parser(prog="bosun eval edits", page=PAGE)
    ap.add_argument("--cases", required=True, type=Path, help="input JSONL (or .jsonl.gz), one case per line")
    ap.add_argument("--out", type=Path, help="write one result line per case here (default: stdout)")
    ap.add_argument("--strategy", default="bosun", help=f"one of {', '.join(STRATEGIES)} (default bosun)")
    return ap


def eval_main(argv: list[str]) -> int:
    """Entry point of ``bosun eval``; ``argv`` starts with ``edits``. Returns the exit code (2 on bad input)."""
    if not argv or argv[0] != "edits":
        got = argv[0] if argv else "nothing"
        print(f"bosun eval: unknown evaluation {got!r}; usage: bosun eval edits --cases CASES.jsonl "
              "[--out RESULTS.jsonl] [--strategy bosun|first-match|replace-all|exact-count]", file=sys.stderr)
        return 2
    try:
        args = parser().parse_args(argv[1:])
        if args.strategy not in STRATEGIES:
            raise UsageError(f"unknown strategy {args.strategy!r} (expected one of {', '.join(STRATEGIES)})")
        cases = load_cases(args.cases)
    except (UsageError, CaseError) as e:
        print(f"bosun eval edits: error: {e}", file=sys.stderr)
        return 2
    try:
        out_file = open(args.out, "w", encoding="utf-8") if args.out else sys.stdout  # noqa: SIM115
    except OSError as e:
        print(f"bosun eval edits: error: cannot write {args.out}: {e}", file=sys.stderr)
        return 2

    def sink(case: Case, out: Outcome) -> None:
        line = {"id": case.id, "status": out.status, "result": out.result, "message": out.message}
        out_file.write(json.dumps(line, ensure_ascii=False) + "\n")

    try:
        summary = evaluate(cases, args.strategy, sink)
    finally:
        if args.out:
            out_file.close()
        else:
            out_file.flush()
    table = format_table([summary])
    print(table, file=sys.stdout if args.out else sys.stderr)
    return 0
