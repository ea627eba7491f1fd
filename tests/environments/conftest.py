"""Fixtures of the environment tests (the repositories themselves: tests/sandbox/envfixtures.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from environments.service import Environments
from tests.sandbox.envfixtures import TINY, host_environments, make_repo


@pytest.fixture(scope="session")
def envs() -> Environments:
    return host_environments()


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "tiny", TINY)
