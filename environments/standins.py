"""Local stand-ins for public test services that a project's tests reach by name (pure: shell text and a scan).

A sandbox has no network, and the SWE-bench harness's containers do. Some projects' tests call a public test
service: requests before 2.8 calls ``http://httpbin.org`` and ``https://httpbin.org``, and it changes the scheme
of those addresses. Those tests can only pass here against a stand-in. A stand-in answers the name over HTTP and
HTTPS on loopback, like this:

- the service, a WSGI app of the environment (``httpbin``: ``KNOWN``), is served with werkzeug on 127.0.0.1:PORT
  (HTTP) and PORT+1 (HTTPS); without werkzeug, with the standard library's threaded wsgiref server. The HTTPS
  side wraps the listening socket with the standard library's ``ssl``, so that any werkzeug version works;
- the certificate is made in the sandbox at each start by ``openssl`` (part of every base, through
  ca-certificates): a throwaway CA, and a certificate for the names and 127.0.0.1 that it signs. The CA's key is
  deleted once it has signed;
- the names reach it through a ``sitecustomize`` put first on ``PYTHONPATH``. It maps ``socket.getaddrinfo`` and
  ``gethostbyname`` for those names: port 80 to PORT, 443 to PORT+1, any other port to loopback. Every other name
  resolves as before, and the sitecustomize it shadows still runs. It also trusts the throwaway CA beside the CAs
  a client names (``SSLContext.load_verify_locations`` and ``set_default_verify_paths``): requests' tests verify
  with requests' own bundle (``Session.send`` reads no ``REQUESTS_CA_BUNDLE``). In a sandbox with no network
  that CA can vouch only for the stand-in. Only Python processes see any of this, and only those of the test
  command.

Detection adds a stand-in when a test file names a ``KNOWN`` host in a URL (``scan``); the environment then gets the
service's package as a soft requirement. A declaration names them (``standins = ["httpbin.org"]``, the package a
requirement). The stand-ins start before the tests, once per sandbox (``start_lines``, ``wrap``): when a
prediction is judged, when an agent runs ``run_tests`` and for ``bosun sandbox exec --env``; not for an agent's
``run_command``.
"""

from __future__ import annotations

import re
import shlex

KNOWN: dict[str, tuple[str, str]] = {"httpbin.org": ("httpbin", "httpbin:app")}
"""Host -> (the distribution that serves it, its WSGI app as ``module:attribute``)."""
PORT = 8765
"""HTTP on PORT, HTTPS on PORT + 1 (loopback of the sandbox)."""
DIR = "/tmp/bosun-standin"
_URL = re.compile(r"https?://([a-z0-9.-]+)", re.I)

_SERVE = r'''
import os, ssl, sys, threading
from importlib import import_module

here, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
module, _, attr = target.partition(":")
app = getattr(import_module(module), attr)


def https_app(environ, start_response):
    environ["wsgi.url_scheme"], environ["HTTPS"] = "https", "on"
    return app(environ, start_response)


def server(port, wsgi):
    try:  # the server the service's own command uses
        from werkzeug.serving import make_server
        return make_server("127.0.0.1", port, wsgi, threaded=True)
    except ImportError:
        from socketserver import ThreadingMixIn
        from wsgiref.simple_server import WSGIServer, make_server

        class Threaded(ThreadingMixIn, WSGIServer):
            daemon_threads = True
        return make_server("127.0.0.1", port, wsgi, server_class=Threaded)


ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(os.path.join(here, "cert.pem"), os.path.join(here, "key.pem"))
plain, tls = server(port, app), server(port + 1, https_app)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True, do_handshake_on_connect=False)
threading.Thread(target=tls.serve_forever, daemon=True).start()
print("stand-in: %s on 127.0.0.1:%d (http) and :%d (https)" % (target, port, port + 1), flush=True)
plain.serve_forever()
'''
"""The server (the environment's Python; run from /tmp, never from the workspace)."""

