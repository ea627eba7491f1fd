"""Tokenizer and BM25 ranking."""

from __future__ import annotations

from pathlib import Path

from agents.search import build_index, rank_files, search_files
from agents.search.bm25 import BM25Index, path_tokens, split_identifier, tokenize


def test_split_identifier_snake_camel_digits() -> None:
    assert split_identifier("parse_config") == ("parse", "config")
    assert split_identifier("parseHTTPResponse") == ("parse", "http", "response")
    assert split_identifier("XMLHttpRequest2") == ("xml", "http", "request", "2")
    assert split_identifier("__init__") == ("init",)
    assert split_identifier("value") == ("value",)


def test_tokenize_keeps_whole_identifier_and_parts() -> None:
    toks = tokenize("def getUserName(user_id): return self.x")
    assert "getusername" in toks and {"get", "user", "name"} <= set(toks)
    assert "user_id" in toks and "id" in toks
    assert "def" not in toks and "self" not in toks and "return" not in toks
    assert "x" not in toks  # single characters carry no signal


def test_path_tokens_are_repeated() -> None:
    toks = path_tokens("src/http_client/retryPolicy.py", repeat=2)
    assert toks.count("retry") == 2 and toks.count("policy") == 2 and toks.count("http") == 2
    assert "py" not in toks


def test_bm25_prefers_rare_matching_terms() -> None:
    bm = BM25Index()
    bm.add("a", tokenize("alpha beta gamma common"))
    bm.add("b", tokenize("common common common words"))
    bm.add("c", tokenize("delta epsilon common"))
    bm.finalize()
    assert [d for d, _ in bm.search(tokenize("gamma common"), k=3)][0] == "a"
    assert bm.idf("gamma") > bm.idf("common")
    assert bm.search(tokenize("nothing here"), k=3) == []


def test_bm25_length_normalisation() -> None:
    bm = BM25Index()
    bm.add("short", ["needle", "hay"])
    bm.add("long", ["needle"] + ["hay"] * 200)
    bm.add("other", ["straw"])
    bm.finalize()
    assert bm.search(["needle"], k=2)[0][0] == "short"


def test_search_files_ranks_generated_repo(repo: Path, cache_dir: Path) -> None:
    res = search_files(repo, "The HTTP client should retry sending requests with backoff", k=3, cache_dir=cache_dir)
    paths = [p for p, _ in res]
    assert paths[0] in {"pkg/network/retry.py", "pkg/network/http_client.py"}
    assert {"pkg/network/retry.py", "pkg/network/http_client.py"} <= set(paths)
    assert all(isinstance(s, float) for _, s in res)
    assert [s for _, s in res] == sorted((s for _, s in res), reverse=True)


def test_signals_outrank_plain_text(repo: Path, cache_dir: Path) -> None:
    index = build_index(repo, cache_dir=cache_dir)
    # The traceback names the file; the prose alone would favour the renderer.
    query = (
        "Rendering of the table fails\n"
        "Traceback (most recent call last):\n"
        '  File "/site-packages/pkg/parser.py", line 9, in parse_section\n'
        "ValueError: Unrecognized section header: foo\n"
    )
    assert rank_files(index, query, k=1)[0][0] == "pkg/parser.py"
    # A backticked identifier points at its definition.
    assert rank_files(index, "`render_table` ignores `header_rows`", k=1)[0][0] == "pkg/render.py"
    # Tests rank below the code they test.
    paths = [p for p, _ in rank_files(index, "parse_config with a section header", k=5)]
    assert paths.index("pkg/parser.py") < paths.index("tests/test_parser.py")


def test_minified_and_vendored_files(tmp_path: Path) -> None:
    from agents.search.index import looks_generated

    assert looks_generated("static/app.min.js", "x")
    assert looks_generated("dist/big.js", "var a=1;" * 5000)  # one 40 kB line
    assert not looks_generated("src/app.js", "const a = 1;\n" * 3000)
