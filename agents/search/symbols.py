"""Tree-sitter symbol extraction (definitions and references) with an on-disk cache by content hash.

Supported: Python, JavaScript (+JSX), TypeScript, TSX, Go, Rust, Java, C, C++ and Ruby. A definition
carries its kind (``function``, ``method``, ``class``, ...), its qualified name (``Outer.Inner.method``,
``Receiver.Method`` in Go, ``Type::fn`` in Rust is written ``Type.fn``), its 1-based line span and
its first source line. References are the identifier names a file uses, with counts.

Files come from hostile workspaces, and a parse can cost far more than a file's size: the cache extracts every file
in a helper process bounded in CPU time and memory (``sandbox.bounded``, :data:`PARSE_BOUNDS`). A file past the
bounds gets no symbols; its :class:`FileSymbols` says why (``skipped``), and that is cached like a result.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Language, Node, Parser, Query, QueryCursor

from agents.languages import language_for as file_language
from sandbox import bounded

PARSE_BOUNDS = bounded.Bounds(cpu_s=1.5, memory_mb=1024)
"""What parsing one file may cost the host (a helper process's CPU time and address space)."""
MAX_DEFINITIONS = 10_000
"""Definitions of one file indexed at most (the largest of sympy, astropy and Sphinx have about 1,000): each costs
the worker itself a symbol chunk in the index; a file with more is indexed by its text."""

#: Bump when extraction output changes; old cache rows are then ignored.
EXTRACTOR_VERSION = "1"


_JS_DEFS = """
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(class_declaration name: (_) @name) @def.class
(method_definition name: (_) @name) @def.method
(variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function
"""
_TS_DEFS = (
    _JS_DEFS
    + """
(abstract_class_declaration name: (_) @name) @def.class
(interface_declaration name: (_) @name) @def.interface
(type_alias_declaration name: (_) @name) @def.type
(enum_declaration name: (_) @name) @def.enum
(method_signature name: (_) @name) @def.method
(abstract_method_signature name: (_) @name) @def.method
(function_signature name: (_) @name) @def.function
(internal_module name: (_) @name) @def.module
"""
)

#: Per language: definition patterns (``@name`` + ``@def.KIND``, optional ``@receiver``), scope-only
#: patterns (``@scope`` + ``@scope.name``) and the node types that count as identifier references.
_SPECS: dict[str, tuple[str, tuple[str, ...]]] = {
    "python": (
        """
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
""",
        ("identifier",),
    ),
    "javascript": (_JS_DEFS, ("identifier", "property_identifier", "shorthand_property_identifier")),
    "typescript": (_TS_DEFS, ("identifier", "property_identifier", "type_identifier", "shorthand_property_identifier")),
    "tsx": (_TS_DEFS, ("identifier", "property_identifier", "type_identifier", "shorthand_property_identifier")),
    "go": (
        """
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [(type_identifier) @receiver
                                                          (pointer_type (type_identifier) @receiver)
                                                          (generic_type (type_identifier) @receiver)
                                                          (pointer_type (generic_type (type_identifier) @receiver))]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (struct_type)) @def.struct
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name) @def.type
(method_elem name: (field_identifier) @name) @def.method
""",
        ("identifier", "field_identifier", "type_identifier", "package_identifier"),
    ),
    "rust": (
        """
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.struct
(enum_item name: (type_identifier) @name) @def.enum
(union_item name: (type_identifier) @name) @def.struct
(trait_item name: (type_identifier) @name) @def.trait
(type_item name: (type_identifier) @name) @def.type
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.constant
(impl_item type: (_) @scope.name) @scope
""",
        ("identifier", "field_identifier", "type_identifier"),
    ),
    "java": (
        """
(class_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.enum
(record_declaration name: (identifier) @name) @def.class
(annotation_type_declaration name: (identifier) @name) @def.interface
(method_declaration name: (identifier) @name) @def.method
(constructor_declaration name: (identifier) @name) @def.method
""",
        ("identifier", "type_identifier"),
    ),
    "c": (
        """
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))
  @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(type_definition declarator: (type_identifier) @name) @def.type
""",
        ("identifier", "field_identifier", "type_identifier"),
    ),
    "cpp": (
        """
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @def.method
(function_definition declarator: (function_declarator declarator: (qualified_identifier name: (_) @name)))
  @def.method
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(struct_specifier name: (type_identifier) @name body: (_)) @def.struct
(enum_specifier name: (type_identifier) @name body: (_)) @def.enum
(namespace_definition name: (_) @name) @def.module
""",
        ("identifier", "field_identifier", "type_identifier", "namespace_identifier"),
    ),
    "ruby": (
        """
(method name: (_) @name) @def.method
(singleton_method name: (_) @name) @def.method
(class name: (_) @name) @def.class
(module name: (_) @name) @def.module
""",
        ("identifier", "constant"),
    ),
}

#: Kinds whose bodies hold other definitions; nested definitions get their name as qualifier.
_SCOPE_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "module", "function", "method"})


