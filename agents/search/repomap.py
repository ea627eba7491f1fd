"""Repo map: files ranked by personalised PageRank over the identifier reference graph, rendered as
``path:`` headers with their definitions' first lines, within a token budget (about 4 chars/token).

The graph has an edge ``A -> B`` when file ``A`` uses a name that file ``B`` defines, weighted by how
often ``A`` uses it and by how specific the name is (names defined in many files count less;
names the task mentions count more). PageRank is personalised towards the files the task's signals
and BM25 point at, so the map shows the neighbourhood of the task rather than the whole repository.
"""

from __future__ import annotations

from pathlib import Path

from agents.search.graph import pagerank, reference_graph
from agents.search.index import RepoIndex, build_index
from agents.search.ranker import rank_files
from agents.search.signals import extract_signals

CHARS_PER_TOKEN = 4
DEFAULT_BUDGET = 1024

def rank_for_task(index: RepoIndex, query: str) -> list[float]:
    """PageRank of every file, personalised by the task's signals and best BM25 files."""
    sig = extract_signals(query) if query else None
    seeds: dict[int, float] = {}
    if query:
        for rel, score in rank_files(index, query, k=10):
            seeds[index.file_ids[rel]] = score
    boost = sig.identifiers if sig else None
    graph = reference_graph(index, boost)
    return pagerank(graph, len(index.files), seeds or None)


def render_repo_map(index: RepoIndex, query: str = "", budget_tokens: int = DEFAULT_BUDGET) -> str:
    """The repo map text for ``query`` (may be empty) within ``budget_tokens``."""
    if budget_tokens < 1:
        raise ValueError(f"budget_tokens must be at least 1, got {budget_tokens}")
    budget = budget_tokens * CHARS_PER_TOKEN
    ranks = rank_for_task(index, query)
    mentioned = extract_signals(query).identifiers if query else {}
    order = sorted(range(len(index.files)), key=lambda i: (-ranks[i], index.files[i]))
    out: list[str] = []
    used = 0
    for idx in order:
        fsyms = index.symbols[idx]
        header = f"{index.files[idx]}:\n"
        if used + len(header) > budget:
            break
        lines: list[str] = []
        if fsyms is not None:
            defs = sorted(
                fsyms.definitions,
                key=lambda s: (-mentioned.get(s.name, 0.0), s.qualname.count("."), s.name[:1] == "_", s.start_line),
            )
            for sym in defs:
                indent = "  " * (1 + sym.qualname.count("."))
                lines.append((sym.start_line, f"{sym.start_line:>5}|{indent}{sym.signature[:120]}\n"))
        chosen: list[tuple[int, str]] = []
        # One file may take at most a third of the budget, so the map shows a neighbourhood.
        room = min(budget - used, max(budget // 3, 200)) - len(header)
        for line_no, text in lines:
            if len(text) <= room:
                chosen.append((line_no, text))
                room -= len(text)
        if not chosen and lines:
            continue
        block = header + "".join(t for _, t in sorted(chosen))
        out.append(block)
        used += len(block)
    return "".join(out)


def repo_map(
    repo: Path | RepoIndex, query: str = "", budget_tokens: int = DEFAULT_BUDGET, cache_dir: Path | None = None
) -> str:
    """Repo map of ``repo`` (a directory or a built index) for ``query`` within ``budget_tokens``."""
    index = repo if isinstance(repo, RepoIndex) else build_index(Path(repo), cache_dir=cache_dir)
    return render_repo_map(index, query, budget_tokens)
