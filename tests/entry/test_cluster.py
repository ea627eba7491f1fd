"""`bosun cluster up | status | down` (entry/cluster.py) on real processes: 3 NATS nodes, the Temporal dev server,
worker hosts; with --tls, Temporal behind nginx (TLS, client certificates, an API key) and NATS with TLS and a
password. A wrong CA, a missing or foreign client certificate, a wrong API key or password: one clear line naming
the setting, and no secret in any output."""

from __future__ import annotations

import json
import os
import socket
import stat
from pathlib import Path

import pytest

from entry.cluster import LocalCluster
from infra import devcerts, temporal
from infra.errors import ConfigError
from infra.events import bus
from infra.settings import Settings
from tests.conftest import EXAMPLE, bosun, make_example_repo
from tests.entry.test_stack import _procs_mentioning


def _settings(env: dict[str, str]) -> Settings:
    """The Settings a process with this environment reads (BOSUN_X=... -> x)."""
    return Settings(**{k.removeprefix("BOSUN_").lower(): v for k, v in env.items() if k.startswith("BOSUN_")})


def _up(folder: Path, *args: str):
    return bosun("cluster", "up", "--dir", str(folder), *args, timeout=180)


@pytest.mark.slow
@pytest.mark.serial  # (a cluster started through the CLI)
def test_cluster_up_status_kill_a_host_up_again_down(tmp_path):
    folder = tmp_path / "cl"
    proc = _up(folder, "--hosts", "2")
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for name in ("n1", "n2", "n3", "temporal", "h1", "h2"):
            assert any(line.split()[:2] == [name, "healthy"] for line in proc.stdout.splitlines()), proc.stdout
        env_file = folder / "hosts" / "h1" / "host.env"
        assert f". {env_file}" in proc.stdout and stat.S_IMODE(env_file.stat().st_mode) == 0o600
        st = json.loads(bosun("cluster", "status", "--dir", str(folder), "--json", check=True).stdout)
        assert st["hosts"] == 2 and all(p["healthy"] for p in st["processes"].values())
        pids = {n: p["pid"] for n, p in st["processes"].items()}

        again = _up(folder)  # idempotent: nothing new starts
        assert again.returncode == 0, again.stderr
        st = json.loads(bosun("cluster", "status", "--dir", str(folder), "--json").stdout)
        assert {n: p["pid"] for n, p in st["processes"].items()} == pids
        other = _up(folder, "--hosts", "3")
        assert other.returncode == 2 and other.stderr.strip() == (
            f"bosun cluster: a cluster of 2 hosts runs in {folder}: stop it with `bosun cluster down --dir {folder}` "
            "first, or use another --dir")

        # a host's settings point any bosun command at the cluster: its worker and both engines, healthy
        cluster = LocalCluster(folder, hosts=2)
        status = bosun("status", "--json", env=cluster.host_env(1))
        assert status.returncode == 0, status.stdout + status.stderr
        report = json.loads(status.stdout)
        assert report["components"]["worker"]["pid"] == pids["h1"]
        assert report["engines"]["temporal"]["healthy"] and report["engines"]["nats"]["healthy"]
        assert report["engines"]["nats"]["cluster_size"] == 3 and report["engines"]["nats"]["replicas_setting"] == 3

        # a host lost for good: SIGKILL; status says so; `up` brings it back on the same settings
        assert cluster.kill_host(2) == pids["h2"]
        down = bosun("cluster", "status", "--dir", str(folder))
        assert down.returncode == 1 and any(line.split()[:2] == ["h2", "DOWN"] for line in down.stdout.splitlines())
        assert _up(folder).returncode == 0
        assert cluster.pid("h2") not in (None, pids["h2"]) and cluster.healthy("h2")
    finally:
        stopped = bosun("cluster", "down", "--dir", str(folder))
    assert stopped.returncode == 0 and "bosun cluster stopped (h2, h1, temporal, n3, n2, n1)" in stopped.stdout
    assert _procs_mentioning(str(folder)) == [], "bosun cluster down left processes behind"
    assert bosun("cluster", "status", "--dir", str(folder)).returncode == 3

    # a port it needs is taken: one line naming it, and nothing is left running
    port = json.loads((folder / "cluster.json").read_text())["ports"]["n2.client"]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        taken = _up(folder, "--hosts", "2")
    assert taken.returncode == 2
    assert taken.stderr.strip() == (f"bosun cluster: port {port} (NATS n2 client) on 127.0.0.1 is already in use: "
                                    "stop what uses it, or start the cluster in another folder (bosun cluster up "
                                    "--dir DIR)")
    assert _procs_mentioning(str(folder)) == []


def test_a_missing_nats_server_is_one_line(tmp_path):
    folder = tmp_path / "cl"
    proc = bosun("cluster", "up", "--dir", str(folder), "--hosts", "0",
                 env={"PATH": "/nonexistent", "BOSUN_DATA_DIR": str(tmp_path)})
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("bosun cluster: nats-server is not installed; run `make bootstrap` (it installs "
                                   "what bosun needs)")
    assert _procs_mentioning(str(folder)) == []


