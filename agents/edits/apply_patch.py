"""OpenAI/Codex ``apply_patch`` format, applied across files all or nothing.

::

    *** Begin Patch
    *** Add File: path          (every following line starts with '+')
    *** Delete File: path
    *** Update File: path
    *** Move to: new/path       (optional, right after Update File)
    @@ optional context line    (one or more; narrows the search to after that line)
     context / -removed / +added
    *** End of File             (optional: the chunk must end the file)
    *** End Patch

Text before ``*** Begin Patch`` (a heredoc line, a fence) and after ``*** End Patch`` is
ignored. Chunks are located by ``hunks.apply_hunks``. ``apply_patch_to_files`` computes every
file first and returns them only if all operations succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .document import Document, to_lf
from .hunks import Hunk, apply_hunks
from .model import AddFile, DeleteFile, EditRefused, PatchChunk, PatchOp, UpdateFile

_BEGIN = "*** Begin Patch"
_END = "*** End Patch"
_ADD = "*** Add File: "
_DELETE = "*** Delete File: "
_UPDATE = "*** Update File: "
_MOVE = "*** Move to: "
_EOF = "*** End of File"


def _invalid(msg: str) -> EditRefused:
    return EditRefused(msg + " Nothing was changed.", "invalid_patch")


def _path_arg(line: str, prefix: str, lineno: int) -> str:
    path = line[len(prefix) :].strip()
    if not path:
        raise _invalid(f"Patch line {lineno}: '{prefix.strip()}' needs a path.")
    return path


def parse_apply_patch(patch_text: str) -> list[PatchOp]:
    """Parse a ``*** Begin Patch`` ... ``*** End Patch`` text into operations."""
    lines = to_lf(patch_text).split("\n")
    try:
        begin = next(i for i, line in enumerate(lines) if line.strip() == _BEGIN)
    except StopIteration:
        raise _invalid("The patch must start with '*** Begin Patch'.") from None
    try:
        end = next(i for i in range(begin + 1, len(lines)) if lines[i].strip() == _END)
    except StopIteration:
        raise _invalid("The patch has no '*** End Patch' line (was it cut off?).") from None
    ops: list[PatchOp] = []
    i = begin + 1
    while i < end:
        line = lines[i]
        lineno = i + 1
        if line.startswith(_ADD):
            path = _path_arg(line, _ADD, lineno)
            body: list[str] = []
            i += 1
            while i < end and not lines[i].startswith("*** "):
                if lines[i] == "":  # a blank content line without its '+', or a separator
                    if not _only_blank_until_op(lines, i, end):
                        body.append("")
                    i += 1
                    continue
                if not lines[i].startswith("+"):
                    raise _invalid(f"Patch line {i + 1}: every line of '*** Add File: {path}' must start with '+'.")
                body.append(lines[i][1:])
                i += 1
            ops.append(AddFile(path, "\n".join(body) + ("\n" if body else "")))
        elif line.startswith(_DELETE):
            ops.append(DeleteFile(_path_arg(line, _DELETE, lineno)))
            i += 1
        elif line.startswith(_UPDATE):
            op = UpdateFile(_path_arg(line, _UPDATE, lineno))
            i += 1
            if i < end and lines[i].startswith(_MOVE):
                op.move_to = _path_arg(lines[i], _MOVE, i + 1)
                i += 1
            i = _parse_chunks(lines, i, end, op)
            if not op.chunks and op.move_to is None:
                raise _invalid(f"'*** Update File: {op.path}' has no changes.")
            ops.append(op)
        elif line.strip() == "":
            i += 1
        else:
            raise _invalid(
                f"Patch line {lineno} ({line[:60]!r}) is not a file operation; expected '*** Add File:', "
                "'*** Delete File:' or '*** Update File:'."
            )
    if not ops:
        raise _invalid("The patch contains no file operation.")
    return ops


def _parse_chunks(lines: list[str], i: int, end: int, op: UpdateFile) -> int:
    chunk: PatchChunk | None = None
    while i < end:
        line = lines[i]
        if line.startswith("*** ") and line.strip() != _EOF:
            break
        if line.strip() == _EOF:
            if chunk is None:
                raise _invalid(f"Patch line {i + 1}: '*** End of File' outside a chunk.")
            chunk.at_eof = True
            chunk = None
            i += 1
            continue
        if line.startswith("@@"):
            anchor = line[2:].strip()
            if chunk is None or chunk.lines:
                chunk = PatchChunk()
                op.chunks.append(chunk)
            if anchor:
                chunk.anchors.append(line[2:].removeprefix(" "))
        elif line[:1] in (" ", "-", "+") or line == "":
            if line == "" and _only_blank_until_op(lines, i, end):
                i += 1
                continue
            if chunk is None:
                chunk = PatchChunk()
                op.chunks.append(chunk)
            chunk.lines.append((line[:1] or " ", line[1:]))
        else:
            raise _invalid(
                f"Patch line {i + 1} ({line[:60]!r}) in '*** Update File: {op.path}' must start with ' ', '-', '+' "
                "or '@@'. Unchanged lines need a leading space."
            )
        i += 1
    for n, chunk_ in enumerate(op.chunks, 1):
        if not any(kind != " " for kind, _ in chunk_.lines):
            raise _invalid(f"Chunk {n} of '*** Update File: {op.path}' adds and removes nothing.")
    return i


def _only_blank_until_op(lines: list[str], i: int, end: int) -> bool:
    j = i
    while j < end and lines[j] == "":
        j += 1
    return j >= end or lines[j].startswith("*** ") or lines[j].startswith("@@")


@dataclass
class PatchResult:
    """New content per touched path (None = deleted) and one message line per operation."""

    files: dict[str, str | None]
    messages: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)


def apply_patch_detailed(patch_text: str, read: Callable[[str], str | None]) -> PatchResult:
    """Like ``apply_patch_to_files`` but also returns a message per operation for the model."""
    ops = parse_apply_patch(patch_text)
    state: dict[str, str | None] = {}
    messages: list[str] = []
    statuses: dict[str, str] = {}

    def current(path: str) -> str | None:
        return state[path] if path in state else read(path)

    for n, op in enumerate(ops, 1):
        where = f"operation {n} of {len(ops)}"
        try:
            if isinstance(op, AddFile):
                existing = current(op.path)
                if existing is not None and existing != op.content:
                    raise EditRefused(
                        f"'*** Add File: {op.path}': the file already exists; use '*** Update File:' to change it.",
                        "file_exists",
                    )
                state[op.path] = op.content
                statuses[op.path] = "already_applied" if existing is not None else "applied"
                messages.append(f"Added {op.path}." if existing is None else f"{op.path} already had this content.")
            elif isinstance(op, DeleteFile):
                if current(op.path) is None:
                    raise EditRefused(f"'*** Delete File: {op.path}': no such file.", "no_such_file")
                state[op.path] = None
                statuses[op.path] = "applied"
                messages.append(f"Deleted {op.path}.")
            else:
                _update(op, current, state, messages, statuses)
        except EditRefused as exc:
            done = f" Operations 1-{n - 1} succeeded but nothing was written: all or nothing." if n > 1 else ""
            exc.message = f"Patch {where}: {exc.message}{done}"
            exc.args = (exc.message,)
            raise
    return PatchResult(state, messages, statuses)


def _update(
    op: UpdateFile,
    current: Callable[[str], str | None],
    state: dict[str, str | None],
    messages: list[str],
    statuses: dict[str, str],
) -> None:
    original = current(op.path)
    if original is None:
        raise EditRefused(f"'*** Update File: {op.path}': no such file.", "no_such_file")
    if op.move_to is not None and op.move_to != op.path and current(op.move_to) is not None:
        raise EditRefused(f"'*** Move to: {op.move_to}': the destination already exists.", "file_exists")
    new_text = original
    status = "applied"
    message = f"Moved {op.path} to {op.move_to}."
    if op.chunks:
        hunks = [
            Hunk(
                list(chunk.lines),
                anchors=list(chunk.anchors),
                at_eof=chunk.at_eof,
                label=f"chunk {k}" + (f" (@@ {chunk.anchors[-1].strip()[:50]})" if chunk.anchors else ""),
            )
            for k, chunk in enumerate(op.chunks, 1)
        ]
        result = apply_hunks(Document.parse(original), hunks, f"'*** Update File: {op.path}'")
        status = result.status
        message = result.message
        if result.status == "applied":
            new_text = result.doc.render()
    if op.move_to is not None and op.move_to != op.path:
        state[op.path] = None
        state[op.move_to] = new_text
        statuses[op.path] = "applied"
        statuses[op.move_to] = "applied"
        if op.chunks:
            message += f" Moved to {op.move_to}."
    else:
        state[op.path] = new_text
        statuses[op.path] = status
    messages.append(message)


def apply_patch_to_files(patch_text: str, read: Callable[[str], str | None]) -> dict[str, str | None]:
    """New content of every path the patch touches (None = delete; a move deletes the old path).

    ``read(path)`` returns the current text or None when the file does not exist. Raises
    ``EditRefused`` if anything fails, in which case nothing should be written.
    """
    return apply_patch_detailed(patch_text, read).files
