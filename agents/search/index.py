"""A repository index: code files, their symbols, BM25 over files and symbol chunks, name tables.

Build with :func:`build_index`; symbols come from :class:`~agents.search.symbols.SymbolCache`, so a
rebuild of an unchanged repository re-parses nothing.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path

from agents.search.bm25 import BM25Index, path_tokens, tokenize
from agents.search.symbols import EXTRACTOR_VERSION, FileSymbols, Symbol, SymbolCache, language_for
from infra.names import shown

#: Files with these extensions are indexed (symbols only for those tree-sitter supports).
CODE_EXTENSIONS = frozenset(
    ".py .pyi .pyx .js .jsx .mjs .cjs .ts .tsx .mts .cts .go .rs .java .kt .kts .scala .c .h .cc .cpp .cxx .hpp .hh "
    ".rb .php .cs .swift .m .mm .lua .sh .ex .exs .erl .hs .ml .clj .dart .r .jl .zig .vue .svelte".split()
)
#: Directories never descended into.
SKIP_DIRS = frozenset(
    "node_modules .git .hg .svn __pycache__ .venv venv env .tox .nox .mypy_cache .pytest_cache .ruff_cache "
    "site-packages dist build target .idea .vscode .next .cache coverage htmlcov .eggs bower_components".split()
)
MAX_FILE_BYTES = 1_000_000
#: Bump when tokenisation or chunking changes (cached token counts are then ignored).
TERMS_VERSION = "1"
#: Weight of path tokens in a file's document (a chunk gets them once).
PATH_REPEAT = 3
#: Chunks longer than this many lines are cut (keeps class bodies from swallowing their methods).
MAX_CHUNK_LINES = 150
DEFAULT_CACHE = Path(os.environ.get("BOSUN_SEARCH_CACHE", Path.home() / ".cache" / "bosun" / "search"))


@dataclass
class Chunk:
    """A symbol chunk: one definition's source lines, scored by the chunk BM25."""

    file: int
    symbol: Symbol


@dataclass
class RepoIndex:
    """Everything the ranker and the repo map need about one repository."""

    root: Path
    files: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    symbols: list[FileSymbols | None] = field(default_factory=list)
    file_bm25: BM25Index = field(default_factory=BM25Index)
    chunk_bm25: BM25Index = field(default_factory=BM25Index)
    chunks: list[Chunk] = field(default_factory=list)
    defs_by_name: dict[str, list[tuple[int, Symbol]]] = field(default_factory=lambda: defaultdict(list))
    defs_by_qualname: dict[str, list[tuple[int, Symbol]]] = field(default_factory=lambda: defaultdict(list))
    by_basename: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    by_module: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    file_ids: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Files indexed by their text alone, and why: parsing them went past ``symbols.PARSE_BOUNDS``."""

    def iter_texts(self) -> Iterator[tuple[str, str]]:
        """``(relative path, text)`` of every indexed file."""
        yield from zip(self.files, self.texts, strict=True)


def iter_code_files(root: Path) -> Iterator[str]:
    """Relative POSIX paths of code files under ``root``, skipping vendored and generated folders."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(filenames):
            if os.path.splitext(name)[1].lower() not in CODE_EXTENSIONS:
                continue
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            yield rel.replace(os.sep, "/")


def module_names(rel: str) -> list[str]:
    """Dotted module names a file may be imported or mentioned as (``src/pkg/mod.py`` -> ``pkg.mod``)."""
    stem = rel.rsplit(".", 1)[0]
    parts = stem.split("/")
    if parts[-1] in ("__init__", "index", "mod", "lib"):
        parts = parts[:-1]
    names = []
    for start in range(min(3, len(parts))):
        if parts[start:]:
            names.append(".".join(parts[start:]))
    return names


def _chunk_tokens(line_tokens: list[list[str]], sym: Symbol, children_start: int | None) -> list[str]:
    """Tokens of a definition's lines; a type's chunk stops where its first member starts."""
    end = sym.end_line
    if children_start is not None and sym.kind in ("class", "struct", "interface", "trait", "module", "enum"):
        end = max(sym.start_line, children_start - 1)
    end = min(end, sym.start_line + MAX_CHUNK_LINES)
    return list(chain.from_iterable(line_tokens[sym.start_line - 1 : end]))


def looks_generated(rel: str, text: str) -> bool:
    """Minified or bundled files (``*.min.js``, very long lines) are skipped: they only add noise."""
    name = rel.rsplit("/", 1)[-1].lower()
    if ".min." in name or name.endswith((".bundle.js", "-min.js")):
        return True
    lines = text.count("\n") + 1
    return len(text) > 20_000 and len(text) / lines > 300


