"""The export of a build (hostile tar) onto the host: inside the destination only, no special files, bounded."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from environments.unpack import ExportRefused, unpack


def tar_of(members: list[tuple[tarfile.TarInfo, bytes | None]]) -> io.BytesIO:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    buf.seek(0)
    return buf


def entry(name: str, kind: bytes = tarfile.REGTYPE, *, mode: int = 0o644, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname, info.uid = kind, mode, link, 1000
    return info


def test_a_virtualenv_unpacks_with_its_links_as_strings(tmp_path: Path):
    stream = tar_of([(entry("bosun-env", tarfile.DIRTYPE, mode=0o700), None),
                     (entry("bosun-env/venv/bin/python", tarfile.SYMTYPE, link="/usr/bin/python3.9"), None),
                     (entry("bosun-env/venv/tool", mode=0o4777), b"#!/bin/sh\n"),
                     (entry("bosun-env/seed.tar"), b"x" * 10)])
    assert unpack(stream, tmp_path / "out", strip="bosun-env") == 20
    out = tmp_path / "out"
    assert os.readlink(out / "venv/bin/python") == "/usr/bin/python3.9"
    st = (out / "venv/tool").stat()
    assert st.st_mode & 0o7777 == 0o755 and st.st_uid == os.geteuid()  # no set-id, no group/other write


@pytest.mark.parametrize(("members", "words"), [
    ([(entry("bosun-env/../../etc/x"), b"x")], "outside"),
    ([(entry("/etc/x"), b"x")], "outside bosun-env"),
    ([(entry("bosun-env/d", tarfile.SYMTYPE, link="/etc"), None), (entry("bosun-env/d/passwd"), b"x")], "outside"),
    ([(entry("bosun-env/h", tarfile.LNKTYPE, link="bosun-env/x"), None)], "hard link"),
    ([(entry("bosun-env/dev", tarfile.CHRTYPE), None)], "special file"),
    ([(entry("bosun-env/fifo", tarfile.FIFOTYPE), None)], "special file"),
])
def test_hostile_exports_are_refused(tmp_path: Path, members, words):
    victim = tmp_path / "victim"
    with pytest.raises(ExportRefused, match=words):
        unpack(tar_of(members), tmp_path / "out", strip="bosun-env")
    assert not victim.exists() and not Path("/etc/x").exists()


def test_the_export_is_bounded(tmp_path: Path):
    many = [(entry(f"bosun-env/f{i}"), b"") for i in range(20)]
    with pytest.raises(ExportRefused, match="more than 10 entries"):
        unpack(tar_of(many), tmp_path / "a", strip="bosun-env", max_entries=10)
    with pytest.raises(ExportRefused, match="larger than"):
        unpack(tar_of([(entry("bosun-env/big"), b"x" * (2 << 20))]), tmp_path / "b", strip="bosun-env",
               max_bytes=1 << 20)


def test_a_refused_export_fails_the_build_at_step_export(tmp_path: Path):
    """A build whose output breaks the rules is the repository's failure (BuildFailed, step "export", never
    retried), not a broken host; a stream that is not a tar is refused the same way."""
    from environments.builder import Builder
    from environments.buildrun import BuildFailed, BuildRun
    from infra.errors import UnexpectedEnvironment

    class Api:
        removed: list[str] = []

        def __init__(self, data: bytes) -> None:
            self.data = data

        def get_archive(self, _cid, _path):
            return iter([self.data]), {}

        def remove_image(self, tag, force=False):
            self.removed.append(tag)

    hostile = tar_of([(entry("bosun-env/"), None), (entry("bosun-env/x", tarfile.LNKTYPE, link="/etc/passwd"),
                                                    None)]).getvalue()
    for i, data in enumerate([hostile, b"not a tar at all" * 100]):
        api = Api(data)
        builder = Builder(api, uv=Path("/bin/true"), network=None, timeout_s=60, memory_mb=512)
        log_path = tmp_path / f"build{i}.log"
        with open(log_path, "wb") as log:
            run = BuildRun(builder, log, log_path, deadline=0)
            run.container = "c"
            with pytest.raises(BuildFailed) as caught:
                builder._export(run, "bosun-env:k", tmp_path / f"root{i}")
        assert caught.value.step == "export" and not isinstance(caught.value, UnexpectedEnvironment)
        assert api.removed[-1] == "bosun-env:k"
    assert "hard link" in log_path.with_name("build0.log").read_text()
