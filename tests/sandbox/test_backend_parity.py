"""What a command sees is the same on both backends: a test's or a build's verdict must not depend on whether
the worker runs docker or bwrap (an evaluation judged on one agrees with one judged on the other, test by test).
Real docker and bwrap, each with a workspace owned by the worker's default sandbox uid (64000, which no image
names in its passwd file), as the worker runs them."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from infra.settings import Settings

from .conftest import chown_tree

SANDBOX_UID = Settings.model_fields["sandbox_uid"].default

SEEN = ("env -0 | sort -z | tr '\\0' '\\n' | grep -v '^BOSUN_EXEC_ID='; echo ---; id -u; hostname; "
        "python3 -c 'import getpass, os; print(getpass.getuser(), os.path.expanduser(\"~\"))'; "
        "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.shares /sys/fs/cgroup/cpu.max 2>/dev/null "
        "|| echo no cgroup in sight")
"""The environment a command gets (less the per-call id), its uid, the host name, the user name a program
reads (getpass.getuser(): pytest's tmp_path and many tests go by it), and whether a CPU quota shows in a cgroup
file (code of the cgroup v1 era takes it for the machine's cores: pylint skipped its multi-core tests)."""


async def _seen(provider, ws: Path) -> str:
    sb = await provider.acquire(ws)
    try:
        res = await sb.exec(["sh", "-c", SEEN], timeout_s=60)
    finally:
        await sb.close()
    assert res.exit_code == 0, res
    return res.stdout


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["plain", "environment"])
async def test_a_command_sees_the_same_on_docker_and_bwrap(kind: str, request: pytest.FixtureRequest) -> None:
    prefix = "env" if kind == "environment" else ""
    providers = {b: request.getfixturevalue(f"{prefix}{b}_provider") for b in ("docker", "bwrap")}
    base = Path(tempfile.mkdtemp(prefix="bosun-test-parity-", dir="/tmp"))  # (reachable by the unprivileged uid)
    base.chmod(0o755)
    try:
        seen = {}
        for backend, provider in providers.items():
            ws = base / backend
            ws.mkdir()
            chown_tree(ws, SANDBOX_UID, SANDBOX_UID)
            seen[backend] = await _seen(provider, ws)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert seen["docker"] == seen["bwrap"]
    env, _, rest = seen["docker"].partition("---\n")
    assert rest.split("\n")[:4] == [str(SANDBOX_UID), "sandbox", "sandbox /tmp/home", "no cgroup in sight"]
    assert "USER=sandbox\n" in env and "HOME=/tmp/home\n" in env
