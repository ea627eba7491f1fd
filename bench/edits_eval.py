"""Edit-engine accuracy on the real-change corpus, for bosun's cascade and the three baselines.

Run: ``.venv/bin/python bench/edits_eval.py [--cache DIR] [--out CORPUS.jsonl.gz]``. On first run the sdists of the
packages in ``bench.editcases.corpus.DEFAULT_PACKAGES`` are downloaded with pip into the cache
(``~/.cache/bosun-bench/edits``). The corpus is written there (gzip JSONL, usable with ``bosun eval edits --cases``)
and every strategy is scored in-process. Prints JSON: corpus size and make-up, one summary per strategy (correct apply
and refusal rates, silent misapplies, latency, failing categories with example ids) and bosun's goals. The summary
table goes to stderr. Latency on a 10,000-line file is measured by ``bench/edits.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.editcases.corpus import DEFAULT_CACHE, DEFAULT_PACKAGES, build, write_jsonl  # noqa: E402
from bench.editcases.eval import STRATEGIES, Case, evaluate, format_table  # noqa: E402

GOALS = {"correct_apply_pct": 99.5, "correct_refusal_pct": 99.5, "silent_misapply": 0, "min_cases": 5000}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--out", type=Path, default=None, help="corpus file (default: CACHE/corpus.jsonl.gz)")
    ap.add_argument("--formats-per-variant", type=int, default=2)
    ap.add_argument("--strategies", nargs="*", default=list(STRATEGIES), choices=STRATEGIES)
    args = ap.parse_args(argv)

    raw = build(args.cache, formats_per_variant=args.formats_per_variant)
    out = args.out or args.cache / "corpus.jsonl.gz"
    write_jsonl(raw, out)
    cases = [Case(c["id"], c["format"], c["path"], c["original"], c["edit"], c["expected"], c["category"])
             for c in raw]
    summaries = [evaluate(cases, s) for s in args.strategies]
    print(format_table(summaries), file=sys.stderr)

    report: dict[str, object] = {
        "corpus": {
            "file": str(out),
            "cases": len(cases),
            "should_apply": sum(c.expected is not None for c in cases),
            "should_refuse": sum(c.expected is None for c in cases),
            "packages": [f"{p} {a} -> {b}" for p, a, b in DEFAULT_PACKAGES],
            "by_format": dict(Counter(c.format for c in cases)),
            "by_category": dict(Counter(c.category for c in cases).most_common()),
        },
        "strategies": {s.strategy: s.to_dict() for s in summaries},
    }
    bosun = next((s.to_dict() for s in summaries if s.strategy == "bosun"), None)
    if bosun is not None:
        report["goals"] = {
            "min_cases": len(cases) >= GOALS["min_cases"],
            "correct_apply": (bosun["correct_apply_pct"] or 0) >= GOALS["correct_apply_pct"],
            "correct_refusal": (bosun["correct_refusal_pct"] or 0) >= GOALS["correct_refusal_pct"],
            "no_silent_misapply": bosun["silent_misapply"] == GOALS["silent_misapply"],
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
