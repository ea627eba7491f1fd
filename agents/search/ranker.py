"""File ranking for a task: BM25 (files and symbol chunks) fused with signals from the task text.

Each signal yields a per-file value in [0, 1]; the final score is their weighted sum times a prior
that lowers tests, examples and docs (unless the task names them). Components:

``file``     BM25 over whole files (identifier-split tokens, path tokens weighted), max-normalised
``chunk``    best BM25 score among the file's definitions (functions, methods, class heads)
``chunk3``   sum of the file's three best definition scores
``title``    BM25 over files for the task's first line alone (issue titles are dense summaries)
``title_chunk`` best definition score for the first line alone
``path``     the task names the file (``pkg/mod.py``, ``mod.py``)
``frame``    a stack-trace frame points into the file (innermost frames weigh most)
``module``   a dotted name resolves to the file's module (``pkg.sub.mod`` or ``pkg.sub.mod.Class``)
``defn``     the file defines identifiers the task mentions (rarer names weigh more)
``message``  the file contains the literal text of an error message from the task
``graph``    personalised PageRank over the reference graph, seeded by the other components
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, fields
from pathlib import Path

from agents.search.bm25 import query_weights, tokenize
from agents.search.graph import propagate
from agents.search.index import RepoIndex, build_index
from agents.search.signals import Signals, extract_signals, strip_boilerplate

_TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "test_utils", "testutils"})
_AUX_DIRS = frozenset(
    {"examples", "example", "docs", "doc", "benchmarks", "asv_bench", "galleries", "tutorials", "vendor", "vendored",
     "third_party", "thirdparty", "externals", "extern", "static"}
)
_TEST_STEM = re.compile(r"(^test_|^tests?$|_tests?$|[._-](test|spec)$|(?<=[a-z])Tests?$|^conftest$)")


@dataclass
class Weights:
    """Fusion weights, tuned by coordinate ascent on the tuning split of ``bench/search.py``.

    ``graph`` stays 0: PageRank propagation (weights 0.05-0.8 tried) moved tuning recall@5 by at
    most a case either way, and costs a PageRank per query.
    """

    file: float = 0.5
    chunk: float = 0.6
    chunk3: float = 1.0
    title: float = 0.7
    title_chunk: float = 0.7
    path: float = 1.0
    frame: float = 1.5
    module: float = 0.5
    defn: float = 1.0
    message: float = 0.8
    graph: float = 0.0
    test_prior: float = 0.35
    aux_prior: float = 0.5


DEFAULT_WEIGHTS = Weights()
COMPONENTS = ("file", "chunk", "chunk3", "title", "title_chunk", "path", "frame", "module", "defn", "message", "graph")


def is_test_path(rel: str) -> bool:
    """Whether a path looks like a test file or lives in a test folder."""
    parts = rel.lower().split("/")
    if any(p in _TEST_DIRS for p in parts[:-1]):
        return True
    stem = rel.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return bool(_TEST_STEM.search(stem))


def is_aux_path(rel: str) -> bool:
    """Whether a path lives in examples, docs, benchmarks or vendored/static folders."""
    return any(p in _AUX_DIRS for p in rel.lower().split("/")[:-1])


def _normalise(scores: dict[int, float]) -> dict[int, float]:
    top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items()} if top > 0 else {}


def resolve_path(index: RepoIndex, mention: str) -> list[tuple[int, float, int]]:
    """Repository files a mentioned path may denote: ``(file, quality in (0, 1], matched components)``."""
    parts = [p for p in mention.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    if not parts:
        return []
    cands = index.by_basename.get(parts[-1], [])
    if not cands:
        return []
    scored: list[tuple[int, int]] = []
    for idx in cands:
        cparts = index.files[idx].split("/")
        m = 0
        while m < min(len(parts), len(cparts)) and parts[-1 - m] == cparts[-1 - m]:
            m += 1
        scored.append((idx, m))
    best = max(m for _, m in scored)
    top = [idx for idx, m in scored if m == best]
    out = []
    for idx in top:
        clen = len(index.files[idx].split("/"))
        quality = max(best / len(parts), best / clen)
        out.append((idx, quality / math.sqrt(len(top)), best))
    return out


def _path_component(index: RepoIndex, sig: Signals) -> dict[str, dict[int, float]]:
    """``path`` and ``frame`` values, plus ``named``: files the task names precisely enough (a frame,
    or a path with a directory) to lift the test/docs prior."""
    frame_paths = {f.path.replace("\\", "/") for f in sig.frames}
    path: dict[int, float] = {}
    named: dict[int, float] = {}
    for mention in sig.paths:
        if mention in frame_paths:
            continue
        for idx, q, matched in resolve_path(index, mention):
            path[idx] = max(path.get(idx, 0.0), q)
            if matched >= 2:
                named[idx] = 1.0
    frame: dict[int, float] = {}
    n = len(sig.frames)
    for pos, fr in enumerate(sig.frames):
        # Python prints the innermost frame last; the other styles print it first.
        depth = (pos + 1) / n if fr.style == "python" else (n - pos) / n
        for idx, q, _ in resolve_path(index, fr.path):
            frame[idx] = max(frame.get(idx, 0.0), q * (0.5 + 0.5 * depth))
            named[idx] = 1.0
    return {"path": path, "frame": frame, "named": named}


def _module_component(index: RepoIndex, sig: Signals) -> dict[int, float]:
    out: dict[int, float] = {}
    for dotted in sig.dotted:
        parts = dotted.split(".")
        for end in range(len(parts), 1, -1):
            files = index.by_module.get(".".join(parts[:end]))
            if not files:
                continue
            rest = parts[end:]
            for idx in files:
                value = 1.0 / math.sqrt(len(files))
                fsyms = index.symbols[idx]
                if rest and fsyms is not None and any(s.name == rest[0] for s in fsyms.definitions):
                    value = min(1.0, value + 0.3)
                out[idx] = max(out.get(idx, 0.0), value)
            break
    return out


def _defn_component(index: RepoIndex, sig: Signals, max_files: int = 15) -> dict[int, float]:
    acc: dict[int, float] = {}
    for name, strength in sig.identifiers.items():
        if len(name) < 3:
            continue
        entries = index.defs_by_name.get(name)
        if not entries:
            continue
        files = {idx for idx, _ in entries}
        if len(files) > max_files:
            continue
        spec = 1.0 / math.sqrt(len(files))
        for idx in files:
            acc[idx] = acc.get(idx, 0.0) + strength * spec
    for dotted in sig.dotted:
        parts = dotted.split(".")
        for start in range(len(parts) - 1):
            entries = index.defs_by_qualname.get(".".join(parts[start:]))
            if entries:
                files = {idx for idx, _ in entries}
                for idx in files:
                    acc[idx] = acc.get(idx, 0.0) + 1.0 / math.sqrt(len(files))
                break
    return {idx: 1.0 - math.exp(-v) for idx, v in acc.items()}


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`|<[^>]*>|\b0x[0-9a-f]+\b|\b\d+(?:\.\d+)?\b")


def _message_component(index: RepoIndex, sig: Signals) -> dict[int, float]:
    out: dict[int, float] = {}
    for msg in sig.messages[:8]:
        for frag in _QUOTED.split(msg):
            frag = frag.strip(" :,.;()[]{}")
            if len(frag) < 12 or len(frag.split()) < 2:
                continue
            hits = [i for i, text in enumerate(index.texts) if frag in text]
            if not hits or len(hits) > 20:
                continue
            for idx in hits:
                out[idx] = max(out.get(idx, 0.0), 1.0 / math.sqrt(len(hits)))
    return out


def _bm25_components(index: RepoIndex, query: str) -> dict[str, dict[int, float]]:
    weights = query_weights(tokenize(query))
    file_scores = _normalise(index.file_bm25.scores(weights, max_df=0.5))
    chunk_raw = index.chunk_bm25.scores(weights, max_df=0.5)
    per_file: dict[int, list[float]] = {}
    chunks = index.chunks
    for cid, score in chunk_raw.items():
        per_file.setdefault(chunks[cid].file, []).append(score)
    best = {f: max(v) for f, v in per_file.items()}
    top3 = {f: sum(heapq.nlargest(3, v)) for f, v in per_file.items()}
    title = query.strip().split("\n", 1)[0]
    title_w = query_weights(tokenize(title))
    return {
        "file": file_scores,
        "chunk": _normalise(best),
        "chunk3": _normalise(top3),
        "title": _normalise(index.file_bm25.scores(title_w, max_df=0.5)),
        "title_chunk": _normalise(_max_per_file(index, index.chunk_bm25.scores(title_w, max_df=0.5))),
    }


def _max_per_file(index: RepoIndex, chunk_scores: dict[int, float]) -> dict[int, float]:
    best: dict[int, float] = {}
    for cid, score in chunk_scores.items():
        f = index.chunks[cid].file
        if score > best.get(f, 0.0):
            best[f] = score
    return best


def components(index: RepoIndex, query: str) -> dict[str, dict[int, float]]:
    """Every signal's per-file values for ``query`` (file number -> value in [0, 1])."""
    sig = extract_signals(query)
    return {
        **_bm25_components(index, strip_boilerplate(query)),
        **_path_component(index, sig),
        "module": _module_component(index, sig),
        "defn": _defn_component(index, sig),
        "message": _message_component(index, sig),
    }


