"""A bosun cluster on one machine, for tests and for trying bosun on a cluster (the command, `bosun cluster
up|down|status`, is entry/cli_cluster.py).

Under one folder (``--dir``, default ``<BOSUN_DATA_DIR>/cluster``) it starts:

- a 3-node NATS JetStream cluster (Debian's nats-server; routes on loopback; each node its own store and ports);
- one Temporal frontend (the dev server, as the embedded stack starts it: ``entry.stack.temporal_component``);
- with ``--tls``: nginx in front of Temporal (gRPC over TLS, client certificates verified, an API key checked) and
  NATS with TLS, client certificates and a user and password; certificates from ``infra.devcerts``;
- N worker hosts (``--hosts N``, default 3): ``bosun worker`` processes, each with its own data dir and worker id,
  against the shared Temporal and the three NATS nodes (``BOSUN_NATS_REPLICAS=3``).

Each host's settings are written to ``hosts/<host>/host.env`` (mode 0600: it holds the API key and the NATS
password with ``--tls``); ``. hosts/h1/host.env`` in a shell points any bosun command at the cluster. Ports are
chosen once (free ports below the ephemeral range, ``infra.privatestack``) and kept in ``cluster.json``, so ``up``
again restarts what is down on the same ports. Processes are not supervised: a host or node that dies stays down
until ``bosun cluster up`` (tests kill them on purpose). ``down`` stops only the processes it started (pid, start
time and command line checked).

From Python (the tests' fixture): :class:`LocalCluster` (``up``, ``down``, ``status``, ``host_env``,
``kill_host``, ``start_host``, ``kill_node``, ``start_node``, ``stream_leader``, ``kill_stream_leader``).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from entry.stack import (
    executable,
    healthy,
    http_ok,
    pid_matches,
    port_free,
    tcp_open,
    temporal_component,
    worker_health,
)
from infra import devcerts
from infra.artifacts import write_json_atomically
from infra.errors import ConfigError
from infra.privatestack import free_port, private_stack_env
from infra.settings import Settings
from sandbox import diskquota, reap_orphans

HOST = "127.0.0.1"
NODES = ("n1", "n2", "n3")
STATE = "cluster.json"
NATS_USER = "bosun"

ENGINE_PREFIXES = ("BOSUN_TEMPORAL_", "BOSUN_NATS_")
"""Settings a host never inherits from the environment that runs `bosun cluster up`: the cluster sets its own."""


@dataclass
class Proc:
    """One process of the cluster."""

    name: str
    argv: list[str]
    log: Path
    marker: str
    """A string its command line contains (nats-server's config path, Temporal's database...)."""
    ports: dict[str, int]
    """label -> port it listens on (checked free before it starts)."""
    address: str
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    files: dict[Path, str] = field(default_factory=dict)
    """Files written (mode 0600) before it starts: its configuration."""


def _starttime(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _live(rec: dict | None) -> int | None:
    """The pid of a recorded process when it still runs (command line and start time checked), else None."""
    if not rec or not pid_matches(rec["pid"], rec["marker"]) or _starttime(rec["pid"]) != rec["started"]:
        return None
    return rec["pid"]


class LocalCluster:
    """A cluster on this machine under ``folder``: 3 NATS nodes, one Temporal frontend (behind nginx with ``tls``)
    and ``hosts`` worker hosts. ``extra_env``: more settings for every host (e.g. ``BOSUN_ARTIFACT_STORE``)."""

    def __init__(self, folder: Path, *, hosts: int = 3, tls: bool = False, extra_env: dict[str, str] | None = None,
                 name: str = "bosun-local") -> None:
        if not 0 <= hosts <= 32:
            raise ConfigError(f"--hosts {hosts}: a local cluster has 0 to 32 hosts (0: the engines alone)")
        self.folder = Path(folder).resolve()
        self.hosts = hosts
        self.tls = tls
        self.extra_env = dict(extra_env or {})
        self.name = name
        self.plan = self._load_or_make_plan()

    # ---------------------------------------------------------------- the plan: ports and secrets, kept

    @property
    def state_path(self) -> Path:
        return self.folder / STATE

    def _read_state(self) -> dict | None:
        try:
            return json.loads(self.state_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None

    @staticmethod
    def saved_shape(folder: Path) -> tuple[int, bool] | None:
        """(hosts, tls) of the cluster kept in ``folder``, or None when there is none."""
        try:
            state = json.loads((Path(folder) / STATE).read_text())
            return state["hosts"], state["tls"]
        except (FileNotFoundError, json.JSONDecodeError, KeyError):
            return None

    def _load_or_make_plan(self) -> dict:
        state = self._read_state()
        if state is not None:
            alive = [n for n, rec in state.get("pids", {}).items() if _live(rec)]
            if (state["hosts"], state["tls"]) != (self.hosts, self.tls) and alive:
                shape = f"{state['hosts']} hosts{' with --tls' if state['tls'] else ''}"
                raise ConfigError(f"a cluster of {shape} runs in {self.folder}: stop it with `bosun cluster down "
                                  f"--dir {self.folder}` first, or use another --dir")
            if (state["hosts"], state["tls"]) == (self.hosts, self.tls):
                self.name = state["name"]  # the NATS cluster's and the workers' names stay what they were
                return state
        ports = {f"{n}.{kind}": free_port() for n in NODES for kind in ("client", "cluster", "monitor")}
        # (the HTTP API's port too: the settings' default would keep a second cluster on this machine from starting)
        ports.update({"temporal.frontend": free_port(), "temporal.ui": free_port(), "temporal.http": free_port()})
        if self.tls:
            ports["nginx.grpc"] = free_port()
        host_ports = {}
        for i in range(1, self.hosts + 1):
            env = private_stack_env(self.host_dir(i) / "data", worker_id=self.worker_id(i))
            host_ports[self.host_name(i)] = {k: v for k, v in env.items() if k.endswith("_PORT")}
        plan = {"name": self.name, "hosts": self.hosts, "tls": self.tls, "ports": ports, "host_ports": host_ports,
                "pids": {}}
        if self.tls:
            plan["api_key"] = secrets.token_urlsafe(32)
            plan["nats_password"] = secrets.token_urlsafe(24)
        return plan

    def _save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_json_atomically(self.state_path, self.plan, indent=2)
        self.state_path.chmod(0o600)  # the API key and the NATS password of a --tls cluster

    # ---------------------------------------------------------------- names and addresses

    @staticmethod
    def host_name(i: int) -> str:
        return f"h{i}"

    def worker_id(self, i: int) -> str:
        return f"{self.name}-{self.host_name(i)}"

    def host_dir(self, i: int) -> Path:
        return self.folder / "hosts" / self.host_name(i)

    def port(self, key: str) -> int:
        return self.plan["ports"][key]

    @property
    def nats_urls(self) -> list[str]:
        scheme = "tls" if self.tls else "nats"
        return [f"{scheme}://{HOST}:{self.port(f'{n}.client')}" for n in NODES]

    @property
    def temporal_address(self) -> str:
        """What hosts connect to: nginx with ``tls``, else the dev server."""
        return f"{HOST}:{self.port('nginx.grpc' if self.tls else 'temporal.frontend')}"

    @property
    def temporal_ui(self) -> str:
        return f"http://{HOST}:{self.port('temporal.ui')}"

    @property
    def certs(self) -> Path:
        return self.folder / "certs"

    def host_env(self, i: int) -> dict[str, str]:
        """The settings of host ``i`` (1-based): what its worker runs with and what ``hosts/h<i>/host.env`` holds."""
        env = dict(self.plan["host_ports"][self.host_name(i)])
        env.update({"BOSUN_DATA_DIR": str(self.host_dir(i) / "data"), "BOSUN_WORKER_ID": self.worker_id(i),
                    "BOSUN_TEMPORAL_ADDRESS": self.temporal_address, "BOSUN_NATS_URL": ",".join(self.nats_urls),
                    "BOSUN_NATS_REPLICAS": str(len(NODES)), "BOSUN_ARTIFACT_STORE": "nats"})
        if self.tls:
            client = self.certs / self.host_name(i)
            env.update({
                "BOSUN_TEMPORAL_TLS": "on", "BOSUN_TEMPORAL_TLS_CA": str(self.certs / "bosun-dev-ca.pem"),
                "BOSUN_TEMPORAL_TLS_CERT": str(client / "client.pem"),
                "BOSUN_TEMPORAL_TLS_KEY": str(client / "client.key"), "BOSUN_TEMPORAL_API_KEY": self.plan["api_key"],
                "BOSUN_NATS_TLS_CA": str(self.certs / "bosun-dev-ca.pem"),
                "BOSUN_NATS_TLS_CERT": str(client / "client.pem"), "BOSUN_NATS_TLS_KEY": str(client / "client.key"),
                "BOSUN_NATS_USER": NATS_USER, "BOSUN_NATS_PASSWORD": self.plan["nats_password"]})
        env.update(self.extra_env)
        return env

    # ---------------------------------------------------------------- the processes

    def _nats_proc(self, node: str) -> Proc:
        d = self.folder / "nats" / node
        conf = d / "nats.conf"
        routes = ", ".join(f'"nats-route://{HOST}:{self.port(f"{n}.cluster")}"' for n in NODES if n != node)
        lines = [f'server_name: "{node}"', f'listen: "{HOST}:{self.port(f"{node}.client")}"',
                 f'http: "{HOST}:{self.port(f"{node}.monitor")}"', f'jetstream {{ store_dir: "{d / "store"}" }}',
                 f'cluster {{ name: "{self.name}", listen: "{HOST}:{self.port(f"{node}.cluster")}", '
                 f'routes: [{routes}] }}']
        if self.tls:
            lines += [f'tls {{ cert_file: "{self.certs / "server.pem"}", key_file: "{self.certs / "server.key"}", '
                      f'ca_file: "{self.certs / "bosun-dev-ca.pem"}", verify: true, timeout: 2 }}',
                      f'authorization {{ user: "{NATS_USER}", password: "{self.plan["nats_password"]}" }}']
        return Proc(node, [executable("nats-server"), "-c", str(conf)], d / "nats.log", str(conf),
                    {f"NATS {node} client": self.port(f"{node}.client"),
                     f"NATS {node} routes": self.port(f"{node}.cluster"),
                     f"NATS {node} monitoring": self.port(f"{node}.monitor")},
                    self.nats_urls[NODES.index(node)], cwd=d, files={conf: "\n".join(lines) + "\n"})

    def _temporal_settings(self) -> Settings:
        """The settings the embedded stack would start this Temporal with (defaults, but the folder and ports)."""
        http = self.plan["ports"].get("temporal.http", Settings.model_fields["temporal_http_port"].default)
        return Settings.model_construct(data_dir=self.folder, host=HOST, temporal_port=self.port("temporal.frontend"),
                                        temporal_ui_port=self.port("temporal.ui"), temporal_http_port=http)

    def _temporal_proc(self) -> Proc:
        c = temporal_component(self._temporal_settings())
        return Proc("temporal", c.argv, self.folder / "temporal" / "temporal.log",
                    str(self.folder / "temporal" / "temporal.db"), {k: p for k, (p, _s) in c.ports.items()},
                    f"{HOST}:{self.port('temporal.frontend')} (Web UI {self.temporal_ui})", cwd=self.folder)

    def _nginx_proc(self) -> Proc:
        d = self.folder / "nginx"
        conf = d / "nginx.conf"
        key = self.plan["api_key"]
        unauth = ('default_type application/grpc; add_header grpc-status 16 always; '
                  'add_header grpc-message "{}" always; return 204;')
        text = f"""# bosun cluster --tls: Temporal's gRPC behind TLS, client certificates and an API key (generated).
