"""Fixtures of the provider tests: a scripted local HTTP server per test."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .fixture_server import FixtureServer


@pytest.fixture
async def server() -> AsyncIterator[FixtureServer]:
    fixture = FixtureServer()
    await fixture.start()
    try:
        yield fixture
    finally:
        await fixture.close()
