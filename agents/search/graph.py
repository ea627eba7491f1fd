"""The identifier reference graph of a repository and personalised PageRank over it.

The graph has an edge ``A -> B`` when file ``A`` uses a name that file ``B`` defines, weighted by how often ``A``
uses it and by how specific the name is (names defined in many files count less; names the task mentions count
more). The ranker uses :func:`propagate` to spread relevance to neighbours; the repo map ranks whole files.
"""

from __future__ import annotations

import math
from collections import defaultdict

from agents.search.index import RepoIndex

_MAX_DEF_FILES = 25

Graph = dict[int, dict[int, float]]


def pagerank(
    graph: Graph,
    nodes: int,
    personalization: dict[int, float] | None = None,
    damping: float = 0.85,
    max_iter: int = 100,
    tol: float = 1e-9,
) -> list[float]:
    """Personalised PageRank by power iteration over ``graph`` (``src -> {dst: weight}``).

    Teleports (and dangling nodes' mass) go to ``personalization`` (normalised; uniform when empty).
    Returns one score per node; the scores sum to 1.
    """
    if nodes == 0:
        return []
    if personalization:
        total = sum(v for v in personalization.values() if v > 0)
        tele = [0.0] * nodes
        for node, v in personalization.items():
            if v > 0 and 0 <= node < nodes:
                tele[node] = v / total
    else:
        tele = [1.0 / nodes] * nodes
    out_edges: list[list[tuple[int, float]]] = [[] for _ in range(nodes)]
    for src, dsts in graph.items():
        wsum = sum(dsts.values())
        if wsum > 0:
            out_edges[src] = [(dst, w / wsum) for dst, w in dsts.items()]
    dangling = [i for i in range(nodes) if not out_edges[i]]
    rank = tele[:]
    for _ in range(max_iter):
        nxt = [0.0] * nodes
        for src in range(nodes):
            r = rank[src]
            if r == 0.0:
                continue
            for dst, w in out_edges[src]:
                nxt[dst] += damping * r * w
        lost = damping * sum(rank[i] for i in dangling) + (1.0 - damping)
        for i in range(nodes):
            nxt[i] += lost * tele[i]
        delta = sum(abs(a - b) for a, b in zip(nxt, rank, strict=True))
        rank = nxt
        if delta < tol:
            break
    return rank


def reference_graph(index: RepoIndex, boost_names: dict[str, float] | None = None) -> Graph:
    """File graph: ``A -> B`` weighted by ``A``'s uses of names ``B`` defines (cached without boosts)."""
    cached = getattr(index, "_ref_graph", None)
    if cached is not None and not boost_names:
        return cached
    def_files: dict[str, set[int]] = defaultdict(set)
    for name, entries in index.defs_by_name.items():
        if len(name) > 2:
            def_files[name].update(idx for idx, _ in entries)
    graph: Graph = defaultdict(dict)
    for src, fsyms in enumerate(index.symbols):
        if fsyms is None:
            continue
        edges = graph[src]
        for name, count in fsyms.references.items():
            targets = def_files.get(name)
            if not targets or len(targets) > _MAX_DEF_FILES:
                continue
            w = math.sqrt(count) / len(targets)
            if name.startswith("_"):
                w *= 0.3
            if boost_names and name in boost_names:
                w *= 1.0 + 9.0 * boost_names[name]
            for dst in targets:
                if dst != src:
                    edges[dst] = edges.get(dst, 0.0) + w
    result = dict(graph)
    if not boost_names:
        index._ref_graph = result  # type: ignore[attr-defined]
    return result


def _undirected(index: RepoIndex) -> Graph:
    """Symmetric view of the reference graph (cached on the index)."""
    cached = getattr(index, "_undirected_graph", None)
    if cached is not None:
        return cached
    both: Graph = defaultdict(dict)
    for src, dsts in reference_graph(index).items():
        for dst, w in dsts.items():
            both[src][dst] = both[src].get(dst, 0.0) + w
            both[dst][src] = both[dst].get(src, 0.0) + w
    result = dict(both)
    index._undirected_graph = result  # type: ignore[attr-defined]
    return result


def propagate(index: RepoIndex, seeds: dict[int, float], damping: float = 0.85) -> dict[int, float]:
    """PageRank personalised on ``seeds`` over the undirected reference graph, max-normalised, with
    the seeds' own teleport share removed (so a seed scores only for what its neighbours send it)."""
    if not seeds:
        return {}
    ranks = pagerank(_undirected(index), len(index.files), seeds, damping=damping, max_iter=30, tol=1e-7)
    total = sum(v for v in seeds.values() if v > 0) or 1.0
    scores = {i: r - (1 - damping) * seeds.get(i, 0.0) / total for i, r in enumerate(ranks) if r > 0}
    top = max(scores.values(), default=0.0)
    return {i: v / top for i, v in scores.items() if v > 0} if top > 0 else {}
