"""bosun's error classes. The class of an error decides what happens next (docs/ARCHITECTURE.md, "Errors").

Every error carries a message meant for a person (or a model): what was wrong, where, and what to do.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ValidationError


class BosunError(Exception):
    """Base of every error bosun raises on purpose.

    ``kind`` names the class in history and metrics, and it is derived, never written: the name of the class's
    branch of this tree (its ancestor right under BosunError). A narrower class (``GitError(ConfigError)``) reports
    as its branch; a new branch is a new class under BosunError. Code decides by class (``except``,
    ``isinstance``); a workflow, which sees a failure's ``type`` only, compares it with ``SomeError.kind``.
    """

    kind: ClassVar[str] = "BosunError"
    retryable = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.kind = next(c.__name__ for c in cls.__mro__ if BosunError in c.__bases__)


class ConfigError(BosunError):
    """Bad input from a person: a setting, a CLI argument, a file. Nothing was started or changed."""


class InvalidArguments(BosunError):
    """The model called a tool with arguments that do not validate. Goes back to the model; never retried."""


class ToolFailed(BosunError):
    """An expected tool failure (file not found, edit refused, path outside the workspace). Goes back to the model."""


class UnexpectedEnvironment(BosunError):
    """The sandbox or the workspace is broken (could not start, died, image missing). Re-provision and retry."""

    retryable = True


class ProviderError(BosunError):
    """The model API failed. ``retryable`` for 408/409/429/5xx and connection errors; ``retry_after`` in seconds."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = True,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class EnvironmentFailed(BosunError):
    """A repository's environment could not be built (a step of its build failed, or its output broke a rule).
    Not retried: the same inputs fail the same way."""


class Timeout(BosunError):
    """A command ran past its timeout; its whole process tree was killed."""


class UserAborted(BosunError):
    """A person cancelled the run. Cancel cleanly and release sandboxes."""


class ScriptDiverged(BosunError):
    """The scripted model (the test double) saw a conversation that differs from its recorded trajectory."""


class EscalationRefused(BosunError):
    """A request to run a command outside the sandbox was not approved."""


def describe_validation(e: ValidationError, *, where: str = "(input)", first_only: bool = False) -> str:
    """A pydantic validation error as ``field.path: message`` items joined by ``; `` (``where`` names an error
    about the whole input)."""
    errors = e.errors()[:1] if first_only else e.errors()
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or where}: {err['msg']}" for err in errors)
