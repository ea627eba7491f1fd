"""The attack suite, run against both backends (bwrap and docker): each test is something a hostile or confused
model could try from inside the sandbox, and asserts that it fails without harming the host or the tool server.
Positive controls at the end make sure the sandbox is still useful."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from infra.errors import ToolFailed
from sandbox.base import Sandbox

from .conftest import BACKENDS, ENV_BACKENDS, TEST_LIMITS, prepare_workspace
from .test_toolserver import other_processes


@pytest.fixture(params=BACKENDS + ENV_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every backend variant, and sandboxes of an environment on both backends."""
    return request.param


async def py(sb: Sandbox, code: str, timeout_s: float = 20, **kw):
    return await sb.exec(["python3", "-c", textwrap.dedent(code)], timeout_s=timeout_s, **kw)


async def assert_healthy(sb: Sandbox) -> None:
    """The tool server still answers and can still run a command."""
    assert (await sb.request("ping", timeout_s=20))["pong"]
    res = await sb.exec(["echo", "alive"], timeout_s=20)
    assert res.stdout == "alive\n"


# -- network ----------------------------------------------------------------------------------------------------


@pytest.fixture
async def host_listener():
    """A TCP listener on the host's 127.0.0.1 (and ::1 when possible) that records every connection."""
    hits: list[str] = []

    async def on_conn(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hits.append(str(writer.get_extra_info("peername")))
        writer.close()

    server = await asyncio.start_server(on_conn, host=["127.0.0.1", "::1"], port=0)
    port = server.sockets[0].getsockname()[1]
    yield port, hits
    server.close()
    await server.wait_closed()


async def test_no_tcp_to_host_loopback(sandbox: Sandbox, host_listener) -> None:
    port, hits = host_listener
    res = await py(sandbox, f"""
                for host in ("127.0.0.1", "::1"):
            try:
                socket.create_connection((host, {port}), timeout=3)
                print("CONNECTED", host)
            except OSError as e:
                print("refused", host, e)
        """)
    assert "CONNECTED" not in res.stdout, res.stdout
    res = await sandbox.exec(["bash", "-c", f"echo hi > /dev/tcp/127.0.0.1/{port} && echo CONNECTED"], timeout_s=10)
    assert "CONNECTED" not in res.stdout and res.exit_code != 0
    await asyncio.sleep(0.2)
    assert hits == []


async def test_no_outside_network_no_dns_no_ipv6(sandbox: Sandbox) -> None:
    res = await py(sandbox, """
                for fam, addr in ((socket.AF_INET, ("1.1.1.1", 53)), (socket.AF_INET, ("8.8.8.8", 443)),
                          (socket.AF_INET6, ("2606:4700:4700::1111", 53))):
            s = socket.socket(fam, socket.SOCK_STREAM)
            s.settimeout(3)
            try:
                s.connect(addr)
                print("CONNECTED", addr)
            except OSError as e:
                print("no route", addr, e)
        try:
            print("RESOLVED", socket.getaddrinfo("deb.debian.org", 80))
        except OSError as e:
            print("no dns", e)
        print(open("/proc/net/dev").read())
        """)
    assert "CONNECTED" not in res.stdout and "RESOLVED" not in res.stdout, res.stdout
    interfaces = [line.split(":")[0].strip() for line in res.stdout.splitlines() if ":" in line and "|" not in line
                  and not line.startswith(("no ", "CONN", "RES"))]
    assert set(interfaces) <= {"lo"}, interfaces


async def test_a_private_address_times_out_and_nothing_leaves(sandbox: Sandbox) -> None:
    """As behind a real network's NAT, a connect to an unanswered private address (requests' tests use
    10.255.255.1 for a connect timeout) times out, where a public one fails at once: and neither gets out."""
    res = await py(sandbox, """
        import socket, time
        for addr in (("10.255.255.1", 80), ("192.168.255.254", 443), ("172.31.255.254", 80), ("8.8.8.8", 443)):
            s = socket.socket()
            s.settimeout(1.0)
            started = time.monotonic()
            try:
                s.connect(addr)
                print("CONNECTED", addr[0])
            except TimeoutError:
                print("timeout", addr[0], round(time.monotonic() - started, 1))
            except OSError as e:
                print("failed", addr[0], e.errno)
        print(open("/proc/net/dev").read())
        """)
    assert "CONNECTED" not in res.stdout, res.stdout
    waited = {line.split()[1]: float(line.split()[2]) for line in res.stdout.splitlines()
              if line.startswith("timeout ")}
    assert set(waited) == {"10.255.255.1", "192.168.255.254", "172.31.255.254"}, res.stdout
    assert min(waited.values()) >= 0.9, waited  # the whole timeout, not an early failure
    assert "failed 8.8.8.8 101" in res.stdout, res.stdout  # ENETUNREACH: public addresses fail at once
    lo = next(line for line in res.stdout.splitlines() if line.strip().startswith("lo:"))
    assert lo.split()[1] != "0"  # the SYNs went to the loopback and were dropped there


async def test_host_unix_sockets_unreachable(sandbox: Sandbox) -> None:
    assert Path("/var/run/docker.sock").exists()  # the host has one: the test is meaningful
    res = await py(sandbox, """
        import socket, os
        for path in ("/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"):
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(path)
                print("CONNECTED", path)
            except OSError as e:
                print("no", path, e)
        """)
    assert "CONNECTED" not in res.stdout, res.stdout


# -- file system ------------------------------------------------------------------------------------------------


async def test_writes_outside_workspace_fail_or_stay_inside(sandbox: Sandbox, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(tmp_path, 0o777)
    os.chmod(outside, 0o777)
    probe = outside / "pwned"
    res = await sandbox.exec(["sh", "-c", f"for p in /etc/pwned /usr/pwned /pwned /var/tmp/pwned /tmp/pwned "
                                          f"{probe}; do echo x > $p 2>/dev/null && echo WROTE $p; done; true"],
                             timeout_s=10)
    wrote = {line.split()[1] for line in res.stdout.splitlines() if line.startswith("WROTE")}
    assert wrote <= {"/var/tmp/pwned", "/tmp/pwned", str(probe)}, wrote  # private tmpfs or a private path
    for host_path in ("/etc/pwned", "/usr/pwned", "/pwned", "/var/tmp/pwned", "/tmp/pwned"):
        assert not Path(host_path).exists(), host_path
    assert not probe.exists()
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await sandbox.request("write", {"path": str(probe), "text": "x"})


async def test_symlink_escape(sandbox: Sandbox, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o777)
    passwd_before = hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest()
    res = await sandbox.exec(["sh", "-c", f"ln -s {outside} esc; echo pwn > esc/f; ln -s /etc/passwd pw; "
                                          f"echo 'evil::0:0::/:/bin/sh' >> pw; cat esc/f; true"], timeout_s=10)
    assert not (outside / "f").exists(), res
    assert hashlib.sha256(Path("/etc/passwd").read_bytes()).hexdigest() == passwd_before
    # The tool server refuses to follow them.
    for path in ("esc/f", "pw"):
        with pytest.raises(ToolFailed, match="outside the workspace"):
            await sandbox.request("write", {"path": path, "text": "x"})
        with pytest.raises(ToolFailed, match="outside the workspace"):
            await sandbox.request("read", {"path": path})


async def test_hardlink_escape(sandbox: Sandbox, workspace: Path) -> None:
    """Hard links across mounts fail (EXDEV): no host file can be made to appear inside the workspace."""
    res = await sandbox.exec(["sh", "-c", "for t in /etc/passwd /etc/hostname /usr/bin/env; do "
                                          "ln $t hl-$(basename $t) && echo LINKED $t; done; true"], timeout_s=10)
    assert "LINKED" not in res.stdout, res
    assert not list(workspace.glob("hl-*"))


@pytest.fixture
def ssh_secret():
    """A real file under the worker's ~/.ssh (created for the test, removed after)."""
    ssh = Path.home() / ".ssh"
    created_dir = not ssh.exists()
    ssh.mkdir(mode=0o700, exist_ok=True)
    secret = ssh / "bosun_sandbox_test_key"
    token = "BOSUN-TEST-SECRET-" + os.urandom(8).hex()
    secret.write_text(token + "\n")
    secret.chmod(0o600)
    yield secret, token
    secret.unlink()
    if created_dir:
        ssh.rmdir()


async def test_cannot_read_ssh_keys_or_worker_env(provider, backend: str, workspace: Path, ssh_secret,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    secret, token = ssh_secret
    env_token = "BOSUN-ENV-SECRET-" + os.urandom(8).hex()
    monkeypatch.setenv("BOSUN_SANDBOX_TEST_SECRET", env_token)
    prepare_workspace(backend, workspace)
    sb = await provider.acquire(workspace)
    try:
        res = await sb.exec(["sh", "-c", f"cat {secret} ~/.ssh/{secret.name} /root/.ssh/{secret.name}; "
                                         f"ls -la /root /home {Path.home()}; env; "
                                         f"cat /proc/*/environ | tr '\\0' '\\n'; "
                                         # not /opt: the host's, read-only, often gigabytes of toolchains
                                         f"grep -rs {token} /etc /run /tmp /var/tmp /workspace; true"],
                            timeout_s=30)
        assert token not in res.stdout + res.stderr
        assert env_token not in res.stdout + res.stderr
        assert "BOSUN_SANDBOX_TEST_SECRET" not in res.stdout
        with pytest.raises(ToolFailed):
            await sb.request("read", {"path": str(secret)})
    finally:
        await sb.close()


async def test_git_hooks_and_config_are_read_only(provider, backend: str, workspace: Path) -> None:
    ws = workspace
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    hooks_before = sorted(p.name for p in (ws / ".git/hooks").iterdir())
    config_before = (ws / ".git/config").read_bytes()
    prepare_workspace(backend, ws)
    sb = await provider.acquire(ws)
    try:
        res = await sb.exec(["sh", "-c",
                             "echo 'touch /tmp/pwned' > .git/hooks/pre-commit && echo WROTE_HOOK; "
                             "printf '[core]\\n\\tfsmonitor = touch /tmp/x\\n' >> .git/config && echo WROTE_CONFIG; "
                             "mv .git .git-old && echo MOVED; rm -rf .git/hooks && echo REMOVED; "
                             "echo hi > new.txt && git status --short && echo GIT_OK; true"], timeout_s=20)
        assert "WROTE_HOOK" not in res.stdout and "WROTE_CONFIG" not in res.stdout, res
        assert "MOVED" not in res.stdout and "REMOVED" not in res.stdout, res
        assert "GIT_OK" in res.stdout, res  # git still works for reading
        with pytest.raises(ToolFailed):
            await sb.request("write", {"path": ".git/hooks/post-checkout", "text": "#!/bin/sh\nid\n"})
    finally:
        await sb.close()
    assert sorted(p.name for p in (ws / ".git/hooks").iterdir()) == hooks_before
    assert (ws / ".git/config").read_bytes() == config_before


# -- privileges -------------------------------------------------------------------------------------------------


async def test_no_new_privs_and_no_capabilities(sandbox: Sandbox) -> None:
    res = await sandbox.exec(["cat", "/proc/self/status"], timeout_s=10)
    status = dict(line.split(":\t", 1) for line in res.stdout.splitlines() if ":\t" in line)
    assert status["NoNewPrivs"].strip() == "1"
    assert int(status["CapEff"], 16) == 0 and int(status["CapPrm"], 16) == 0
    assert int(status["CapAmb"], 16) == 0


async def test_kernel_settings_are_read_only(sandbox: Sandbox) -> None:
    """Sysctls check file ownership only: a writable /proc/sys would let uid 0 set core_pattern (host root)."""
    files = ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/swappiness", "/proc/sys/kernel/panic"]
    before = {f: Path(f).read_text() for f in files}
    # Write back the current values: harmless for the host even if it wrongly succeeded.
    script = "; ".join(f"printf '%s' '{v.strip()}' > {f} 2>/dev/null && echo WROTE {f}" for f, v in before.items())
    res = await sandbox.exec(["sh", "-c", script + "; echo h > /proc/sysrq-trigger 2>/dev/null && echo SYSRQ; true"],
                             timeout_s=10)
    assert "WROTE" not in res.stdout and "SYSRQ" not in res.stdout, res
    assert {f: Path(f).read_text() for f in files} == before


async def test_setuid_bits_cannot_reach_the_host_as_root(sandbox: Sandbox, workspace: Path) -> None:
    res = await sandbox.exec(["sh", "-c", "cp \"$(command -v id)\" ./myid && chmod u+s,g+s ./myid; "
                                          "ls -ln ./myid; ./myid -u"], timeout_s=10)
    f = workspace / "myid"
    assert f.exists(), res
    st = f.stat()
    if st.st_mode & stat.S_ISUID:
        assert st.st_uid != 0, "a setuid-root file appeared in the workspace"
    if st.st_mode & stat.S_ISGID:
        assert st.st_gid != 0, "a setgid-root file appeared in the workspace"
    # Running a set-id binary gains nothing (no_new_privs).
    uid_line = res.stdout.strip().splitlines()[-1]
    me = await sandbox.exec(["id", "-u"], timeout_s=10)
    assert uid_line == me.stdout.strip()


async def test_docker_root_owned_workspace_cannot_create_setuid_root(docker_provider, workspace: Path) -> None:
    """A root-owned workspace makes docker commands run as uid 0 (no capabilities): set-id chmod is refused."""
    sb = await docker_provider.acquire(workspace)
    try:
        res = await sb.exec(["sh", "-c", "id -u; touch f; chmod u+s f; chmod g+s f; chmod 755 f && echo CHMOD_OK"],
                            timeout_s=10)
        assert res.stdout.splitlines()[0] == "0"
        assert "CHMOD_OK" in res.stdout
        assert not (workspace / "f").stat().st_mode & (stat.S_ISUID | stat.S_ISGID)
    finally:
        await sb.close()


async def test_ptrace_of_tool_server_refused(sandbox: Sandbox) -> None:
    server_pid = (await sandbox.request("ping"))["pid"]
    res = await py(sandbox, f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        PTRACE_ATTACH = 16
        r = libc.ptrace(PTRACE_ATTACH, {server_pid}, 0, 0)
        print("ATTACHED" if r == 0 else f"refused errno={{ctypes.get_errno()}}")
        try:
            print(open("/proc/{server_pid}/environ").read()[:50])
            print("READ_ENVIRON")
        except OSError as e:
            print("environ refused", e)
        try:
            with open("/proc/{server_pid}/fd/1", "wb") as f:  # forge a tool-server response?
                f.write(b"{{}}\\n")
            print("OPENED_STDOUT")
        except OSError as e:
            print("fd refused", e)
        """)
    assert "ATTACHED" not in res.stdout, res
    assert "OPENED_STDOUT" not in res.stdout and "READ_ENVIRON" not in res.stdout, res
    await assert_healthy(sandbox)


# -- resources --------------------------------------------------------------------------------------------------


@pytest.mark.slow
async def test_fork_bomb(sandbox: Sandbox) -> None:
    start = time.monotonic()
    res = await sandbox.exec(["bash", "-c", "b(){ b | b & }; b"], timeout_s=5)
    assert time.monotonic() - start < 40
    assert res.timed_out or res.exit_code is not None
    await assert_healthy(sandbox)
    assert await other_processes(sandbox) == []


@pytest.mark.slow
async def test_memory_bomb(sandbox: Sandbox) -> None:
    res = await py(sandbox, """
        blocks = []
        while True:
            blocks.append(bytearray(64 << 20))
        """, timeout_s=60)
    assert res.exit_code != 0 and not res.timed_out, res
    await assert_healthy(sandbox)


async def test_filling_tmp_is_capped(sandbox: Sandbox) -> None:
    res = await sandbox.exec(["sh", "-c", f"head -c {(TEST_LIMITS.tmp_mb + 32) << 20} /dev/zero > /tmp/big; "
                                          f"echo rc=$?; stat -c %s /tmp/big; rm -f /tmp/big"], timeout_s=60)
    assert "No space left" in res.stderr, res
    size = int(res.stdout.split()[-1])
    assert size <= TEST_LIMITS.tmp_mb << 20
    await assert_healthy(sandbox)


@pytest.mark.slow
async def test_stdout_flood_200mb(sandbox: Sandbox) -> None:
    start = time.monotonic()
    res = await sandbox.exec(["sh", "-c", "head -c 200000000 /dev/urandom | base64 -w 0; echo; echo end >&2"],
                             timeout_s=120, output_cap=100_000)
    assert res.exit_code == 0 and res.truncated
    assert len(res.stdout) < 100_200 and "output truncated" in res.stdout
    assert res.stderr == "end\n"
    assert time.monotonic() - start < 120
    await assert_healthy(sandbox)


async def test_fd_exhaustion(sandbox: Sandbox) -> None:
    res = await py(sandbox, """
        import os
        fds = []
        try:
            while True:
                fds.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as e:
            print(len(fds), e)
        """)
    opened = int(res.stdout.split()[0])
    assert opened <= TEST_LIMITS.nofile
    await assert_healthy(sandbox)


async def test_timeout_kills_orphaned_children(sandbox: Sandbox) -> None:
    res = await sandbox.exec("(sleep 300 &); setsid sleep 301 & nohup sleep 302 >/dev/null 2>&1 & sleep 303",
                             timeout_s=1)
    assert res.timed_out and res.exit_code is None
    assert await other_processes(sandbox) == []


# -- positive controls ------------------------------------------------------------------------------------------


async def test_workspace_write_visible_on_host(sandbox: Sandbox, workspace: Path) -> None:
    res = await sandbox.exec(["sh", "-c", "mkdir -p out && echo from-sandbox > out/result.txt"], timeout_s=10)
    assert res.exit_code == 0, res
    assert (workspace / "out/result.txt").read_text() == "from-sandbox\n"
    await sandbox.request("write", {"path": "tool.txt", "text": "via tool\n"})
    assert (workspace / "tool.txt").read_text() == "via tool\n"
    (workspace / "host.txt").write_text("from host\n")
    assert (await sandbox.request("read", {"path": "host.txt"}))["text"] == "from host\n"


async def test_python_and_git_work(sandbox: Sandbox, workspace: Path) -> None:
    res = await py(sandbox, "import sys, sqlite3, json; print(sys.version_info[:2] >= (3, 11))")
    assert res.stdout.strip() == "True", res
    res = await sandbox.exec(["sh", "-c", "mkdir proj && cd proj && git init -q && echo x > a && git add a && "
                                          "git -c user.name=t -c user.email=t@t commit -qm one && git log --oneline"],
                             timeout_s=30)
    assert res.exit_code == 0 and "one" in res.stdout, res
    (workspace / "test_x.py").write_text("def test_ok():\n    assert 1 + 1 == 2\n")
    res = await sandbox.exec(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_x.py"],
                             timeout_s=60)
    assert res.exit_code == 0 and "1 passed" in res.stdout, res


def test_limits_report(provider) -> None:
    report = provider.limits_report()
    for key in ("memory_mb", "pids", "cpus", "tmp_mb", "nofile"):
        assert report[key]["enforced"] is True, (key, report)


async def test_localhost_names_the_sandboxs_own_loopback(sandbox: Sandbox) -> None:
    """Tests bind servers to "localhost": it resolves inside every sandbox (to its own loopback, nothing else)."""
    res = await py(sandbox, """
        import socket
        srv = socket.create_server(("localhost", 0))
        port = srv.getsockname()[1]
        socket.create_connection(("localhost", port), 3).close()
        print("ok", srv.getsockname()[0])
    """)
    assert res.stdout.split()[0] == "ok" and res.stdout.split()[1] in ("127.0.0.1", "::1"), res


async def test_a_program_written_to_tmp_runs_as_in_the_workspace(sandbox: Sandbox) -> None:
    """A test suite's tmp_path and a build's compiler probe live in /tmp: a program put there runs on every backend
    (docker's tmpfs is noexec unless told, bwrap's is not; a test's verdict must not depend on the backend)."""
    res = await sandbox.exec(["sh", "-c", "mkdir -p /tmp/probe && printf '#!/bin/sh\\necho ran\\n' > /tmp/probe/p && "
                                          "chmod +x /tmp/probe/p && /tmp/probe/p"], timeout_s=30)
    assert (res.exit_code, res.stdout) == (0, "ran\n"), res
