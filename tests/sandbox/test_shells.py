"""run_command's shell is bash, on both backends and in an environment's sandboxes; bosun's own command strings
stay POSIX sh. The commands are the bash-isms real models write (in 5,511 commands of 138 published SWE-bench runs:
``[[``, ``echo -e``, ``set -o pipefail``, arrays, ``source``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from agents.tools.builtin import default_registry
from agents.tools.registry import ToolContext
from sandbox.base import Sandbox
from sandbox.bwrap import BwrapProvider

from .conftest import BACKENDS, ENV_BACKENDS, TEST_LIMITS
from .envfixtures import host_environments

BASHISMS = r"""set -o pipefail
false | true; echo "pipefail=$?"
[[ "abc" == a* && -d /workspace ]] && echo "double-bracket"
files=(one "two words" three); echo "array=${files[1]} n=${#files[@]}"
echo -e "tab\there"
printf 'X=42\n' > /tmp/vars.sh && source /tmp/vars.sh; echo "sourced=$X"
echo "bash=${BASH_VERSINFO[0]}"
shopt -q login_shell && echo login || echo not-login
echo "path=$PATH"
"""


@pytest.fixture(params=BACKENDS + ENV_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every backend variant, and sandboxes of an environment on both backends."""
    return request.param


async def test_run_command_runs_bash(sandbox: Sandbox) -> None:
    path = (await sandbox.exec(["sh", "-c", "echo $PATH"], timeout_s=30)).stdout.strip()
    out = await default_registry().execute("run_command", {"command": BASHISMS}, ToolContext(sandbox=sandbox))
    assert not out.is_error and out.data["exit_code"] == 0, out.text
    assert out.text.split("stdout:\n", 1)[1].splitlines() == [
        "pipefail=1", "double-bracket", "array=two words n=3", "tab\there", "sourced=42", "bash=5", "not-login",
        f"path={path}"]  # not a login shell: /etc/profile would reset PATH (an environment's virtualenv first)


async def test_bosuns_own_command_strings_stay_posix_sh(sandbox: Sandbox) -> None:
    res = await sandbox.exec('[ "$(readlink -f /proc/$$/exe)" != /usr/bin/bash ] && echo posix; [[ 1 == 1 ]]',
                             timeout_s=30)
    assert res.stdout == "posix\n" and res.exit_code == 127, res  # dash: '[[: not found'


@pytest.mark.docker
async def test_every_base_on_this_host_runs_run_command_in_bash(tiny_env, tmp_path: Path) -> None:
    """Each environment base (Debian bullseye, bookworm, trixie, made by debootstrap, where bash is an Essential
    package) that this host has built: run_command's bash-isms in a sandbox of that root file system."""
    bases = host_environments().bases.all()
    assert bases  # at least the one tiny_env was built on
    for base in bases:
        ws = tmp_path / base.name
        ws.mkdir()
        sb = await BwrapProvider(TEST_LIMITS, rootfs=Path(base.rootfs)).acquire(ws)
        try:
            out = await default_registry().execute("run_command", {"command": BASHISMS}, ToolContext(sandbox=sb))
        finally:
            await sb.close()
        shown = "double-bracket\narray=two words n=3\ntab\there\nsourced=42"
        assert out.data["exit_code"] == 0 and shown in out.text, (base.name, out.text)


def test_the_tool_tells_the_model_its_shell() -> None:
    spec = next(s for s in default_registry().specs() if s.name == "run_command")
    assert "bash" in spec.description
    assert "/bin/bash -c" in spec.parameters["properties"]["command"]["description"]


@pytest.mark.docker
async def test_a_sandbox_without_bash_fails_clearly(tiny_env, tmp_path: Path) -> None:
    """A root file system without bash (an environment base that lost it): run_command says so and runs nothing;
    it never falls back to another shell."""
    rootfs = tmp_path / "rootfs"
    if subprocess.run(["cp", "-al", tiny_env.rootfs, str(rootfs)], capture_output=True).returncode != 0:
        shutil.rmtree(rootfs, ignore_errors=True)  # another file system: copy it
        subprocess.run(["cp", "-a", tiny_env.rootfs, str(rootfs)], check=True)
    for bash in ("usr/bin/bash", "bin/bash"):
        if (rootfs / bash).is_file() and not (rootfs / bash).is_symlink():
            (rootfs / bash).unlink()
    ws = tmp_path / "ws"
    ws.mkdir()
    sb = await BwrapProvider(TEST_LIMITS, rootfs=rootfs).acquire(ws)
    try:
        out = await default_registry().execute("run_command", {"command": "touch ran"}, ToolContext(sandbox=sb))
        assert out.is_error and "this sandbox has no bash (/bin/bash is missing from its root file system)" in out.text
        assert not (ws / "ran").exists()
        assert (await sb.exec("touch sh-ran", timeout_s=30)).exit_code == 0  # sh is still there for bosun's own
    finally:
        await sb.close()
