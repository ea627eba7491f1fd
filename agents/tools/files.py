"""File tools: read_file, list_dir, glob, grep, write_file (every operation goes through the sandbox's tool server)
and read_output (a raw tool output that compaction stored, from the artifact store)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agents.edits import EditRefused, check_edit_syntax
from agents.tools.registry import Args, ToolContext, ToolOutput
from infra.artifacts import ArtifactMissing, BadRef, check_ref
from infra.errors import InvalidArguments, ToolFailed
from sandbox import bounded
from sandbox.base import Listing as ListDirResult

READ_LINE_CAP = 2000
READ_CHAR_CAP = 100_000
_MISSING = ("no such file or directory", "a component of the path is not a directory")


async def read_text_or_none(sandbox: Any, path: str) -> str | None:
    """The file's text through the sandbox, or None when it does not exist (other errors propagate)."""
    try:
        return (await sandbox.read(path)).text
    except ToolFailed as e:
        if any(m in str(e) for m in _MISSING):
            return None
        raise


async def refuse_syntax(path: str, before: str, after: str) -> str:
    """Raise ToolFailed when ``after`` adds syntax errors to ``before``; else a note on errors already there (or
    that the syntax was not checked: parsing it went past the host's bounds). The parse runs in a bounded helper
    process (``agents.edits.syntax``), waited for off the event loop."""

    try:
        remaining = await asyncio.to_thread(check_edit_syntax, path, before, after)
    except EditRefused as e:
        raise ToolFailed(f"edit of {path} refused, nothing was written: {e.message}") from None
    except bounded.OverBound as e:
        return f" (note: the syntax of {path} was not checked: parsing it {e}; the host bounds what that may cost)"
    if remaining:
        return f" (note: {path} still has {len(remaining)} syntax error(s) that were there before this edit)"
    return ""


# ---- read_file --------------------------------------------------------------------------------------------------


class ReadFileArgs(Args):
    path: str = Field(description="File path, relative to the repository root.")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (inclusive); default: to the end.")


