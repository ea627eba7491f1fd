"""Base root filesystems of environments: one per Debian suite (its own ``python3``) and variant, made with
debootstrap, kept as a directory (bwrap binds its top-level directories read-only) and imported into docker as
``bosun-base:<name>`` (environment images are layered on it). Built once, when first needed, and cached.

Variants: ``slim`` (python3, venv, git, patch, ripgrep, procps, CA certificates, tzdata) and ``build`` (slim + a C
toolchain and the Python headers, for projects that compile code); a declared list of extra Debian packages makes
a variant of its own. The name is ``<suite>-<variant>-<hash>``, the hash covering the recipe, so a changed recipe
builds a new base and never reuses an old one.

An interpreter no Debian suite in the archive has (``interpreters.FROM_SOURCE``: 3.6) gets a base of its own,
``<suite>-py<version>-<hash>``: the build variant, CPython's build dependencies, and CPython compiled from its
release archive (``Python-3.6.15.tar.xz``, taken from the sources directory, else downloaded from python.org into
it) and installed under /usr/local; the suite's own python3 stays (bosun's tool server runs on it).

Everything here comes from Debian's archive and CPython's release archive; no repository content is involved.
debootstrap needs root.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel

from environments.interpreters import Interpreter, interpreter
from infra.errors import ConfigError, UnexpectedEnvironment
from sandbox.caches import dir_size_mb, file_lock, strip_setid

RECIPE = "2"
"""Bump when the steps below change: every base is rebuilt under a new name."""
SLIM = ["python3", "python3-venv", "git", "patch", "ripgrep", "procps", "ca-certificates", "tzdata", "libexpat1"]
"""``patch``: judging applies a prediction git does not take with ``patch --batch --fuzz=5``, as the SWE-bench
harness does (evaluation/harness.py)."""
BUILD = ["build-essential", "python3-dev", "pkg-config"]
SUITE_EXTRA = {"bullseye": ["python3-distutils", "python3-lib2to3"], "bookworm": ["python3-distutils"]}
"""Per suite: the standard library's parts Debian ships apart (old projects import distutils)."""
CPYTHON_DEPS = ["libssl-dev", "zlib1g-dev", "libffi-dev", "libbz2-dev", "liblzma-dev", "libsqlite3-dev",
                "libreadline-dev", "libncurses-dev", "libgdbm-dev", "uuid-dev", "xz-utils"]
"""What CPython's optional modules (ssl, zlib, ctypes, bz2, lzma, sqlite3, readline, curses, dbm, uuid; not tkinter)
build against; the base keeps them (a project's C extensions may need the same headers)."""
CPYTHON_RECIPE = "1"
"""Bump when the CPython build steps change."""
CPYTHON_URL = "https://www.python.org/ftp/python/{v}/Python-{v}.tar.xz"
CPYTHON_ARCHIVES = ("Python-{v}.tar.xz", "Python-{v}.tgz", "Python-{v}.tar.gz")
CPYTHON_MODULES = "ssl, zlib, bz2, lzma, ctypes, sqlite3, _multiprocessing, readline, _decimal, pyexpat, _hashlib"
"""Modules a built interpreter must import, or its base is refused (a missing header leaves one out quietly)."""
BUILD_UID = 1000
"""The unprivileged user builds run as inside the base (``bosun``)."""
DEBOOTSTRAP_TIMEOUT_S = 3600
CPYTHON_TIMEOUT_S = 2400
BASE_BUILD_MAX_S = DEBOOTSTRAP_TIMEOUT_S + CPYTHON_TIMEOUT_S + 900
"""The longest a base build takes: debootstrap, CPython from source (when the interpreter is built), then
finishing, importing and tagging it."""
IMAGE_REPO = "bosun-base"
DEB_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]{0,99}$")


class BaseInfo(BaseModel):
    """A built base (``<cache>/bases/<name>/base.json``)."""

    name: str
    suite: str
    variant: str
    packages: list[str]
    python: str
    """Full version of its interpreter (the suite's python3, or the one built from source)."""
    python_path: str = "/usr/bin/python3"
    source_sha256: str = ""
    """The CPython release archive it was built from (bases with an interpreter built from source)."""
    docker_tag: str = ""
    rootfs: str
    size_mb: float = 0.0
    built_at: str = ""
    build_s: float = 0.0


def check_packages(names: list[str], what: str = "apt") -> list[str]:
    """Debian package names from outside (environment.toml): refused unless they look like package names."""
    bad = [n for n in names if not isinstance(n, str) or not DEB_NAME.match(n)]
    if bad:
        raise ConfigError(f"{what}: {str(bad[0])[:60]!r} is not a Debian package name (lowercase letters, digits "
                          "and + . -)")
    return sorted(set(names))


