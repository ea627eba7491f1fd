"""A public test service's stand-in, started by the judging script's lines in real sandboxes of an environment
(both backends): its name answers over HTTP and HTTPS on the standard ports, its certificate is trusted beside
the CAs a client names (and only with the hook), a scheme written in any case works, and every other name resolves
as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agents.tools.builtin import default_registry
from agents.tools.registry import ToolContext
from environments import standins
from environments.declared import Declared
from sandbox.base import Sandbox

from .conftest import ENV_BACKENDS
from .envfixtures import host_environments, make_repo

ROOT = Path(__file__).resolve().parents[2]

APP = '''
def app(environ, start_response):
    body = ("%s %s %s" % (environ["wsgi.url_scheme"], environ.get("HTTP_HOST"), environ["PATH_INFO"])).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
'''

CLIENT = '''
import socket, ssl, urllib.request
for url in ("http://svc.example/get", "https://svc.example/x", "HTTPS://SVC.EXAMPLE/y", "https://svc.example:443/z"):
    print("GOT", urllib.request.urlopen(url, timeout=10).read().decode())
try:
    socket.getaddrinfo("other.example", 80)
    print("OTHER resolved")
except OSError:
    print("OTHER unresolved")
import os, subprocess, sys
plain = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # no hook: the system's CAs only
fetch = "import urllib.request; urllib.request.urlopen('https://127.0.0.1:8766/')"
check = subprocess.run([sys.executable, "-c", fetch], env=plain, capture_output=True, text=True)
print("UNTRUSTED refused" if "CERTIFICATE_VERIFY_FAILED" in check.stderr else "UNTRUSTED " + check.stderr[-300:])
ctx = ssl.create_default_context(cafile="/etc/ssl/certs/ca-certificates.crt")  # a client's own bundle
with socket.create_connection(("svc.example", 443), timeout=10) as raw:
    with ctx.wrap_socket(raw, server_hostname="svc.example"):
        print("OWN BUNDLE trusted")
'''


@pytest.fixture(params=ENV_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


async def test_a_stand_in_answers_its_name_over_http_and_https(sandbox: Sandbox, workspace: Path) -> None:
    (workspace / "standin_app.py").write_text(APP)
    (workspace / "client.py").write_text(CLIENT)
    lines = standins.start_lines(["svc.example", "unknown.example"], known={"svc.example": ("x", "standin_app:app")})
    script = "\n".join(["export PYTHONPATH=/workspace", *lines, "python client.py"])
    res = await sandbox.exec(["bash", "-c", script], timeout_s=60)
    out = res.stdout + res.stderr
    assert res.exit_code == 0, out
    got = [line for line in out.splitlines() if line.startswith("GOT ")]
    assert got == ["GOT http svc.example /get", "GOT https svc.example /x", "GOT https SVC.EXAMPLE /y",
                   "GOT https svc.example:443 /z"], out
    assert "OTHER unresolved" in out and "UNTRUSTED refused" in out and "OWN BUNDLE trusted" in out, out
    listing = await sandbox.exec(["ls", "/workspace", standins.DIR], timeout_s=20)
    assert "ca.key" not in listing.stdout  # the CA's key is gone once the certificate is signed
    assert "serve.py" not in (await sandbox.exec(["ls", "/workspace"], timeout_s=20)).stdout  # nothing in the tree


async def test_each_command_wrapped_in_the_same_sandbox_reaches_the_stand_in(sandbox: Sandbox,
                                                                             workspace: Path) -> None:
    """run_tests and ``bosun sandbox exec --env`` wrap each command: the second one in a sandbox finds the stand-in
    the first started where it still runs (docker), or starts its own (bwrap: one namespace per command)."""
    (workspace / "standin_app.py").write_text(APP)
    (workspace / "get.py").write_text("import sys, urllib.request\n"
                                      "print('GOT', urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())\n")
    known = {"svc.example": ("x", "standin_app:app")}
    for url in ("https://svc.example/first", "http://svc.example/second $HOME 'q'"):
        cmd = standins.wrap(["python", "get.py", url.replace(" ", "%20")], ["svc.example"], known=known)
        res = await sandbox.exec(cmd, timeout_s=60, env={"PYTHONPATH": "/workspace"})
        assert res.exit_code == 0, res.stdout + res.stderr
        assert res.stdout.strip().startswith("GOT "), res.stdout + res.stderr  # nothing of the stand-in's own
        assert res.stdout.strip().endswith("/" + url.split("/", 3)[3]), res.stdout  # the word as given ($HOME kept)
    line = standins.wrap("python get.py https://svc.example/line", ["svc.example"], known=known)
    res = await sandbox.exec(line, timeout_s=60, env={"PYTHONPATH": "/workspace"})
    assert res.exit_code == 0 and res.stdout.strip() == "GOT https svc.example /line", res.stdout + res.stderr


async def test_run_tests_in_an_environment_with_a_stand_in_reaches_it(sandbox: Sandbox, workspace: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent's run_tests starts the environment's stand-ins before the tests (the judging script does too)."""
    monkeypatch.setitem(standins.KNOWN, "svc.example", ("x", "standin_app:app"))
    (workspace / "standin_app.py").write_text(APP)
    (workspace / "test_svc.py").write_text("import urllib.request\n\n\ndef test_svc():\n"
                                           "    assert urllib.request.urlopen('https://svc.example/t', timeout=10)"
                                           ".read() == b'https svc.example /t'\n")
    assert sandbox.environment is not None
    ctx = ToolContext(sandbox=sandbox)
    out = await default_registry().execute("run_tests", {"args": ["test_svc.py"]}, ctx)
    assert out.data["failed"] and not out.data["passed"], out.text  # no stand-in: the name does not resolve
    sandbox.environment = sandbox.environment.model_copy(update={"standins": ["svc.example"]})
    out = await default_registry().execute("run_tests", {"args": ["test_svc.py"]}, ctx)
    assert out.data["passed"] == ["test_svc.py::test_svc"] and not out.data["failed"], out.text