@dataclass(frozen=True)
class Symbol:
    """One definition in a file."""

    name: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str

    def to_list(self) -> list[object]:
        return [self.name, self.qualname, self.kind, self.start_line, self.end_line, self.signature]

    @classmethod
    def from_list(cls, row: list) -> Symbol:
        return cls(str(row[0]), str(row[1]), str(row[2]), int(row[3]), int(row[4]), str(row[5]))


@dataclass
class FileSymbols:
    """Definitions and references of one file."""

    language: str
    definitions: list[Symbol] = field(default_factory=list)
    references: dict[str, int] = field(default_factory=dict)
    skipped: str = ""
    """Why the file was not parsed (it went past :data:`PARSE_BOUNDS`); empty when it was."""

    def to_json(self) -> str:
        obj: dict = {"language": self.language, "defs": [s.to_list() for s in self.definitions],
                     "refs": self.references}
        if self.skipped:
            obj["skipped"] = self.skipped
        return json.dumps(obj, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: str) -> FileSymbols:
        obj = json.loads(data)
        return cls(obj["language"], [Symbol.from_list(r) for r in obj["defs"]], dict(obj["refs"]),
                   str(obj.get("skipped", "")))


def language_for(path: str | Path) -> str | None:
    """The tree-sitter language of a file when symbol extraction supports it, else None."""
    language = file_language(str(path))
    return language if language in _SPECS else None


class _Extractor:
    """Parser and compiled queries for one language (compiled once, reused)."""

    def __init__(self, language: str) -> None:
        from tree_sitter_language_pack import get_language

        lang: Language = get_language(language)  # type: ignore[arg-type]
        self.parser = Parser(lang)
        defs_src, ref_types = _SPECS[language]
        self.defs = Query(lang, defs_src)
        self.refs = Query(lang, "\n".join(f"({t}) @ref" for t in ref_types))

    def extract(self, language: str, source: bytes) -> FileSymbols:
        tree = self.parser.parse(source)
        root = tree.root_node
        lines = source.split(b"\n")
        # Keys are (start, end, node type): a body block can share its span with its only child.
        found: dict[tuple[int, int, str], tuple[int, str, str, Node, str]] = {}
        scopes: dict[tuple[int, int, str], str] = {}
        for pattern, caps in QueryCursor(self.defs).matches(root):
            if "scope" in caps:
                node, name_node = caps["scope"][0], caps.get("scope.name", [None])[0]
                if name_node is not None:
                    text = _text(source, name_node).split("<", 1)[0].strip()
                    scopes[_key(node)] = text.rsplit("::", 1)[-1]
                continue
            kind_key = next((k for k in caps if k.startswith("def.")), None)
            if kind_key is None or "name" not in caps:
                continue
            node = caps[kind_key][0]
            span = _key(node)
            if span in found and found[span][0] <= pattern:  # earlier pattern wins (Go struct before type)
                continue
            receiver = _text(source, caps["receiver"][0]) if "receiver" in caps else ""
            found[span] = (pattern, _text(source, caps["name"][0]), kind_key[4:], node, receiver)
        for span, (_p, name, kind, _node, _r) in found.items():
            if kind in _SCOPE_KINDS:
                scopes.setdefault(span, name)
        defs: list[Symbol] = []
        for span, (_p, name, kind, node, receiver) in found.items():
            quals: list[str] = []
            parent = node.parent
            inside_type = False
            while parent is not None:
                key = _key(parent)
                if key in scopes and key != span:
                    quals.append(scopes[key])
                    pk = found.get(key)
                    if pk is None or pk[2] in ("class", "struct", "interface", "trait", "enum"):
                        inside_type = inside_type or len(quals) == 1
                parent = parent.parent
            if receiver:
                quals = [receiver]
            if kind == "function" and inside_type:
                kind = "method"
            qual = ".".join([*reversed(quals), name])
            start, end = node.start_point[0] + 1, node.end_point[0] + 1
            first = lines[start - 1].decode("utf-8", "replace").strip() if start - 1 < len(lines) else ""
            defs.append(Symbol(name, qual, kind, start, end, first[:200]))
        defs.sort(key=lambda s: (s.start_line, s.end_line))
        refs = Counter(_text(source, n) for n in QueryCursor(self.refs).captures(root).get("ref", []))
        return FileSymbols(language, defs, dict(refs))