_HOOK = r'''
"""bosun: names of public test services answered by a local stand-in (the sandbox has no network)."""
import os as _os
import socket as _socket


def _bosun_standin():
    names = {n.lower() for n in _os.environ.get("BOSUN_STANDIN_HOSTS", "").split(",") if n}
    port = int(_os.environ.get("BOSUN_STANDIN_PORT", "0") or 0)
    if not names or not port:
        return
    ports = {80: port, 443: port + 1}
    real_getaddrinfo, real_gethostbyname = _socket.getaddrinfo, _socket.gethostbyname

    def ours(host):
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        return isinstance(host, str) and host.lower().rstrip(".") in names

    def getaddrinfo(host, port, *args, **kwargs):
        if ours(host):
            try:
                port = ports.get(int(port or 0), port)
            except (TypeError, ValueError):
                port = ports.get({"http": 80, "https": 443}.get(str(port), 0), port)
            return real_getaddrinfo("127.0.0.1", port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def gethostbyname(host):
        return "127.0.0.1" if ours(host) else real_gethostbyname(host)

    _socket.getaddrinfo, _socket.gethostbyname = getaddrinfo, gethostbyname
    ca = _os.environ.get("BOSUN_STANDIN_CA", "")
    if not ca or not _os.path.isfile(ca):
        return
    import ssl
    real_locations, real_defaults = ssl.SSLContext.load_verify_locations, ssl.SSLContext.set_default_verify_paths

    def load_verify_locations(self, *args, **kwargs):
        real_locations(self, *args, **kwargs)
        real_locations(self, cafile=ca)

    def set_default_verify_paths(self):
        real_defaults(self)
        real_locations(self, cafile=ca)

    ssl.SSLContext.load_verify_locations = load_verify_locations
    ssl.SSLContext.set_default_verify_paths = set_default_verify_paths


_bosun_standin()


def _bosun_chain():
    """Run the sitecustomize this one shadows, if there is one."""
    import importlib.machinery, sys
    here = _os.path.dirname(_os.path.abspath(__file__))
    rest = [p for p in sys.path if _os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != _os.path.abspath(__file__):
        spec.loader.exec_module(type(_os)("sitecustomize"))


_bosun_chain()
'''
"""The name mapping (a sitecustomize on PYTHONPATH: every Python process of the test command)."""


def scan(texts: dict[str, str]) -> list[tuple[str, str]]:
    """(host, test file) for each ``KNOWN`` host that a test file names in a URL (``http://httpbin.org/``), in
    KNOWN's order; texts are the repository's (hostile) data, only searched."""
    found: dict[str, str] = {}
    for path, text in sorted(texts.items()):
        for m in _URL.finditer(text):
            host = m.group(1).lower().rstrip(".")
            if host in KNOWN and host not in found:
                found[host] = path
    return [(h, found[h]) for h in KNOWN if h in found]


def requirements(hosts: list[str] | tuple[str, ...]) -> list[str]:
    """The distributions that serve ``hosts`` (installed in the environment)."""
    return list(dict.fromkeys(KNOWN[h][0] for h in hosts if h in KNOWN))


