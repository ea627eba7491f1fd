"""search_code, find_symbol and repo_map through a real sandbox, and the rule that host-side indexing never follows
a symlink or a path out of the workspace."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from sandbox import bounded, hostview

SECRET = "SECRET_VALUE_8c1f3d"


async def test_search_code_ranks_files(reg, ctx):
    out = await reg.execute("search_code", {"query": "Parser parse text into dict", "k": 3}, ctx)
    assert not out.is_error, out.text
    assert out.data["engine"] == "ranker"
    paths = [h["path"] for h in out.data["hits"]]
    assert paths[0] == "pkg/core.py" and "pkg/util.py" in paths
    assert out.text.startswith("1. pkg/core.py")
    assert any("class Parser" in line for _, line in out.data["hits"][0]["lines"])


async def test_find_symbol_definitions_and_references(reg, ctx):
    out = await reg.execute("find_symbol", {"name": "Parser"}, ctx)
    assert not out.is_error, out.text
    assert [(d["path"], d["line"], d["kind"]) for d in out.data["definitions"]] == [("pkg/core.py", 4, "class")]
    refs = {(r["path"], r["line"]) for r in out.data["references"]}
    assert refs == {("pkg/util.py", 1), ("pkg/util.py", 5), ("tests/test_core.py", 1), ("tests/test_core.py", 5),
                    ("tests/test_core.py", 9)}, "comments, strings and the definition itself are not references"
    out = await reg.execute("find_symbol", {"name": "Parser.parse", "kind": "definitions"}, ctx)
    assert [(d["path"], d["kind"]) for d in out.data["definitions"]] == [("pkg/core.py", "method")]
    assert out.data["references"] == []
    out = await reg.execute("find_symbol", {"name": "helper", "kind": "references", "path": "pkg"}, ctx)
    assert out.data["definitions"] == []
    assert {(r["path"], r["line"]) for r in out.data["references"]} == {("pkg/util.py", 1), ("pkg/util.py", 7)}
    out = await reg.execute("find_symbol", {"name": "nothing_like_this"}, ctx)
    assert not out.is_error and "(none found)" in out.text


async def test_repo_map_and_index_refresh(reg, ctx):
    out = await reg.execute("repo_map", {"query": "parse configuration"}, ctx)
    assert not out.is_error, out.text
    assert "pkg/core.py:" in out.text and "class Parser" in out.text
    await reg.execute("write_file", {"path": "pkg/later.py", "content": "def added_later() -> None:\n    pass\n"},
                      ctx)
    out = await reg.execute("find_symbol", {"name": "added_later"}, ctx)
    assert [d["path"] for d in out.data["definitions"]] == ["pkg/later.py"], "the index sees new files"


@pytest.fixture
def planted(repo: Path, tmp_path: Path) -> Path:
    """Symlinks (absolute, relative, to a file and to a directory) and a FIFO pointing at a host secret."""
    secret_dir = tmp_path / "host-secrets"
    secret_dir.mkdir()
    (secret_dir / "id_rsa.py").write_text(f"def leaked_secret_token():\n    return '{SECRET}'\n")
    os.symlink(secret_dir / "id_rsa.py", repo / "pkg" / "leak.py")
    os.symlink("../../host-secrets/id_rsa.py", repo / "pkg" / "leak_relative.py")
    os.symlink(secret_dir, repo / "pkg" / "linked_dir")
    os.symlink(secret_dir, repo / "linked_top")
    os.mkfifo(repo / "pkg" / "fifo.py")
    return secret_dir


async def test_code_search_never_follows_symlinks(reg, ctx, repo, planted):
    calls = [
        ("search_code", {"query": f"leaked_secret_token {SECRET} id_rsa"}),
        ("find_symbol", {"name": "leaked_secret_token"}),
        ("repo_map", {"query": "leaked_secret_token", "budget_tokens": 8192}),
    ]
    for name, args in calls:
        out = await reg.execute(name, args, ctx)
        assert not out.is_error, out.text
        blob = out.text + json.dumps(out.data)
        assert SECRET not in blob and "leaked_secret_token():" not in blob, f"{name} leaked the secret: {blob}"
        assert "leak.py" not in blob and "linked_dir" not in blob and "linked_top" not in blob, name
    mirror = hostview.mirror_for(repo)
    for dirpath, dirnames, filenames in os.walk(mirror.dest):
        for name in dirnames + filenames:
            assert not os.path.islink(os.path.join(dirpath, name))
    mirrored = {p.relative_to(mirror.dest).as_posix() for p in mirror.dest.rglob("*") if p.is_file()}
    assert mirrored >= {"pkg/core.py", "pkg/util.py"}
    assert not any("leak" in p or "linked" in p or "fifo" in p for p in mirrored)


def test_hostview_refuses_symlinks_escapes_and_special_files(repo, planted):
    assert hostview.read_file(repo, "pkg/core.py").startswith(b'"""Parsing')
    for rel in ("pkg/leak.py", "pkg/leak_relative.py", "pkg/linked_dir/id_rsa.py", "linked_top/id_rsa.py",
                "../host-secrets/id_rsa.py", "pkg/../../host-secrets/id_rsa.py", "/etc/passwd", "pkg/fifo.py",
                "pkg", ""):
        with pytest.raises(hostview.UnsafePath):
            hostview.read_file(repo, rel)
    walked = [e.rel for e in hostview.walk(repo)]
    assert "pkg/core.py" in walked
    assert not [p for p in walked if "leak" in p or "linked" in p or "fifo" in p]


