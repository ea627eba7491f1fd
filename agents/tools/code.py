"""Code-search tools: search_code (ranked files), find_symbol (definitions and references), repo_map.

These are the only tools that read the workspace from the host (tree-sitter and the index live there, not in the
sandbox), and only through ``hostview``: symlinks are never followed, nothing outside the workspace is read, and the
index is built from a private mirror of regular-file copies. Ranking, symbols and the map come from
``agents.search``; without it, search_code falls back to counting grep hits in the sandbox. Every parse of a
workspace file runs in a helper process bounded in CPU time and memory (``sandbox.bounded``,
``symbols.PARSE_BOUNDS``): a file past the bounds is searched by its text alone, and the result names it.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections import OrderedDict
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.search.bm25 import tokenize
from agents.search.index import CODE_EXTENSIONS, build_index
from agents.search.ranker import rank_files
from agents.search.repomap import render_repo_map
from agents.search.symbols import PARSE_BOUNDS, language_for, reference_lines
from agents.tools.registry import Args, ToolContext, ToolOutput
from infra.errors import ToolFailed
from sandbox import bounded, hostview

MAX_INDEXES = 4
"""Repository indexes kept in memory per process (least recently used dropped first)."""
_index_cache: OrderedDict[str, tuple[int, Any]] = OrderedDict()
_index_lock = threading.Lock()


def _index_sync(ctx: ToolContext) -> tuple[Any, str]:
    """The ``agents.search`` RepoIndex of the workspace's safe mirror (rebuilt only when files changed), and why
    it covers only part of the workspace (empty: it covers it all)."""

    workspace = ctx.host_workspace()
    mirror = hostview.mirror_for(workspace, frozenset(CODE_EXTENSIONS))
    with mirror.lock:
        mirror.sync()
        key = mirror.token
        with _index_lock:
            cached = _index_cache.get(key)
            if cached is not None:
                _index_cache.move_to_end(key)
        if cached is not None and cached[0] == mirror.generation:
            return cached[1], mirror.left_out
        index = build_index(mirror.dest, cache_dir=hostview.mirror_base() / "symbols")
        with _index_lock:
            _index_cache[key] = (mirror.generation, index)
            _index_cache.move_to_end(key)
            while len(_index_cache) > MAX_INDEXES:
                _index_cache.popitem(last=False)
        return index, mirror.left_out


async def _index(ctx: ToolContext) -> tuple[Any, str]:
    """The index, and the note a result ends with when it leaves something out (files past the bounds)."""
    try:
        index, left_out = await asyncio.to_thread(_index_sync, ctx)
    except (hostview.UnsafePath, OSError) as e:
        raise ToolFailed(f"code search cannot index the workspace: {e}") from None
    note = (f"\n[the index covers part of the workspace: it has {left_out}; the rest is not searched]"
            if left_out else "")
    return index, note


# ---- search_code ------------------------------------------------------------------------------------------------


class SearchCodeArgs(Args):
    query: str = Field(min_length=1, description=(
        "What you are looking for: a task description, an error message or stack trace, identifiers, file names."))
    k: int = Field(10, ge=1, le=50, description="How many files to return.")
    lines_per_file: int = Field(3, ge=0, le=20, description="Best-matching lines shown under each file.")


class SearchHit(BaseModel):
    path: str
    score: float
    lines: list[tuple[int, str]]


class SearchCodeResult(BaseModel):
    hits: list[SearchHit]
    engine: Literal["ranker", "grep"]
    not_parsed: list[str] = []
    """Files searched by their text alone: parsing them went past the host's bounds (the text says why)."""


def _not_parsed(skipped: list[tuple[str, str]]) -> str:
    """The note a result ends with when some files were not parsed."""
    if not skipped:
        return ""
    shown = "; ".join(f"{path} ({why})" for path, why in skipped[:10])
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    return f"\n[not parsed, so without symbols: {shown}{more}. The host bounds what parsing one file may cost.]"


