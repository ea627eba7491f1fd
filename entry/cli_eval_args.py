"""``bosun eval``'s command line: its commands, their options, exit codes and examples (what they do: cli_eval)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.editcases.eval import parser as edits_parser
from evaluation.swebench import INSTANCE_ID
from infra.cliargs import Page, Parser, add_command


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--instances", required=True, type=Path, help="SWE-bench rows (JSONL, or a JSON list)")
    p.add_argument("--repo", action="append", default=[], metavar="OWNER/NAME=PATH_OR_URL",
                   help="where each instance repository comes from (a local path, a mirror or a clone URL)")
    p.add_argument("--max-parallel", type=int, default=2,
                   help="instances judged at once (default 2; judging given predictions, as many more are prepared "
                        "ahead: up to twice as many sandboxes and workspaces at once)")
    p.add_argument("--ids", default="", help="only these instance ids (comma-separated)")
    p.add_argument("--run-id", default="", type=_run_id,
                   help="the evaluation's name: letters, digits, '_', '.', '-' (default: generated); the same name "
                        "follows a run that is going, or reports one that finished while Temporal keeps it (a day "
                        "on the embedded stack): pass a new name to judge again")
    p.add_argument("--timeout", type=float, default=1800, help="seconds the tests of one instance may take (1800)")


def _run_id(value: str) -> str:
    """``--run-id``: a name for ``eval-<run id>`` (its children are ``eval-<run id>/<instance>``: no '/')."""
    if value and not INSTANCE_ID.match(value):
        raise argparse.ArgumentTypeError(f"{value!r}: letters, digits, '_', '.', '-' only (e.g. verified-gpt-1)")
    return value


JUDGED = {0: "every instance got a verdict (resolved or not; a prediction that does not apply is a verdict, in "
             "error_ids)",
          1: "some instance could not be judged (its repository, environment or a timeout: `errors` in the report "
             "says which and why)",
          2: "bad input (the message names the flag and what is wrong; a --run-id of another evaluation), or "
             "Temporal cannot be reached (`bosun up`)"}
"""The exit codes of an evaluation (swebench, run)."""


RESUMABLE = ("It runs as an EvalWorkflow on the stack (`bosun up`), one child per instance (and variant), and is "
             "resumable: the same command with the same --run-id follows a run that is going, or reports the result "
             "of one that finished without judging again (while Temporal keeps it: a day on the embedded stack). "
             "Progress goes to stderr, the summary (JSON) to stdout.")


INSTANCES = "verified.jsonl"


REQUESTS = "psf/requests=/srv/requests"


EVAL_PAGE = Page(
    description="Evaluations: judge predictions on SWE-bench-format instances as the reference harness does "
                "(swebench), run bosun's own agents on them with A/B variants and judge their diffs (run), list or "
                "prune the sources they keep on this host (sources), or score the edit engine on an edit corpus "
                "(edits). swebench and run need the stack (`bosun up`); edits needs nothing.",
    exit_codes={0: "done (swebench, run: every instance got a verdict, resolved or not)",
                1: "swebench, run: some instance could not be judged (its repository, environment or a timeout)",
                2: "bad input (no or an unknown evaluation, a bad flag), or Temporal cannot be reached"},
    examples=(f"bosun eval swebench --instances {INSTANCES} --predictions gold --repo {REQUESTS}",
              "bosun eval edits --cases cases.jsonl --out results.jsonl",
              "bosun eval sources --json"))


def parser() -> argparse.ArgumentParser:
    p = Parser(prog="bosun eval", page=EVAL_PAGE)
    sub = p.add_subparsers(dest="what", required=True, metavar="WHAT")
    sw = add_command(sub, "swebench", help="judge predictions as the SWE-bench harness does",
                     description="Judge predictions on SWE-bench-format instances the way the reference harness "
                                 "does: per instance its base commit checked out, its environment built or reused "
                                 "(the harness's recipe for the 12 repositories of SWE-bench Verified), the "
                                 "prediction applied as the harness applies it, the test patch's tests run in a "
                                 "sandbox without network (--network: with it) and each test's status read as the "
                                 "harness reads it. The summary is the harness's run report. " + RESUMABLE,
                     exit_codes=JUDGED,
                     examples=(f"bosun eval swebench --instances {INSTANCES} --predictions preds.jsonl --repo "
                               f"{REQUESTS} --report report.json",
                               f"bosun eval swebench --instances {INSTANCES} --predictions gold --repo "
                               "psf/requests=https://github.com/psf/requests --ids psf__requests-2317 --run-id gold-1",
                               f"bosun eval swebench --instances {INSTANCES} --predictions empty --repo {REQUESTS} "
                               "--max-parallel 4 --logs logs"))
    _common(sw)
    sw.add_argument("--predictions", required=True,
                    help="predictions (JSONL, a JSON list, or a JSON object keyed by instance id), or gold, or empty")
    sw.add_argument("--report", type=Path, help="write {\"summary\", \"instances\"} here")
    sw.add_argument("--logs", type=Path, help="write each instance's report.json, test_output.txt and patch.diff "
                                              "into DIR/INSTANCE_ID/ (the harness's layout)")
    sw.add_argument("--network", action="store_true",
                    help="judge in sandboxes that reach the public internet, as the harness's containers do (off by "
                         "default: the predictions' code runs with network; docker workers only, the host and the "
                         "local network stay out of reach; the summary says network: true)")
    rn = add_command(sub, "run", help="run bosun's agents on the instances and judge their diffs",
                     description="Run bosun's agents on each instance's problem statement at its base commit (they "
                                 "never see the patch or the test patch) and judge their diffs as swebench does, per "
                                 "variant (--variant: a JSON object of task fields), with a paired comparison of "
                                 "every two variants (resolve rates, McNemar's p-value, costs). Writes "
                                 "OUT/report.json, OUT/predictions-VARIANT.jsonl and OUT/trajectories/. Needs a "
                                 "model (as `bosun run`). " + RESUMABLE,
                     exit_codes={**JUDGED, 2: "bad input (a variant file, its fields or the model), or Temporal "
                                              "cannot be reached (`bosun up`)"},
                     examples=(f"bosun eval run --instances {INSTANCES} --model anthropic:claude-sonnet-4-5 --repo "
                               f"{REQUESTS} --out results",
                               f"bosun eval run --instances {INSTANCES} --model anthropic:claude-sonnet-4-5 --repo "
                               f"{REQUESTS} --variant a=a.json --variant b=b.json --max-parallel 4 --out ab"))
    _common(rn)
    rn.add_argument("--model", required=True, help="model spec of the agents (as for bosun run)")
    rn.add_argument("--mode", choices=["solo", "team"], default="solo")
    rn.add_argument("--variant", action="append", default=[], metavar="NAME=SETTINGS.json",
                    help="a variant: a JSON object of task fields (model, mode, max_turns, max_parallel, "
                         "max_debug_rounds, budget, harness: the harness settings, docs/models.md 'Harness settings'); "
                         "several for an A/B comparison")
    rn.add_argument("--out", required=True, type=Path, help="folder for the report, predictions and trajectories")
    so = add_command(sub, "sources", help="the commits kept per evaluation source on this host; --prune removes old "
                                          "ones",
                     description="List the commits this worker host keeps per evaluation source "
                                 "(<data dir>/workspaces/.sources: shared by every instance of every evaluation, with "
                                 "up to three checkout templates per source): commits, size, last use. --prune "
                                 "removes the sources not used for --older-than-days (default 14), then the least "
                                 "recently used beyond --max-gb; never one used within the hour, and nothing while "
                                 "an evaluation is running (the stack must be up to tell). An evaluation needing a "
                                 "removed source fetches its commits again.",
                     exit_codes={0: "listed (or pruned)",
                                 2: "bad flags (--older-than-days, --max-gb or --dry-run without --prune, a negative "
                                    "number), an evaluation is running, or (--prune) Temporal cannot be reached"},
                     examples=("bosun eval sources", "bosun eval sources --prune --dry-run",
                               "bosun eval sources --prune --older-than-days 7 --max-gb 50 --json"))
    so.add_argument("--prune", action="store_true", help="remove the sources not used lately (see --older-than-days)")
    so.add_argument("--older-than-days", type=float, default=None,
                    help="with --prune: remove the sources not used for this many days (default 14)")
    so.add_argument("--max-gb", type=float, default=None,
                    help="with --prune: then remove the least recently used until all take at most this much "
                         "(0: no size bound)")
    so.add_argument("--dry-run", action="store_true", help="with --prune: say what would go, remove nothing")
    so.add_argument("--json", action="store_true", help="print JSON")
    edits = edits_parser()  # (bosun eval edits is parsed by bench/editcases/eval.py: this is its page, listed)
    add_command(sub, "edits", help="score the edit engine (or a baseline applier) on an edit corpus",
                page=edits.page, parents=[edits], add_help=False)
    return p
