"""`bosun up | down | status` on real processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

from entry.stack import pid_matches
from tests.conftest import BOSUN, Stack, wait_for


def _procs_mentioning(text: str) -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                environ = (d / "environ").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if text in cmd or text in environ:
                pids.append(int(d.name))
    return pids


def test_up_twice_status_down(tmp_path):
    st = Stack(tmp_path / "data")
    st.up()
    try:
        first = st.state()
        again = st.bosun("up")
        assert again.returncode == 0 and "already running" in again.stdout
        assert st.state()["components"] == first["components"], "a second `up` must not start anything"
        status = st.bosun("status")
        assert status.returncode == 0, status.stdout
        for part in ("temporal", "nats", "worker"):
            assert f"{part}" in status.stdout
        assert f"127.0.0.1:{st.env['BOSUN_TEMPORAL_PORT']}" in status.stdout
        assert f"nats://127.0.0.1:{st.env['BOSUN_NATS_PORT']}" in status.stdout
        assert (st.data_dir / "temporal" / "temporal.db").exists()
        assert (st.data_dir / "nats" / "jetstream").exists()
    finally:
        down = st.bosun("down")
    assert down.returncode == 0 and "stopped" in down.stdout
    pids = [first["supervisor"]["pid"]] + [c["pid"] for c in first["components"].values()]
    # none of them is alive: a live process with one of their pids is another one (the suite's processes
    # cycle through the 32768 pids) unless it is of this stack (its data dir in its command line or environment)
    assert not set(pids) & set(_procs_mentioning(str(st.data_dir)))
    assert _procs_mentioning(str(st.data_dir)) == [], "bosun down left processes behind"
    assert not (st.data_dir / "stack.json").exists()
    assert st.bosun("status").returncode == 3
    assert "not running" in st.bosun("down").stdout


def test_down_while_up_is_still_starting_stops_everything(tmp_path):
    """`bosun up` killed outright (SIGKILL: no clean-up of its own) while its stack comes up, then `bosun down`: the
    supervisor is in the state file from its first moment, so down finds and stops it and whatever it started."""
    st = Stack(tmp_path / "data")
    starting = subprocess.Popen([BOSUN, "up"], env={**os.environ, **st.env}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
    state = st.data_dir / "stack.json"
    wait_for(lambda: state.exists(), 60, 0.01, "the supervisor's state")
    first = st.state()
    # written before the worker started (it waits for Temporal to be healthy): down can find it from then on
    assert pid_matches(first["supervisor"]["pid"], "entry.stack") and "worker" not in first["components"], first
    assert starting.poll() is None  # still waiting for the stack to be healthy
    starting.send_signal(signal.SIGKILL)
    starting.wait(10)
    supervisor = st.state()["supervisor"]["pid"]
    down = st.bosun("down", timeout=120)
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout
    assert not pid_matches(supervisor, "entry.stack")
    wait_for(lambda: _procs_mentioning(str(st.data_dir)) == [], 30, 0.2, "no process of the stack left")
    assert not state.exists()


def test_taken_port_gives_one_line_and_starts_nothing(tmp_path):
    st = Stack(tmp_path / "data")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", int(st.env["BOSUN_NATS_PORT"])))
        sock.listen()
        proc = st.bosun("up")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [(f"bosun: port {st.env['BOSUN_NATS_PORT']} (NATS client) on 127.0.0.1 is already in use; "
                     "set BOSUN_NATS_PORT to a free port")]
    assert not (st.data_dir / "stack.json").exists()
    assert _procs_mentioning(str(st.data_dir)) == []


def test_supervisor_restarts_a_killed_worker(stack):
    before = stack.state()["components"]["worker"]["pid"]
    os.kill(before, 9)
    wait_for(lambda: stack.state()["components"]["worker"]["pid"] != before, 30, what="worker restart")
    wait_for(lambda: stack.bosun("status").returncode == 0, 60, interval=0.5, what="healthy stack")
    assert stack.state()["components"]["worker"]["restarts"] >= 1


def test_bad_setting_is_one_clear_line(tmp_path):
    st = Stack(tmp_path / "data")
    proc = st.bosun("up", env_extra={"BOSUN_TEMPORAL_PORT": "seventy"})
    assert proc.returncode == 2
    assert proc.stderr.strip() == "bosun: BOSUN_TEMPORAL_PORT='seventy' is invalid: " \
                                  "Input should be a valid integer, unable to parse string as an integer"


def test_event_components_join_the_stack_when_configured(tmp_path):
    from tests.conftest import EXAMPLE, free_port

    st = Stack(tmp_path / "data")
    port = free_port()
    extra = {"BOSUN_GITHUB_WEBHOOK_SECRET": "s3cret", "BOSUN_INGRESS_PORT": str(port),
             "BOSUN_DEFAULT_MODEL": f"scripted:{EXAMPLE / 'solo.jsonl'}"}
    st.env.update(extra)
    st.up()
    try:
        status = st.bosun("status")
        assert status.returncode == 0, status.stdout
        assert f"http://127.0.0.1:{port}/webhooks/" in status.stdout
        assert "starter" in status.stdout and "DOWN" not in status.stdout
        shown = st.bosun("settings").stdout
        assert "BOSUN_GITHUB_WEBHOOK_SECRET=***" in shown and "s3cret" not in shown
    finally:
        st.down()
    assert _procs_mentioning(str(st.data_dir)) == []


def test_the_code_fingerprint_covers_every_package(tmp_path, monkeypatch):
    """A stack started from other code restarts: the fingerprint changes when any of bosun's sources does."""


    from entry import stack

    before = stack.code_fingerprint()
    for pkg in ("entry", "workflows", "activities", "agents", "sandbox", "infra"):
        init = Path(stack.__file__).resolve().parents[1] / pkg / "__init__.py"
        st = init.stat()
        os.utime(init, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        try:
            assert stack.code_fingerprint() != before, pkg
        finally:
            os.utime(init, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert stack.code_fingerprint() == before
