"""A private stack's settings cover every port setting, so no bench or test stack collides with a running one (a
stack on the default ports included), and nobody keeps a copy of the free-port code of their own."""

from __future__ import annotations

import re
from pathlib import Path

from infra.privatestack import free_port, port_settings, private_stack_env
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
