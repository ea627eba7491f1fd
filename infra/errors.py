"""bosun's error classes. The class of an error decides what happens next (docs/ARCHITECTURE.md, "Errors").

Every error carries a message meant for a person (or a model): what was wrong, where, and what to do.
"""

from __future__ import annotations

from pydantic import ValidationError


class BosunError(Exception):
    """Base of every error bosun raises on purpose. ``kind`` names the class in history and metrics."""

    kind = "Unknown"
    retryable = False


class ConfigError(BosunError):
    """Bad input from a person: a setting, a CLI argument, a file. Nothing was started or changed."""

    kind = "ConfigError"


class InvalidArguments(BosunError):
    """The model called a tool with arguments that do not validate. Goes back to the model; never retried."""

    kind = "InvalidArguments"


class ToolFailed(BosunError):
    """An expected tool failure (file not found, edit refused, path outside the workspace). Goes back to the model."""

    kind = "ToolFailed"


class UnexpectedEnvironment(BosunError):
    """The sandbox or the workspace is broken (could not start, died, image missing). Re-provision and retry."""

    kind = "UnexpectedEnvironment"
    retryable = True


class ProviderError(BosunError):
    """The model API failed. ``retryable`` for 408/409/429/5xx and connection errors; ``retry_after`` in seconds."""

    kind = "ProviderError"

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ToolTimeout(BosunError):
    """A command ran past its timeout; its whole process tree was killed."""

    kind = "Timeout"


class UserAborted(BosunError):
    """A person cancelled the run. Cancel cleanly and release sandboxes."""

    kind = "UserAborted"


class ScriptDiverged(BosunError):
    """The scripted model (the test double) saw a conversation that differs from its recorded trajectory."""

    kind = "ScriptDiverged"


class EscalationRefused(BosunError):
    """A request to run a command outside the sandbox was not approved."""

    kind = "EscalationRefused"


def describe_validation(e: ValidationError, *, where: str = "(input)", first_only: bool = False) -> str:
    """A pydantic validation error as ``field.path: message`` items joined by ``; `` (``where`` names an error
    about the whole input)."""
    errors = e.errors()[:1] if first_only else e.errors()
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or where}: {err['msg']}" for err in errors)
