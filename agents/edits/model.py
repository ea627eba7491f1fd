"""Result and error types shared by every edit format.

An edit either applies (``EditOutcome``) or is refused (``EditRefused``). A refusal never
changes anything; its ``message`` is written for the model (what was tried, where it matched,
what the closest text looks like) and its ``reason`` is a short machine-readable code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: Matching levels, strictest first. ``EditOutcome.level`` is always one of these.
LEVELS: tuple[str, ...] = (
    "exact",
    "trailing_ws",
    "indent_offset",
    "edge_blank_lines",
    "blank_lines",
    "unicode",
    "elision",
)

#: Short codes carried by ``EditRefused.reason``.
REASONS: tuple[str, ...] = (
    "no_match",  # the old text was not found at any level
    "ambiguous",  # a level found two or more places
    "noop",  # the edit would not change anything
    "empty_old",  # nothing to search for
    "elision_mismatch",  # old and new text do not share the same `...` structure (or only the new text elides)
    "indent_conflict",  # re-indenting is not one consistent offset (or a new line would go below column 0)
    "invalid_patch",  # the patch / diff / block text could not be parsed
    "file_exists",  # apply_patch: Add File or Move to onto an existing file
    "no_such_file",  # apply_patch: Update / Delete of a missing file
    "unsupported",  # a well-formed request this engine deliberately does not do
    "syntax_error",  # the edit introduces new syntax errors
)


class EditRefused(Exception):
    """The edit was not applied; nothing changed.

    Attributes:
        message: explanation for the model (levels tried, match counts and lines, closest region).
        reason: short code, one of ``REASONS``.
        level: the matching level that produced the refusal, when there is one.
        lines: 1-based first lines of the matches involved (ambiguity) or of the errors.
    """

    def __init__(self, message: str, reason: str, *, level: str | None = None, lines: list[int] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason
        self.level = level
        self.lines: list[int] = list(lines or [])

    def __str__(self) -> str:
        return self.message


@dataclass
class EditOutcome:
    """A successful edit.

    ``status`` is ``"already_applied"`` when the old text was absent but the new text was already
    there (``text`` is then the unchanged original). ``level`` is the loosest matching level used.
    """

    status: Literal["applied", "already_applied"]
    text: str
    message: str
    level: str


def loosest(levels: list[str]) -> str:
    """Return the loosest of several level names (``"exact"`` for an empty list)."""
    if not levels:
        return "exact"
    return max(levels, key=LEVELS.index)


@dataclass
class AddFile:
    """``*** Add File: path`` — create ``path`` with ``content``."""

    path: str
    content: str


@dataclass
class DeleteFile:
    """``*** Delete File: path``."""

    path: str


@dataclass
class PatchChunk:
    """One ``@@`` section of an ``*** Update File`` operation.

    ``anchors`` are the ``@@ context`` lines (possibly several, nested), ``lines`` the body as
    ``(kind, text)`` with kind one of ``" "``, ``"-"``, ``"+"``; ``at_eof`` is set by
    ``*** End of File``.
    """

    anchors: list[str] = field(default_factory=list)
    lines: list[tuple[str, str]] = field(default_factory=list)
    at_eof: bool = False


@dataclass
class UpdateFile:
    """``*** Update File: path`` with an optional ``*** Move to: move_to``."""

    path: str
    move_to: str | None = None
    chunks: list[PatchChunk] = field(default_factory=list)


PatchOp = AddFile | DeleteFile | UpdateFile