def combine(
    index: RepoIndex, comps: dict[str, dict[int, float]], weights: Weights = DEFAULT_WEIGHTS, k: int = 10
) -> list[tuple[str, float]]:
    """Fuse component values into the ``k`` best ``(path, score)`` pairs."""
    total: dict[int, float] = {}
    for name in COMPONENTS:
        w = getattr(weights, name)
        if not w or name not in comps:
            continue
        for idx, v in comps[name].items():
            total[idx] = total.get(idx, 0.0) + w * v
    if weights.graph:
        seeds = dict(heapq.nlargest(20, total.items(), key=lambda kv: kv[1]))
        for idx, v in propagate(index, seeds).items():
            total[idx] = total.get(idx, 0.0) + weights.graph * v
    named = comps.get("named", {})
    for idx in list(total):
        if idx in named:
            continue
        rel = index.files[idx]
        if is_test_path(rel):
            total[idx] *= weights.test_prior
        elif is_aux_path(rel):
            total[idx] *= weights.aux_prior
    best = heapq.nlargest(k, total.items(), key=lambda kv: (kv[1], -kv[0]))
    return [(index.files[idx], round(score, 6)) for idx, score in best]


def rank_files(
    index: RepoIndex, query: str, k: int = 10, weights: Weights = DEFAULT_WEIGHTS
) -> list[tuple[str, float]]:
    """The ``k`` files of ``index`` most relevant to ``query``, best first."""
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return combine(index, components(index, query), weights, k)


def search_files(repo: Path, query: str, k: int = 10, cache_dir: Path | None = None) -> list[tuple[str, float]]:
    """Index ``repo`` (symbols cached by content hash) and return its ``k`` best files for ``query``."""
    return rank_files(build_index(Path(repo), cache_dir=cache_dir), query, k)


def weights_from(values: dict[str, float]) -> Weights:
    """A :class:`Weights` with the given fields overridden (unknown names are an error)."""
    known = {f.name for f in fields(Weights)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"unknown weight(s): {', '.join(sorted(unknown))}")
    return Weights(**{**DEFAULT_WEIGHTS.__dict__, **values})
