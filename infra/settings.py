"""All of bosun's settings in one model. Every field can be set by an environment variable ``BOSUN_<FIELD>``.

docs/settings.md lists them, generated from the docstrings below (``bosun settings --describe`` prints them with their
meaning, ``bosun settings`` the values in force).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from infra.errors import ConfigError


def _default_data_dir() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "bosun"


class Settings(BaseSettings):
    """bosun's configuration. Environment variables use the prefix ``BOSUN_`` (e.g. ``BOSUN_DATA_DIR``)."""

    model_config = SettingsConfigDict(env_prefix="BOSUN_", extra="ignore")  # (docstrings: infra/fielddocs.py)

    data_dir: Path = Field(default_factory=_default_data_dir)
    """Where all state lives: Temporal's SQLite file, JetStream's store, artifacts, workspaces, logs."""

    host: str = "127.0.0.1"
    """Address the embedded stack listens on. Keep it on loopback unless you put a proxy in front."""

    temporal_address: str | None = None
    """host:port of an external Temporal frontend. Unset: the embedded dev server at host:temporal_port.
    An external server should raise `history.transferProcessorMaxPollRPS` (docs/ARCHITECTURE.md, Latency)."""
    temporal_port: int = 7233
    """gRPC port of the embedded Temporal dev server."""
    temporal_ui_port: int = 8233
    """Web UI port of the embedded Temporal dev server (runs, timelines, pending activities)."""
    temporal_http_port: int = 7243
    """HTTP API port of the embedded Temporal dev server: `bosun run` starts a task through it without loading
    Temporal's SDK (a second on a small machine)."""
    temporal_namespace: str = "default"
    """Temporal namespace bosun's workflows run in."""
    temporal_tls: bool | None = None
    """TLS to Temporal: `on` or `off`. Unset: on when any of the TLS files or an API key below is set (Temporal
    Cloud and most self-hosted clusters), off otherwise (the embedded dev server)."""
    temporal_tls_ca: Path | None = None
    """PEM file of the certificate authority that signed Temporal's server certificate. Unset: the system's
    trusted authorities (Temporal Cloud)."""
    temporal_tls_cert: Path | None = None
    """PEM file of this host's client certificate, for mutual TLS (with BOSUN_TEMPORAL_TLS_KEY)."""
    temporal_tls_key: Path | None = None
    """PEM file of the client certificate's private key (with BOSUN_TEMPORAL_TLS_CERT). Never logged."""
    temporal_tls_server_name: str | None = None
    """The name Temporal's server certificate is checked against (and sent as SNI), when it differs from the host
    of BOSUN_TEMPORAL_ADDRESS."""
    temporal_api_key: SecretStr | None = None
    """API key sent with every call as `Authorization: Bearer <key>` (Temporal Cloud's API keys; a proxy that
    checks keys). Turns TLS on unless BOSUN_TEMPORAL_TLS=off. Never logged."""

    nats_url: str | None = None
    """URL of an external NATS server with JetStream, or a comma-separated list of a cluster's servers
    (`nats://n1:4222,nats://n2:4222,nats://n3:4222`; `tls://` to require TLS). Unset: the embedded nats-server at
    host:nats_port. Credentials written into a URL are never shown."""
    nats_user: str | None = None
    """NATS user name (with BOSUN_NATS_PASSWORD)."""
    nats_password: SecretStr | None = None
    """NATS password (with BOSUN_NATS_USER). Never logged."""
    nats_token: SecretStr | None = None
    """NATS authentication token (instead of a user and password). Never logged."""
    nats_creds: Path | None = None
    """A NATS credentials file (`.creds`: the user's JWT and nkey seed, as `nsc` writes it), for servers in
    operator mode (Synadia Cloud, NGS...). Never logged."""
    nats_tls_ca: Path | None = None
    """PEM file of the certificate authority that signed the NATS servers' certificates (TLS is used when a server
    asks for it, or for `tls://` URLs). Unset: the system's trusted authorities."""
    nats_tls_cert: Path | None = None
    """PEM file of this host's client certificate for NATS (mutual TLS; with BOSUN_NATS_TLS_KEY)."""
    nats_tls_key: Path | None = None
    """PEM file of the NATS client certificate's private key (with BOSUN_NATS_TLS_CERT). Never logged."""
    nats_replicas: int = Field(default=1, ge=1, le=5)
    """Replicas of every JetStream stream, key-value bucket and object store bosun makes: 1 on one machine, 3 on a
    NATS cluster (any one node may then be lost). An existing stream or bucket with fewer is raised at start."""
    nats_port: int = 4222
    """Client port of the embedded nats-server."""
    nats_monitor_port: int = 8222
    """HTTP monitoring port of the embedded nats-server (health checks use /healthz)."""

    worker_slots: int | None = Field(default=None, ge=1, le=1024)
    """How many agents this host runs at once: a host takes an agent only while it has a free slot, so work spreads
    over hosts by free capacity. Unset: twice the CPU count (at least
    4). A task waiting for its agents holds none."""
    host_loss_s: float = Field(default=120.0, ge=10)
    """A host whose heartbeat (cluster: BOSUN_ARTIFACT_STORE=nats) has been absent this long is lost: its tasks
    move to a live host and continue from their last checkpoint."""

    artifact_store: Literal["files", "nats"] = "files"
    """Where transcripts, tool outputs and other artifacts live. `files`: this host's data dir (one machine).
    `nats`: a JetStream Object Store every host shares (a cluster: any host, or a machine with an empty data dir,
    reads any run), with a bounded local read cache. A worker refuses to start with `files` beside other hosts."""
    artifact_bucket: str = Field(default="bosun-artifacts", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The object store bucket of `BOSUN_ARTIFACT_STORE=nats` (made on first use, BOSUN_NATS_REPLICAS replicas)."""
    artifact_cache_mb: float = Field(default=2048.0, gt=0)
    """`BOSUN_ARTIFACT_STORE=nats`: the local read cache's bound (`<data dir>/artifacts-cache`); the least recently
    used artifacts leave it first (they stay in the bucket)."""
    artifact_ttl_days: float = Field(default=0.0, ge=0)
    """`BOSUN_ARTIFACT_STORE=nats`: how long the bucket keeps an artifact (0: for good). Set it no shorter than
    Temporal keeps histories, or old runs' steps show as missing."""

    task_queue: str = "bosun"
    """Shared task queue (workflows, worker binding). A task's activities go to the queue of the worker host that
    holds its workspace: ``<task_queue>@<worker_id>``."""
    worker_id: str = Field(default_factory=socket.gethostname)
    """Stable name of this worker host. Keep it stable across restarts: runs resume on the same host's queue."""

    sandbox_backend: Literal["auto", "docker", "bwrap"] = "auto"
    """Which sandbox runs tool calls. auto: docker when an engine is reachable and the image is built, else bwrap
    (the worker decides once at start; `bosun status` shows its choice)."""
    sandbox_image: str = "bosun-sandbox:latest"
    """The locally built sandbox image (docker backend). `make bootstrap` builds it."""
    sandbox_uid: int = Field(default=64000, ge=1, le=2**31 - 2)
    """The unprivileged uid (and gid) sandboxes run as when the worker is root: their workspaces are owned by it,
    and the host reads them as data. A worker that is not root runs sandboxes as its own uid."""
    sandbox_reap_s: float = Field(default=30.0, gt=0)
    """How often the worker releases sandboxes whose run is over without having released them (a terminated task,
    a child that timed out), and removes containers of workers that died."""
    sandbox_disk_mb: int = Field(default=4096, ge=0)
    """Disk a sandbox may write in its workspace beyond the checkout (MB): each workspace is a loop-mounted ext4
    file system of its own, which caps bytes and files (needs root; `bosun status` says whether it is enforced).
    0 turns the quota off."""

    default_model: str = ""
    """Model spec used when `bosun run` has no --model, e.g. `anthropic:claude-sonnet-4-5`,
    `openai:gpt-5-codex`, `openai-compatible:http://host:port/v1#model`, or `scripted:PATH` (the test double)."""
    router_config: Path | None = None
    """JSON file with the model router's configuration (tiers, per-role models and fallbacks, thresholds) used by
    `--model auto`; see agents/router.py. Unset: the built-in defaults."""
    openai_api_key: SecretStr | None = None
    """Key for `openai:` specs (also read from OPENAI_API_KEY). Never logged."""
    anthropic_api_key: SecretStr | None = None
    """Key for `anthropic:` specs (also read from ANTHROPIC_API_KEY). Never logged."""
    openai_base_url: str = "https://api.openai.com/v1"
    """Base URL for `openai:` specs: a gateway or proxy that speaks the OpenAI API (Azure OpenAI's v1 API,
    LiteLLM...)."""
    anthropic_base_url: str = "https://api.anthropic.com"
    """Base URL for `anthropic:` specs: a gateway or proxy that speaks the Anthropic Messages API."""
    openai_compatible_api_key: SecretStr | None = None
    """Key sent as `Authorization: Bearer` to every `openai-compatible:` endpoint without an entry of its own in
    BOSUN_OPENAI_COMPATIBLE_ENDPOINTS (OpenRouter, a vLLM server started with --api-key...). Never logged."""
    openai_compatible_endpoints: SecretStr | None = None
    """JSON object from base URL to that endpoint's credentials, for several `openai-compatible:` endpoints:
    `{"https://openrouter.ai/api/v1": {"api_key": "sk-or-...", "headers": {"HTTP-Referer": "https://example.org"}}}`.
    An entry applies to its URL and every URL under it (the longest match wins). Never logged."""

    ui_host: str = "127.0.0.1"
    """Address the web view listens on. Anything but loopback needs BOSUN_UI_TOKEN."""
    ui_port: int = 8790
    """Port of the web view (`bosun ui`; the stack runs it): runs, agents in parallel lanes, every step, steering."""
    ui_token: SecretStr | None = None
    """A long random string the web view asks for (Authorization: Bearer, or once ?token=...); required to listen
    beyond loopback. Never logged."""

    ingress_port: int = 8787
    """Port of the webhook ingress (POST /webhooks/github, /webhooks/gitlab, /webhooks/linear; GET /healthz). The
    stack runs the ingress and the event starter when a webhook secret is set (and a model, for the starter)."""
    github_webhook_secret: SecretStr | None = None
    """GitHub webhook secret (X-Hub-Signature-256). Unset: /webhooks/github answers 503."""
    linear_webhook_secret: SecretStr | None = None
    """Linear webhook signing secret (Linear-Signature). Unset: /webhooks/linear answers 503."""
    github_token: SecretStr | None = None
    """GitHub token for REST and git push (issues, pull requests, contents: write). Never logged."""
    linear_api_key: SecretStr | None = None
    """Linear API key (lin_api_..., sent as is) or the agent app's OAuth token (sent as Bearer). Never logged."""
    github_api_url: str = "https://api.github.com"
    """GitHub REST base URL (GitHub Enterprise: https://HOST/api/v3)."""
    linear_api_url: str = "https://api.linear.app/graphql"
    """Linear GraphQL endpoint."""
    gitlab_webhook_secret: SecretStr | None = None
    """GitLab webhook secret token (sent back as X-Gitlab-Token). Unset: /webhooks/gitlab answers 503."""
    gitlab_token: SecretStr | None = None
    """GitLab project or group access token (role Developer; scopes api and write_repository) for notes, labels,
    merge requests and git push. Never logged."""
    gitlab_api_url: str = "https://gitlab.com/api/v4"
    """GitLab REST base URL (self-managed: https://HOST/api/v4)."""

    max_turns: int = 40
    """Model turns one agent may take before it stops with status `budget_exhausted`."""
    tool_timeout_s: float = 300.0
    """Timeout of one command a tool runs in the sandbox; the whole process tree is killed past it."""
    tool_output_cap: int = 200_000
    """Bytes of a command's stdout/stderr kept; the rest is dropped with a marker."""

    environments: bool = True
    """Each task builds (or reuses) an environment for its repository and revision: interpreter, dependencies,
    the project installed, its test command (`bosun env`). `false`: tasks use the plain sandbox image."""
    env_cache: Path | None = None
    """Where environments and their base root filesystems are kept. Unset: /var/cache/bosun/environments for
    root, else ~/.cache/bosun/environments (shared by every data dir on the host)."""
    env_overrides: str | None = None
    """Environment files for repositories you do not control: a JSON object, or the path of a JSON or TOML file
    holding one, from a repository (path, URL or glob pattern) to an environment.toml; it wins over the repository's
    own declaration and detection."""
    env_build_timeout_s: float = Field(default=3600.0, gt=0)
    """Time one environment build may take (all its steps); past it the build fails and nothing is kept."""
    env_build_memory_mb: int = Field(default=8192, ge=512)
    """Memory of an environment's build container (compiling C extensions needs some)."""
    env_max_gb: float = Field(default=60.0, ge=0)
    """Disk the environment cache may use (environments and their images); after every build and on `bosun env
    prune` the least recently used go beyond it. 0: no bound."""
    env_min_free_gb: float = Field(default=10.0, ge=0)
    """Free space to leave on the environment cache's file system: before a build when there is less, after every
    build and on `bosun env prune`, the least recently used environments go while there is less (never one used
    within the hour). 0: no floor."""
    env_npm_registry: str = "https://registry.npmjs.org"
    """npm registry JavaScript/TypeScript environments take Node, npm, yarn and pnpm from (their tarballs, checked
    against the registry's sha512, kept in the environment cache's ``toolchains/``) and install their dependencies
    from (a project's own ``.npmrc`` may name another)."""
    env_debian_mirror: str = "http://deb.debian.org/debian"
    """Debian mirror debootstrap builds the base root filesystems (Python 3.9, 3.11, 3.13) from."""
    env_python_sources: Path | None = None
    """Where CPython's release archives are kept for the interpreters built from source (Python 3.6, which only
    a declaration or an evaluation recipe names): ``Python-3.6.15.tar.xz`` (or ``.tgz``) is taken from here, else
    downloaded from www.python.org into it. Unset: ``python-sources`` in the environment cache."""
    eval_jobs_per_run: int = Field(default=1000, ge=1, le=2000)
    """`bosun eval`: instance jobs (instance x variant) one run of an evaluation's workflow starts before it
    continues as new, which keeps each run's history far below Temporal's 51,200-event limit (about 16 events a
    job). A run waits for its last jobs before the next starts, so a value below a few times --max-parallel
    judges fewer at once. The report is the same for any value."""

    telemetry: bool = True
    """OpenTelemetry traces and metrics (docs/ARCHITECTURE.md, "Observability"): kept in `<data dir>/telemetry`
    (`bosun trace`), and sent to an OTLP collector when the standard OTEL_EXPORTER_OTLP_* variables name one.
    `false`: nothing recorded."""
    prometheus_port: int | None = Field(default=None, ge=1, le=65535)
    """Serve the worker's metrics for Prometheus to scrape on this port (on BOSUN_HOST). Unset: no endpoint."""
    alert_window_s: float = Field(default=300.0, gt=0)
    """Error-rate alerts: the window over which the current error rate per (tool, model, error class) is counted."""
    alert_factor: float = Field(default=3.0, gt=1)
    """An alert fires when a window's error rate exceeds the rolling baseline by this factor..."""
    alert_min_calls: int = Field(default=20, ge=1)
    """...over at least this many calls in the window..."""
    alert_min_rate: float = Field(default=0.1, ge=0, le=1)
    """...and the window's error rate is at least this (so 1 error in 20 never pages anyone)."""
    alert_webhook_url: str | None = None
    """Where alerts are POSTed as JSON (Slack-compatible: {"text": ...} plus the details). Alerts also go to the
    worker's log and to `bosun alerts`."""

    @field_validator("openai_compatible_endpoints")
    @classmethod
    def _endpoints_json(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and v.get_secret_value().strip():
            parse_endpoints(v.get_secret_value())
        return v

    @field_validator("nats_url")
    @classmethod
    def _nats_servers(cls, v: str | None) -> str | None:
        if v is not None and not v.strip():
            return None
        if v is not None:
            parse_nats_servers(v)
        return v

    @field_validator("temporal_tls", "temporal_tls_ca", "temporal_tls_cert", "temporal_tls_key",
                     "temporal_tls_server_name", "temporal_api_key", "nats_user", "nats_password", "nats_token",
                     "nats_creds", "nats_tls_ca", "nats_tls_cert", "nats_tls_key", mode="before")
    @classmethod
    def _blank_is_unset(cls, v: object) -> object:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("temporal_tls_ca", "temporal_tls_cert", "nats_tls_ca", "nats_tls_cert")
    @classmethod
    def _certificate_file(cls, v: Path | None) -> Path | None:
        return check_pem(v, "certificate") if v is not None else None

    @field_validator("temporal_tls_key", "nats_tls_key")
    @classmethod
    def _key_file(cls, v: Path | None) -> Path | None:
        return check_pem(v, "private key") if v is not None else None

    @field_validator("nats_creds")
    @classmethod
    def _creds_file(cls, v: Path | None) -> Path | None:
        return check_pem(v, "NATS credentials") if v is not None else None

    @model_validator(mode="after")
    def _together(self) -> Settings:
        """Settings that only make sense together (each message names the variables to change)."""
        for a, b in (("temporal_tls_cert", "temporal_tls_key"), ("nats_tls_cert", "nats_tls_key"),
                     ("nats_user", "nats_password")):
            if (getattr(self, a) is None) != (getattr(self, b) is None):
                have, lack = (a, b) if getattr(self, a) is not None else (b, a)
                raise ValueError(f"BOSUN_{have.upper()} is set but BOSUN_{lack.upper()} is not: they go together "
                                 "(set both, or neither)")
        if self.temporal_tls is False:
            for name in ("temporal_tls_ca", "temporal_tls_cert", "temporal_tls_server_name"):
                if getattr(self, name) is not None:
                    raise ValueError(f"BOSUN_TEMPORAL_TLS=off, but BOSUN_{name.upper()} is set: turn TLS on, or "
                                     f"unset BOSUN_{name.upper()}")
        ways = [name for name, on in (("BOSUN_NATS_USER", self.nats_user is not None),
                                      ("BOSUN_NATS_TOKEN", self.nats_token is not None),
                                      ("BOSUN_NATS_CREDS", self.nats_creds is not None)) if on]
        if len(ways) > 1:
            raise ValueError(f"{' and '.join(ways)} are different ways to authenticate to NATS: set one of them")
        if self.nats_replicas > 1 and not self.nats_url:
            raise ValueError(f"BOSUN_NATS_REPLICAS={self.nats_replicas} needs a NATS cluster (BOSUN_NATS_URL listing "
                             "its servers): the embedded nats-server is one node, so set BOSUN_NATS_REPLICAS=1")
        return self

    @property
    def temporal_target(self) -> str:
        return self.temporal_address or f"{self.host}:{self.temporal_port}"

    @property
    def temporal_tls_on(self) -> bool:
        """TLS to Temporal: BOSUN_TEMPORAL_TLS, or (unset) whether a CA, a client certificate or an API key is."""
        if self.temporal_tls is not None:
            return self.temporal_tls
        return any(v is not None for v in (self.temporal_tls_ca, self.temporal_tls_cert, self.temporal_api_key))

    @property
    def nats_target(self) -> str:
        """BOSUN_NATS_URL as given (one URL, or a comma-separated list), or the embedded server's URL."""
        return self.nats_url or f"nats://{self.host}:{self.nats_port}"

    @property
    def slots(self) -> int:
        """This host's slots (BOSUN_WORKER_SLOTS, or twice the CPU count, at least 4)."""
        return self.worker_slots or max(4, 2 * (os.cpu_count() or 2))

    @property
    def slots_queue(self) -> str:
        """The task queue every host polls for slots while it has a free one (workflows/task.py)."""
        return f"{self.task_queue}-slots"

    @property
    def nats_servers(self) -> list[str]:
        """The NATS servers to connect to (a cluster's, or the embedded server)."""
        return parse_nats_servers(self.nats_target)

    @property
    def nats_display(self) -> str:
        """The NATS servers for messages and logs: credentials written into a URL are replaced by ``***``."""
        return ",".join(redact_url(u) for u in self.nats_servers)

    @property
    def worker_queue(self) -> str:
        """The worker-specific task queue for tool calls on this host."""
        return f"{self.task_queue}@{self.worker_id}"

    @property
    def artifacts_dir(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def workspaces_dir(self) -> Path:
        return self.data_dir / "workspaces"

    @property
    def logs_dir(self) -> Path:
        return self.data_dir / "logs"


def parse_endpoints(text: str) -> dict[str, dict]:
    """BOSUN_OPENAI_COMPATIBLE_ENDPOINTS as ``{base_url: {"api_key": str | None, "headers": {str: str}}}``;
    ValueError saying what is wrong (never echoing a key)."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at line {e.lineno} column {e.colno}); expected an object from base URL "
                         'to {"api_key": ..., "headers": {...}}') from None
    if not isinstance(raw, dict):
        raise ValueError("expected a JSON object from base URL to {\"api_key\": ..., \"headers\": {...}}")
    out: dict[str, dict] = {}
    for url, entry in raw.items():
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"key {url[:80]!r} is not an http(s) base URL")
        if not isinstance(entry, dict) or set(entry) - {"api_key", "headers"}:
            raise ValueError(f"the entry for {url[:80]} must be an object with only 'api_key' and 'headers'")
        key, headers = entry.get("api_key"), entry.get("headers", {})
        if key is not None and not isinstance(key, str):
            raise ValueError(f"the api_key for {url[:80]} must be a string")
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers.items()):
            raise ValueError(f"the headers for {url[:80]} must be an object of strings")
        out[url.rstrip("/")] = {"api_key": key or None, "headers": dict(headers)}
    return out


NATS_SCHEMES = ("nats", "tls", "ws", "wss")


def redact_url(url: str) -> str:
    """``url`` with any credentials (``user:password@``, ``token@``) replaced by ``***@``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    netloc, slash, path = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return f"{scheme}{sep}{netloc}{slash}{path}"


def parse_nats_servers(text: str) -> list[str]:
    """BOSUN_NATS_URL as a list of server URLs (``host:port`` alone means ``nats://host:port``); ValueError saying
    what is wrong (credentials in a URL are never echoed)."""
    servers = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        url = entry if "://" in entry else f"nats://{entry}"
        shown = redact_url(url)
        parts = urlsplit(url)
        if parts.scheme not in NATS_SCHEMES:
            raise ValueError(f"{shown}: the scheme must be one of {', '.join(s + '://' for s in NATS_SCHEMES)}")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"{shown}: the port is not a number from 1 to 65535") from None
        if not parts.hostname or port == 0:
            raise ValueError(f"{shown}: expected scheme://host:port")
        servers.append(url)
    if not servers:
        raise ValueError("no server: expected nats://host:port, or a cluster's servers separated by commas")
    if len({u.split("://")[0] in ("ws", "wss") for u in servers}) > 1:
        raise ValueError("websocket (ws://, wss://) and plain (nats://, tls://) servers cannot be mixed")
    return servers


_PEM_MARKERS = {
    "certificate": (b"-----BEGIN CERTIFICATE-----",),
    "private key": (b"-----BEGIN PRIVATE KEY-----", b"-----BEGIN EC PRIVATE KEY-----",
                    b"-----BEGIN RSA PRIVATE KEY-----"),
    "NATS credentials": (b"-----BEGIN NATS USER JWT-----",),
}


def check_pem(path: Path, kind: str) -> Path:
    """``path`` when it is a readable PEM file of ``kind``; ValueError saying what is wrong (never its content)."""
    try:
        with open(path, "rb") as f:
            head = f.read(1 << 20)
    except FileNotFoundError:
        raise ValueError(f"no such file (expected a PEM {kind} file)") from None
    except IsADirectoryError:
        raise ValueError(f"is a directory (expected a PEM {kind} file)") from None
    except PermissionError:
        raise ValueError(f"this user ({os.geteuid()}) cannot read it (expected a PEM {kind} file)") from None
    except OSError as e:
        raise ValueError(f"cannot be read ({e.strerror}); expected a PEM {kind} file") from None
    if kind == "private key" and b"ENCRYPTED PRIVATE KEY" in head:
        raise ValueError("the private key is encrypted with a passphrase: give an unencrypted key (readable by "
                         "this user only)")
    if not any(m in head for m in _PEM_MARKERS[kind]):
        raise ValueError(f"not a PEM {kind} file (no {_PEM_MARKERS[kind][0].decode()} line)")
    if kind == "NATS credentials" and b"-----BEGIN USER NKEY SEED-----" not in head:
        raise ValueError("not a NATS credentials file: it has no -----BEGIN USER NKEY SEED----- section")
    return path


def load_settings() -> Settings:
    """Read settings from the environment (fresh every call, so tests and the CLI see changes).

    A bad value raises ConfigError naming the variable, the value and what is expected.
    """
    try:
        return Settings()
    except ValidationError as e:
        err = e.errors()[0]
        msg = err["msg"].removeprefix("Value error, ")
        field = str(err["loc"][0]) if err["loc"] else ""
        if not field:  # settings that go together: the message names them
            raise ConfigError(msg) from None
        name = f"BOSUN_{field.upper()}"
        secret = field in Settings.model_fields and "SecretStr" in str(Settings.model_fields[field].annotation)
        value = err.get("input")
        if secret:
            shown = "(a secret, not shown)"
        elif field == "nats_url" and isinstance(value, str):
            shown = repr(",".join(redact_url(u.strip()) for u in value.split(",")))
        else:
            shown = repr(value)
        raise ConfigError(f"{name}={shown} is invalid: {msg}") from None
