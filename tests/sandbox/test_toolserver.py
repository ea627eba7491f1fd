"""The tool server's protocol and ops, exercised inside a real bwrap sandbox (nothing runs unsandboxed)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

import pytest

from infra.errors import InvalidArguments, ToolFailed
from sandbox.base import Sandbox

LIST_PROCS = ("import os\n"
              "me = os.getpid()\n"
              "for p in sorted(int(x) for x in os.listdir('/proc') if x.isdigit()):\n"
              "    if p in (1, me, os.getppid()):\n"
              "        continue\n"
              "    try:\n"
              "        print(p, open(f'/proc/{p}/cmdline','rb').read().replace(b'\\0', b' ').decode())\n"
              "    except OSError:\n"
              "        pass\n")


async def other_processes(sb: Sandbox) -> list[str]:
    """Processes in the sandbox besides init, the tool server and the lister itself."""
    res = await sb.exec(["python3", "-c", LIST_PROCS], timeout_s=10)
    assert res.exit_code == 0, res.stderr
    return [line for line in res.stdout.splitlines() if line.strip()]


# -- protocol ---------------------------------------------------------------------------------------------------


async def test_ping(bwrap_sandbox: Sandbox) -> None:
    pong = await bwrap_sandbox.request("ping")
    assert pong["pong"] is True and pong["workspace"] == "/workspace"


async def test_unknown_op_and_bad_args_are_invalid_arguments(bwrap_sandbox: Sandbox) -> None:
    with pytest.raises(InvalidArguments, match="unknown op 'frobnicate'"):
        await bwrap_sandbox.request("frobnicate")
    with pytest.raises(InvalidArguments, match="missing required argument 'path'"):
        await bwrap_sandbox.request("read", {})
    with pytest.raises(InvalidArguments, match="'text' must be a string"):
        await bwrap_sandbox.request("write", {"path": "a", "text": 3})
    with pytest.raises(InvalidArguments, match="invalid regular expression"):
        await bwrap_sandbox.request("grep", {"pattern": "("})


async def test_garbage_line_does_not_kill_the_server(bwrap_sandbox: Sandbox) -> None:
    await bwrap_sandbox._client.channel.send(b"this is not json\n[1,2]\n")  # type: ignore[attr-defined]
    assert (await bwrap_sandbox.request("ping"))["pong"]


async def test_concurrent_requests_overlap(bwrap_sandbox: Sandbox) -> None:
    start = time.monotonic()
    results = await asyncio.gather(*(bwrap_sandbox.exec(["sleep", "0.5"], timeout_s=10) for _ in range(4)),
                                   *(bwrap_sandbox.request("read", {"path": "hello.txt"}) for _ in range(20)))
    assert all(r.exit_code == 0 for r in results[:4])
    assert all(r["text"] == "hello\n" for r in results[4:])
    assert time.monotonic() - start < 1.6


async def test_read_during_long_exec_is_fast(bwrap_sandbox: Sandbox) -> None:
    long = asyncio.create_task(bwrap_sandbox.exec(["sleep", "1"], timeout_s=10))
    await asyncio.sleep(0.1)
    t = time.monotonic()
    await bwrap_sandbox.request("read", {"path": "hello.txt"})
    assert time.monotonic() - t < 0.3
    assert (await long).exit_code == 0


# -- file ops ---------------------------------------------------------------------------------------------------


async def test_read_keeps_crlf_and_bom(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    raw = "\ufeffline one\r\nline two\r\n".encode()
    (workspace / "dos.txt").write_bytes(raw)
    res = await bwrap_sandbox.request("read", {"path": "dos.txt"})
    assert res["text"] == "\ufeffline one\r\nline two\r\n"
    assert res["size"] == len(raw) and res["mtime_ns"] == (workspace / "dos.txt").stat().st_mtime_ns


async def test_read_binary_and_missing_and_dir(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00")
    with pytest.raises(ToolFailed, match="not UTF-8 text"):
        await bwrap_sandbox.request("read", {"path": "blob.bin"})
    with pytest.raises(ToolFailed, match="no such file"):
        await bwrap_sandbox.request("read", {"path": "nope.txt"})
    (workspace / "d").mkdir()
    with pytest.raises(ToolFailed, match="is a directory"):
        await bwrap_sandbox.request("read", {"path": "d"})


async def test_write_atomic_keeps_mode_and_creates_dirs(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    res = await bwrap_sandbox.request("write", {"path": "run.sh", "text": "#!/bin/sh\necho new\r\n"})
    assert res["size"] == len(b"#!/bin/sh\necho new\r\n")
    assert script.read_bytes() == b"#!/bin/sh\necho new\r\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert not [p for p in workspace.iterdir() if p.name.startswith(".bosun-")]
    with pytest.raises(ToolFailed, match="does not exist"):
        await bwrap_sandbox.request("write", {"path": "a/b/c.txt", "text": "x"})
    await bwrap_sandbox.request("write", {"path": "a/b/c.txt", "text": "ünï\n", "create_dirs": True})
    assert (workspace / "a/b/c.txt").read_text() == "ünï\n"


async def test_delete(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "target.txt").write_text("t")
    os.symlink("target.txt", workspace / "link")
    await bwrap_sandbox.request("delete", {"path": "link"})
    assert not (workspace / "link").is_symlink() and (workspace / "target.txt").exists()
    (workspace / "dir").mkdir()
    (workspace / "dir/f").write_text("x")
    with pytest.raises(ToolFailed, match="not empty"):
        await bwrap_sandbox.request("delete", {"path": "dir"})
    await bwrap_sandbox.request("delete", {"path": "dir", "recursive": True})
    assert not (workspace / "dir").exists()
    with pytest.raises(ToolFailed, match="workspace root"):
        await bwrap_sandbox.request("delete", {"path": "."})


async def test_list(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    os.symlink("hello.txt", workspace / "ln")
    res = await bwrap_sandbox.request("list", {"path": "."})
    by_name = {e["name"]: e for e in res["entries"]}
    assert by_name["hello.txt"] == {"name": "hello.txt", "type": "file", "size": 6}
    assert by_name["sub"]["type"] == "dir" and by_name["ln"]["type"] == "symlink"
    assert [e["name"] for e in res["entries"]] == sorted(by_name)


async def test_glob(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    for rel in ("a.py", "pkg/b.py", "pkg/deep/c.py", "pkg/d.txt", ".git/x.py"):
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text("x = 1\n")
    res = await bwrap_sandbox.request("glob", {"pattern": "**/*.py"})
    assert res == {"paths": ["a.py", "pkg/b.py", "pkg/deep/c.py"], "truncated": False}
    res = await bwrap_sandbox.request("glob", {"pattern": "*.py", "path": "pkg"})
    assert res["paths"] == ["pkg/b.py"]
    res = await bwrap_sandbox.request("glob", {"pattern": "**/*.py", "max_results": 2})
    assert res["truncated"] is True and len(res["paths"]) == 2
    with pytest.raises(InvalidArguments):
        await bwrap_sandbox.request("glob", {"pattern": "../*"})


async def test_grep(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src/m.py").write_text("def Foo():\n    return 'a.b'\n")
    (workspace / "src/n.txt").write_text("foo bar\n")
    res = await bwrap_sandbox.request("grep", {"pattern": "foo", "ignore_case": True})
    assert res["matches"] == [{"path": "src/m.py", "line": 1, "text": "def Foo():"},
                              {"path": "src/n.txt", "line": 1, "text": "foo bar"}]
    res = await bwrap_sandbox.request("grep", {"pattern": "a.b", "fixed": True, "glob": "*.py"})
    assert [(m["path"], m["line"]) for m in res["matches"]] == [("src/m.py", 2)]
    res = await bwrap_sandbox.request("grep", {"pattern": "o", "max_results": 1})
    assert res["truncated"] is True and len(res["matches"]) == 1
    res = await bwrap_sandbox.request("grep", {"pattern": "zzz"})
    assert res == {"matches": [], "truncated": False}


# -- paths ------------------------------------------------------------------------------------------------------


async def test_path_escapes_are_refused(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    with pytest.raises(ToolFailed, match=r"path '\.\./x' resolves to '/x', outside the workspace /workspace"):
        await bwrap_sandbox.request("read", {"path": "../x"})
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await bwrap_sandbox.request("read", {"path": "/etc/passwd"})
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await bwrap_sandbox.request("write", {"path": "../../tmp/evil", "text": "x"})
    os.symlink("/etc", workspace / "etc-link")
    with pytest.raises(ToolFailed, match="resolves to '/etc/passwd', outside"):
        await bwrap_sandbox.request("read", {"path": "etc-link/passwd"})
    os.symlink("../../outside.txt", workspace / "up")
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await bwrap_sandbox.request("write", {"path": "up", "text": "x"})
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await bwrap_sandbox.request("list", {"path": "etc-link"})
    with pytest.raises(ToolFailed, match="home directories"):
        await bwrap_sandbox.request("read", {"path": "~/.ssh/id_rsa"})
    with pytest.raises(ToolFailed, match="outside the workspace"):
        await bwrap_sandbox.exec("true", cwd="..")
    # Absolute paths inside the workspace are fine.
    assert (await bwrap_sandbox.request("read", {"path": "/workspace/hello.txt"}))["text"] == "hello\n"


# -- exec -------------------------------------------------------------------------------------------------------


async def test_exec_basics(bwrap_sandbox: Sandbox, workspace: Path) -> None:
    res = await bwrap_sandbox.exec("echo out; echo err >&2; exit 3", timeout_s=10)
    assert (res.exit_code, res.stdout, res.stderr, res.timed_out) == (3, "out\n", "err\n", False)
    (workspace / "sub").mkdir()
    res = await bwrap_sandbox.exec(["sh", "-c", "pwd; echo $FOO"], cwd="sub", env={"FOO": "bar"}, timeout_s=10)
    assert res.stdout == "/workspace/sub\nbar\n"
    res = await bwrap_sandbox.exec(["sh", "-c", "kill -9 $$"], timeout_s=10)
    assert res.exit_code == 137
    with pytest.raises(ToolFailed, match="command not found"):
        await bwrap_sandbox.exec(["no-such-binary-xyz"], timeout_s=10)


async def test_exec_timeout_kills_setsid_and_double_forked_children(bwrap_sandbox: Sandbox) -> None:
    cmd = ("sleep 101 & "                                    # plain background child
           "(sleep 102 &) ; "                                 # double fork: orphaned to the server
           "setsid sh -c 'sleep 103 & sleep 104' & "         # new session
           "python3 -c 'import os,time\nif os.fork()==0:\n os.setsid()\n if os.fork()==0:\n  time.sleep(105)\n"
           " os._exit(0)\ntime.sleep(106)' & "
           "sleep 300")
    start = time.monotonic()
    res = await bwrap_sandbox.exec(cmd, timeout_s=1.0)
    assert res.timed_out is True and res.exit_code is None
    assert time.monotonic() - start < 5
    assert await other_processes(bwrap_sandbox) == []


async def test_exec_leftover_background_processes_are_killed(bwrap_sandbox: Sandbox) -> None:
    res = await bwrap_sandbox.exec("(setsid sleep 200 > /dev/null 2>&1 &); nohup sleep 201 >/dev/null 2>&1 & echo ok",
                                   timeout_s=10)
    assert res.exit_code == 0 and res.stdout == "ok\n"
    assert await other_processes(bwrap_sandbox) == []


async def test_exec_timeout_in_one_command_spares_a_concurrent_one(bwrap_sandbox: Sandbox) -> None:
    slow_ok = asyncio.create_task(bwrap_sandbox.exec("sleep 1.5; echo survived", timeout_s=10))
    res = await bwrap_sandbox.exec("(sleep 50 &); sleep 60", timeout_s=0.5)
    assert res.timed_out
    ok = await slow_ok
    assert ok.exit_code == 0 and ok.stdout == "survived\n"


async def test_exec_output_cap(bwrap_sandbox: Sandbox) -> None:
    start = time.monotonic()
    res = await bwrap_sandbox.exec("head -c 30000000 /dev/zero | tr '\\0' x; echo done >&2", timeout_s=30,
                                   output_cap=1000)
    assert res.exit_code == 0 and res.truncated is True
    assert res.stdout.startswith("x" * 1000)
    assert "[... output truncated: 29999000 bytes dropped ...]" in res.stdout
    assert res.stderr == "done\n"
    assert time.monotonic() - start < 15


async def test_exec_invalid_arguments(bwrap_sandbox: Sandbox) -> None:
    with pytest.raises(InvalidArguments):
        await bwrap_sandbox.request("exec", {"cmd": [], "timeout_s": 1})
    with pytest.raises(InvalidArguments):
        await bwrap_sandbox.request("exec", {"cmd": "true", "timeout_s": -1})
    with pytest.raises(InvalidArguments, match="'shell' must be one of sh, bash, got 'zsh'"):
        await bwrap_sandbox.exec("true", shell="zsh", timeout_s=1)
    with pytest.raises(InvalidArguments, match="'shell' applies to a command string only"):
        await bwrap_sandbox.exec(["true"], shell="bash", timeout_s=1)


# -- pure functions of the tool server (no processes involved) --------------------------------------------------


def _toolserver_module():
    """The tool server's modules as one namespace (its folder on sys.path, as ``python3 FOLDER`` has it)."""
    import importlib
    import types

    from sandbox.client import TOOLSERVER_PATH

    if str(TOOLSERVER_PATH) not in sys.path:
        sys.path.insert(0, str(TOOLSERVER_PATH))
    ns = types.SimpleNamespace()
    for name in ("ts_base", "ts_processes", "ts_files"):
        ns.__dict__.update({k: v for k, v in vars(importlib.import_module(name)).items() if not k.startswith("__")})
    return ns


