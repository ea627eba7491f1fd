"""The tool server's file ops: ping, read, write, delete, list, glob and grep, every path held inside the workspace.

Part of the tool server (``__main__.py`` says what it is).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys

from ts_base import PROTOCOL_VERSION, ToolError, Workspace, _os_error, invalid
from ts_protocol import (
    Delete,
    DeleteResult,
    Glob,
    GlobResult,
    Grep,
    GrepResult,
    List,
    ListResult,
    Ping,
    PingResult,
    Read,
    ReadResult,
    Write,
    WriteResult,
)

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs milliseconds at start-up; annotations are strings anyway
    from typing import Any

    from ts_processes import ProcessTracker

MAX_READ_BYTES = 8 * 1024 * 1024
MAX_LINE_TEXT = 400


def op_ping(ws: Workspace, req: Ping) -> PingResult:
    """Liveness check; also reports what the server runs on."""
    st = os.stat(ws.root)
    pong = {"pong": True, "protocol": PROTOCOL_VERSION, "pid": os.getpid(), "workspace": ws.display,
            "workspace_dev": st.st_dev, "workspace_ino": st.st_ino, "python": sys.version.split()[0],
            "rg": _which("rg") is not None}
    try:  # a task's object store (sandbox/base.py: OBJECTS_IN_SANDBOX)
        objects = os.stat("/run/bosun/objects")
        pong.update(objects_dev=objects.st_dev, objects_ino=objects.st_ino)
    except OSError:
        pass
    return PingResult(**pong)


def op_read(ws: Workspace, req: Read) -> ReadResult:
    """Read a UTF-8 text file, bytes preserved exactly (CRLF, BOM)."""
    path = req.path
    real = ws.resolve(path)
    try:
        st = os.stat(real)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"cannot read '{path}': it is a directory (use list)")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"cannot read '{path}': not a regular file")
        if st.st_size > MAX_READ_BYTES:
            raise ToolError(f"cannot read '{path}': {st.st_size} bytes is larger than the limit of "
                            f"{MAX_READ_BYTES} bytes; use grep or exec (head/sed) to look at parts of it")
        with open(real, "rb") as f:
            data = f.read(MAX_READ_BYTES + 1)
    except OSError as exc:
        raise _os_error(exc, "read", path) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(f"cannot read '{path}': not UTF-8 text (invalid byte at offset {exc.start}); "
                        f"it looks like a binary file") from None
    if "\x00" in text:
        raise ToolError(f"cannot read '{path}': contains NUL bytes; it looks like a binary file")
    return ReadResult(text=text, size=len(data), mtime_ns=st.st_mtime_ns)


def op_write(ws: Workspace, req: Write) -> WriteResult:
    """Write a text file atomically (temp file in the same directory, fsync, rename), keeping the file's mode."""
    path, text, create_dirs = req.path, req.text, req.create_dirs
    real = ws.resolve(path)
    if real == ws.root:
        raise ToolError(f"cannot write '{path}': it is the workspace root")
    parent = os.path.dirname(real)
    data = text.encode("utf-8")
    try:
        if create_dirs:
            os.makedirs(parent, exist_ok=True)
        elif not os.path.isdir(parent):
            raise ToolError(f"cannot write '{path}': directory '{ws.rel(parent)}' does not exist "
                            f"(pass create_dirs=true to create it)")
        try:
            st = os.stat(real)
            if stat.S_ISDIR(st.st_mode):
                raise ToolError(f"cannot write '{path}': it is a directory")
            mode = stat.S_IMODE(st.st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, tmp = _mkstemp(parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode & 0o1777)
            os.replace(tmp, real)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        raise _os_error(exc, "write", path) from None
    return WriteResult(size=len(data))


def _mkstemp(parent: str) -> tuple[int, str]:
    """A new temporary file next to the target (same file system, so the rename is atomic)."""
    for _ in range(100):
        tmp = os.path.join(parent, f".bosun-{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            continue
    raise OSError(errno.EEXIST, "cannot create a temporary file")


def _which(name: str) -> str | None:
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(os.pathsep):
        full = os.path.join(d, name)
        if os.path.isfile(full) and os.access(full, os.X_OK):
            return full
    return None


def op_delete(ws: Workspace, req: Delete) -> DeleteResult:
    """Delete a file or symlink (the link itself); a directory only if empty unless recursive=true."""
    path, recursive = req.path, req.recursive
    # Resolve the parent only: deleting a symlink removes the link, never its target.
    if path.rstrip("/") in ("", "."):
        raise ToolError("refusing to delete the workspace root")
    parent = ws.resolve(os.path.dirname(path.rstrip("/")) or ".")
    real = os.path.join(parent, os.path.basename(path.rstrip("/")))
    if not ws.contains(real) or real == ws.root:
        raise ToolError(f"path '{path}' resolves to '{real}', outside the workspace {ws.display}")
    try:
        st = os.lstat(real)
        if stat.S_ISDIR(st.st_mode):
            if recursive:
                import shutil  # noqa: PLC0415 - rarely needed, slow to import

                shutil.rmtree(real)
            else:
                os.rmdir(real)
            return DeleteResult(deleted=path, type="dir")
        os.unlink(real)
        return DeleteResult(deleted=path, type="symlink" if stat.S_ISLNK(st.st_mode) else "file")
    except OSError as exc:
        if exc.errno == errno.ENOTEMPTY:
            raise ToolError(f"cannot delete '{path}': directory not empty (pass recursive=true)") from None
        raise _os_error(exc, "delete", path) from None


def _entry_type(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISREG(mode):
        return "file"
    return "other"


def op_list(ws: Workspace, req: List) -> ListResult:
    """Entries of one directory, sorted by name: name, type (file|dir|symlink|other), size."""
    path = req.path
    real = ws.resolve(path)
    entries = []
    try:
        with os.scandir(real) as it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                entries.append({"name": entry.name, "type": _entry_type(st.st_mode), "size": st.st_size})
    except OSError as exc:
        raise _os_error(exc, "list", path) from None
    entries.sort(key=lambda e: e["name"])
    return ListResult(path=ws.rel(real), entries=entries)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob with ``**`` (any number of directories), ``*``, ``?``, ``[...]`` into a regex."""
    i, n, out = 0, len(pattern), []
    while i < n:
        c = pattern[i]
        if c == "*":
            if pattern.startswith("**", i):
                at_start = i == 0 or pattern[i - 1] == "/"
                j = i + 2
                if at_start and j < n and pattern[j] == "/":
                    out.append("(?:.*/)?")
                    i = j + 1
                    continue
                out.append(".*")
                i = j
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = i + 1
            if j < n and pattern[j] in "!^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:j]
                if body[:1] in ("!", "^"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _walk_files(base: str) -> Any:
    """Yield (dirpath, name, is_dir) below ``base``, not following symlinks, skipping .git directories."""
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for d in dirnames:
            yield dirpath, d, True
        for f in sorted(filenames):
            yield dirpath, f, False


def op_glob(ws: Workspace, req: Glob) -> GlobResult:
    """Paths matching a glob (``**`` spans directories), relative to the workspace, sorted; .git is skipped."""
    pattern, path, limit = req.pattern, req.path, req.max_results
    if not pattern or pattern.startswith("/") or ".." in pattern.split("/"):
        raise invalid(f"glob pattern '{pattern}' must be relative and must not contain '..'")
    base = ws.resolve(path)
    if not os.path.isdir(base):
        raise ToolError(f"cannot glob in '{path}': not a directory")
    rx = glob_to_regex(pattern)
    matches: list[str] = []
    truncated = False
    for dirpath, name, _is_dir in _walk_files(base):
        full = os.path.join(dirpath, name)
        rel_base = os.path.relpath(full, base)
        if rx.match(rel_base):
            if len(matches) >= limit:
                truncated = True
                break
            matches.append(ws.rel(full))
    matches.sort()
    return GlobResult(paths=matches, truncated=truncated)


def op_grep(ws: Workspace, req: Grep, tracker: ProcessTracker) -> GrepResult:
    """Search file contents: ``rg --json`` when available, else Python ``re``. Matches: path, line, text."""
    pattern, path, file_glob, ignore_case, fixed, limit = (req.pattern, req.path, req.glob, req.ignore_case,
                                                           req.fixed, req.max_results)
    if limit <= 0:
        raise invalid("argument 'max_results' must be positive")
    base = ws.resolve(path)
    if not fixed:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise invalid(f"invalid regular expression {pattern!r}: {exc} "
                          f"(pass fixed=true for a literal string)") from None
    rg = _which("rg")
    if rg:
        return _grep_rg(ws, tracker, rg, pattern, base, file_glob, ignore_case, fixed, limit)
    return _grep_py(ws, pattern, base, file_glob, ignore_case, fixed, limit)


def _clip(text: str) -> str:
    text = text.rstrip("\r\n")
    return text if len(text) <= MAX_LINE_TEXT else text[:MAX_LINE_TEXT] + "..."


def _grep_rg(ws: Workspace, tracker: ProcessTracker, rg: str, pattern: str, base: str, file_glob: str | None,
             ignore_case: bool, fixed: bool, limit: int) -> GrepResult:
    cmd = [rg, "--json", "--hidden", "--glob", "!.git", "--no-messages"]
    if ignore_case:
        cmd.append("--ignore-case")
    if fixed:
        cmd.append("--fixed-strings")
    if file_glob:
        cmd += ["--glob", file_glob]
    cmd += ["-e", pattern, "--", base]
    matches: list[dict[str, Any]] = []
    truncated = False
    proc = tracker.popen_helper(cmd, ws.root)
    assert proc.stdout is not None
    try:
        for raw in proc.stdout:
            if b'"type":"match"' not in raw[:32]:
                continue
            try:
                data = json.loads(raw)["data"]
            except (ValueError, KeyError):
                continue
            p = _rg_text(data.get("path"), "surrogateescape")  # a name that is not UTF-8 comes as bytes
            text = _rg_text(data.get("lines"), "replace")
            if p is None or text is None:
                continue
            if len(matches) >= limit:
                truncated = True
                break
            matches.append({"path": ws.rel(os.path.join(ws.root, p)), "line": data.get("line_number"),
                            "text": _clip(text)})
    finally:
        if proc.poll() is None:
            proc.kill()
        _, err = proc.communicate()
        tracker.helper_done(proc)
    if proc.returncode == 2 and not matches and err.strip():
        raise ToolError(f"grep failed: {err.decode('utf-8', 'replace').strip()[:500]}")
    matches.sort(key=lambda m: (m["path"], m["line"] or 0))
    return GrepResult(matches=matches, truncated=truncated)


def _rg_text(field: Any, errors: str) -> str | None:
    """A ``text`` or base64 ``bytes`` field of ripgrep's JSON (bytes for what is not UTF-8), decoded."""
    if not isinstance(field, dict):
        return None
    if isinstance(field.get("text"), str):
        return field["text"]
    raw = field.get("bytes")
    if not isinstance(raw, str):
        return None
    try:
        import base64  # noqa: PLC0415 - rarely needed

        return base64.b64decode(raw, validate=True).decode("utf-8", errors)
    except ValueError:
        return None


def _grep_py(ws: Workspace, pattern: str, base: str, file_glob: str | None, ignore_case: bool, fixed: bool,
             limit: int) -> GrepResult:
    flags = re.IGNORECASE if ignore_case else 0
    rx = re.compile(re.escape(pattern) if fixed else pattern, flags)
    grx = glob_to_regex(file_glob if "/" in (file_glob or "") else "**/" + file_glob) if file_glob else None
    files = [base] if os.path.isfile(base) else [os.path.join(d, n) for d, n, is_dir in _walk_files(base)
                                                   if not is_dir]
    matches: list[dict[str, Any]] = []
    truncated = False
    for full in files:
        if grx and not grx.match(os.path.relpath(full, base)):
            continue
        try:
            if os.path.islink(full) or os.path.getsize(full) > MAX_READ_BYTES:
                continue
            with open(full, "rb") as f:
                data = f.read()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for lineno, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            if rx.search(line):
                if len(matches) >= limit:
                    truncated = True
                    break
                matches.append({"path": ws.rel(full), "line": lineno, "text": _clip(line)})
        if truncated:
            break
    matches.sort(key=lambda m: (m["path"], m["line"]))
    return GrepResult(matches=matches, truncated=truncated)
