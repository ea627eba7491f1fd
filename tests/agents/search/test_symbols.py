"""Tree-sitter symbol extraction per language, and the content-hash cache."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from agents.search import build_index
from agents.search.symbols import SymbolCache, extract_symbols, language_for

CASES = {
    "python": (
        "class Outer:\n    def method(self, x):\n        return helper(x)\n\n\ndef helper(x):\n    return x\n",
        {("Outer", "class"), ("Outer.method", "method"), ("helper", "function")},
        {"helper", "x"},
    ),
    "javascript": (
        "class Cart {\n  addItem(item) { return total(item); }\n}\nfunction total(x) { return x; }\n"
        "const fmt = (v) => String(v);\n",
        {("Cart", "class"), ("Cart.addItem", "method"), ("total", "function"), ("fmt", "function")},
        {"total", "item"},
    ),
    "typescript": (
        "interface Shape { area(): number }\ntype Id = string;\nenum Color { Red }\n"
        "export class Circle implements Shape {\n  area(): number { return 1; }\n}\n"
        "export function makeCircle(r: number): Circle { return new Circle(); }\n",
        {("Shape", "interface"), ("Shape.area", "method"), ("Id", "type"), ("Color", "enum"),
         ("Circle", "class"), ("Circle.area", "method"), ("makeCircle", "function")},
        {"Circle", "Shape"},
    ),
    "go": (
        "package srv\n\ntype Server struct{ port int }\n\ntype Handler interface{ Serve() }\n\n"
        "func (s *Server) Start() error { return listen(s.port) }\n\nfunc listen(p int) error { return nil }\n",
        {("Server", "struct"), ("Handler", "interface"), ("Handler.Serve", "method"),
         ("Server.Start", "method"), ("listen", "function")},
        {"listen", "port"},
    ),
    "rust": (
        "pub struct Stack { items: Vec<i32> }\n\n"
        "impl Stack {\n    pub fn push(&mut self, v: i32) { self.items.push(v); }\n}\n\n"
        "pub trait Shape { fn area(&self) -> f64; }\n\nfn main() { let s = Stack { items: vec![] }; }\n",
        {("Stack", "struct"), ("Stack.push", "method"), ("Shape", "trait"), ("Shape.area", "method"),
         ("main", "function")},
        {"Stack", "items"},
    ),
    "java": (
        "package a.b;\n\npublic class Account {\n  public Account() {}\n  public void deposit(int amount) {\n"
        "    log(amount);\n  }\n  interface Listener {}\n}\n",
        {("Account", "class"), ("Account.Account", "method"), ("Account.deposit", "method"),
         ("Account.Listener", "interface")},
        {"log", "amount"},
    ),
}


@pytest.mark.parametrize("language", sorted(CASES))
def test_definitions_and_references(language: str) -> None:
    source, expected_defs, expected_refs = CASES[language]
    result = extract_symbols(source, language)
    got = {(s.qualname, s.kind) for s in result.definitions}
    assert expected_defs <= got, f"{language}: missing {expected_defs - got}"
    assert expected_refs <= set(result.references)
    for sym in result.definitions:
        assert 1 <= sym.start_line <= sym.end_line <= source.count("\n") + 1
        assert sym.name in sym.signature or sym.kind in ("method",)


def test_line_spans_and_signature() -> None:
    src = "import os\n\n\ndef first():\n    pass\n\n\nclass Second:\n    def third(self):\n        return 1\n"
    defs = {s.qualname: s for s in extract_symbols(src, "python").definitions}
    assert (defs["first"].start_line, defs["first"].end_line) == (4, 5)
    assert (defs["Second"].start_line, defs["Second"].end_line) == (8, 10)
    assert defs["Second.third"].signature == "def third(self):"


def test_language_for_and_unknown_language() -> None:
    assert language_for("a/b.tsx") == "tsx" and language_for("x.RS") == "rust" and language_for("x.md") is None
    with pytest.raises(ValueError, match="unsupported language"):
        extract_symbols("x", "cobol")


def test_cache_hit_on_unchanged_content(tmp_path: Path) -> None:
    src = b"def f():\n    return 1\n"
    with SymbolCache(tmp_path) as cache:
        first = cache.get_or_extract(src, "python")
        assert (cache.hits, cache.misses) == (0, 1)
    with SymbolCache(tmp_path) as cache:  # a new process would see the same rows
        again = cache.get_or_extract(src, "python")
        assert (cache.hits, cache.misses) == (1, 0)
        assert again == first
        cache.get_or_extract(src + b"\n\ndef g():\n    pass\n", "python")
        assert cache.misses == 1


def test_index_rebuild_reuses_cache(repo: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_index(repo, cache_dir=cache_dir)
    calls: list[str] = []
    import agents.search.symbols as symbols

    real = symbols.extract_bounded
    monkeypatch.setattr(symbols, "extract_bounded",
                        lambda items, parallel=None: calls.extend(lang for _, lang in items) or real(items, parallel))
    index = build_index(repo, cache_dir=cache_dir)
    assert calls == []  # unchanged files: every symbol table came from the cache
    parser_syms = index.symbols[index.file_ids["pkg/parser.py"]]
    assert parser_syms is not None
    assert any(s.qualname == "ConfigParser.parse_section" for s in parser_syms.definitions)
    (repo / "pkg" / "render.py").write_text("def changed():\n    pass\n")
    build_index(repo, cache_dir=cache_dir)
    assert calls == ["python"]  # only the edited file is parsed again


def test_many_with_worker_processes_matches_serial(tmp_path: Path) -> None:
    items: list[tuple[bytes, str | None]] = [
        (f"def f{i}():\n    return g{i}()\n".encode(), "python") for i in range(4)
    ] + [(b"fn main() {}\n", "rust"), (b"plain text", None)]
    with SymbolCache(tmp_path / "a") as cache:
        parallel = cache.get_or_extract_many(items, workers=2)
        assert cache.misses == 5
    with SymbolCache(tmp_path / "b") as cache:
        serial = cache.get_or_extract_many(items, workers=1)
    assert parallel == serial
    assert parallel[-1] is None and parallel[0] is not None and parallel[0].definitions[0].name == "f0"
    with SymbolCache(tmp_path / "a") as cache:
        assert cache.get_or_extract_many(items) == parallel and cache.hits == 5


def test_a_file_whose_parse_goes_past_the_bounds_gets_no_symbols_and_says_why(tmp_path: Path) -> None:
    """A hostile file costs the host at most PARSE_BOUNDS: the extraction runs in a helper process whose CPU timer
    ends it. The file gets no symbols, the reason is kept (and cached: the same content is not parsed again); the
    other files are extracted as usual."""
    nested = ("".join(f"mod m{i}{{" for i in range(900)) + "fn f(){}" + "}" * 900).encode()  # 9 KB
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with SymbolCache(tmp_path) as cache:
        out = cache.get_or_extract_many([(b"fn ok() {}\n", "rust"), (nested, "rust"), (b"def f(): pass\n", "python")])
        assert out[0] is not None and [s.name for s in out[0].definitions] == ["ok"] and not out[0].skipped
        assert out[1] is not None and out[1].definitions == [] and out[1].skipped == \
            "parsing it took more than 1.5 s of CPU"
        assert out[2] is not None and out[2].definitions[0].name == "f"
    with SymbolCache(tmp_path) as cache:
        assert cache.get_or_extract_many([(nested, "rust")])[0].skipped and cache.hits == 1
        many = "".join(f"def f{i}(): pass\n" for i in range(10_001)).encode()  # each would cost the worker a chunk
        assert cache.get_or_extract(many, "python").skipped == "it defines more than 10,000 symbols"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert spent < 3, f"the helpers spent {spent:.1f} s of CPU"  # (helpers that ended: the killed one)
