"""bosun's edit engine: pure text in, text out; it never guesses.

Every matching level counts its matches over the whole file and applies only a unique one; a
fuzzy match is only ever a hint in the error message (see ``engine`` for the cascade).

Public API:

* ``apply_str_replace(original, old_str, new_str, *, replace_all=False)`` — Anthropic str_replace.
* ``apply_search_replace(original, blocks_text)`` — Aider SEARCH/REPLACE blocks for one file.
* ``apply_udiff(original, diff_text)`` — unified diff hunks for one file.
* ``parse_apply_patch(patch_text)`` / ``apply_patch_to_files(patch_text, read)`` — Codex apply_patch.
* ``syntax_errors(path, text)`` / ``check_edit_syntax(path, before, after)`` — tree-sitter guard.
* ``EditOutcome`` (success) and ``EditRefused`` (refusal, with ``.message`` and ``.reason``).
"""

from .apply_patch import PatchResult, apply_patch_detailed, apply_patch_to_files, parse_apply_patch
from .engine import apply_str_replace
from .model import (
    LEVELS,
    REASONS,
    AddFile,
    DeleteFile,
    EditOutcome,
    EditRefused,
    PatchChunk,
    PatchOp,
    UpdateFile,
)
from .search_replace import apply_search_replace
from .syntax import check_edit_syntax, language_for, syntax_errors
from .udiff import apply_udiff

__all__ = [
    "LEVELS",
    "REASONS",
    "AddFile",
    "DeleteFile",
    "EditOutcome",
    "EditRefused",
    "PatchChunk",
    "PatchOp",
    "PatchResult",
    "UpdateFile",
    "apply_patch_detailed",
    "apply_patch_to_files",
    "apply_search_replace",
    "apply_str_replace",
    "apply_udiff",
    "check_edit_syntax",
    "language_for",
    "parse_apply_patch",
    "syntax_errors",
]
