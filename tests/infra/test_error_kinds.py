"""An error's kind derives from its class (infra/errors.py): the name of its branch of the tree."""

from __future__ import annotations

import pytest

from agents.budget import BudgetExhausted
from agents.plan import PlanError
from agents.tools.registry import ToolOutput
from environments.buildrun import BuildFailed
from environments.unpack import ExportRefused
from infra.artifacts import ArtifactMissing, BadRef
from infra.errors import (
    BosunError,
    ConfigError,
    EnvironmentFailed,
    InvalidArguments,
    ProviderError,
    Timeout,
    ToolFailed,
    UnexpectedEnvironment,
)
from infra.events.github_api import ExternalServiceError
from sandbox.hostgit import GitError
from sandbox.snapshot import SnapshotRefused


@pytest.mark.parametrize(("cls", "kind"), [
    (ConfigError, "ConfigError"), (GitError, "ConfigError"), (InvalidArguments, "InvalidArguments"),
    (PlanError, "InvalidArguments"), (BadRef, "InvalidArguments"), (ToolFailed, "ToolFailed"),
    (Timeout, "Timeout"), (ProviderError, "ProviderError"), (UnexpectedEnvironment, "UnexpectedEnvironment"),
    (BuildFailed, "EnvironmentFailed"), (ExportRefused, "EnvironmentFailed"), (BudgetExhausted, "BudgetExhausted"),
    (ArtifactMissing, "ArtifactMissing"), (SnapshotRefused, "SnapshotRefused"),
    (ExternalServiceError, "ExternalServiceError"),
])
def test_the_kind_is_the_branch_of_the_class(cls, kind):
    assert cls.kind == kind


def test_a_kind_written_in_a_class_body_does_not_stick():
    class Mislabelled(ToolFailed):
        kind = "ProviderError"

    assert Mislabelled.kind == "ToolFailed" and issubclass(EnvironmentFailed, BosunError)


def test_retries_stay_with_the_class():
    assert UnexpectedEnvironment.retryable and not ArtifactMissing.retryable and not BuildFailed.retryable
    assert not SnapshotRefused.retryable and not BadRef.retryable


def test_a_tool_failure_reads_kind_and_message():
    out = ToolOutput.failure(Timeout("sleep 900 ran past 300 s"))
    assert (out.is_error, out.error_kind, out.text) == (True, "Timeout", "Timeout: sleep 900 ran past 300 s")