def _key(node: Node) -> tuple[int, int, str]:
    return (node.start_byte, node.end_byte, node.type)


def _text(source: bytes, node: Node) -> str:
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


_extractors: dict[str, _Extractor] = {}
_lock = threading.Lock()


def extract_symbols(source: bytes | str, language: str) -> FileSymbols:
    """Definitions and references of ``source`` parsed as ``language`` (one that :func:`language_for` returns)."""
    if language not in _SPECS:
        raise ValueError(f"unsupported language {language!r}; supported: {', '.join(sorted(_SPECS))}")
    data = source.encode("utf-8") if isinstance(source, str) else source
    with _lock:
        return _extractor(language).extract(language, data)


def _extractor(language: str) -> _Extractor:
    """The extractor of ``language``, made on first use (call with ``_lock`` held)."""
    ext = _extractors.get(language)
    if ext is None:
        ext = _extractors[language] = _Extractor(language)
    return ext


def reference_lines(source: bytes, language: str, name: str) -> list[int]:
    """The 1-based lines where ``name`` occurs as an identifier (not inside a string, a comment or a longer token)
    in ``source`` parsed as ``language``; what a helper process runs for ``find_symbol``."""
    with _lock:
        root = _extractor(language).parser.parse(source).root_node
    word = re.compile(rb"(?<![A-Za-z0-9_$])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_$])")
    lines: list[int] = []
    for m in word.finditer(source):
        node = root.descendant_for_byte_range(m.start(), m.end())
        if node is None or node.start_byte != m.start() or node.end_byte != m.end():
            continue
        if "identifier" not in node.type and node.type not in ("constant", "name", "word"):
            continue
        line = node.start_point[0] + 1
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def extract_json(source: bytes, language: str) -> str:
    """:func:`extract_symbols` as JSON: what a helper process (``sandbox.bounded``) runs for the cache. A file with
    more than :data:`MAX_DEFINITIONS` is skipped: indexing them would cost the worker itself too much."""
    found = extract_symbols(source, language)
    if len(found.definitions) > MAX_DEFINITIONS:
        return FileSymbols(language, skipped=f"it defines more than {MAX_DEFINITIONS:,} symbols").to_json()
    return found.to_json()


