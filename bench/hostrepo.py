"""What the host boundary costs per agent run: a fresh workspace, importing its work, merging it.

Run: ``.venv/bin/python bench/hostrepo.py [--sdist PATH.tar.gz] [--runs N]``. Without ``--sdist`` it downloads the
sympy 1.12 source distribution from PyPI (a large real tree: ~1,500 Python files) into ``bench/results/``, makes a
git repository of it and measures, as root (quota on) and without quota: ``materialize`` (a fresh checkout with
its scratch .git, owned by the sandbox uid), ``import`` (the whole tree read as data, 10 files changed),
``merge`` (merge-tree in the repository). Prints JSON with p50/max milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sandbox.hostrepo import TaskRepo  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def source_repo(sdist: Path | None, work: Path) -> Path:
    if sdist is None:
        RESULTS.mkdir(exist_ok=True)
        sdist = RESULTS / "sympy-1.12.tar.gz"
        if not sdist.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                            "sympy==1.12", "-d", str(RESULTS)], check=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(work, filter="data")
    src = next(p for p in work.iterdir() if p.is_dir())
    g = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "import"]):
        subprocess.run(g + cmd, cwd=src, check=True)
    return src


def ms(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(samples) * 1000, 1), "max_ms": round(max(samples) * 1000, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sdist", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        src = source_repo(args.sdist, work / "src")
        files = int(subprocess.run(["git", "-C", str(src), "ls-files"], capture_output=True, text=True
                                   ).stdout.count("\n"))
        repo = TaskRepo(work / "workspaces", "bench")
        t0 = time.perf_counter()
        base = repo.prepare(str(src), "HEAD")
        prepare_s = time.perf_counter() - t0
        repo.start_branch("bosun/bench", base)
        owner = (64000, 64000) if os.geteuid() == 0 else None
        out: dict = {"tree_files": files, "prepare_ms": round(prepare_s * 1000, 1)}
        for label, quota in (("quota", 1024), ("no_quota", 0)):
            mat, imp, merge = [], [], []
            for i in range(args.runs):
                name = f"{label}-{i}"
                t0 = time.perf_counter()
                ws = repo.materialize(name, base, owner=owner, quota_mb=quota)
                mat.append(time.perf_counter() - t0)
                py = sorted(ws.glob("sympy/core/*.py"))[:10]
                for p in py:
                    p.write_text(p.read_text() + f"\n# run {name}\n")
                t0 = time.perf_counter()
                res = repo.import_run(name, base, f"run {name}")
                imp.append(time.perf_counter() - t0)
                assert res.commit and len(res.files) == len(py)
                t0 = time.perf_counter()
                repo.merge("bosun/bench", res.commit, f"merge {name}")
                merge.append(time.perf_counter() - t0)
                repo.drop_run(name)
            out[label] = {"materialize": ms(mat), "import": ms(imp), "merge": ms(merge)}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