def _query_words(query: str) -> list[str]:
    try:
        words = tokenize(query)
    except ImportError:
        words = [w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", query)]
    return list(dict.fromkeys(words))


def _best_lines(text: str, words: list[str], n: int) -> list[tuple[int, str]]:
    if n == 0 or not words:
        return []
    scored = []
    for i, line in enumerate(text.splitlines(), 1):
        low = line.lower()
        hits = sum(1 for w in words if w in low)
        if hits:
            scored.append((-hits, i, line.strip()[:200]))
    scored.sort()
    return sorted((i, line) for _, i, line in scored[:n])


async def search_code(ctx: ToolContext, a: SearchCodeArgs) -> ToolOutput:

    index, note = await _index(ctx)
    words = _query_words(a.query)
    ranked = await asyncio.to_thread(rank_files, index, a.query, a.k) if index.files else []
    hits = []
    for path, score in ranked:
        text = index.texts[index.file_ids[path]]
        hits.append(SearchHit(path=path, score=round(float(score), 4), lines=_best_lines(text, words,
                                                                                          a.lines_per_file)))
    return _render_hits(a, hits, "ranker", index.skipped, note)


def _render_hits(a: SearchCodeArgs, hits: list[SearchHit], engine: Literal["ranker"],
                 skipped: list[tuple[str, str]], note: str) -> ToolOutput:
    rows = []
    for n, hit in enumerate(hits, 1):
        rows.append(f"{n}. {hit.path}  (score {hit.score:g})")
        rows.extend(f"   {line}: {text}" for line, text in hit.lines)
    text = ("\n".join(rows) or "(no matching files)") + _not_parsed(skipped) + note
    return ToolOutput.of(text, SearchCodeResult(hits=hits, engine=engine, not_parsed=[p for p, _ in skipped]),
                         f"{len(hits)} files for {a.query[:60]!r}")


# ---- find_symbol ------------------------------------------------------------------------------------------------


class FindSymbolArgs(Args):
    name: str = Field(min_length=1, description="Symbol name, bare ('parse') or qualified ('Parser.parse').")
    kind: Literal["all", "definitions", "references"] = "all"
    path: str | None = Field(None, description="Only look in this file or directory.")
    max_results: int = Field(100, ge=1, le=1000)


class SymbolHit(BaseModel):
    path: str
    line: int
    kind: str
    """The definition's kind (function, class, method...) or 'reference'."""
    text: str


class FindSymbolResult(BaseModel):
    definitions: list[SymbolHit]
    references: list[SymbolHit]
    truncated: bool
    not_parsed: list[str] = []
    """Files whose definitions or references were not looked for: parsing them went past the host's bounds."""


def _in_scope(path: str, scope: str | None) -> bool:
    if not scope:
        return True
    scope = scope.strip("/").removeprefix("./")
    return scope in ("", ".") or path == scope or path.startswith(scope + "/")


def _references(index: Any, bare: str, scope: str | None, skip: set[tuple[str, int]], limit: int
                ) -> tuple[list[SymbolHit], bool, list[tuple[str, str]]]:
    """References to ``bare`` (identifier nodes, found by parsing in bounded helper processes, a few files at a
    time until ``limit``): (hits, whether they stopped at the limit, files not parsed and why)."""
    files = [idx for idx, path in enumerate(index.files) if index.symbols[idx] is not None
             and bare in index.symbols[idx].references and _in_scope(path, scope) and language_for(path)]
    out: list[SymbolHit] = []
    not_parsed: list[tuple[str, str]] = []
    for start in range(0, len(files), _REFERENCE_BATCH):
        batch = files[start:start + _REFERENCE_BATCH]
        found = bounded.pool().map(reference_lines, [(index.texts[i].encode("utf-8", "surrogatepass"),
                                                      index.symbols[i].language, bare) for i in batch], PARSE_BOUNDS)
        for idx, lines_found in zip(batch, found, strict=True):
            path = index.files[idx]
            if isinstance(lines_found, Exception):
                not_parsed.append((path, f"parsing it {lines_found}"))
                continue
            lines = index.texts[idx].split("\n")
            for line in lines_found:
                if (path, line) in skip or not 0 < line <= len(lines):
                    continue
                if len(out) >= limit:
                    return out, True, not_parsed
                out.append(SymbolHit(path=path, line=line, kind="reference", text=lines[line - 1].strip()[:200]))
    return out, False, not_parsed


_REFERENCE_BATCH = 16
"""Files parsed at a time for references (the search stops at the limit)."""


def _find_symbol_sync(index: Any, a: FindSymbolArgs) -> tuple[FindSymbolResult, list[tuple[str, str]]]:
    bare = a.name.rsplit(".", 1)[-1].rsplit("::", 1)[-1]
    defs: list[SymbolHit] = []
    skip: set[tuple[str, int]] = set()
    found = list(index.defs_by_qualname.get(a.name, []))
    if "." not in a.name:
        found += index.defs_by_name.get(a.name, [])
    for idx, sym in dict.fromkeys(found):
        path = index.files[idx]
        skip.add((path, sym.start_line))
        if _in_scope(path, a.path):
            defs.append(SymbolHit(path=path, line=sym.start_line, kind=sym.kind,
                                  text=f"{sym.qualname}: {sym.signature}"[:240]))
    defs.sort(key=lambda h: (h.path, h.line))
    truncated = len(defs) > a.max_results
    defs = defs[: a.max_results] if a.kind != "references" else []
    refs: list[SymbolHit] = []
    not_parsed = list(index.skipped)
    if a.kind != "definitions":
        refs, more, failed = _references(index, bare, a.path, skip, a.max_results)
        truncated = truncated or more
        not_parsed += failed
    not_parsed = [(p, why) for p, why in not_parsed if _in_scope(p, a.path)]
    return FindSymbolResult(definitions=defs, references=refs, truncated=truncated,
                            not_parsed=[p for p, _ in not_parsed]), not_parsed


async def find_symbol(ctx: ToolContext, a: FindSymbolArgs) -> ToolOutput:
    index, note = await _index(ctx)
    result, not_parsed = await asyncio.to_thread(_find_symbol_sync, index, a)
    rows = []
    if a.kind != "references":
        rows.append(f"definitions of {a.name} ({len(result.definitions)}):")
        rows += [f"  {h.path}:{h.line}: [{h.kind}] {h.text}" for h in result.definitions] or ["  (none found)"]
    if a.kind != "definitions":
        rows.append(f"references to {a.name.rsplit('.', 1)[-1]} ({len(result.references)}):")
        rows += [f"  {h.path}:{h.line}: {h.text}" for h in result.references] or ["  (none found)"]
    if result.truncated:
        rows.append(f"[stopped at {a.max_results} results; pass `path` to narrow]")
    summary = f"{a.name}: {len(result.definitions)} definitions, {len(result.references)} references"
    return ToolOutput.of("\n".join(rows) + _not_parsed(not_parsed) + note, result, summary)


# ---- repo_map ---------------------------------------------------------------------------------------------------


class RepoMapArgs(Args):
    query: str = Field("", description="The task, to centre the map on the relevant files (may be empty).")
    budget_tokens: int = Field(1024, ge=128, le=8192, description="Size of the map in tokens (about 4 chars each).")


class RepoMapResult(BaseModel):
    files: int
    chars: int
    not_parsed: list[str] = []
    """Files left out of the map: parsing them went past the host's bounds."""


async def repo_map(ctx: ToolContext, a: RepoMapArgs) -> ToolOutput:

    index, note = await _index(ctx)
    if not index.files:
        return ToolOutput.of("(no code files found)", RepoMapResult(files=0, chars=0), "repo map: empty")
    text = await asyncio.to_thread(render_repo_map, index, a.query, a.budget_tokens)
    n = sum(1 for line in text.splitlines() if line.endswith(":") and not line.startswith(" "))
    return ToolOutput.of((text or "(empty map)") + _not_parsed(index.skipped) + note,
                         RepoMapResult(files=n, chars=len(text), not_parsed=[p for p, _ in index.skipped]),
                         f"repo map: {n} files, {len(text)} chars")
