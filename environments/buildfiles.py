"""What a build puts into its container and takes out: the source tree owned by the build user, bosun's own small
files (requirements, configs, the seed script), a docker build context, and the script that lists the files the
build left in the tree (the seed)."""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from environments.bases import BUILD_UID

UNIGNORED_LIMIT = 5000
"""Most entries (files, or directories the build made) a seed keeps that git does not ignore; beyond, none."""


SEED_SCRIPT = r"""
import os, subprocess, sys
LIMIT = @LIMIT@
listed = set(open('/opt/bosun-tools/source-files', 'rb').read().decode('utf-8', 'surrogateescape').split('\0'))
source_dirs = set()
for path in listed:
    d = os.path.dirname(path)
    while d and d not in source_dirs:
        source_dirs.add(d)
        d = os.path.dirname(d)
new = []
for dirpath, dirs, files in os.walk('/workspace'):
    dirs[:] = [d for d in dirs if d != '.git']
    dirs[:] = [d for d in dirs if d != '__pycache__']
    for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
        rel = os.path.relpath(os.path.join(dirpath, name), '/workspace')
        if rel not in listed and not rel.endswith(('.pyc', '.pyo')):
            new.append(rel)
if not new:
    print('seed: the build left nothing in the source tree')
    sys.exit(0)
subprocess.run(['git', 'init', '-q', '/tmp/seedgit'], check=True)
out = subprocess.run(['git', '--git-dir=/tmp/seedgit/.git', '--work-tree=/workspace', 'check-ignore', '--no-index',
                      '--stdin', '-z'], input='\0'.join(new).encode('utf-8', 'surrogateescape'),
                     stdout=subprocess.PIPE).stdout
ignored = [p for p in out.decode('utf-8', 'surrogateescape').split('\0') if p]
rest = sorted(set(new) - set(ignored))

def entry_of(path):
    # the file itself when its directory is the source's, else the top directory the build made ('build/')
    parts = path.split('/')
    for i in range(1, len(parts)):
        top = '/'.join(parts[:i])
        if top not in source_dirs:
            return top + '/'
    return path

def expressible(entry):
    try:
        entry.encode('utf-8')
    except UnicodeEncodeError:
        return False
    return '\n' not in entry and '\r' not in entry

def pattern(entry):
    body = ''.join('\\' + c if c in '*?[\\' else c for c in entry.rstrip('/'))
    trailing = len(body) - len(body.rstrip(' '))
    return '/' + body.rstrip(' ') + '\\ ' * trailing + ('/' if entry.endswith('/') else '')

entries = {}
for path in rest:
    entries.setdefault(entry_of(path), []).append(path)
kept = sorted(e for e in entries if expressible(e))
too_many = len(kept) > LIMIT
if too_many:
    kept = []
left = sorted(p for e in set(entries) - set(kept) for p in entries[e])
if left:
    why = 'more than %d of them' % LIMIT if too_many else 'names with a line break or not UTF-8'
    print('seed: warning: %d file(s) the build made do not go into workspaces: git does not ignore them and bosun '
          'cannot leave them out of diffs (%s): %s%s' % (len(left), why, ' '.join(repr(p) for p in left[:3]),
                                                       ' ...' if len(left) > 3 else ''))
if kept:
    with open('/opt/bosun-env/seed-unignored', 'wb') as f:
        f.write('\0'.join(kept).encode('utf-8'))
    with open('/opt/bosun-env/seed-exclude', 'wb') as f:
        f.write(('# bosun seed: files the environment build made that git does not ignore (diffs leave them out)\n'
                 + ''.join(pattern(e) + '\n' for e in kept)).encode('utf-8'))
    print('seed: %d file(s) git does not ignore are kept as if .gitignore named them: %s%s'
          % (sum(len(entries[e]) for e in kept), ' '.join(kept[:5]), ' ...' if len(kept) > 5 else ''))
seeded = ignored + [p for e in kept for p in entries[e]]
if seeded:
    with open('/tmp/seed-list', 'wb') as f:
        f.write('\0'.join(seeded).encode('utf-8', 'surrogateescape'))
    subprocess.run(['tar', '-cf', '/opt/bosun-env/seed.tar', '-C', '/workspace', '--null', '-T', '/tmp/seed-list'],
                   check=True)
    print('seed: kept %d file(s) the build made, e.g. %s' % (len(seeded), ' '.join(sorted(seeded)[:5])))
""".replace("@LIMIT@", str(UNIGNORED_LIMIT))


class StreamFile(io.RawIOBase):
    """A byte-chunk iterator as a readable file (docker's get_archive -> tarfile's stream mode)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


def owned_tar(source: Path, dest: Path, uid: int) -> list[str]:
    """``source`` (a tar) written to ``dest`` with every member owned by ``uid`` (the build user must write the
    tree), streamed member by member; returns its files."""
    names: list[str] = []
    with tarfile.open(source, mode="r|") as src, tarfile.open(dest, mode="w|") as dst:
        for member in src:
            if member.type == tarfile.XGLTYPE or member.name in ("pax_global_header",):
                continue
            member.uid = member.gid = uid
            member.uname = member.gname = "bosun"
            if member.isreg() or member.issym():
                names.append(member.name)
            dst.addfile(member, src.extractfile(member) if member.isreg() else None)
    return names


def tools_tar(files: dict[str, tuple[bytes, int]], dirs: tuple[str, ...] = ()) -> bytes:
    """Files (name -> bytes, mode) and directories, the build user's, as a tar to copy into a container."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:") as tar:
        for name in dirs:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
            info.uid = info.gid = BUILD_UID
            tar.addfile(info)
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            info.uid = info.gid = BUILD_UID
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def context_tar(source_tar: Path, dest: Path, folder: str, extra: dict[str, str]) -> None:
    """The build context of a Dockerfile: the members of ``source_tar`` under ``folder`` ("": all), renamed
    relative to it, plus ``extra`` (name in the context -> a member's name: a Dockerfile from outside it)."""
    prefix = f"{folder.strip('/')}/" if folder else ""
    with tarfile.open(source_tar) as src, tarfile.open(dest, "w:") as out:
        wanted = {v: k for k, v in extra.items()}
        for member in src:
            name = member.name.removeprefix("./")
            data = src.extractfile(member) if member.isfile() else None
            if name in wanted:
                copy = tarfile.TarInfo(wanted[name])
                copy.size, copy.mode, copy.mtime = member.size, member.mode, member.mtime
                out.addfile(copy, src.extractfile(member))
            if prefix and not name.startswith(prefix):
                continue
            member.name = name[len(prefix):] if prefix else name
            if member.name:
                out.addfile(member, data)
