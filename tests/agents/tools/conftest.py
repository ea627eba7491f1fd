"""Fixtures of the tool tests: a small git repository and an in-process sandbox bound to it.

The in-process sandbox runs the tool server's own operations (sandbox/inprocess.py); the backends themselves are
tested in tests/sandbox/, and test_tools_in_sandbox.py runs the tools through a real bwrap sandbox.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agents.tools.builtin import default_registry
from agents.tools.registry import Registry, ToolContext
from sandbox.bwrap import BwrapProvider
from sandbox.inprocess import InProcessProvider

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        '"""Parsing of configuration text."""\n'
        "\n"
        "\n"
        "class Parser:\n"
        '    """Turns text into a dict."""\n'
        "\n"
        "    def parse(self, text: str) -> dict[str, str]:\n"
        "        result = {}\n"
        "        for line in text.splitlines():\n"
        '            key, _, value = line.partition("=")\n'
        "            result[key.strip()] = value.strip()\n"
        "        return result\n"
        "\n"
        "\n"
        "def helper(value: str) -> str:\n"
        "    return value.upper()\n"
    ),
    "pkg/util.py": (
        "from pkg.core import Parser, helper\n"
        "\n"
        "\n"
        "def run(text: str) -> dict[str, str]:\n"
        "    parsed = Parser().parse(text)\n"
        '    # Parser is mentioned in this comment and in "a string"\n'
        "    return {k: helper(v) for k, v in parsed.items()}\n"
    ),
    "tests/test_core.py": (
        "from pkg.core import Parser\n"
        "\n"
        "\n"
        "def test_parse():\n"
        '    assert Parser().parse("a = 1") == {"a": "1"}\n'
        "\n"
        "\n"
        "def test_parse_fails():\n"
        '    assert Parser().parse("b=2") == {"b": "3"}, "b should be 3"\n'
    ),
    "README.md": "# demo\n",
}


def make_repo(root: Path) -> Path:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(git + cmd, cwd=root, check=True)
    return root


@pytest.fixture(autouse=True)
def _private_search_mirror(tmp_path_factory, monkeypatch) -> None:
    """Code-search mirrors and symbol caches of the tests live in a temporary directory."""
    monkeypatch.setenv("BOSUN_SEARCH_MIRROR", str(tmp_path_factory.getbasetemp() / "search-mirror"))


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.fixture
async def ctx(repo) -> AsyncIterator[ToolContext]:
    box = await InProcessProvider().acquire(repo)
    try:
        yield ToolContext(sandbox=box)
    finally:
        await box.close()


@pytest.fixture
async def bwrap_ctx(repo) -> AsyncIterator[ToolContext]:
    """A real bwrap sandbox, for a test of what only a sandbox does (its read-only .git)."""
    box = await BwrapProvider().acquire(repo)
    try:
        yield ToolContext(sandbox=box)
    finally:
        await box.close()


@pytest.fixture(scope="session")
def reg() -> Registry:
    return default_registry()
