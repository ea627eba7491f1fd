"""Fixtures for the code-search tests: a small generated multi-file repository."""

from __future__ import annotations

from pathlib import Path

import pytest

FILES = {
    "pkg/__init__.py": "from pkg.parser import parse_config\n",
    "pkg/parser.py": (
        "import re\n\n\n"
        "class ConfigParser:\n"
        '    """Parse INI-style configuration text."""\n\n'
        "    def parse_section(self, line):\n"
        "        if not line.startswith('['):\n"
        "            raise ValueError(f'Unrecognized section header: {line}')\n"
        "        return line.strip('[]')\n\n\n"
        "def parse_config(text):\n"
        "    parser = ConfigParser()\n"
        "    return [parser.parse_section(l) for l in text.splitlines()]\n"
    ),
    "pkg/render.py": (
        "from pkg.parser import ConfigParser\n\n\n"
        "def render_html(items):\n"
        "    return ''.join(f'<li>{i}</li>' for i in items)\n\n\n"
        "def render_table(rows, header_rows=None):\n"
        "    ConfigParser()\n"
        "    return '\\n'.join(rows)\n"
    ),
    "pkg/network/http_client.py": (
        "class HttpClient:\n"
        "    def send_request(self, url, timeout=None):\n"
        "        return fetch_url(url, timeout)\n\n\n"
        "def fetch_url(url, timeout):\n"
        "    return url\n"
    ),
    "pkg/network/retry.py": (
        "from pkg.network.http_client import HttpClient\n\n\n"
        "def retry_backoff(attempts):\n"
        "    client = HttpClient()\n"
        "    return [client.send_request('x') for _ in range(attempts)]\n"
    ),
    "tests/test_parser.py": (
        "from pkg.parser import ConfigParser, parse_config\n\n\n"
        "def test_parse_config_section_header():\n"
        "    assert parse_config('[a]') == ['a']\n"
        "    ConfigParser().parse_section('[b]')\n"
    ),
    "web/app.ts": (
        "export class AppServer {\n  start(port: number): void {}\n}\n"
        "export function bootServer() { return new AppServer(); }\n"
    ),
    "README.md": "Parser and renderer.\n",
}


def write_repo(root: Path, files: dict[str, str] = FILES) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write_repo(tmp_path / "repo")


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"
