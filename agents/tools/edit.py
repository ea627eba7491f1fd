"""Edit tools on bosun's edit engine: str_replace (Anthropic shape) and apply_patch (OpenAI/Codex shape).

Files are read and written through the sandbox; the engine computes the new text on the host. Every edit passes the
syntax guard before anything is written: an edit that introduces new syntax errors is refused with the errors listed.
apply_patch is all or nothing across files: every operation is computed and checked first; if a write then fails,
the files already written are restored.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from agents.edits import EditRefused, apply_patch_detailed, apply_str_replace, parse_apply_patch
from agents.tools.files import read_text_or_none, refuse_syntax
from agents.tools.registry import ANY_FILE, Args, ToolContext, ToolOutput
from infra.errors import ToolFailed

SNIPPET_CONTEXT = 3
SNIPPET_MAX_LINES = 16


def changed_snippet(before: str, after: str) -> str:
    """Numbered lines of ``after`` around the region that differs from ``before`` (empty when equal)."""
    a, b = before.splitlines(), after.splitlines()
    if a == b:
        return ""
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[len(a) - 1 - suf] == b[len(b) - 1 - suf]:
        suf += 1
    start = max(0, pre - SNIPPET_CONTEXT)
    end = min(len(b), len(b) - suf + SNIPPET_CONTEXT)
    rows = [f"{i + 1:6d}\t{b[i]}" for i in range(start, min(end, start + SNIPPET_MAX_LINES))]
    if end > start + SNIPPET_MAX_LINES:
        rows.append(f"[... {end - start - SNIPPET_MAX_LINES} more changed lines ...]")
    if not rows:
        return "(the lines were removed)"
    return "\n".join(rows)


# ---- str_replace ------------------------------------------------------------------------------------------------


class StrReplaceArgs(Args):
    path: str = Field(description="File to edit, relative to the repository root.")
    old_str: str = Field(description="Text to replace; it must match exactly one place in the file.")
    new_str: str = Field(description="Replacement text.")
    replace_all: bool = Field(False, description="Replace every exact occurrence instead of requiring one.")


class EditResult(BaseModel):
    path: str
    status: Literal["applied", "already_applied"]
    level: str
    """The loosest matching level the engine needed (exact, trailing_ws, indent_offset, ...)."""
    message: str


async def str_replace(ctx: ToolContext, a: StrReplaceArgs) -> ToolOutput:

    before = (await ctx.sandbox.read(a.path)).text
    try:
        outcome = apply_str_replace(before, a.old_str, a.new_str, replace_all=a.replace_all)
    except EditRefused as e:
        raise ToolFailed(f"edit of {a.path} refused: {e.message}") from None
    result = EditResult(path=a.path, status=outcome.status, level=outcome.level, message=outcome.message)
    if outcome.status == "already_applied":
        return ToolOutput.of(f"{a.path}: {outcome.message}", result, f"{a.path}: already applied")
    note = await refuse_syntax(a.path, before, outcome.text)
    await ctx.sandbox.write(a.path, outcome.text)
    snippet = changed_snippet(before, outcome.text)
    text = f"edited {a.path} ({outcome.message}){note}"
    if snippet:
        text += f"\nThe edited region now reads:\n{snippet}"
    return ToolOutput.of(text, result, f"edited {a.path} [{outcome.level}]")


# ---- apply_patch ------------------------------------------------------------------------------------------------

_PATCH_PATH = re.compile(r"^\*\*\* (?:Add File|Delete File|Update File|Move to): (.+?)\s*$", re.M)


def patch_paths(patch: str) -> list[str]:
    """Paths named by a ``*** Begin Patch`` text (without a full parse), in order, without duplicates."""
    return list(dict.fromkeys(_PATCH_PATH.findall(patch.replace("\r\n", "\n"))))


def patch_write_key(arguments: dict[str, Any]) -> str:
    """One touched path -> that path; several or unknown -> ``*`` (the call runs alone)."""
    patch = arguments.get("input")
    paths = patch_paths(patch) if isinstance(patch, str) else []
    return paths[0] if len(paths) == 1 else ANY_FILE


class ApplyPatchArgs(Args):
    input: str = Field(description=(
        "The whole patch, from '*** Begin Patch' to '*** End Patch'. Operations: '*** Add File: PATH' (every line "
        "'+'), '*** Delete File: PATH', '*** Update File: PATH' (optionally '*** Move to: NEW'), then '@@ CONTEXT' "
        "sections of ' ' (unchanged), '-' (removed) and '+' (added) lines. Paths are relative to the repository root."))


class PatchFile(BaseModel):
    path: str
    action: Literal["added", "updated", "deleted", "unchanged"]


class ApplyPatchResult(BaseModel):
    files: list[PatchFile]
    messages: list[str]


async def apply_patch(ctx: ToolContext, a: ApplyPatchArgs) -> ToolOutput:

    try:
        ops = parse_apply_patch(a.input)
    except EditRefused as e:
        raise ToolFailed(f"patch refused: {e.message}") from None
    paths: list[str] = []
    for op in ops:
        paths.append(op.path)
        if getattr(op, "move_to", None):
            paths.append(op.move_to)  # type: ignore[arg-type]
    originals: dict[str, str | None] = {}
    for path in dict.fromkeys(paths):
        originals[path] = await read_text_or_none(ctx.sandbox, path)
    try:
        result = apply_patch_detailed(a.input, lambda p: originals.get(p))
    except EditRefused as e:
        raise ToolFailed(f"patch refused, no file was changed: {e.message}") from None

    files: list[PatchFile] = []
    writes: list[tuple[str, str]] = []
    deletes: list[str] = []
    notes: list[str] = []
    for path, new in result.files.items():
        old = originals.get(path)
        if new is None:
            deletes.append(path)
            files.append(PatchFile(path=path, action="deleted"))
        elif new == old:
            files.append(PatchFile(path=path, action="unchanged"))
        else:
            notes.append(await refuse_syntax(path, old or "", new))
            writes.append((path, new))
            files.append(PatchFile(path=path, action="added" if old is None else "updated"))
    await _write_all_or_nothing(ctx, writes, deletes, originals)
    summary = ", ".join(f"{f.action} {f.path}" for f in files)
    text = "applied patch: " + summary + "".join(n for n in notes if n)
    text += "\n" + "\n".join(result.messages)
    return ToolOutput.of(text, ApplyPatchResult(files=files, messages=result.messages), f"patch: {summary}"[:200])


async def _write_all_or_nothing(ctx: ToolContext, writes: list[tuple[str, str]], deletes: list[str],
                                originals: dict[str, str | None]) -> None:
    """Write then delete; on a failure, put every file already touched back as it was and re-raise."""
    done: list[str] = []
    try:
        for path, text in writes:
            await ctx.sandbox.write(path, text, create_dirs=True)
            done.append(path)
        for path in deletes:
            await ctx.sandbox.delete(path)
            done.append(path)
    except ToolFailed as e:
        restored, lost = [], []
        for path in reversed(done):
            try:
                old = originals.get(path)
                if old is None:
                    await ctx.sandbox.delete(path)
                else:
                    await ctx.sandbox.write(path, old, create_dirs=True)
                restored.append(path)
            except ToolFailed:
                lost.append(path)
        tail = f"; could NOT restore {', '.join(lost)}" if lost else ""
        raise ToolFailed(f"patch not applied: {e}. Files written before the failure were restored "
                         f"({', '.join(restored) or 'none'}){tail}.") from None
