"""Unpacking what a build produced (its ``/opt/bosun-env``, streamed out of the build container as a tar) onto the
host, where bwrap sandboxes bind it read-only. The tar was written by the repository's build code: it is hostile.

Rules (docs/THREAT-MODEL.md, "environment export"): every member must stay inside the destination (no absolute
names, no ``..``, no path through a link; tarfile's ``tar`` filter checks the resolved path); only regular files,
directories and symbolic links (the link's target is kept as a string and never followed on the host: the
virtualenv's ``bin/python`` points at ``/usr/bin/python3`` inside the sandbox); no hard links, devices or FIFOs;
set-id, sticky and group/other-write bits dropped; files owned by root. Bounded: entries and total bytes, past which
the export is refused (never partial).
"""

from __future__ import annotations

import tarfile
from pathlib import Path
from typing import IO

from infra.errors import EnvironmentFailed

MAX_ENTRIES = 400_000
MAX_BYTES = 16 << 30


class ExportRefused(EnvironmentFailed):
    """The build's output broke a rule of the module docstring: the repository's build made it so, a build
    failure (the builder reports it as step ``export``), never a broken host to retry on."""


def unpack(stream: IO[bytes], dest: Path, *, strip: str = "", max_entries: int = MAX_ENTRIES,
           max_bytes: int = MAX_BYTES) -> int:
    """Unpack a tar stream into ``dest`` (created, must not exist) by the rules above; ``strip``: a leading
    directory name removed from every member. Returns the bytes written. Raises ExportRefused."""
    dest = Path(dest)
    dest.mkdir(parents=True)
    prefix = strip.rstrip("/") + "/" if strip else ""
    try:
        return _unpack(stream, dest, strip, prefix, max_entries, max_bytes)
    except tarfile.TarError as exc:  # a stream that is not a tar, or ends half-way
        raise ExportRefused(f"the build's output is not a readable tar: {exc}") from None


def _unpack(stream: IO[bytes], dest: Path, strip: str, prefix: str, max_entries: int, max_bytes: int) -> int:
    total = 0
    count = 0
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            count += 1
            if count > max_entries:
                raise ExportRefused(f"the build's output has more than {max_entries} entries")
            name = member.name
            if prefix:
                if name.rstrip("/") == strip.rstrip("/"):
                    continue
                if not name.startswith(prefix):
                    raise ExportRefused(f"the build's output holds {name[:120]!r} outside {strip}")
                name = name[len(prefix):]
            if not (member.isreg() or member.isdir() or member.issym()):
                raise ExportRefused(f"the build's output holds {name[:120]!r}, a "
                                    f"{'hard link' if member.islnk() else 'device, FIFO or other special file'}")
            total += member.size if member.isreg() else 0
            if total > max_bytes:
                raise ExportRefused(f"the build's output is larger than {max_bytes >> 20} MB")
            member.name = name
            member.uid = member.gid = 0
            member.uname = member.gname = "root"
            if member.isdir():
                member.mode = 0o755
            elif member.isreg():
                member.mode = 0o755 if member.mode & 0o111 else 0o644
            try:
                filtered = tarfile.tar_filter(member, str(dest))
            except tarfile.FilterError as exc:
                raise ExportRefused(f"the build's output breaks the export rules: {exc}") from None
            if filtered is None:
                continue
            try:
                tar.extract(filtered, dest, filter="fully_trusted", numeric_owner=True)
            except (OSError, tarfile.TarError) as exc:
                raise ExportRefused(f"unpacking the build's output failed at {name[:120]!r}: {exc}") from None
    return total
