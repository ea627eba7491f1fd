"""Code search for agents: tree-sitter symbols, BM25, task-text signals, ranked files and a repo map.

Main entry points: :func:`search_files` (best files for a task), :func:`build_index` /
:meth:`RepoIndex.search_files` (index once, query many times) and :func:`repo_map` (a
PageRank-ranked outline of the repository within a token budget).
"""

from agents.search.index import RepoIndex, build_index
from agents.search.ranker import Weights, rank_files, search_files
from agents.search.repomap import repo_map
from agents.search.signals import Signals, extract_signals

__all__ = [
    "RepoIndex",
    "Signals",
    "Weights",
    "build_index",
    "extract_signals",
    "rank_files",
    "repo_map",
    "search_files",
]