def test_glob_translation() -> None:
    ts = _toolserver_module()
    rx = ts.glob_to_regex("src/**/*.py")
    assert rx.match("src/a.py") and rx.match("src/x/y/a.py") and not rx.match("srcx/a.py")
    assert not rx.match("src/a.pyc")
    assert ts.glob_to_regex("*.[ch]").match("m.c") and not ts.glob_to_regex("*.[!ch]").match("m.c")
    assert ts.glob_to_regex("a?c").match("abc") and not ts.glob_to_regex("a?c").match("a/c")


def test_python_grep_fallback(tmp_path: Path) -> None:
    ts = _toolserver_module()
    (tmp_path / "d").mkdir()
    (tmp_path / "d/a.py").write_text("Alpha\nbeta\n")
    (tmp_path / "b.txt").write_text("alpha beta\n")
    (tmp_path / "bin").write_bytes(b"alpha\x00\x01")
    ws = ts.Workspace(str(tmp_path))
    res = ts._grep_py(ws, "alpha", ws.root, None, True, False, 10)
    assert [(m["path"], m["line"]) for m in res.matches] == [("b.txt", 1), ("d/a.py", 1)]
    res = ts._grep_py(ws, "beta", ws.root, "*.py", False, True, 10)
    assert [(m["path"], m["line"]) for m in res.matches] == [("d/a.py", 2)]
