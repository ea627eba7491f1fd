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

from infra.errors import BosunError, InvalidArguments

REF = re.compile(r"sha256:[0-9a-f]{64}")
"""An artifact ref: exactly ``sha256:`` and 64 lowercase hex digits (nothing else names a file in the store)."""


class ArtifactMissing(BosunError):
    """An artifact is not in the store (or its content does not hash to its name). Not retried."""


class BadRef(InvalidArguments):
    """A string that is not an artifact ref (e.g. a model passed something else): refused, nothing is read."""

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
    """A directory of blobs named by their SHA-256: this host's own store (``BOSUN_ARTIFACT_STORE=files``), and the
    shape of the shared one (infra/objectstore.py), which keeps its local cache this way."""

    shared = False
    """Whether other hosts read what this store holds (the JetStream one)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _path(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def _place(self, digest: str, write) -> None:
        """Make the blob of ``digest`` with ``write(file)`` unless it is there: atomically, never half."""
        path = self._path(digest)
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def put_bytes(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self._place(digest, lambda f: f.write(data))
        return f"sha256:{digest}"

    def put_file(self, path: Path) -> str:
        """Store a file's content (a git bundle, a large output), read in chunks, never whole in memory."""
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        digest = h.hexdigest()
        self._place(digest, lambda out: ArtifactStore._copy(path, out))
        return f"sha256:{digest}"

    def get_file(self, ref: str, dest: Path) -> None:
        """Write the artifact ``ref`` to the file ``dest`` (replaced atomically), in chunks."""
        path = self._path(check_ref(ref)[7:])
        if not path.exists():
            raise ArtifactMissing(f"artifact {ref} is not in the store at {self.root}")
        ArtifactStore.copy_out(path, dest)

    @staticmethod
    def _copy(src: Path, out) -> None:
        with open(src, "rb") as f:
            while chunk := f.read(1 << 20):
                out.write(chunk)

    @staticmethod
    def copy_out(src: Path, dest: Path) -> None:
        """``src``'s content into ``dest`` through a temporary file beside it (a reader never sees half)."""
        fd, tmp = tempfile.mkstemp(dir=Path(dest).parent, prefix=f".{Path(dest).name}.")
        try:
            with os.fdopen(fd, "wb") as out:
                ArtifactStore._copy(src, out)
            os.replace(tmp, dest)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        """Release what the store holds open (nothing, for files)."""

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
