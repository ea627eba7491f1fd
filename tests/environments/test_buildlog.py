"""The build's output is bounded: build.log keeps its head and tail, a step keeps only its output's end."""

from __future__ import annotations

from pathlib import Path

from environments import buildrun
from environments.builder import Builder
from environments.buildrun import BuildRun, CappedLog, read_tail


class YesApi:
    """A docker API whose exec prints like `yes` (many MB) and exits 0."""

    def __init__(self, chunks: int) -> None:
        self.chunks = chunks

    def exec_create(self, *_a, **_k):
        return {"Id": "e"}

    def exec_start(self, _id, stream=True):
        yield b"first line of the step\n"
        for _ in range(self.chunks):
            yield b"y\n" * 32_768
        yield b"last line of the step\n"

    def exec_inspect(self, _id):
        return {"ExitCode": 0}


def test_a_step_printing_forever_is_bounded_in_the_log_and_in_memory(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(buildrun, "LOG_HEAD_BYTES", 200_000)
    monkeypatch.setattr(buildrun, "LOG_TAIL_BYTES", 100_000)
    api = YesApi(chunks=300)  # ~19 MB
    b = Builder(api, uv=Path("/bin/true"), network=None, timeout_s=60, memory_mb=512)
    log_path = tmp_path / "build.log"
    with open(log_path, "wb") as f:
        log = CappedLog(f, buildrun.LOG_HEAD_BYTES, buildrun.LOG_TAIL_BYTES)
        run = BuildRun(b, log, log_path, deadline=1e12)
        rc, text = run.step("setup 1: yes", ["yes"], {})
        log.flush()
    assert rc == 0 and len(text.encode()) <= buildrun.OUTPUT_KEPT and text.endswith("last line of the step\n")
    data = log_path.read_bytes()
    assert len(data) < 400_000
    assert b"first line of the step" in data[:1000] and b"bytes of output cut" in data
    assert b"[setup 1: yes: exit 0" in data[-200:] and b"last line of the step" in data[-300:]


def test_read_tail_reads_only_the_end(tmp_path: Path):
    path = tmp_path / "log"
    path.write_bytes(b"a" * 10_000 + b"END\n")
    got = read_tail(path, 100)
    assert got.endswith("END\n") and got.split("\n")[1].count("a") == 96 and "not shown" in got
    assert read_tail(tmp_path / "missing", 100) == ""

