"""Edit-engine accuracy on corpora of real changes, for bosun's cascade and the three baselines.

Run: ``.venv/bin/python bench/edits_eval.py [--corpus releases|projects|heldout|both|all] [--cache DIR]
[--out-dir DIR]``, or ``--cases CORPUS.jsonl.gz`` to score a corpus file that already exists. Three corpora are
built (``bench.editcases.corpus.SOURCES``): ``releases``, the first one (consecutive releases of five small
packages), ``projects``, consecutive (mostly bug-fix) releases of nine large projects (requests, flask, seaborn,
xarray, pylint, pytest, astropy, sphinx, sympy), and ``heldout``, releases of eighteen other projects (jinja2,
werkzeug, httpx, black, urllib3, packaging, marshmallow, tornado, pluggy, isort, pygments, aiohttp, starlette,
more-itertools, networkx, coverage, scrapy, fastapi) that the engine is not tuned on. ``both``
is the first two, ``all`` (the default) the three. On first run their sdists are downloaded with pip into the cache
(``~/.cache/bosun-bench/edits``); each corpus is written there (gzip JSONL, usable with ``bosun eval edits
--cases``) and every strategy is scored in-process.

Prints JSON, one entry per corpus: its size and make-up, one summary per strategy (correct apply and refusal rates,
silent misapplies, latency, the same broken down by format, by category and single- vs multi-hunk, failing categories
with example ids), the failure classes of issue 38 with every strategy's figures side by side (``classes``) and
bosun's goals. The summary tables go to stderr. Latency on a 10,000-line file is measured by ``bench/edits.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.editcases.corpus import DEFAULT_CACHE, SOURCES, build, write_jsonl  # noqa: E402
from bench.editcases.eval import (  # noqa: E402
    STRATEGIES,
    Case,
    by_class,
    evaluate,
    format_classes,
    format_table,
    load_cases,
)

GOALS = {"correct_apply_pct": 99.5, "correct_refusal_pct": 99.5, "silent_misapply": 0, "min_cases": 5000}


def score(name: str, cases: list[Case], strategies: list[str], file: Path, packages: list[str]) -> dict[str, object]:
    """Every strategy on ``cases``: the report of one corpus (the table goes to stderr)."""
    summaries = [evaluate(cases, s) for s in strategies]
    print(f"== {name}: {len(cases)} cases", file=sys.stderr)
    print(format_table(summaries), file=sys.stderr)
    classes = by_class(summaries)
    print(format_classes(classes), file=sys.stderr)
    report: dict[str, object] = {
        "corpus": {
            "file": str(file),
            "cases": len(cases),
            "should_apply": sum(c.expected is not None for c in cases),
            "should_refuse": sum(c.expected is None for c in cases),
            "multi_hunk": sum(c.hunks > 1 for c in cases),
            "packages": packages,
            "by_format": dict(Counter(c.format for c in cases)),
            "by_category": dict(Counter(c.category for c in cases).most_common()),
        },
        "strategies": {s.strategy: s.to_dict() for s in summaries},
        "classes": classes,
    }
    bosun = next((s.to_dict() for s in summaries if s.strategy == "bosun"), None)
    if bosun is not None:
        report["goals"] = {
            "min_cases": len(cases) >= GOALS["min_cases"],
            "correct_apply": (bosun["correct_apply_pct"] or 0) >= GOALS["correct_apply_pct"],
            "correct_refusal": (bosun["correct_refusal_pct"] or 0) >= GOALS["correct_refusal_pct"],
            "no_silent_misapply": bosun["silent_misapply"] == GOALS["silent_misapply"],
        }
    return report


def _cases(raw: list[dict]) -> list[Case]:
    return [Case(c["id"], c["format"], c["path"], c["original"], c["edit"], c["expected"], c["category"],
                 hunks=c.get("hunks", 1)) for c in raw]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", choices=[*sorted(SOURCES), "both", "all"], default="all")
    ap.add_argument("--cases", type=Path, default=None, help="score this corpus file instead of building one")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--out-dir", type=Path, default=None, help="where corpora are written (default: the cache)")
    ap.add_argument("--formats-per-variant", type=int, default=2)
    ap.add_argument("--strategies", nargs="*", default=list(STRATEGIES), choices=STRATEGIES)
    args = ap.parse_args(argv)

    reports: dict[str, object] = {}
    if args.cases is not None:
        reports[args.cases.name] = score(args.cases.name, load_cases(args.cases), args.strategies, args.cases, [])
    else:
        groups = {"both": ["projects", "releases"], "all": sorted(SOURCES)}
        names = groups.get(args.corpus, [args.corpus])
        for name in names:
            raw = build(args.cache, formats_per_variant=args.formats_per_variant, source=name)
            out = (args.out_dir or args.cache) / f"corpus-{name}.jsonl.gz"
            write_jsonl(raw, out)
            packages = [f"{p} {a} -> {b}" for p, a, b in SOURCES[name].packages]
            reports[name] = score(name, _cases(raw), args.strategies, out, packages)
            del raw
    print(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
