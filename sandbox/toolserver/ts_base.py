"""The tool server's common ground: its errors and the workspace's path rule (ts_protocol checks the arguments).

Part of the tool server (``__main__.py`` says what it is): standard library only, imported by name from the
server's own folder.
"""

from __future__ import annotations

import errno
import os

PROTOCOL_VERSION = 1


class ToolError(Exception):
    """An error reported back to the caller. ``kind`` is ToolFailed or InvalidArguments."""

    def __init__(self, message: str, kind: str = "ToolFailed") -> None:
        super().__init__(message)
        self.kind = kind


def invalid(message: str) -> ToolError:
    return ToolError(message, "InvalidArguments")


class Workspace:
    """The workspace root and the rule that every path must stay inside it."""

    def __init__(self, root: str) -> None:
        self.display = root
        self.root = os.path.realpath(root)

    def resolve(self, path: str, *, arg: str = "path") -> str:
        """Absolute real path of ``path`` (relative to the root), or ToolFailed when it leaves the workspace."""
        if not isinstance(path, str):
            raise invalid(f"argument '{arg}' must be a string")
        if "\x00" in path:
            raise invalid(f"argument '{arg}' contains a NUL byte")
        if path.startswith("~"):
            raise ToolError(f"path '{path}' starts with '~': home directories are not available in the sandbox; "
                            f"use a path relative to the workspace {self.display}")
        joined = os.path.join(self.root, path) if not os.path.isabs(path) else path
        if os.path.isabs(path) and (path == self.display or path.startswith(self.display.rstrip("/") + "/")):
            joined = self.root + path[len(self.display.rstrip("/")):]
        real = os.path.realpath(joined)
        if not self.contains(real):
            raise ToolError(f"path '{path}' resolves to '{real}', outside the workspace {self.display}; "
                            f"use a path inside the workspace")
        return real

    def contains(self, real: str) -> bool:
        return real == self.root or real.startswith(self.root.rstrip("/") + "/")

    def rel(self, real: str) -> str:
        """Path relative to the root ("." for the root itself)."""
        r = os.path.relpath(real, self.root)
        return r


def _os_error(exc: OSError, what: str, path: str) -> ToolError:
    reasons = {
        errno.ENOENT: "no such file or directory",
        errno.EACCES: "permission denied",
        errno.EPERM: "operation not permitted",
        errno.EISDIR: "is a directory",
        errno.ENOTDIR: "a component of the path is not a directory",
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EEXIST: "already exists",
        errno.ENOTEMPTY: "directory not empty",
    }
    reason = reasons.get(exc.errno or 0, exc.strerror or str(exc))
    return ToolError(f"cannot {what} '{path}': {reason}")
