"""Content-addressed artifact store: transcripts, file contents and tool outputs live here, history keeps refs.

A ref is ``sha256:<hex>``. Writing the same content twice yields the same ref and one file. Writes are atomic
(temp file + rename), so a crash never leaves a half-written artifact under a valid ref.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from infra.errors import BosunError

REF = re.compile(r"sha256:[0-9a-f]{64}")
"""An artifact ref: exactly ``sha256:`` and 64 lowercase hex digits (nothing else names a file in the store)."""


class ArtifactMissing(BosunError):
    kind = "UnexpectedEnvironment"


class BadRef(BosunError):
    """A string that is not an artifact ref (e.g. a model passed something else): refused, nothing is read."""

    kind = "InvalidArguments"


def check_ref(ref: object) -> str:
    """``ref`` if it is exactly ``sha256:<64 lowercase hex>``; BadRef otherwise."""
    if not isinstance(ref, str) or not REF.fullmatch(ref):
        shown = repr(ref)[:80]
        raise BadRef(f"not an artifact ref: {shown} (expected 'sha256:' followed by 64 lowercase hex digits)")
    return ref


def write_json_atomically(path: Path, value: Any, *, indent: int | None = None) -> None:
    """Replace ``path`` with ``value`` as JSON in one step (a reader sees the old file or the new, never half)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(value, indent=indent), encoding="utf-8")
    os.replace(tmp, path)


class ArtifactStore:
    """A directory of blobs named by their SHA-256."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        path = self._path(digest)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        return f"sha256:{digest}"

    def put_text(self, text: str) -> str:
        return self.put_bytes(text.encode("utf-8"))

    def put_json(self, value: Any) -> str:
        return self.put_bytes(json.dumps(value, sort_keys=True, separators=(",", ":")).encode("utf-8"))

    def get_bytes(self, ref: str) -> bytes:
        path = self._path(check_ref(ref)[7:])
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ArtifactMissing(f"artifact {ref} is not in the store at {self.root}") from None

    def get_text(self, ref: str) -> str:
        return self.get_bytes(ref).decode("utf-8")

    def get_json(self, ref: str) -> Any:
        return json.loads(self.get_bytes(ref))
