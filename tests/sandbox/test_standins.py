"""A public test service's stand-in, started by the judging script's lines in real sandboxes of an environment
(both backends): its name answers over HTTP and HTTPS on the standard ports, its certificate is trusted beside
the CAs a client names (and only with the hook), a scheme written in any case works, and every other name resolves
as before."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sandbox.base import Sandbox
from sandbox.environments import standins

from .conftest import ENV_BACKENDS

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
