"""The tool server compiled to bytecode by a sandbox's own interpreter, once per interpreter and tool-server version,
into a host-owned cache that bwrap sandboxes bind read-only (a program run from source is compiled at every start)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from sandbox.client import TOOLSERVER_PATH, scrubbed_env


def compiled_target(interpreter: bytes) -> Path:
    """Where the tool server compiled for ``interpreter`` (bytes naming it) is cached: a folder of its modules'
    bytecode, by their content and the interpreter. As root, a root-owned world-readable place: sandboxes may run as
    the workspace owner and must read it."""
    h = hashlib.sha256(interpreter)
    for source in toolserver_sources():
        h.update(b"\0" + source.name.encode() + b"\0" + source.read_bytes())
    cache = (Path("/run/bosun-toolserver") if os.geteuid() == 0 else
             Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "bosun" / "toolserver")
    return cache / f"toolserver-{h.hexdigest()[:16]}"


def toolserver_sources() -> list[Path]:
    """The tool server's modules (sandbox/toolserver/*.py), in a stable order."""
    return sorted(TOOLSERVER_PATH.glob("*.py"))


COMPILE = ("import py_compile, sys, pathlib; src, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])\n"
            "for f in sorted(src.glob('*.py')): py_compile.compile(str(f), cfile=str(out / (f.stem + '.pyc')), "
            "doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)")
"""Compiles every module of the tool server's folder (argv[1]) into bytecode beside each other in argv[2]: a folder
of ``.pyc`` files that ``python3 FOLDER`` runs (its ``__main__.pyc``) and imports from (sourceless)."""


def compile_into(target: Path, run: Callable[[Path], None]) -> Path:
    """Make ``target`` (a folder of the tool server's bytecode) with ``run(out)``, which compiles into the empty
    folder ``out``; the folder appears whole or not at all. Falls back to the source folder when compiling is not
    possible."""
    if target.is_dir():
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        out = Path(tempfile.mkdtemp(dir=target.parent, prefix=".compile-"))
        try:
            run(out)
            out.chmod(0o755)
            os.rename(out, target)
        except OSError:
            if not target.is_dir():  # another worker made it first: theirs is as good
                raise
        finally:
            shutil.rmtree(out, ignore_errors=True)
        return target
    except (OSError, subprocess.SubprocessError):
        return TOOLSERVER_PATH


def compiled_toolserver(python: str) -> Path:
    """The tool server compiled to bytecode by the sandbox's ``python`` (cached by content hash): a program run from
    source is compiled at every start, which costs several milliseconds of each cold start. Falls back to the
    source folder when compiling is not possible."""
    def run(out: Path) -> None:
        subprocess.run([python, "-I", "-S", "-c", COMPILE, str(TOOLSERVER_PATH), str(out)], check=True,
                       capture_output=True, timeout=60, env=scrubbed_env())

    return compile_into(compiled_target(python.encode()), run)
