"""Fixtures: real pytest and git outputs, produced once per session in a temporary directory."""

from __future__ import annotations

import hashlib

import pytest

from tests.agents.realdata import RealOutputs, produce


@pytest.fixture(scope="session")
def real(tmp_path_factory) -> RealOutputs:
    return produce(tmp_path_factory.mktemp("realdata"))


class DictStore:
    """store_put double: content-addressed like infra.artifacts, in memory."""

    def __init__(self) -> None:
        self.blobs: dict[str, str] = {}

    def put(self, text: str) -> str:
        ref = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
        self.blobs[ref] = text
        return ref


@pytest.fixture
def store() -> DictStore:
    return DictStore()
