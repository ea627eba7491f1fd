"""Bases: the plan of each interpreter's base, and where an interpreter built from source gets CPython's archive."""

from __future__ import annotations

import http.server
import subprocess
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from environments import bases
from environments.bases import CPYTHON_DEPS, Bases, plan
from environments.interpreters import AVAILABLE, FROM_SOURCE, choose, interpreter, nearest
from infra.errors import ConfigError, UnexpectedEnvironment
from infra.privatestack import free_port


def test_python_3_6_is_built_from_source_in_a_base_of_its_own():
    name, suite, packages = plan("3.6")
    assert suite == "bullseye" and name.startswith("bullseye-py3.6-")
    assert set(CPYTHON_DEPS) <= set(packages) and "build-essential" in packages
    # not the same base as bullseye's own python3 with compilers, nor with extra packages
    assert name not in {plan("3.9")[0], plan("3.9", compilers=True)[0]}
    assert plan("3.6", apt=["libxml2-dev"])[0].startswith("bullseye-py3.6-")
    assert plan("3.6", apt=["libxml2-dev"])[0] != name
    it = interpreter("python3.6.2")
    assert (it.version, it.source, it.path) == ("3.6", "3.6.15", "/usr/local/bin/python3.6")
    assert interpreter("3.9").path == "/usr/bin/python3"


def test_detection_never_picks_an_interpreter_built_from_source():
    # a 2017 project that names 3.6 and allows nothing newer still gets a Debian interpreter: 3.6 only when named
    version, _why = choose(">=3.5,<3.7", ["3.5", "3.6"], datetime(2017, 6, 1, tzinfo=UTC))
    assert version in AVAILABLE and version not in FROM_SOURCE
    assert nearest("3.6")[0] in AVAILABLE


def test_an_interpreter_nobody_has_names_both_kinds():
    with pytest.raises(ConfigError) as err:
        interpreter("3.5")
    assert "3.9, 3.11, 3.13" in str(err.value) and "3.6 (built from CPython's source)" in str(err.value)


def test_the_archive_in_the_sources_directory_is_taken_without_a_download(tmp_path: Path, monkeypatch):
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "Python-3.6.15.tgz").write_bytes(b"archive")
    monkeypatch.setattr(bases, "CPYTHON_URL", "http://127.0.0.1:9/{v}")  # nothing answers there
    assert Bases(tmp_path, python_sources=sources).cpython_archive(FROM_SOURCE["3.6"]) == sources / "Python-3.6.15.tgz"


def test_a_missing_archive_that_cannot_be_downloaded_says_where_to_put_it(tmp_path: Path, monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.setattr(bases, "CPYTHON_URL", f"http://127.0.0.1:{port}/ftp/python/{{v}}/Python-{{v}}.tar.xz")
    store = Bases(tmp_path)
    with pytest.raises(UnexpectedEnvironment) as err:
        store.cpython_archive(FROM_SOURCE["3.6"])
    text = str(err.value)
    assert "Python-3.6.15.tar.xz" in text and str(tmp_path / "python-sources") in text
    assert "env_python_sources" in text and "could not be fetched" in text
    assert not any((tmp_path / "python-sources").iterdir())  # no partial file left behind


def _serve(status: int, body: bytes) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server API
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/ftp/python/{{v}}/Python-{{v}}.tar.xz"


def test_a_downloaded_archive_is_kept_in_the_sources_directory(tmp_path: Path, monkeypatch):
    server, url = _serve(200, b"the release archive")
    try:
        monkeypatch.setattr(bases, "CPYTHON_URL", url)
        got = Bases(tmp_path).cpython_archive(FROM_SOURCE["3.6"])
    finally:
        server.shutdown()
    assert got == tmp_path / "python-sources" / "Python-3.6.15.tar.xz"
    assert got.read_bytes() == b"the release archive"
    assert [p.name for p in got.parent.iterdir()] == [got.name]


def test_an_error_page_is_not_kept_as_the_archive(tmp_path: Path, monkeypatch):
    server, url = _serve(404, b"not found")
    try:
        monkeypatch.setattr(bases, "CPYTHON_URL", url)
        with pytest.raises(UnexpectedEnvironment, match="404"):
            Bases(tmp_path).cpython_archive(FROM_SOURCE["3.6"])
    finally:
        server.shutdown()
    assert not any((tmp_path / "python-sources").iterdir())


def test_a_cpython_build_that_fails_says_why_and_leaves_nothing_mounted(envs, tmp_path: Path):
    """The build runs in the new base's chroot with a /proc and a /dev/shm of its own: when it fails, the error
    carries the log's tail, and nothing stays mounted or unpacked in the root filesystem (here a copy of the
    bootstrap's base; the source a stand-in whose configure finds no compiler)."""
    base = envs.bases.ensure("3.13")
    rootfs = tmp_path / "rootfs"
    subprocess.run(["cp", "-a", base.rootfs, str(rootfs)], check=True)
    src = tmp_path / "Python-3.6.15"
    src.mkdir()
    (src / "configure").write_text("#!/bin/sh\necho 'checking for gcc... no'\nls /proc/self/status /dev/shm\n"
                                   "exit 77\n")
    (src / "configure").chmod(0o755)
    archive = tmp_path / "Python-3.6.15.tgz"  # (the slim base has no xz; the real one has)
    subprocess.run(["tar", "-czf", str(archive), "-C", str(tmp_path), src.name], check=True)
    with pytest.raises(UnexpectedEnvironment) as err:
        bases._build_cpython(rootfs, FROM_SOURCE["3.6"], archive, tmp_path / "cpython.log")
    text = str(err.value)
    assert "exit 77" in text and "checking for gcc... no" in text and "/proc/self/status" in text
    mounted = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    assert not [m for m in mounted if m.startswith(str(rootfs))]
    assert not (rootfs / "tmp" / "cpython").exists() and not (rootfs / "tmp" / "cpython.tar").exists()