def plan(python: str, *, compilers: bool = False, apt: list[str] | None = None) -> tuple[str, str, list[str]]:
    """(name, suite, packages) of the base for ``python``, with compilers or extra packages."""
    interp = interpreter(python)
    suite = interp.suite
    extra = check_packages(apt or [])
    variant = "build" if compilers or extra or interp.source else "slim"
    packages = sorted(set(SLIM + SUITE_EXTRA.get(suite, []) + (BUILD if variant == "build" else []) + extra
                          + (CPYTHON_DEPS if interp.source else [])))
    built = f"\ncpython {interp.source} {CPYTHON_RECIPE}" if interp.source else ""
    digest = hashlib.sha256(f"{RECIPE}\n{suite}\n{' '.join(packages)}{built}".encode()).hexdigest()[:12]
    if interp.source:
        variant = f"py{interp.version}"
    elif extra:
        variant = "apt"
    return f"{suite}-{variant}-{digest}", suite, packages


class Bases:
    """The bases under ``<cache>/bases``."""

    def __init__(self, cache: Path, mirror: str = "http://deb.debian.org/debian",
                 python_sources: Path | None = None) -> None:
        self.root = Path(cache) / "bases"
        self.locks = Path(cache) / "locks"
        self.mirror = mirror
        self.sources = Path(python_sources) if python_sources else Path(cache) / "python-sources"
        """CPython release archives interpreters are built from (downloaded here when missing)."""

    def info(self, name: str) -> BaseInfo | None:
        try:
            info = BaseInfo.model_validate_json((self.root / name / "base.json").read_text())
        except (OSError, ValueError):
            return None
        return info if Path(info.rootfs).is_dir() else None

    def all(self) -> list[BaseInfo]:
        if not self.root.is_dir():
            return []
        return [i for d in sorted(self.root.iterdir()) if not d.name.startswith(".") and (i := self.info(d.name))]

    def _lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        return file_lock(self.locks / f"base-{name}.lock")

    def ensure(self, python: str, *, compilers: bool = False, apt: list[str] | None = None, docker=None,
               progress: Callable[[str], None] = lambda _m: None) -> BaseInfo:
        """The base for ``python`` (and variant), built now if missing; ``docker``: an API client, to import it
        as an image when that is missing. Raises UnexpectedEnvironment when it cannot be built here."""
        name, suite, packages = plan(python, compilers=compilers, apt=apt)
        interp = interpreter(python)
        with self._lock(name):
            info = self.info(name)
            if info is None:
                archive = self.cpython_archive(interp, progress) if interp.source else None
                info = self._build(name, suite, packages, progress, interp, archive)
            ensure_hosts(Path(info.rootfs))
            if docker is not None and not _image_present(docker, info.docker_tag):
                progress(f"importing base {name} into docker as {info.docker_tag}")
                _import(docker, Path(info.rootfs), info.docker_tag, name)
            return info

    def cpython_archive(self, interp: Interpreter, progress: Callable[[str], None] = lambda _m: None) -> Path:
        """CPython's release archive for ``interp``: the one in the sources directory, else downloaded from
        python.org into it. UnexpectedEnvironment saying where to put it when neither works."""
        v = interp.source
        for pattern in CPYTHON_ARCHIVES:
            if (found := self.sources / pattern.format(v=v)).is_file():
                return found
        url = CPYTHON_URL.format(v=v)
        dest = self.sources / CPYTHON_ARCHIVES[0].format(v=v)
        progress(f"downloading CPython {v}'s source: {url}")
        import httpx  # noqa: PLC0415  (imported when used: it costs every CLI call about 0.1 s)

        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
        try:
            self.sources.mkdir(parents=True, exist_ok=True)
            with httpx.stream("GET", url, timeout=60, follow_redirects=True) as resp:
                resp.raise_for_status()
                with open(tmp, "wb") as out:
                    for chunk in resp.iter_bytes():
                        out.write(chunk)
            tmp.rename(dest)
            return dest
        except (httpx.HTTPError, OSError) as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise UnexpectedEnvironment(
                f"Python {interp.version} is built from CPython's source, and {url} could not be fetched "
                f"({type(exc).__name__}: {str(exc)[:160]}): put {dest.name} (or Python-{v}.tgz) from "
                f"https://www.python.org/downloads/release/python-{v.replace('.', '')}/ in {self.sources} "
                "(setting env_python_sources)") from None

    def _build(self, name: str, suite: str, packages: list[str], progress: Callable[[str], None],
               interp: Interpreter, archive: Path | None) -> BaseInfo:
        """The base debootstrapped, with CPython built from ``archive`` when ``interp`` is one built from source."""
        if os.geteuid() != 0:
            raise UnexpectedEnvironment(f"building the base root filesystem {name} needs root (debootstrap); run "
                                        f"`bosun env bases --build {suite}` as root once")
        if not shutil.which("debootstrap"):
            raise UnexpectedEnvironment("building a base root filesystem needs debootstrap (apt-get install "
                                        "debootstrap; `make bootstrap` installs it)")
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root.parent, 0o755)
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=f".building-{name}-"))
        rootfs = tmp / "rootfs"
        log = tmp / "debootstrap.log"
        progress(f"building base {name}: debootstrap {suite} ({', '.join(packages)}); a few minutes, once")
        try:
            with open(log, "wb") as out:
                proc = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}",
                                       suite, str(rootfs), self.mirror], stdout=out, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, timeout=DEBOOTSTRAP_TIMEOUT_S,
                                      env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"})
            if proc.returncode != 0:
                tail = log.read_text(errors="replace").strip().splitlines()[-15:]
                raise UnexpectedEnvironment(f"debootstrap of {suite} failed (exit {proc.returncode}): "
                                            + " | ".join(tail))
            _unmount_below(rootfs)
            digest = ""
            if archive is not None:
                progress(f"building base {name}: CPython {interp.source} from {archive.name}; several minutes, once")
                digest = _build_cpython(rootfs, interp, archive, tmp / "cpython.log")
            python = _finish(rootfs, name, interp.path)
            size = dir_size_mb(rootfs)
            info = BaseInfo(name=name, suite=suite, variant=name.split("-")[1], packages=packages, python=python,
                            python_path=interp.path, source_sha256=digest,
                            docker_tag=f"{IMAGE_REPO}:{name}", rootfs=str(self.root / name / "rootfs"),
                            size_mb=size, built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                            build_s=round(time.monotonic() - started, 1))
            (tmp / "base.json").write_text(info.model_dump_json(indent=2))
            os.chmod(tmp, 0o755)
            dest = self.root / name
            if dest.exists():
                shutil.rmtree(dest)
            tmp.rename(dest)
            progress(f"built base {name} (python {python}, {size:.0f} MB) in {info.build_s:.0f} s")
            return info
        finally:
            if tmp.exists():
                _unmount_below(rootfs)
                shutil.rmtree(tmp, ignore_errors=True)

    def remove(self, name: str, docker=None) -> bool:
        info = self.info(name)
        path = self.root / name
        if not path.exists():
            return False
        with self._lock(name):
            _unmount_below(path)
            shutil.rmtree(path, ignore_errors=True)
        if docker is not None and info is not None:
            with contextlib.suppress(Exception):
                docker.remove_image(info.docker_tag, force=True)
        return True


HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"


def ensure_hosts(rootfs: Path) -> None:
    """``/etc/hosts`` naming localhost (debootstrap leaves none; tests bind servers to "localhost"). docker writes
    its own into containers; bwrap sandboxes see the base's."""
    hosts = rootfs / "etc" / "hosts"
    if not hosts.exists() and not hosts.is_symlink():
        hosts.write_text(HOSTS)
        os.chmod(hosts, 0o644)


def _chroot(rootfs: Path, *cmd: str) -> str:
    proc = subprocess.run(["chroot", str(rootfs), *cmd], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                                                         "HOME": "/root"})
    if proc.returncode != 0:
        raise UnexpectedEnvironment(f"preparing the base failed at `{' '.join(cmd)}`: "
                                    f"{(proc.stderr or proc.stdout).strip()[-500:]}")
    return proc.stdout.strip()


def _build_cpython(rootfs: Path, interp: Interpreter, archive: Path, log: Path) -> str:
    """CPython from ``archive`` compiled in the root filesystem (a chroot, /proc and a /dev/shm of its own:
    configure probes POSIX semaphores there) and installed under /usr/local; returns the archive's sha256.
    UnexpectedEnvironment with the log's tail when it fails or a module of CPYTHON_MODULES is missing."""
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    shutil.copyfile(archive, rootfs / "tmp" / "cpython.tar")
    script = ("set -e; mkdir -p /tmp/cpython && cd /tmp/cpython && tar -xf /tmp/cpython.tar --strip-components=1 "
              "--no-same-owner && ./configure --prefix=/usr/local --without-ensurepip --with-system-ffi "
              "--enable-loadable-sqlite-extensions && make -j\"$(nproc)\" && make altinstall")
    try:
        for point, kind in (("proc", "proc"), ("dev/shm", "tmpfs")):
            (rootfs / point).mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", kind, kind, str(rootfs / point)], check=True, timeout=60,
                           capture_output=True)
        with open(log, "wb") as out:
            proc = subprocess.run(["chroot", str(rootfs), "sh", "-c", script], stdout=out, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, timeout=CPYTHON_TIMEOUT_S,
                                  env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "HOME": "/root"})
        if proc.returncode != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-15:]
            raise UnexpectedEnvironment(f"building CPython {interp.source} from {archive.name} failed "
                                        f"(exit {proc.returncode}): " + " | ".join(tail))
        _chroot(rootfs, interp.path, "-c", f"import {CPYTHON_MODULES}")
    except subprocess.TimeoutExpired as exc:
        raise UnexpectedEnvironment(f"building CPython {interp.source} took longer than {exc.timeout:.0f} s: "
                                    "stopped") from None
    except subprocess.CalledProcessError as exc:
        raise UnexpectedEnvironment(f"building CPython {interp.source}: `{' '.join(map(str, exc.cmd))}` failed: "
                                    f"{(exc.stderr or b'').decode(errors='replace').strip()[-300:]}") from None
    finally:
        _unmount_below(rootfs)
        shutil.rmtree(rootfs / "tmp" / "cpython", ignore_errors=True)
        (rootfs / "tmp" / "cpython.tar").unlink(missing_ok=True)
    return digest