def start_lines(hosts: list[str] | tuple[str, ...],
                known: dict[str, tuple[str, str]] = KNOWN) -> list[str]:
    """Shell lines that start the stand-ins for ``hosts`` and export what points the tests at them. The
    server's output goes to DIR/service.log, which is printed when it does not answer. Nothing of the workspace runs:
    the server starts from DIR. Hosts not in ``known``, or served by another app than the first host's, are left
    out; no line when none is known."""
    hosts = [h for h in hosts if h in known]
    if not hosts:
        return []
    target = known[hosts[0]][1]
    hosts = [h for h in hosts if known[h][1] == target]  # one server, one app (one known app today: httpbin)
    names = ",".join(hosts)
    alt = ",".join([f"DNS:{h}" for h in hosts] + ["IP:127.0.0.1", "DNS:localhost"])
    d = shlex.quote(DIR)
    log = ">>" + shlex.quote(f"{DIR}/service.log") + " 2>&1"
    setup = [
        f"mkdir -p {d}/hook",
        f"cat > {d}/serve.py <<'BOSUN_STANDIN_EOF'{_SERVE}BOSUN_STANDIN_EOF",
        f"cat > {d}/hook/sitecustomize.py <<'BOSUN_STANDIN_EOF'{_HOOK}BOSUN_STANDIN_EOF",
        f"printf '{_CA_CONFIG}' > {d}/ca.cnf",
        f"printf 'subjectAltName=%s\\n{_LEAF_EXTENSIONS}' {shlex.quote(alt)} > {d}/cert.ext",
        f"(cd {d} && openssl req -x509 -config ca.cnf -newkey rsa:2048 -nodes -days 2 -keyout ca.key -out ca.pem && "
        f"openssl req -new -config ca.cnf -subj /CN={shlex.quote(hosts[0])} -newkey rsa:2048 -nodes "
        f"-keyout key.pem -out cert.csr && "
        f"openssl x509 -req -in cert.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile cert.ext "
        f"-out cert.pem && rm -f ca.key) {log}",
    ]
    setup.append(f"(cd {d} && exec python serve.py {d} {PORT} {shlex.quote(target)}) {log} &")
    setup.append(f"python -c {shlex.quote(WAIT.format(ports=(PORT, PORT + 1)))} $! || cat {d}/service.log")
    # Started once per sandbox: a later command in the same sandbox (docker keeps its processes) finds it answering
    # and keeps its CA (a new one would not match the running server's certificate).
    lines = [f"if ! {{ test -f {d}/ca.pem && python -c {shlex.quote(ANSWERS.format(ports=(PORT, PORT + 1)))}; }} "
             f"2>/dev/null; then", *(f"  {line}" for line in setup), "fi"]
    lines += [f"export BOSUN_STANDIN_HOSTS={shlex.quote(names)} BOSUN_STANDIN_PORT={PORT}",
              f"export BOSUN_STANDIN_CA={d}/ca.pem PYTHONPATH={d}/hook${{PYTHONPATH:+:$PYTHONPATH}}"]
    return lines


def wrap(cmd: list[str] | str, hosts: list[str] | tuple[str, ...],
         known: dict[str, tuple[str, str]] = KNOWN) -> list[str] | str:
    """``cmd`` run with the stand-ins for ``hosts`` started before it (``start_lines``); ``cmd`` itself when none is
    known. An argv becomes ``sh -c 'LINES; exec "$@"' sh ARGV...`` (its words are never parsed by a shell), a shell
    line is put after the lines. The stand-ins write nothing to the command's output unless they fail to start."""
    lines = start_lines(hosts, known)
    if not lines:
        return cmd
    if isinstance(cmd, str):
        return "\n".join([*lines, cmd])
    return ["sh", "-c", "\n".join([*lines, 'exec "$@"']), "sh", *cmd]


_CA_CONFIG = ("[req]\\ndistinguished_name = dn\\nx509_extensions = ca\\nprompt = no\\n[dn]\\nCN = bosun-standin-ca\\n"
              "[ca]\\nbasicConstraints = critical,CA:TRUE\\nkeyUsage = critical,keyCertSign,cRLSign\\n"
              "subjectKeyIdentifier = hash\\n")
"""The throwaway CA's openssl configuration (printf text): the same extensions on every OpenSSL the bases have
(1.1.1 on bullseye adds its own configuration's to ``-addext``, twice over, and then refuses the CA)."""
_LEAF_EXTENSIONS = ("basicConstraints = CA:FALSE\\nextendedKeyUsage = serverAuth\\n"
                    "authorityKeyIdentifier = keyid\\n")

_PROBE = "[socket.create_connection(('127.0.0.1', p), 0.5).close() for p in {ports}]"
"""Connect to every port (raises OSError when one does not answer)."""
WAIT = ("import socket, sys, time\n"
        "def alive(pid):\n"
        "    try:\n"
        "        return open('/proc/%s/stat' % pid).read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
        "    except (OSError, IndexError):\n"
        "        return False\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        " + _PROBE + "; sys.exit(0)\n"
        "    except OSError:\n"
        "        if len(sys.argv) > 1 and not alive(sys.argv[1]):\n"
        "            sys.exit(1)\n"
        "        time.sleep(0.2)\n"
        "sys.exit(1)\n")
"""Wait (at most about 20 s) until every port answers; at once when the server (its pid the argument) is gone,
as when the service's package is not installed."""
ANSWERS = "import socket\n" + _PROBE + "\n"
"""Exit 0 when every port answers now (a stand-in this sandbox started before)."""
