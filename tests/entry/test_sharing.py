"""A worker host refuses to join a Temporal that other hosts use unless every host shares its state
(BOSUN_ARTIFACT_STORE=nats): it says so in one line, naming the setting, and takes no work (never fails tasks later)."""

from __future__ import annotations

import os
import subprocess

from tests.conftest import BOSUN


def second_host(stack, tmp_path, **env: str) -> subprocess.CompletedProcess[str]:
    """`bosun worker` as another host (its own data dir and worker id) on the session stack's Temporal and NATS."""
    extra = {"BOSUN_DATA_DIR": str(tmp_path / "host2"), "BOSUN_WORKER_ID": f"second-{os.getpid()}", **env}
    return subprocess.run([BOSUN, "worker"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                          env={**os.environ, **stack.env, **extra})


def test_a_host_with_its_own_file_store_refuses_to_join(stack, tmp_path):
    proc = second_host(stack, tmp_path)  # BOSUN_ARTIFACT_STORE=files, the default
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("bosun: other worker hosts poll this Temporal (") and stack.env["BOSUN_WORKER_ID"] in line
    assert "set BOSUN_ARTIFACT_STORE=nats" in line and "Traceback" not in proc.stderr


def test_a_sharing_host_refuses_to_join_hosts_that_keep_their_own_state(stack, tmp_path):
    proc = second_host(stack, tmp_path, BOSUN_ARTIFACT_STORE="nats")  # the stack's worker keeps a file store
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert f"worker hosts {stack.env['BOSUN_WORKER_ID']} poll this Temporal with their own file store" in line
    assert not (tmp_path / "host2" / "worker-health.json").exists()  # it never started polling
