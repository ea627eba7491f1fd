"""``bosun search files`` argument handling and output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from entry.cli_search import search_main
from tests.agents.search.conftest import write_repo


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo")


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = search_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_files_json(repo: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["files", "--repo", str(repo), "--query", "HttpClient send_request", "--k", "2",
                           "--json", "--cache-dir", str(cache_dir)], capsys)
    assert code == 0, err
    data = json.loads(out)
    assert len(data) == 2 and data[0]["path"] == "pkg/network/http_client.py"
    assert all(set(item) == {"path", "score"} and isinstance(item["score"], float) for item in data)


def test_query_file(repo: Path, cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qf = tmp_path / "task.txt"
    qf.write_text("render_html escapes nothing")
    code, out, _ = _run(["files", "--repo", str(repo), "--query-file", str(qf), "--json", "--cache-dir",
                         str(cache_dir)], capsys)
    assert code == 0 and json.loads(out)[0]["path"] == "pkg/render.py"


def test_map_command(repo: Path, cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["map", "--repo", str(repo), "--query", "retry_backoff", "--tokens", "100",
                         "--cache-dir", str(cache_dir)], capsys)
    assert code == 0 and "pkg/network/retry.py:" in out and len(out) <= 400


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["files", "--repo", "{missing}", "--query", "x"], "repository directory not found"),
        (["files", "--repo", "{repo}"], "one of --query or --query-file is required"),
        (["files", "--repo", "{repo}", "--query", "x", "--query-file", "{repo}/README.md"], "not both"),
        (["files", "--repo", "{repo}", "--query-file", "{repo}/nope.txt"], "cannot read query file"),
        (["files", "--repo", "{repo}", "--query", "x", "--k", "0"], "--k must be at least 1"),
        (["files", "--repo", "{repo}", "--query", "x", "--k", "ten"], "invalid int value"),
        (["files", "--repo", "{repo}", "--query", "   "], "the query is empty"),
        (["files", "--query", "x"], "required: --repo"),
        (["nonsense"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    argv: list[str], message: str, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [a.format(repo=repo, missing=tmp_path / "missing") for a in argv]
    code, out, err = _run(argv, capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and message in err and err.startswith("bosun search: ")