async def test_a_stand_in_that_cannot_start_says_why_at_once_and_the_command_still_runs(sandbox: Sandbox) -> None:
    """The service's package missing (a soft requirement dropped): the wait ends when the server is gone, not after
    its 20 s, the server's log is shown, and the command runs (its tests that need the service fail)."""
    cmd = standins.wrap(["python", "-c", "print('ran')"], ["svc.example"],
                        known={"svc.example": ("x", "no_such_module:app")})
    res = await sandbox.exec(cmd, timeout_s=60)
    assert res.exit_code == 0 and "ran" in res.stdout, res.stdout + res.stderr
    assert "No module named 'no_such_module'" in res.stdout, res.stdout
    assert res.duration_s < 12, res.duration_s


def test_wrap_passes_an_argv_through_unparsed_and_leaves_commands_without_stand_ins_alone() -> None:
    argv = ["python", "-c", "print('$HOME; rm -rf /')", "a b"]
    wrapped = standins.wrap(argv, ["httpbin.org"])
    assert wrapped[:2] == ["sh", "-c"] and wrapped[3:] == ["sh", *argv]
    assert wrapped[2].endswith('exec "$@"') and "$HOME" not in wrapped[2]
    assert standins.wrap(argv, []) is argv and standins.wrap("pytest", ["unknown.example"]) == "pytest"
    assert standins.wrap("pytest -x", ["httpbin.org"]).endswith("\npytest -x")


def test_the_lines_name_only_known_services() -> None:
    assert standins.start_lines(["unknown.example"]) == []
    assert standins.start_lines([]) == []
    assert standins.requirements(["httpbin.org", "unknown.example"]) == ["httpbin"]
    two = {"a.example": ("a", "a_app:app"), "b.example": ("b", "b_app:app")}  # one server serves one app
    lines = "\n".join(standins.start_lines(["a.example", "b.example"], known=two))
    assert "BOSUN_STANDIN_HOSTS=a.example " in lines and "b.example" not in lines


def test_a_test_file_that_calls_a_known_service_by_url_is_found() -> None:
    texts = {
        "test_requests.py": "HTTPBIN = os.environ.get('HTTPBIN_URL', 'http://httpbin.org/')\n",
        "tests/test_b.py": "url = 'https://httpbin.org/get'\n",
        "tests/test_c.py": textwrap.dedent("""
            a = 'http://httpbin.org.evil.example/'   # another host
            b = 'see httpbin.org'                     # not a URL
            """),
    }
    assert standins.scan(texts) == [("httpbin.org", "test_requests.py")]
    assert standins.scan({"tests/test_c.py": texts["tests/test_c.py"]}) == []


SVC_REPO = {
    "pyproject.toml": '[project]\nname = "svcpkg"\nversion = "0.1.0"\n',
    ".bosun/environment.toml": 'python = "3.13"\ninstall = false\ndetect = false\nrequirements = ["pytest"]\n'
                               'standins = ["httpbin.org"]\n',
    "tests/test_svc.py": "def test_nothing():\n    pass\n",
}
FETCH = ("import json, urllib.request\n"
         "print(json.load(urllib.request.urlopen('https://httpbin.org/get?x=1', timeout=20))['args'])\n")


@pytest.mark.docker
def test_a_declared_stand_in_serves_the_real_service_to_sandbox_exec(tmp_path: Path) -> None:
    """``standins = ["httpbin.org"]`` in environment.toml: httpbin is installed, and `bosun sandbox exec --env`
    starts it on both backends (``--no-standins``: the name does not resolve, the sandbox has no network)."""
    repo = make_repo(tmp_path / "svc", SVC_REPO)
    os.chmod(tmp_path, 0o755)
    envs = host_environments()
    det, tree = envs.detect_repo(str(repo))
    assert det.spec.standins == ["httpbin.org"] and "httpbin" in det.spec.requirements, det.spec
    record = envs.ensure(det, tree).record

    def cli(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", "import sys; from entry.cli_sandbox import exec_main; "
                                                     "sys.exit(exec_main(sys.argv[1:]))",
                               "--env", record.env_id, "--workspace", str(repo), "--timeout", "120", "--json",
                               *args, "--", "python", "-c", FETCH], cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    for backend in ("bwrap", "docker"):
        out = cli("--backend", backend)
        assert out["exit_code"] == 0 and out["stdout"] == "{'x': '1'}\n", (backend, out)
    out = cli("--backend", "bwrap", "--no-standins")
    assert out["exit_code"] != 0 and "URLError" in out["stderr"], out


def test_a_declaration_names_only_known_stand_ins() -> None:
    with pytest.raises(ValueError, match="no stand-in is known for 'example.com'; known: httpbin.org"):
        Declared(standins=["example.com"])
    assert Declared(standins=["httpbin.org", "httpbin.org"]).standins == ["httpbin.org"]