@pytest.mark.slow
async def test_tls_cluster_runs_a_task_and_refuses_wrong_credentials_clearly(make_cluster, tmp_path):
    cluster = make_cluster(hosts=1, tls=True)
    env = cluster.host_env(1)
    secrets = [env["BOSUN_TEMPORAL_API_KEY"], env["BOSUN_NATS_PASSWORD"]]
    outputs: list[str] = []

    def run(*args: str, **extra: str):
        proc = bosun(*args, env={**env, **extra}, timeout=300)
        outputs.append(proc.stdout + proc.stderr)
        return proc

    # the good configuration: status through nginx and NATS TLS, and a task run by the host's worker
    status = run("status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    engines = json.loads(status.stdout)["engines"]
    assert engines["temporal"]["healthy"] and engines["temporal"]["tls"] and engines["temporal"]["api_key"]
    assert engines["nats"]["healthy"] and engines["nats"]["cluster_size"] == 3
    repo = make_example_repo(tmp_path / "calc")
    task = run("run", "--repo", str(repo), "--mode", "solo", "--model", f"scripted:{EXAMPLE / 'solo.jsonl'}",
               "fix the failing test", "--wait", "--json")
    assert task.returncode == 0, task.stderr
    assert json.loads(task.stdout)["status"] == "succeeded"

    wrong = devcerts.make_ca(tmp_path / "wrong", "wrong-ca")
    foreign = devcerts.issue(wrong, tmp_path / "wrong", "client", server=False)
    address = cluster.temporal_address
    refused_cert = (f"bosun: Temporal at {address} did not accept this host's client certificate: check "
                    "BOSUN_TEMPORAL_TLS_CERT and BOSUN_TEMPORAL_TLS_KEY (mutual TLS: a certificate its authority "
                    "signed)")
    cases = [
        ({"BOSUN_TEMPORAL_TLS_CA": str(wrong.cert)},
         f"bosun: Temporal's server certificate at {address} is not signed by a trusted authority: check "
         "BOSUN_TEMPORAL_TLS_CA (the PEM file of the authority that signed it)"),
        ({"BOSUN_TEMPORAL_TLS_CERT": "", "BOSUN_TEMPORAL_TLS_KEY": ""}, refused_cert),
        ({"BOSUN_TEMPORAL_TLS_CERT": str(foreign.cert), "BOSUN_TEMPORAL_TLS_KEY": str(foreign.key)}, refused_cert),
        ({"BOSUN_TEMPORAL_API_KEY": "not-the-key"},
         f"bosun: Temporal at {address} refused the credentials: check BOSUN_TEMPORAL_API_KEY, and "
         "BOSUN_TEMPORAL_NAMESPACE (default) for a key of another namespace"),
        ({"BOSUN_TEMPORAL_API_KEY": ""},
         f"bosun: Temporal at {address} refused the credentials: check BOSUN_TEMPORAL_API_KEY (unset), and "
         "BOSUN_TEMPORAL_NAMESPACE (default) for a key of another namespace"),
        ({"BOSUN_TEMPORAL_TLS_SERVER_NAME": "temporal.example.com"},
         f"bosun: Temporal's server certificate does not name the host of {address}: set "
         "BOSUN_TEMPORAL_TLS_SERVER_NAME to a name it holds, or check BOSUN_TEMPORAL_ADDRESS"),
    ]
    for extra, expected in cases:  # through the client every command, worker and web view uses
        with pytest.raises(ConfigError) as e:
            await temporal.connect(_settings({**env, **extra}))
        assert f"bosun: {e.value}" == expected, extra
    # and on the command line: one line, exit 2
    proc = run("history", "any-run", BOSUN_TEMPORAL_API_KEY="not-the-key")
    assert (proc.returncode, proc.stderr.strip()) == (2, cases[3][1])

    # a worker started with a wrong key stops at once, saying which setting
    worker = run("worker", BOSUN_TEMPORAL_API_KEY="not-the-key", BOSUN_WORKER_ID="intruder")
    assert worker.returncode == 2 and any(line.startswith(
        f"bosun: Temporal at {address} refused the credentials: check BOSUN_TEMPORAL_API_KEY")
        for line in worker.stderr.splitlines()), worker.stderr  # (the SDK's own log lines may come after it)

    # NATS: a wrong password, no client certificate, a wrong authority name the setting (status shows it)
    nats_cases = [
        ({"BOSUN_NATS_PASSWORD": "not-the-password"}, "refused the credentials: check BOSUN_NATS_USER and "
                                                      "BOSUN_NATS_PASSWORD"),
        ({"BOSUN_NATS_TLS_CERT": "", "BOSUN_NATS_TLS_KEY": ""}, "did not accept this host's client certificate: "
                                                                "check BOSUN_NATS_TLS_CERT and BOSUN_NATS_TLS_KEY"),
        ({"BOSUN_NATS_TLS_CA": str(wrong.cert)}, "not signed by a trusted authority: check BOSUN_NATS_TLS_CA"),
    ]
    for extra, expected in nats_cases:
        with pytest.raises(ConfigError, match=expected):
            await bus.connect_nats(_settings({**env, **extra}), name="test")
    proc = run("status", "--json", BOSUN_NATS_PASSWORD="not-the-password")
    nats = json.loads(proc.stdout)["engines"]["nats"]
    assert proc.returncode == 1 and not nats["healthy"] and nats_cases[0][1] in nats["error"], nats

    shown = run("settings").stdout
    assert "BOSUN_TEMPORAL_API_KEY=***" in shown and "BOSUN_NATS_PASSWORD=***" in shown
    logs = [p.read_text(errors="replace") for p in cluster.folder.rglob("*.log")]
    for secret in secrets:
        assert not any(secret in text for text in outputs), "a secret reached the terminal"
        assert not any(secret in text for text in logs), "a secret reached a log"
    assert os.stat(cluster.state_path).st_mode & 0o077 == 0