class ReadFileResult(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool


def numbered_lines(text: str, start_line: int, end_line: int | None, what: str, more: str) -> tuple[str, int, int]:
    """Lines ``start_line..end_line`` of ``text`` with line numbers, within READ_LINE_CAP lines and READ_CHAR_CAP
    characters; a hint names ``more`` (how to ask for the rest). Returns (text, last line shown, total lines)."""
    lines = text.splitlines()
    total = len(lines)
    if total and start_line > total:
        raise ToolFailed(f"{what} has {total} lines; start_line={start_line} is past the end")
    end = min(end_line or total, total, start_line + READ_LINE_CAP - 1)
    out, size = [], 0
    for i, line in enumerate(lines[start_line - 1:end], start_line):
        row = f"{i:6d}\t{line}"
        size += len(row) + 1
        if size > READ_CHAR_CAP:
            end = i - 1
            break
        out.append(row)
    shown = "\n".join(out)
    if end < total:
        shown += f"\n[showing lines {start_line}-{end} of {total}; call {more} with start_line={end + 1} for more]"
    return shown, end, total


async def read_file(ctx: ToolContext, a: ReadFileArgs) -> ToolOutput:
    res = await ctx.sandbox.read(a.path)
    text, end, total = numbered_lines(res.text, a.start_line, a.end_line, a.path, "read_file")
    result = ReadFileResult(path=a.path, start_line=a.start_line, end_line=end, total_lines=total,
                            truncated=end < total)
    return ToolOutput.of(text or "(empty file)", result, f"{a.path}: lines {a.start_line}-{end} of {total}")


# ---- read_output ------------------------------------------------------------------------------------------------


class ReadOutputArgs(Args):
    ref: str = Field(description="The sha256:... ref a compacted summary names ('full text: sha256:...').")
    start_line: int = Field(1, ge=1, description="First line to show (1-based).")
    end_line: int | None = Field(None, ge=1, description="Last line to show (inclusive); default: to the end.")


    @field_validator("ref")
    @classmethod
    def _exact_ref(cls, v: str) -> str:
        try:
            return check_ref(v.strip())
        except BadRef as e:
            raise ValueError(str(e)) from None


class ReadOutputResult(BaseModel):
    ref: str
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool


async def read_output(ctx: ToolContext, a: ReadOutputArgs) -> ToolOutput:

    if ctx.artifacts is None:
        raise ToolFailed("stored outputs are not available in this run")
    try:
        raw = ctx.artifacts(a.ref.strip())
    except BadRef as e:
        raise InvalidArguments(f"{e}; use a ref exactly as a compacted summary names it") from None
    except ArtifactMissing as e:
        raise ToolFailed(f"{e}; use a ref exactly as a compacted summary names it") from None
    text, end, total = numbered_lines(raw, a.start_line, a.end_line, a.ref, "read_output")
    result = ReadOutputResult(ref=a.ref, start_line=a.start_line, end_line=end, total_lines=total,
                              truncated=end < total)
    return ToolOutput.of(text or "(empty output)", result, f"{a.ref[:19]}: lines {a.start_line}-{end} of {total}")


# ---- list_dir ---------------------------------------------------------------------------------------------------


class ListDirArgs(Args):
    path: str = Field(".", description="Directory, relative to the repository root.")






async def list_dir(ctx: ToolContext, a: ListDirArgs) -> ToolOutput:
    res = await ctx.sandbox.list(a.path)
    suffix = {"dir": "/", "symlink": "@"}
    rows = [f"{e.name}{suffix.get(e.type, '')}" for e in res.entries]
    result = ListDirResult(path=a.path, entries=res.entries)
    return ToolOutput.of("\n".join(rows) or "(empty directory)", result, f"{a.path}: {len(rows)} entries")


# ---- glob -------------------------------------------------------------------------------------------------------


class GlobArgs(Args):
    pattern: str = Field(description="Glob relative to `path`: '*' within a directory, '**' across directories, "
                                     "e.g. '**/*.py' or 'src/**/test_*.py'.")
    path: str = Field(".", description="Directory to search from, relative to the repository root.")
    max_results: int = Field(500, ge=1, le=5000)




async def glob(ctx: ToolContext, a: GlobArgs) -> ToolOutput:
    res = await ctx.sandbox.glob(a.pattern, a.path, max_results=a.max_results)
    text = "\n".join(res.paths) or "(no matches)"
    if res.truncated:
        text += f"\n[stopped at {a.max_results} paths; narrow the pattern]"
    return ToolOutput.of(text, res, f"{len(res.paths)} paths for {a.pattern!r}")


# ---- grep -------------------------------------------------------------------------------------------------------


class GrepArgs(Args):
    pattern: str = Field(description="Regular expression (ripgrep syntax).")
    path: str = Field(".", description="Directory or file to search.")
    glob: str | None = Field(None, description="Only files matching this glob, e.g. '*.py'.")
    ignore_case: bool = False
    fixed: bool = Field(False, description="Treat the pattern as a literal string.")
    max_results: int = Field(200, ge=1, le=2000)






async def grep(ctx: ToolContext, a: GrepArgs) -> ToolOutput:
    res = await ctx.sandbox.grep(a.pattern, a.path, glob=a.glob, ignore_case=a.ignore_case, fixed=a.fixed,
                                 max_results=a.max_results)
    rows = [f"{m.path}:{m.line}:{m.text}" for m in res.matches]
    text = "\n".join(rows) or "(no matches)"
    if res.truncated:
        text += f"\n[stopped at {a.max_results} matches; narrow the pattern or path]"
    return ToolOutput.of(text, res, f"{len(rows)} matches for {a.pattern!r}")


# ---- write_file -------------------------------------------------------------------------------------------------


class WriteFileArgs(Args):
    path: str = Field(description="File path, relative to the repository root. Parent directories are created.")
    content: str = Field(description="The complete new content of the file.")


class WriteResult(BaseModel):
    path: str
    created: bool
    size: int


async def write_file(ctx: ToolContext, a: WriteFileArgs) -> ToolOutput:
    before = await read_text_or_none(ctx.sandbox, a.path)
    note = await refuse_syntax(a.path, before or "", a.content)
    size = await ctx.sandbox.write(a.path, a.content, create_dirs=True)
    return ToolOutput.of(f"wrote {a.path} ({size} bytes){note}",
                         WriteResult(path=a.path, created=before is None, size=size), f"wrote {a.path}")