def test_hostview_does_not_block_on_a_fifo(repo, planted):
    result: list[object] = []

    def read() -> None:
        try:
            hostview.read_file(repo, "pkg/fifo.py")
        except hostview.UnsafePath as e:
            result.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(5)
    assert not t.is_alive() and isinstance(result[0], hostview.UnsafePath)


def test_mirrors_are_bounded_and_removable(tmp_path, monkeypatch):
    from tests.agents.tools.conftest import make_repo

    monkeypatch.setattr(hostview, "MAX_MIRRORS", 1)
    first = hostview.mirror_for(make_repo(tmp_path / "one"))
    first.sync()
    assert (first.dest / "pkg" / "core.py").is_file()
    second_repo = make_repo(tmp_path / "two")
    second = hostview.mirror_for(second_repo)
    assert not first.dest.exists(), "the least recently used mirror is deleted"
    hostview.drop_mirror(second_repo)
    assert not second.dest.exists()


NESTED_RUST = "".join(f"mod m{i}{{\n" for i in range(900)) + "fn f(){}\n" + "}" * 900 + "\n"
"""900 nested modules in 10 KB: extracting its symbols without a bound took over 10 s of CPU (issue 38)."""


async def test_a_file_too_costly_to_parse_is_searched_by_its_text_and_named(reg, ctx, repo, monkeypatch):
    (repo / "deep.rs").write_text(NESTED_RUST + "// Parser, mentioned in the deep file\n")
    out = await reg.execute("search_code", {"query": "Parser parse text into dict", "k": 5}, ctx)
    assert not out.is_error, out.text
    assert out.data["hits"][0]["path"] == "pkg/core.py" and out.data["not_parsed"] == ["deep.rs"]
    assert "deep.rs (parsing it took more than 1.5 s of CPU)" in out.text
    found = await reg.execute("find_symbol", {"name": "Parser"}, ctx)
    assert [d["path"] for d in found.data["definitions"]] == ["pkg/core.py"] and "deep.rs" in found.text
    assert found.data["not_parsed"] == ["deep.rs"] and len(found.data["references"]) == 5
    mapped = await reg.execute("repo_map", {"query": "parse"}, ctx)
    assert "pkg/core.py:" in mapped.text and mapped.data["not_parsed"] == ["deep.rs"]
    # references are looked for in a bounded helper too: one that goes past the bound is named, the rest found
    monkeypatch.setattr("agents.tools.code.PARSE_BOUNDS", bounded.Bounds(cpu_s=0.001))
    (repo / "pkg" / "more.py").write_text("from pkg.core import Parser\n" * 20_000)
    found = await reg.execute("find_symbol", {"name": "Parser", "kind": "references"}, ctx)
    assert "pkg/more.py" in found.data["not_parsed"], found.text


async def test_a_syntax_check_too_costly_is_skipped_and_said(reg, ctx, repo, monkeypatch):
    monkeypatch.setattr("agents.edits.syntax.SYNTAX_BOUNDS", bounded.Bounds(cpu_s=0.001))
    big = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(20_000))
    wrote = await reg.execute("write_file", {"path": "pkg/big.py", "content": big}, ctx)
    assert not wrote.is_error and "the syntax of pkg/big.py was not checked: parsing it took more than 0.001 s" \
        in wrote.text
    assert (repo / "pkg" / "big.py").read_text() == big
    checked = await reg.execute("check", {"paths": ["pkg/big.py"], "ruff": False}, ctx)
    assert checked.data["files_checked"] == [] and "pkg/big.py (parsing it took more than 0.001 s of CPU" in \
        checked.data["not_checked"][0]
