"""The embedded stack: Temporal dev server (SQLite), nats-server (JetStream, file store) and the bosun worker,
run as supervised child processes of one supervisor, with all state under the data dir.

``up`` starts the supervisor (detached) and waits for health; it is idempotent. ``down`` stops the supervisor,
which stops its children: only processes bosun started, found through the state file and checked by command
line. ``status`` shows each part with its address and health.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from entry.health import pid_matches, starter_health, worker_health
from infra import temporal
from infra.artifacts import write_json_atomically
from infra.errors import BosunError, ConfigError
from infra.events import bus
from infra.hosts import HostRegistry
from infra.objectstore import NatsBridge
from infra.settings import Settings, load_settings

STATE_FILE = "stack.json"

TEMPORAL_DYNAMIC_CONFIG = {
    # The history service reads its task queues (transfer: "dispatch this workflow/activity task"; timer;
    # visibility) at most `MaxPollRPS` times a second per shard, 20 by default, and the dev server has one shard.
    # Past a burst of about 20, every activity completion then waits ~50 ms before its workflow task is
    # dispatched (measured: 7 ms per sequential activity for the first 22, 50 ms for every one after). The reads
    # are triggered by new tasks, not by a timer, so a higher ceiling costs nothing when idle.
    "history.transferProcessorMaxPollRPS": 2000,
    "history.timerProcessorMaxPollRPS": 2000,
    "history.visibilityProcessorMaxPollRPS": 500,
}
"""Dynamic config the embedded Temporal dev server starts with (see docs/ARCHITECTURE.md, "Latency")."""


@dataclass(frozen=True)
class Component:
    name: str
    argv: list[str]
    ports: dict[str, tuple[int, str]]
    """label -> (port, the setting that changes it)"""
    address: str
    marker: str
    """A string the process's command line contains (so we never signal a recycled PID)."""


def executable(name: str) -> str:
    """The path of a program bosun runs (the venv's first, then PATH); ConfigError when it is missing."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise ConfigError(f"{name} is not installed; run `make bootstrap` (it installs what bosun needs)")
    return found


def temporal_component(s: Settings) -> Component:
    """The Temporal dev server of ``s`` (SQLite at ``<data dir>/temporal/temporal.db``, the Web UI, bosun's dynamic
    config): the embedded stack's, and the one frontend of `bosun cluster`."""
    return Component(
        "temporal",
        [executable("temporal"), "server", "start-dev", "--ip", s.host, "--port", str(s.temporal_port),
         "--ui-port", str(s.temporal_ui_port), "--http-port", str(s.temporal_http_port),
         "--db-filename", str(s.data_dir / "temporal" / "temporal.db"),
         "--log-level", "warn", "--namespace", s.temporal_namespace,
         "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
         *[a for k, v in TEMPORAL_DYNAMIC_CONFIG.items() for a in ("--dynamic-config-value", f"{k}={v}")]],
        {"Temporal frontend": (s.temporal_port, "BOSUN_TEMPORAL_PORT"),
         "Temporal Web UI": (s.temporal_ui_port, "BOSUN_TEMPORAL_UI_PORT"),
         "Temporal HTTP API": (s.temporal_http_port, "BOSUN_TEMPORAL_HTTP_PORT")},
        f"{s.host}:{s.temporal_port} (Web UI http://{s.host}:{s.temporal_ui_port})", "start-dev")


def components(s: Settings) -> list[Component]:
    d = s.data_dir
    comps = []
    if not s.temporal_address:
        comps.append(temporal_component(s))
    if not s.nats_url:
        comps.append(Component(
            "nats",
            [executable("nats-server"), "-a", s.host, "-p", str(s.nats_port), "-m", str(s.nats_monitor_port), "-js",
             "-sd", str(d / "nats"), "--server_name", "bosun"],
            {"NATS client": (s.nats_port, "BOSUN_NATS_PORT"),
             "NATS monitoring": (s.nats_monitor_port, "BOSUN_NATS_MONITOR_PORT")},
            f"nats://{s.host}:{s.nats_port}", "nats-server"))
    comps.append(Component("worker", [sys.executable, "-m", "entry.worker"], {},
                           f"task queues {s.task_queue}, {s.worker_queue}", "entry.worker"))
    comps.append(Component("ui", [sys.executable, "-m", "entry.ui"],
                           {"web view": (s.ui_port, "BOSUN_UI_PORT")}, ui_url(s), "entry.ui"))
    if s.github_webhook_secret or s.gitlab_webhook_secret or s.linear_webhook_secret:
        comps.append(Component("ingress", [sys.executable, "-m", "entry.events", "ingress"],
                               {"webhook ingress": (s.ingress_port, "BOSUN_INGRESS_PORT")},
                               f"http://{s.host}:{s.ingress_port}/webhooks/{{github,gitlab,linear}}",
                               "entry.events ingress"))
        if s.default_model or os.environ.get("BOSUN_EVENTS_MODEL"):
            comps.append(Component("starter", [sys.executable, "-m", "entry.events", "starter"], {},
                                   "JetStream EVENTS -> TaskWorkflow", "entry.events starter"))
    return comps


