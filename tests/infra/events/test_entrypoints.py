"""``python -m entry.events ingress|starter`` as the stack supervisor will run them: health, clean stop, clear
configuration errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from entry.health import starter_health
from tests.conftest import ROOT, free_port
from tests.infra.events.samples import GH_SECRET, github_request, issues_labeled


def _env(settings, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BOSUN_")}
    env.update({"BOSUN_DATA_DIR": str(settings.data_dir), "BOSUN_HOST": "127.0.0.1",
                "BOSUN_NATS_PORT": str(settings.nats_port), "BOSUN_TEMPORAL_PORT": str(settings.temporal_port),
                "BOSUN_TASK_QUEUE": settings.task_queue, "BOSUN_DEFAULT_MODEL": settings.default_model, **extra})
    return env


def _spawn(part: str, env: dict[str, str], *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "entry.events", part, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _stop(proc: subprocess.Popen) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    return proc.returncode, out


def test_ingress_process_serves_and_stops_cleanly(settings):
    port = free_port()
    proc = _spawn("ingress", _env(settings, BOSUN_GITHUB_WEBHOOK_SECRET=GH_SECRET, BOSUN_INGRESS_PORT=str(port)))
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "ingress not healthy"
            time.sleep(0.1)
        body, headers = github_request("issues", issues_labeled())
        assert httpx.post(f"http://127.0.0.1:{port}/webhooks/github", content=body, headers=headers).status_code == 200
    finally:
        code, out = _stop(proc)
    assert code == 0, out


def test_starter_process_reports_health_and_stops_cleanly(tsettings):
    proc = _spawn("starter", _env(tsettings))
    try:
        deadline = time.monotonic() + 30
        while starter_health(tsettings) is None:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, "starter not healthy"
            time.sleep(0.2)
        assert starter_health(tsettings)["consumer"] == "starter"
    finally:
        code, out = _stop(proc)
    assert code == 0, out


def test_starter_refuses_to_run_without_a_model(settings):
    proc = _spawn("starter", _env(settings, BOSUN_DEFAULT_MODEL=""))
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "no model for event-started tasks: set BOSUN_EVENTS_MODEL or BOSUN_DEFAULT_MODEL" in out


def test_ingress_port_in_use_is_a_clear_error(settings):
    import socket

    with socket.socket() as s:
        port = free_port()
        s.bind(("127.0.0.1", port))
        s.listen()
        proc = _spawn("ingress", _env(settings, BOSUN_GITHUB_WEBHOOK_SECRET=GH_SECRET), "--port", str(port))
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "could not listen on 127.0.0.1:" in out and "BOSUN_INGRESS_PORT" in out