def _read_files(root: Path) -> list[tuple[str, bytes, str]]:
    """``(relative path, raw bytes, text)`` of the indexable code files under ``root``; paths in their shown form
    (``infra.names``: they go into tool results and the model's context)."""
    out = []
    for rel in iter_code_files(root):
        full = root / rel
        try:
            if full.stat().st_size > MAX_FILE_BYTES:
                continue
            raw = full.read_bytes()
        except OSError:
            continue
        if b"\x00" in raw[:4096]:
            continue
        text = raw.decode("utf-8", "replace")
        if not looks_generated(rel, text):
            out.append((shown(rel), raw, text))
    return out


def _terms_key(raw: bytes, language: str | None) -> str:
    h = hashlib.sha1(f"terms:{TERMS_VERSION}:{EXTRACTOR_VERSION}:{language}:".encode())
    h.update(raw)
    return h.hexdigest()


def _terms(text: str, fsyms: FileSymbols | None) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Token counts of a file and of each of its definition chunks (path tokens not included)."""
    line_tokens = [tokenize(line) for line in text.split("\n")]
    file_counts = dict(Counter(chain.from_iterable(line_tokens)))
    chunk_counts: list[dict[str, int]] = []
    if fsyms is not None:
        defs = fsyms.definitions
        for pos, sym in enumerate(defs):
            nxt = defs[pos + 1].start_line if pos + 1 < len(defs) else None
            child = nxt if nxt is not None and nxt <= sym.end_line else None
            chunk_counts.append(dict(Counter(_chunk_tokens(line_tokens, sym, child) + tokenize(sym.qualname) * 2)))
    return file_counts, chunk_counts


def _add_file(
    index: RepoIndex,
    rel: str,
    text: str,
    fsyms: FileSymbols | None,
    terms: tuple[dict[str, int], list[dict[str, int]]],
) -> None:
    idx = len(index.files)
    index.files.append(rel)
    index.texts.append(text)
    index.file_ids[rel] = idx
    index.symbols.append(fsyms)
    file_counts, chunk_counts = terms
    ptoks = path_tokens(rel, repeat=1)
    for tok in ptoks:
        file_counts[tok] = file_counts.get(tok, 0) + PATH_REPEAT
    index.file_bm25.add_counts(rel, file_counts)
    base = rel.rsplit("/", 1)[-1]
    index.by_basename[base].append(idx)
    for mod in module_names(rel):
        index.by_module[mod].append(idx)
    if fsyms is None:
        return
    for sym, counts in zip(fsyms.definitions, chunk_counts, strict=True):
        index.defs_by_name[sym.name].append((idx, sym))
        index.defs_by_qualname[sym.qualname].append((idx, sym))
        index.chunks.append(Chunk(idx, sym))
        for tok in ptoks:
            counts[tok] = counts.get(tok, 0) + 1
        index.chunk_bm25.add_counts(f"{rel}:{sym.start_line}", counts)


def build_index(root: Path, cache_dir: Path | None = None, workers: int | None = None) -> RepoIndex:
    """Index the code files under ``root``; symbols are cached under ``cache_dir`` by content hash.

    Files missing from the cache are parsed in up to ``workers`` helper processes at once (default: the CPU
    count, at most 4), each within ``symbols.PARSE_BOUNDS``: a file past them is indexed by its text alone and
    listed in ``RepoIndex.skipped`` with the reason.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"repository directory not found: {root}")
    index = RepoIndex(root=root)
    files = _read_files(root)
    languages = [language_for(rel) for rel, _, _ in files]
    with SymbolCache(Path(cache_dir) if cache_dir else DEFAULT_CACHE) as cache:
        all_symbols = cache.get_or_extract_many(
            [(raw, lang) for (_, raw, _), lang in zip(files, languages, strict=True)], workers=workers)
        for i, ((rel, _, _), fsyms) in enumerate(zip(files, all_symbols, strict=True)):
            if fsyms is not None and fsyms.skipped:
                index.skipped.append((rel, fsyms.skipped))
                all_symbols[i] = None
        # (a file without symbols has no chunks: its terms are kept apart from those of the same content parsed)
        keys = [_terms_key(raw, lang if fsyms is not None else None)
                for (_, raw, _), lang, fsyms in zip(files, languages, all_symbols, strict=True)]
        stored = cache.get_blobs(keys)
        fresh: list[tuple[str, bytes]] = []
        for (rel, _raw, text), fsyms, key in zip(files, all_symbols, keys, strict=True):
            blob = stored.get(key)
            if blob is None:
                terms = _terms(text, fsyms)
                fresh.append((key, marshal.dumps(terms)))
            else:
                terms = marshal.loads(blob)
            _add_file(index, rel, text, fsyms, terms)
        cache.put_blobs(fresh)
    index.file_bm25.finalize()
    index.chunk_bm25.finalize()
    return index