def _finish(rootfs: Path, name: str, python: str) -> str:
    """The steps after debootstrap: the build user, mount points, no set-id bits, smaller; returns the version
    of ``python`` (the environments' interpreter)."""
    _chroot(rootfs, "groupadd", "--gid", str(BUILD_UID), "bosun")
    _chroot(rootfs, "useradd", "--uid", str(BUILD_UID), "--gid", str(BUILD_UID), "--home-dir", "/tmp/home",
            "--no-create-home", "--shell", "/bin/bash", "bosun")
    _chroot(rootfs, "git", "config", "--system", "safe.directory", "*")
    for d, mode, owner in (("workspace", 0o777, 0), ("opt/bosun-env", 0o755, BUILD_UID),
                           ("opt/bosun-tools", 0o755, BUILD_UID), ("var/cache/bosun-uv", 0o755, BUILD_UID),
                           ("run/bosun", 0o755, 0)):
        path = rootfs / d
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)
        os.chown(path, owner, owner)
    strip_setid(rootfs, bits=0o6000)  # (the sticky bit of /tmp and kin stays: only set-id programs go)
    for junk in ("var/cache/apt", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/info",
                 "var/log"):
        target = rootfs / junk
        if target.is_dir():
            for child in target.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
    locales = rootfs / "usr/share/locale"
    if locales.is_dir():
        for child in locales.iterdir():
            if child.is_dir() and not child.name.startswith("C."):
                shutil.rmtree(child, ignore_errors=True)
    (rootfs / "etc/bosun-base").write_text(name + "\n")
    ensure_hosts(rootfs)
    return _chroot(rootfs, python, "-c", "import platform; print(platform.python_version())")


def _unmount_below(path: Path) -> None:
    """Unmount anything debootstrap left mounted under ``path`` (proc, sys), deepest first."""
    prefix = str(path).rstrip("/") + "/"
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if p.startswith(prefix)), key=len, reverse=True):
        subprocess.run(["umount", "-l", point], capture_output=True, timeout=60)


def _image_present(api, tag: str) -> bool:
    from docker.errors import ImageNotFound  # noqa: PLC0415 - the docker SDK stays optional

    try:
        api.inspect_image(tag)
        return True
    except ImageNotFound:
        return False


def _import(api, rootfs: Path, tag: str, name: str) -> None:
    """``docker import`` of the root filesystem (streamed from tar), with the base's defaults."""
    repo, _, version = tag.partition(":")
    changes = ["ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "ENV LANG=C.UTF-8",
               "ENV HOME=/tmp/home", "WORKDIR /workspace", f"USER {BUILD_UID}:{BUILD_UID}",
               'CMD ["sleep", "infinity"]', f"LABEL bosun.base={name}"]
    tar = subprocess.Popen(["tar", "--numeric-owner", "--xattrs", "-C", str(rootfs), "-c", "."],
                           stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        assert tar.stdout is not None
        api.import_image_from_stream(tar.stdout, repository=repo, tag=version, changes=changes)
    finally:
        tar.stdout.close() if tar.stdout else None
        if tar.wait(timeout=600) != 0:
            raise UnexpectedEnvironment(f"importing base {name} into docker failed (tar exited {tar.returncode})")
    if not _image_present(api, tag):
        raise UnexpectedEnvironment(f"importing base {name} into docker failed: {tag} is not there afterwards")