def extract_bounded(items: list[tuple[bytes, str]], parallel: int | None = None) -> list[tuple[str, bool]]:
    """:func:`extract_json` of every ``(source, language)`` in helper processes within :data:`PARSE_BOUNDS`, at most
    ``parallel`` at once: per file the JSON of its symbols, or of a :class:`FileSymbols` that says why it was
    skipped, and whether that is the file's own (to cache: its symbols, or its going past a bound) or the machine's
    (a helper that failed or was starved: parse it again next time)."""
    out: list[tuple[str, bool]] = []
    for found, (_src, lang) in zip(bounded.pool().map(extract_json, items, PARSE_BOUNDS, parallel=parallel), items,
                                   strict=True):
        if isinstance(found, str):
            out.append((found, True))
        else:
            own = isinstance(found, bounded.OverBound) and found.why in ("cpu", "memory")
            out.append((FileSymbols(lang, skipped=f"parsing it {found}").to_json(), own))
    return out


def content_key(source: bytes, language: str) -> str:
    """Cache key: hash of the extractor version, the language and the file content."""
    h = hashlib.sha1(f"{EXTRACTOR_VERSION}:{language}:".encode())
    h.update(source)
    return h.hexdigest()


class SymbolCache:
    """A sqlite3 cache of :class:`FileSymbols` keyed by content hash, under ``cache_dir``.

    ``hits`` and ``misses`` count lookups since creation (tests use them to see the cache work).
    """

    def __init__(self, cache_dir: Path) -> None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / "symbols.sqlite3"
        self._db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS symbols (key TEXT PRIMARY KEY, data TEXT NOT NULL)")
        self._db.execute("CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, data BLOB NOT NULL)")
        self._pending: list[tuple[str, str]] = []
        self.hits = 0
        self.misses = 0

    def get_or_extract(self, source: bytes, language: str) -> FileSymbols:
        """Cached symbols for this content, extracting (and queueing a write) on a miss."""
        key = content_key(source, language)
        row = self._db.execute("SELECT data FROM symbols WHERE key = ?", (key,)).fetchone()
        if row is not None:
            self.hits += 1
            return FileSymbols.from_json(row[0])
        self.misses += 1
        data, keep = extract_bounded([(source, language)])[0]
        if keep:
            self._pending.append((key, data))
        if len(self._pending) >= 500:
            self.flush()
        return FileSymbols.from_json(data)

    def get_or_extract_many(self, items: list[tuple[bytes, str | None]], workers: int | None = None
                            ) -> list[FileSymbols | None]:
        """Symbols for many ``(source, language)`` pairs (None where the language is None).

        Cache misses are extracted in at most ``workers`` helper processes at once (default: the pool's size).
        """
        keys = [content_key(src, lang) if lang else None for src, lang in items]
        found: dict[str, str] = {}
        wanted = [k for k in keys if k is not None]
        for start in range(0, len(wanted), 500):
            batch = wanted[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.update(self._db.execute(f"SELECT key, data FROM symbols WHERE key IN ({marks})", batch).fetchall())
        results: list[FileSymbols | None] = [None] * len(items)
        todo: list[int] = []
        for i, key in enumerate(keys):
            if key is None:
                continue
            if key in found:
                self.hits += 1
                results[i] = FileSymbols.from_json(found[key])
            else:
                self.misses += 1
                todo.append(i)
        extracted = extract_bounded([(items[i][0], items[i][1]) for i in todo], parallel=workers)  # type: ignore[misc]
        for i, (data, keep) in zip(todo, extracted, strict=True):
            results[i] = FileSymbols.from_json(data)
            if keep:
                self._pending.append((keys[i], data))  # type: ignore[arg-type]
        self.flush()
        return results

    def get_blobs(self, keys: list[str]) -> dict[str, bytes]:
        """Stored byte blobs (other per-content data, e.g. token counts) for those of ``keys`` present."""
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.update(self._db.execute(f"SELECT key, data FROM blobs WHERE key IN ({marks})", batch).fetchall())
        return found

    def put_blobs(self, items: list[tuple[str, bytes]]) -> None:
        """Store byte blobs by key."""
        if items:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO blobs (key, data) VALUES (?, ?)", items)

    def flush(self) -> None:
        """Write queued entries."""
        if self._pending:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO symbols (key, data) VALUES (?, ?)", self._pending)
            self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._db.close()

    def __enter__(self) -> SymbolCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