def ui_url(s: Settings, local: bool = False) -> str:
    """The web view's address (``local``: how this host reaches it, when it listens on every address)."""
    host = s.ui_host
    if local and host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    return f"http://{host}:{s.ui_port}/"


# ---------------------------------------------------------------- health checks

def port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def tcp_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def http_ok(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 300
    except Exception:
        return False


def healthy(comp: Component, s: Settings) -> bool:
    if comp.name == "temporal":
        return tcp_open(s.host, s.temporal_port) and http_ok(f"http://{s.host}:{s.temporal_ui_port}/")
    if comp.name == "nats":
        return http_ok(f"http://{s.host}:{s.nats_monitor_port}/healthz?js-enabled-only=true")
    if comp.name == "ingress":
        return http_ok(f"http://{s.host}:{s.ingress_port}/healthz")
    if comp.name == "starter":
        return starter_health(s) is not None
    if comp.name == "ui":
        return http_ok(f"{ui_url(s, local=True)}healthz")
    return worker_health(s) is not None


# ---------------------------------------------------------------- state file

def state_path(s: Settings) -> Path:
    return s.data_dir / STATE_FILE


def read_state(s: Settings) -> dict | None:
    try:
        return json.loads(state_path(s).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _write_state(s: Settings, state: dict) -> None:
    write_json_atomically(state_path(s), state, indent=2)


# ---------------------------------------------------------------- the supervisor (a detached process)

def code_fingerprint() -> str:
    """A hash of bosun's own source files: a stack started from other code must be restarted to run this code."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for pkg in ("entry", "workflows", "activities", "agents", "sandbox", "infra"):
        for path in sorted((root / pkg).rglob("*")):
            if path.suffix in (".py", ".md", ".toml") and path.is_file():
                st = path.stat()
                h.update(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


WORKFLOW_PACKAGES = ("workflows", "evaluation")
"""The packages whose code decides a run's steps: a history replays only on the code that recorded it."""
BOSUN_WORKFLOWS = ("TaskWorkflow", "AgentWorkflow", "EvalWorkflow", "EvalInstanceWorkflow")


def workflow_build(root: Path = Path(__file__).resolve().parents[1]) -> str:
    """This worker's build of bosun's workflow code: a hash of the contents of ``WORKFLOW_PACKAGES``' sources under
    ``root``, the same on every host with the same code. The worker gives it to Temporal as its build id, which the
    history of every workflow task it completes records."""
    import hashlib

    h = hashlib.sha256()
    for pkg in WORKFLOW_PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            h.update(f"{path.relative_to(root)}\0".encode() + path.read_bytes() + b"\0")
    return f"bosun-{h.hexdigest()[:16]}"


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG



def stop_child(proc: subprocess.Popen, wait_s: float) -> None:
    """Stop a child process: SIGTERM, and SIGKILL when it has not ended within ``wait_s``; reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

class Supervisor:
    """Starts the components, restarts any that exits (with backoff), stops them all on SIGTERM."""

    def __init__(self, s: Settings) -> None:
        self.s = s
        self.comps = components(s)
        self.procs: dict[str, subprocess.Popen] = {}
        self.restarts: dict[str, int] = {c.name: 0 for c in self.comps}
        self.stopping = False
        self.code = code_fingerprint()
        self.build = workflow_build()

    def _start(self, c: Component) -> None:
        log = open(self.s.logs_dir / f"{c.name}.log", "ab")
        env = dict(os.environ)
        env["BOSUN_DATA_DIR"] = str(self.s.data_dir)
        self.procs[c.name] = subprocess.Popen(c.argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                              env=env, preexec_fn=_die_with_parent, cwd=self.s.data_dir)
        log.close()

    def _save(self) -> None:
        _write_state(self.s, {
            "supervisor": {"pid": os.getpid(), "marker": "entry.stack"},
            "code": self.code,
            "build": self.build,
            "components": {c.name: {"pid": self.procs[c.name].pid, "marker": c.marker, "address": c.address,
                                    "restarts": self.restarts[c.name]} for c in self.comps if c.name in self.procs},
        })

    def _stop(self, *_: object) -> None:
        self.stopping = True

    def run(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        self._save()  # from the start, and after each component: `bosun down` finds a stack still coming up
        for c in self.comps:
            if c.name in ("worker", "ingress", "starter", "ui"):  # these need Temporal and NATS up first
                deadline = time.monotonic() + 60
                while not self.stopping and time.monotonic() < deadline and not all(
                        healthy(x, self.s) for x in self.comps if x.name in ("temporal", "nats")):
                    time.sleep(0.2)
            if self.stopping:
                break
            self._start(c)
            self._save()
        backoff: dict[str, float] = {}
        while not self.stopping:
            time.sleep(0.5)
            for c in self.comps:
                p = self.procs[c.name]
                if p.poll() is not None and not self.stopping:
                    delay = backoff.get(c.name, 0.5)
                    print(f"{c.name} exited with {p.returncode}; restarting in {delay:.1f}s", flush=True)
                    time.sleep(delay)
                    backoff[c.name] = min(delay * 2, 30)
                    self.restarts[c.name] += 1
                    self._start(c)
                    self._save()
        # Stop in reverse order: worker first, then NATS, then Temporal.
        for c in reversed(self.comps):
            if c.name in self.procs:
                stop_child(self.procs[c.name], 15)
        state_path(self.s).unlink(missing_ok=True)


# ---------------------------------------------------------------- commands

def running(s: Settings) -> dict | None:
    state = read_state(s)
    if state and pid_matches(state["supervisor"]["pid"], state["supervisor"]["marker"]):
        return state
    return None


def up(s: Settings | None = None, *, wait_s: float = 90.0, out=print) -> int:
    s = s or load_settings()
    for d in (s.data_dir, s.logs_dir, s.data_dir / "temporal", s.data_dir / "nats"):
        d.mkdir(parents=True, exist_ok=True)
    state = running(s)
    if state and state.get("code") != code_fingerprint():
        if state.get("build") == workflow_build():
            out("bosun's code changed since the stack started: restarting it so the worker runs the current code "
                "(runs in progress resume after the restart)")
        else:
            out("bosun's code changed since the stack started, its workflow code too: restarting it so the worker "
                "runs the current code. Runs in progress that the old workflow code started may not replay on it: "
                "the worker's log names them (drain, then upgrade: docs/operations.md, \"Upgrading\")")
        down(s, out=out)
    elif state:
        out(f"bosun stack already running (data dir {s.data_dir})")
        return status(s, out=out)
    _cleanup_stale(s)
    for c in components(s):
        for label, (port, setting) in c.ports.items():
            if not port_free(s.host, port):
                raise ConfigError(f"port {port} ({label}) on {s.host} is already in use; set {setting} to a free port")
    log = open(s.logs_dir / "supervisor.log", "ab")
    env = dict(os.environ, BOSUN_DATA_DIR=str(s.data_dir))
    proc = subprocess.Popen([sys.executable, "-m", "entry.stack", "--supervise"], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    log.close()
    try:
        return _wait_healthy(s, proc, wait_s, out)
    except BaseException:
        # Never leave a half-started stack behind: stop the supervisor (its children die with it), then anything
        # the state file still names.
        stop_child(proc, 30)
        down(s, out=lambda _msg: None)
        raise


def _wait_healthy(s: Settings, proc: subprocess.Popen, wait_s: float, out) -> int:
    deadline = time.monotonic() + wait_s
    comps = components(s)
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConfigError(f"the stack supervisor exited with {proc.returncode}; see {s.logs_dir}/supervisor.log")
        state = read_state(s)
        if state and "worker" in state.get("components", {}) and all(healthy(c, s) for c in comps):
            out(f"bosun stack up (data dir {s.data_dir})")
            return status(s, out=out)
        time.sleep(0.25)
    unhealthy = ", ".join(c.name for c in comps if not healthy(c, s))
    raise ConfigError(f"the stack did not become healthy within {wait_s:.0f}s ({unhealthy} not healthy); "
                      f"see the logs in {s.logs_dir}")


def _cleanup_stale(s: Settings) -> None:
    """A supervisor that died hard may leave children: stop those we started (checked by command line)."""
    state = read_state(s)
    if not state:
        return
    for info in state.get("components", {}).values():
        if pid_matches(info.get("pid"), info.get("marker", "\0")):
            os.kill(info["pid"], signal.SIGTERM)
    state_path(s).unlink(missing_ok=True)


def down(s: Settings | None = None, *, out=print) -> int:
    s = s or load_settings()
    state = read_state(s)
    if not state:
        out("bosun stack is not running")
        return 0
    sup = state["supervisor"]
    if pid_matches(sup["pid"], sup["marker"]):
        os.kill(sup["pid"], signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and pid_matches(sup["pid"], sup["marker"]):
            time.sleep(0.1)
    # Anything the supervisor could not stop (or a supervisor that was killed): stop it here.
    for info in state.get("components", {}).values():
        pid, marker = info.get("pid"), info.get("marker", "\0")
        if pid_matches(pid, marker):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and pid_matches(pid, marker):
                time.sleep(0.1)
            if pid_matches(pid, marker):
                os.kill(pid, signal.SIGKILL)
    state_path(s).unlink(missing_ok=True)
    out("bosun stack stopped")
    return 0


def engines(s: Settings) -> dict[str, dict]:
    """The external engines (BOSUN_TEMPORAL_ADDRESS, BOSUN_NATS_URL; the embedded ones are components of the
    stack), each with ``healthy``, its address and what it says about its cluster, or the ``error`` that made it
    unhealthy (naming the setting to check; never a secret)."""
    if not (s.temporal_address or s.nats_url):
        return {}

    async def probe() -> dict[str, dict]:
        out: dict[str, dict] = {}
        if s.temporal_address:
            entry: dict = {"address": s.temporal_address, "tls": s.temporal_tls_on,
                           "api_key": s.temporal_api_key is not None, "healthy": False}
            try:
                entry.update(await temporal.describe(await temporal.connect(s, timeout_s=5)), healthy=True)
            except Exception as e:  # noqa: BLE001 - any failure makes it unhealthy, said in one line
                entry["error"] = str(e) if isinstance(e, ConfigError) else f"{type(e).__name__}: {one_line(e)}"
            out["temporal"] = entry
        if s.nats_url:
            entry = {"address": s.nats_display, "replicas_setting": s.nats_replicas, "healthy": False}
            try:
                nc = await bus.connect_nats(s, name="bosun-status")
                try:
                    entry.update(await bus.describe_nats(nc), healthy=True)
                finally:
                    await nc.close()
            except Exception as e:  # noqa: BLE001 - any failure makes it unhealthy, said in one line
                entry["error"] = str(e) if isinstance(e, (ConfigError, ConnectionError)) else \
                    f"{type(e).__name__}: {one_line(e)}"
            out["nats"] = entry
        return out

    return asyncio.run(probe())


def one_line(e: BaseException) -> str:
    return (str(e).splitlines() or [""])[0][:200] or type(e).__name__


def _engine_line(name: str, info: dict) -> str:
    head = f"  {name:<9} {'healthy' if info['healthy'] else 'DOWN':<8} external {info['address']}"
    if not info["healthy"]:
        return f"{head}: {info.get('error', '?')}"
    if name == "temporal":
        how = ", ".join(w for w, on in (("TLS", info["tls"]), ("API key", info["api_key"])) if on) or "plain"
        return (f"{head} ({how}): cluster {info['cluster_name']}, Temporal {info['server_version']}, "
                f"{info['history_shards']} history shards")
    streams = "; ".join(f"{n} R{v['replicas']} (leader {v['leader'] or '-'}, {v['current']} current)"
                        for n, v in sorted(info["streams"].items()))
    return (f"{head}: server {info['server']} of cluster {info['cluster'] or '(none)'}, {info['cluster_size']} "
            f"server(s); JetStream {streams or 'no streams yet'}")


def _hosts(s: Settings) -> list[dict]:
    """The worker hosts of a cluster (BOSUN_ARTIFACT_STORE=nats) from their heartbeats, each with its age and
    whether it counts as live (BOSUN_HOST_LOSS_S); [] on one machine."""
    if s.artifact_store != "nats":
        return []
    bridge = NatsBridge(s, "bosun-status")
    try:
        beats = HostRegistry(s, bridge).all()
    except BosunError:
        return []
    finally:
        bridge.close()
    return [b.model_dump() | {"age_s": round(b.age(), 1), "live": b.age() <= s.host_loss_s} for b in beats]


def _shared_lines(ext: dict, hosts: list[dict]) -> list[str]:
    """The status lines of the external engines and of the worker hosts that share them."""
    return [*(_engine_line(name, info) for name, info in ext.items()), *(_host_line(h) for h in hosts)]


def _host_line(h: dict) -> str:
    return (f"  host      {'live' if h['live'] else 'LOST':<8} {h['worker_id']}: slots {h['in_use']}/{h['slots']} in "
            f"use, queue {h['queue']}, heartbeat {h['age_s']:.0f} s ago")


def status(s: Settings | None = None, *, out=print, as_json: bool = False) -> int:
    s = s or load_settings()
    state = running(s)
    comps = {c.name: c for c in components(s)}
    ext = engines(s)
    ext_ok = all(e["healthy"] for e in ext.values())
    hosts = _hosts(s)
    report: dict = {"running": state is not None, "data_dir": str(s.data_dir), "components": {}, "engines": ext,
                    "hosts": hosts}
    alone = worker_health(s) if not state else None
    if alone:  # `bosun worker` run by itself (a host of a cluster, a service manager): no stack, a live worker
        report["running"] = True
        report["components"]["worker"] = {"healthy": True, "pid": alone["pid"], "restarts": 0,
                                          "address": f"task queues {s.task_queue}, {s.worker_queue} (bosun worker)"}
        if as_json:
            out(json.dumps(report, indent=2))
        else:
            out(f"  {'worker':<9} {'healthy':<8} pid {alone['pid']:<8} "
                f"{report['components']['worker']['address']}; sandbox backend {alone.get('sandbox_backend', '?')}, "
                f"slots {alone.get('slots_in_use', '?')}/{alone.get('slots', '?')} in use")
            for line in _shared_lines(ext, hosts):
                out(line)
            out(f"  data dir  {s.data_dir}")
        return 0 if ext_ok else 1
    if not state:
        if as_json:
            out(json.dumps(report, indent=2))
        else:
            out(f"bosun stack is not running (data dir {s.data_dir}); start it with `bosun up`")
            for line in _shared_lines(ext, hosts):
                out(line)
        return 3
    ok = ext_ok
    lines = []
    for name, info in state["components"].items():
        c = comps.get(name)
        alive = pid_matches(info["pid"], info["marker"])
        health = alive and c is not None and healthy(c, s)
        ok &= health
        report["components"][name] = {"healthy": health, "pid": info["pid"], "address": info["address"],
                                      "restarts": info.get("restarts", 0)}
        restarts = f"  (restarted {info['restarts']} times)" if info.get("restarts") else ""
        extra = ""
        if name == "worker" and health:
            wh = worker_health(s) or {}
            extra = (f"; sandbox backend {wh.get('sandbox_backend', '?')}, runs as {wh.get('sandbox_user', '?')}, "
                     f"disk quota {wh.get('disk_quota', '?')}, slots {wh.get('slots_in_use', '?')}/"
                     f"{wh.get('slots', '?')} in use, artifacts {wh.get('artifact_store', '?')}")
        lines.append(f"  {name:<9} {'healthy' if health else 'DOWN':<8} pid {info['pid']:<8} {info['address']}"
                     f"{extra}{restarts}")
    if as_json:
        out(json.dumps(report, indent=2))
        return 0 if ok else 1
    for line in [*lines, *_shared_lines(ext, hosts)]:
        out(line)
    out(f"  data dir  {s.data_dir}")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--supervise"]:
        Supervisor(load_settings()).run()
    else:
        print("usage: python -m entry.stack --supervise  (use `bosun up` instead)", file=sys.stderr)
        sys.exit(2)
