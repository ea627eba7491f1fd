"""SWE-bench Multimodal's JavaScript/TypeScript tasks as rows for bench/multi_swebench.py. Prints JSON.

Run: ``.venv/bin/python bench/swebench_mm_rows.py --source GITDIR --out DIR``, where GITDIR is a fetched mirror of
SWE-bench/swe-bench-multimodal-dockerfiles (``fetch github:SWE-bench/swe-bench-multimodal-dockerfiles``). Each task
(``tasks/<id>/``: ``task.yaml``, ``gold.patch``, ``test.patch``, ``tests.json``, ``eval.sh``) becomes a row with
Multi-SWE-bench's field names (``org``, ``repo``, ``number``, ``base.sha``, ``fix_patch``, ``test_patch``,
``f2p_tests``, ``p2p_tests``) and the harness's own ``test_cmd`` (between eval.sh's test-output markers),
``log_parser``, ``eval_type``, ``version`` and ``split``; one ``ORG__REPO.jsonl`` per repository in DIR (patches
kept byte for byte: CRLF stays). Prints the rows per repository. The files are read out of the mirror with
``git show`` (nothing is checked out).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

TOP = re.compile(r"^([A-Za-z_]+): ?(.*)$", re.M)


def top_level(text: str) -> dict[str, str]:
    """A task.yaml's top-level scalar keys (its lists and tables are not needed), quotes taken off."""
    return {k: v.strip().strip("'\"") for k, v in TOP.findall(text) if v.strip()}


MARKERS = re.compile(r": '>>>>> Start Test Output'\n(.*?)\n: '>>>>> End Test Output'", re.S)


def show(git: Path, commit: str, path: str) -> str | None:
    done = subprocess.run(["git", "-C", str(git), "show", f"{commit}:{path}"], capture_output=True)
    return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None


def row_of(git: Path, commit: str, task: str) -> dict | None:
    """One task as a row; None when a file it needs is missing."""
    meta, tests, gold, test = (show(git, commit, f"{task}/{name}") for name in
                               ("task.yaml", "tests.json", "gold.patch", "test.patch"))
    if not (meta and tests and gold and test):
        return None
    info, names = top_level(meta), json.loads(tests)
    org, name = info["repo"].split("/")
    script = show(git, commit, f"{task}/eval.sh") or ""
    found = MARKERS.search(script)
    return {"org": org, "repo": name, "number": int(info["instance_id"].rsplit("-", 1)[1]),
            "instance_id": info["instance_id"], "base": {"sha": info["base_commit"]}, "fix_patch": gold,
            "test_patch": test, "f2p_tests": names.get("FAIL_TO_PASS", []), "p2p_tests": names.get("PASS_TO_PASS", []),
            "split": info.get("split"), "version": info.get("version"), "log_parser": info.get("log_parser"),
            "eval_type": info.get("eval_type"), "test_cmd": found.group(1) if found else None,
            "created_at": info.get("created_at"),
            "problem_statement": show(git, commit, f"{task}/problem_statement.md"),
            "source": f"SWE-bench/swe-bench-multimodal-dockerfiles@{commit}:{task}/"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", type=Path, required=True, help="the fetched mirror's git directory")
    p.add_argument("--out", type=Path, required=True, help="where the ORG__REPO.jsonl files go")
    args = p.parse_args()
    commit = subprocess.check_output(["git", "-C", str(args.source), "rev-parse", "HEAD"], text=True).strip()
    tasks = subprocess.check_output(["git", "-C", str(args.source), "ls-tree", "--name-only", commit, "tasks/"],
                                    text=True).split()
    rows: dict[str, list[dict]] = defaultdict(list)
    skipped = []
    for task in tasks:
        row = row_of(args.source, commit, task)
        if row is None:
            skipped.append(task)
        else:
            rows[f"{row['org']}__{row['repo']}"].append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    for key, items in sorted(rows.items()):
        items.sort(key=lambda r: r["number"])
        (args.out / f"{key}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    print(json.dumps({"commit": commit, "repositories": {k: len(v) for k, v in sorted(rows.items())},
                      "skipped": skipped}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