daemon off;
worker_processes 1;
pid {d / "nginx.pid"};
error_log {d / "error.log"} warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {d / "tmp" / "body"}; proxy_temp_path {d / "tmp" / "proxy"};
  fastcgi_temp_path {d / "tmp" / "fastcgi"}; uwsgi_temp_path {d / "tmp" / "uwsgi"};
  scgi_temp_path {d / "tmp" / "scgi"};
  server {{
    listen {HOST}:{self.port("nginx.grpc")} ssl http2;
    ssl_certificate {self.certs / "server.pem"};
    ssl_certificate_key {self.certs / "server.key"};
    ssl_client_certificate {self.certs / "bosun-dev-ca.pem"};
    ssl_verify_client on;
    http2_max_concurrent_streams 1000;
    client_max_body_size 0;
    grpc_read_timeout 300s;
    grpc_send_timeout 300s;
    # A refusal is a gRPC status (UNAUTHENTICATED) with a message, as a Temporal server sends it.
    error_page 495 = @bad_certificate;
    error_page 496 = @no_certificate;
    location @bad_certificate {{ {unauth.format("the client certificate was not accepted")} }}
    location @no_certificate {{ {unauth.format("a client certificate is required")} }}
    location @bad_api_key {{ {unauth.format("the API key was not accepted")} }}
    location / {{
      error_page 418 = @bad_api_key;
      if ($http_authorization != "Bearer {key}") {{ return 418; }}
      grpc_pass grpc://{HOST}:{self.port("temporal.frontend")};
    }}
  }}
}}
"""
        return Proc("nginx", [executable("nginx"), "-c", str(conf), "-p", str(d), "-e", str(d / "error.log")],
                    d / "nginx.out", str(conf), {"nginx (Temporal over TLS)": self.port("nginx.grpc")},
                    f"{self.temporal_address} (TLS, client certificates, API key) -> Temporal", cwd=d,
                    files={conf: text})

    def _host_proc(self, i: int) -> Proc:
        d = self.host_dir(i)
        env = self.host_env(i)
        return Proc(self.host_name(i), [sys.executable, "-m", "entry.cli", "worker"], d / "worker.log",
                    "entry.cli worker", {}, f"worker {self.worker_id(i)}, data dir {env['BOSUN_DATA_DIR']}",
                    env=env, cwd=d)

    def procs(self) -> list[Proc]:
        out = [self._nats_proc(n) for n in NODES] + [self._temporal_proc()]
        if self.tls:
            out.append(self._nginx_proc())
        return out + [self._host_proc(i) for i in range(1, self.hosts + 1)]

    def proc(self, name: str) -> Proc:
        for p in self.procs():
            if p.name == name:
                return p
        raise ConfigError(f"no process {name!r} in the cluster (processes: {', '.join(p.name for p in self.procs())})")

    # ---------------------------------------------------------------- liveness

    def pid(self, name: str) -> int | None:
        """The pid of process ``name`` when it runs (the one this cluster started: command line and start time
        checked), else None."""
        state = self._read_state()  # another process (bosun cluster up, a test) may have started it since
        if state is not None and state.get("ports") == self.plan["ports"]:
            self.plan["pids"] = state.get("pids", {})
        return _live(self.plan["pids"].get(name))

    def healthy(self, name: str) -> bool:
        if self.pid(name) is None:
            return False
        if name in NODES:
            return http_ok(f"http://{HOST}:{self.port(f'{name}.monitor')}/healthz") and self._knows_meta_leader(name)
        if name == "temporal":
            return healthy(temporal_component(self._temporal_settings()), self._temporal_settings())
        if name == "nginx":
            return tcp_open(HOST, self.port("nginx.grpc"))
        i = int(name[1:])
        return worker_health(Settings.model_construct(data_dir=self.host_dir(i) / "data")) is not None

    # ---------------------------------------------------------------- start and stop

    def _prepare(self) -> None:
        for sub in ("hosts", "temporal", "nginx/tmp", *[f"nats/{n}/store" for n in NODES]):
            if sub.startswith("nginx") and not self.tls:
                continue
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        if self.tls:
            ca = devcerts.make_ca(self.certs)
            devcerts.issue(ca, self.certs, "server")
            for i in range(1, self.hosts + 1):
                devcerts.issue(ca, self.certs / self.host_name(i), "client", server=False)
        for i in range(1, self.hosts + 1):
            d = self.host_dir(i)
            (d / "data").mkdir(parents=True, exist_ok=True)
            env_file = d / "host.env"
            env_file.touch(mode=0o600)
            env_file.chmod(0o600)
            env_file.write_text(f"# bosun cluster {self.folder}: host {self.host_name(i)}. In a shell: . {env_file}\n"
                                + "".join(f"export {k}={shlex.quote(v)}\n" for k, v in self.host_env(i).items()))

    def start(self, name: str) -> int:
        """Start process ``name`` (a node ``n1``..., ``temporal``, ``nginx`` or a host ``h1``...) unless it runs;
        returns its pid. ConfigError when one of its ports is taken."""
        if (pid := self.pid(name)) is not None:
            return pid
        p = self.proc(name)
        for label, port in p.ports.items():
            if not port_free(HOST, port):
                raise ConfigError(f"port {port} ({label}) on {HOST} is already in use: stop what uses it, or start "
                                  f"the cluster in another folder (bosun cluster up --dir DIR)")
        for path, text in p.files.items():
            path.touch(mode=0o600)
            path.chmod(0o600)
            path.write_text(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith(ENGINE_PREFIXES)}
        env.update(p.env)
        p.log.parent.mkdir(parents=True, exist_ok=True)
        with open(p.log, "ab") as log:
            proc = subprocess.Popen(p.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    cwd=p.cwd, start_new_session=True)
        self.plan["pids"][name] = {"pid": proc.pid, "marker": p.marker, "started": None}
        for _ in range(100):  # /proc/PID/stat exists from fork; the command line from exec
            started = _starttime(proc.pid)
            if started and pid_matches(proc.pid, p.marker):
                self.plan["pids"][name]["started"] = started
                break
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        self._save()
        return proc.pid

    def signal(self, name: str, sig: int = signal.SIGKILL) -> int | None:
        """Send ``sig`` to process ``name`` and its process group (a host's sandboxes started without a session of
        their own go with it); returns the pid, or None when it was not running."""
        pid = self.pid(name)
        if pid is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, sig)
        return pid

    def stop(self, name: str, timeout_s: float = 15.0) -> None:
        """SIGTERM process ``name``, SIGKILL after ``timeout_s``."""
        pid = self.signal(name, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while pid is not None and self.pid(name) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        self.signal(name, signal.SIGKILL)
        self.plan["pids"].pop(name, None)
        self._save()

    def wait(self, names: list[str], wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            if all(self.healthy(n) for n in names):
                return
            dead = [n for n in names if self.pid(n) is None]
            if dead:
                p = self.proc(dead[0])
                raise ConfigError(f"{dead[0]} exited at start; see {p.log}: {_tail(p.log)}")
            time.sleep(0.2)
        bad = [n for n in names if not self.healthy(n)]
        raise ConfigError(f"the cluster did not become healthy within {wait_s:.0f}s ({', '.join(bad)} not healthy); "
                          f"see the logs under {self.folder}")

    def up(self, wait_s: float = 120.0) -> LocalCluster:
        """Start what is not running (idempotent) and wait until every part is healthy. A failed start stops
        what this call started."""
        self._prepare()
        self._save()
        before = {p.name for p in self.procs() if self.pid(p.name) is not None}
        try:
            engines = [*NODES, "temporal"]
            for n in engines:
                self.start(n)
            self.wait(engines, wait_s)
            if self.tls:
                self.start("nginx")
                self.wait(["nginx"], 20)
            hosts = [self.host_name(i) for i in range(1, self.hosts + 1)]
            for h in hosts:
                self.start(h)
            self.wait(hosts, wait_s)
        except BaseException:
            for p in reversed(self.procs()):
                if p.name not in before:
                    self.stop(p.name, timeout_s=5)
            raise
        return self

    def down(self) -> list[str]:
        """Stop every process this cluster started (hosts first, then nginx, Temporal, the NATS nodes); the data
        stays. Returns the names it stopped."""
        stopped = []
        for p in reversed(self.procs()):
            if self.pid(p.name) is not None:
                self.stop(p.name)
                stopped.append(p.name)
        self.plan["pids"] = {}
        if self.state_path.exists():
            self._save()
        return stopped

    # ---------------------------------------------------------------- what the tests need

    def start_host(self, i: int, wait_s: float = 60.0) -> int:
        pid = self.start(self.host_name(i))
        self.wait([self.host_name(i)], wait_s)
        return pid

    def kill_host(self, i: int, *, sandboxes: bool = True) -> int | None:
        """SIGKILL host ``i``'s worker and its process group: the host is lost, nothing of it runs a line more.
        With ``sandboxes``, what a lost machine takes with it goes too: the processes still bound to the host's
        data dir (bwrap sandboxes have sessions of their own), the containers of its dead worker
        (``sandbox.reap_orphans``, which only touches sandboxes whose owner is dead) and its workspaces' mounted
        file systems. Returns the worker's pid."""
        pid = self.signal(self.host_name(i), signal.SIGKILL)
        if pid is not None and sandboxes:
            data = str(self.host_dir(i) / "data")
            for proc in Path("/proc").iterdir():
                if proc.name.isdigit() and int(proc.name) != os.getpid():
                    with contextlib.suppress(OSError):
                        if data.encode() in (proc / "cmdline").read_bytes():
                            os.kill(int(proc.name), signal.SIGKILL)
            reap_orphans()
            diskquota.unmount_under(Path(data) / "workspaces")  # its workspaces' file systems, gone with it
        return pid

    def start_node(self, node: str, wait_s: float = 30.0) -> int:
        pid = self.start(node)
        self.wait([node], wait_s)
        return pid

    def kill_node(self, node: str) -> int | None:
        """SIGKILL NATS node ``node`` (``n1``, ``n2``, ``n3``)."""
        return self.signal(node, signal.SIGKILL)

    def _knows_meta_leader(self, node: str) -> bool:
        """Whether ``node`` knows JetStream's meta leader. A node answers /healthz before the cluster has elected
        one, and until then a stream cannot be made (the request times out)."""
        try:
            return bool((self.jsz(node).get("meta_cluster") or {}).get("leader"))
        except (OSError, ValueError, ConfigError):
            return False

    def jsz(self, node: str | None = None) -> dict:
        """JetStream's report (the monitoring port's /jsz with streams) from ``node``, or from the first live node."""
        for n in [node] if node else list(NODES):
            if self.pid(n) is None:
                continue
            url = f"http://{HOST}:{self.port(f'{n}.monitor')}/jsz?accounts=true&streams=true&config=true"
            with urllib.request.urlopen(url, timeout=3) as r:
                return json.loads(r.read())
        raise ConfigError("no NATS node of the cluster is running")

    def stream_leader(self, stream: str) -> str | None:
        """The server name of the node that leads JetStream stream ``stream`` (a key-value bucket's is
        ``KV_<bucket>``, an object store's ``OBJ_<bucket>``), or None when it has no leader (or no such stream)."""
        for n in NODES:
            if self.pid(n) is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                for account in self.jsz(n).get("account_details") or []:
                    for st in account.get("stream_detail") or []:
                        if st.get("name") == stream and (st.get("cluster") or {}).get("leader"):
                            return st["cluster"]["leader"]
        return None

    def kill_stream_leader(self, stream: str) -> str:
        """SIGKILL the node that leads ``stream``; returns its name."""
        leader = self.stream_leader(stream)
        if leader is None:
            raise ConfigError(f"stream {stream} has no leader in the cluster")
        self.kill_node(leader)
        return leader

    # ---------------------------------------------------------------- status

    def status(self) -> dict:
        procs = {}
        for p in self.procs():
            pid = self.pid(p.name)
            procs[p.name] = {"pid": pid, "healthy": pid is not None and self.healthy(p.name), "address": p.address,
                             "log": str(p.log)}
            if p.name.startswith("h") and p.name[1:].isdigit():
                procs[p.name]["env_file"] = str(self.host_dir(int(p.name[1:])) / "host.env")
        return {"folder": str(self.folder), "hosts": self.hosts, "tls": self.tls,
                "temporal": self.temporal_address, "temporal_ui": self.temporal_ui, "nats": self.nats_urls,
                "running": any(v["pid"] for v in procs.values()), "processes": procs}


def _tail(path: Path, n: int = 300) -> str:
    try:
        return " ".join(path.read_text(errors="replace")[-n:].split())
    except OSError:
        return "(no log)"
