"""Content-addressed artifact store: transcripts, file contents and tool outputs live here, history keeps refs.

A ref is ``sha256:<hex>``. Writing the same content twice yields the same ref and one file. Writes are atomic
(temp file + rename), so a crash never leaves a half-written artifact under a valid ref.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from infra.errors import BosunError


class ArtifactMissing(BosunError):
    kind = "UnexpectedEnvironment"


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
        if not ref.startswith("sha256:") or len(ref) != 71:
            raise ArtifactMissing(f"not an artifact ref: {ref!r} (expected 'sha256:<64 hex digits>')")
        path = self._path(ref[7:])
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ArtifactMissing(f"artifact {ref} is not in the store at {self.root}") from None

    def get_text(self, ref: str) -> str:
        return self.get_bytes(ref).decode("utf-8")

    def get_json(self, ref: str) -> Any:
        return json.loads(self.get_bytes(ref))
