"""Personalised PageRank and the repo map."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.search import build_index, repo_map
from agents.search.graph import pagerank, propagate
from agents.search.repomap import CHARS_PER_TOKEN


def test_pagerank_uniform_cycle() -> None:
    ranks = pagerank({0: {1: 1.0}, 1: {2: 1.0}, 2: {0: 1.0}}, 3)
    assert sum(ranks) == pytest.approx(1.0)
    assert ranks == pytest.approx([1 / 3] * 3, abs=1e-6)


def test_pagerank_personalisation_moves_mass() -> None:
    # Two separate chains: 0 -> 1 and 2 -> 3. Seeding node 0 puts the mass on its chain.
    graph = {0: {1: 1.0}, 2: {3: 1.0}}
    plain = pagerank(graph, 4)
    seeded = pagerank(graph, 4, personalization={0: 1.0})
    assert plain[1] == pytest.approx(plain[3])
    assert seeded[1] > 0.3 and seeded[3] == pytest.approx(0.0, abs=1e-9)
    assert seeded[0] + seeded[1] == pytest.approx(1.0)
    assert pagerank({}, 0) == []


def test_propagate_reaches_neighbours(repo: Path, cache_dir: Path) -> None:
    index = build_index(repo, cache_dir=cache_dir)
    seed = index.file_ids["pkg/network/retry.py"]
    scores = propagate(index, {seed: 1.0})
    client = index.file_ids["pkg/network/http_client.py"]
    render = index.file_ids["pkg/render.py"]
    assert scores.get(client, 0.0) > scores.get(render, 0.0)


@pytest.mark.parametrize("tokens", [30, 64, 1024])
def test_repo_map_respects_budget(repo: Path, cache_dir: Path, tokens: int) -> None:
    text = repo_map(repo, "fix `send_request` timeout in the HTTP client", budget_tokens=tokens, cache_dir=cache_dir)
    assert len(text) <= tokens * CHARS_PER_TOKEN
    assert text.startswith("pkg/network/")


def test_repo_map_lists_signatures(repo: Path, cache_dir: Path) -> None:
    text = repo_map(repo, "ConfigParser.parse_section raises on headers", cache_dir=cache_dir)
    assert "pkg/parser.py:" in text
    assert "class ConfigParser:" in text and "def parse_section(self, line):" in text
    assert "web/app.ts:" in text  # a generous budget covers the whole small repo
    with pytest.raises(ValueError):
        repo_map(repo, "x", budget_tokens=0, cache_dir=cache_dir)
