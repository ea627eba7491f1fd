"""A private stack's settings cover every port setting, so no bench or test stack collides with a running one (a
stack on the default ports included), and nobody keeps a copy of the free-port code of their own."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from infra.privatestack import free_port, held_port, port_settings, private_stack_env
from infra.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_port_setting_is_covered(tmp_path):
    names = port_settings()
    assert {"temporal_port", "temporal_ui_port", "nats_port", "nats_monitor_port", "ui_port",
            "ingress_port"} <= set(names)
    env = private_stack_env(tmp_path / "data", worker_id="w1")
    settings = Settings(**{k.removeprefix("BOSUN_").lower(): v for k, v in env.items()})
    for name, default in names.items():
        if default is None:  # off unless set (Prometheus): nothing listens, nothing can collide
            assert f"BOSUN_{name.upper()}" not in env and getattr(settings, name) is None
        else:
            assert f"BOSUN_{name.upper()}" in env, f"{name} is not given a private port"
            assert getattr(settings, name) != default
    ports = [v for k, v in env.items() if k.endswith("_PORT")]
    assert len(set(ports)) == len(ports)
    assert settings.data_dir == tmp_path / "data" and settings.worker_id == "w1"


def test_a_port_setting_added_tomorrow_is_covered(tmp_path, monkeypatch):
    """The helper reads the port settings off Settings: a new one needs no edit here to be covered."""
    fields = dict(Settings.model_fields)
    monkeypatch.setattr(Settings, "model_fields", {**fields, "metrics_port": fields["ui_port"]})
    assert "BOSUN_METRICS_PORT" in private_stack_env(tmp_path)


def test_free_ports_are_below_the_ephemeral_range_and_never_repeat():
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50 and all(20000 <= p < 32000 for p in ports)


def test_no_bench_or_test_keeps_its_own_port_code():
    """The copies drifted once (bench/orchestration.py forgot the web view's port): one helper, used by all."""
    own = re.compile(r"def free_port\b|\.bind\(\(\"127\.0\.0\.1\", 0\)\)")
    found = [str(p.relative_to(ROOT)) for folder in ("bench", "tests", "entry")
             for p in (ROOT / folder).rglob("*.py") if own.search(p.read_text(encoding="utf-8"))
             and p.name != Path(__file__).name]
    assert found == []


def test_processes_on_slices_of_their_own_never_share_a_port():
    """The suite's parallel processes each take a slice: what one picks, no other can (the seed is the pid, so two
    processes on the whole range can pick the same port; on disjoint slices they cannot)."""
    import subprocess
    import sys
    code = "from infra.privatestack import free_port; print(*(free_port() for _ in range(200)))"
    picked = [set(map(int, subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                                          check=True, env={**os.environ, "BOSUN_PORT_SLICE": f"{i}/3"}).stdout.split()))
              for i in range(3)]
    assert all(len(p) == 200 for p in picked)
    assert not picked[0] & picked[1] and not picked[1] & picked[2] and not picked[0] & picked[2]
    assert all(20000 <= p < 24000 for p in picked[0]) and all(28000 <= p < 32000 for p in picked[2])


@pytest.mark.parametrize("spec", ["4/4", "a/b", "1", "-1/4", "0/0"])
def test_a_bad_port_slice_is_refused_by_name(spec):
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-c", "import infra.privatestack"], cwd=ROOT, capture_output=True,
                          text=True, env={**os.environ, "BOSUN_PORT_SLICE": spec})
    assert proc.returncode == 1
    assert f"BOSUN_PORT_SLICE={spec!r} is invalid: expected index/count" in proc.stderr


def test_a_held_port_refuses_connections_and_cannot_be_taken():
    import socket
    with held_port() as port:
        with socket.socket() as other:
            with pytest.raises(OSError):
                other.bind(("127.0.0.1", port))
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=2)
