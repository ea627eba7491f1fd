"""Temporal wiring: the client bosun uses everywhere (pydantic payloads; OpenTelemetry tracing when telemetry is
on, so a task's spans from the CLI or the webhook through every workflow and activity form one trace), with TLS,
a client certificate and an API key when the settings name them (BOSUN_TEMPORAL_TLS*, BOSUN_TEMPORAL_API_KEY)."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta

from temporalio.api.operatorservice.v1 import ListClustersRequest
from temporalio.api.workflowservice.v1 import GetClusterInfoRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.runtime import Runtime
from temporalio.service import TLSConfig

from infra.errors import ConfigError
from infra.settings import Settings
from infra.temporal_http import TASK_WORKFLOW  # noqa: F401 - the name the gateway starts tasks by


def tls_config(settings: Settings) -> TLSConfig | bool:
    """The SDK's TLS configuration from the settings: False when TLS is off; else the CA, the client certificate
    and key (mutual TLS) and the server name, each when set (an unset CA means the system's authorities)."""
    if not settings.temporal_tls_on:
        return False
    ca, cert, key = (p.read_bytes() if p is not None else None for p in
                     (settings.temporal_tls_ca, settings.temporal_tls_cert, settings.temporal_tls_key))
    return TLSConfig(server_root_ca_cert=ca, client_cert=cert, client_private_key=key,
                     domain=settings.temporal_tls_server_name)


def explain(error: BaseException, settings: Settings) -> str:
    """Which setting to check for a failed connection or call (one sentence, without the secret)."""
    target = settings.temporal_target
    # Classified without the address: a port such as 29403 or 14010 must not read as a 403 or a 401
    text = str(error).replace(target, "<target>")
    if "UnknownIssuer" in text or "certificate verify failed" in text or "BadSignature" in text:
        return (f"Temporal's server certificate at {target} is not signed by a trusted authority: check "
                "BOSUN_TEMPORAL_TLS_CA (the PEM file of the authority that signed it)")
    if "NotValidForName" in text or "hostname mismatch" in text:
        return (f"Temporal's server certificate does not name the host of {target}: set "
                "BOSUN_TEMPORAL_TLS_SERVER_NAME to a name it holds, or check BOSUN_TEMPORAL_ADDRESS")
    if re.search(r"CertificateRequired|certificate required|BadCertificate|UnknownCA|client certificate", text,
                 re.IGNORECASE):
        return (f"Temporal at {target} did not accept this host's client certificate: check "
                "BOSUN_TEMPORAL_TLS_CERT and BOSUN_TEMPORAL_TLS_KEY (mutual TLS: a certificate its authority signed)")
    if re.search(r"Unauthenticated|PermissionDenied|\b40[13]\b|unauthori[sz]ed", text, re.IGNORECASE):
        key = "BOSUN_TEMPORAL_API_KEY" if settings.temporal_api_key else "BOSUN_TEMPORAL_API_KEY (unset)"
        return (f"Temporal at {target} refused the credentials: check {key}, and BOSUN_TEMPORAL_NAMESPACE "
                f"({settings.temporal_namespace}) for a key of another namespace")
    if settings.temporal_tls_on and re.search(r"InvalidContentType|CorruptMessage|wrong version number|"
                                              r"record overflow|InvalidMessage", text):
        return f"Temporal at {target} does not speak TLS: set BOSUN_TEMPORAL_TLS=off, or check BOSUN_TEMPORAL_ADDRESS"
    if not settings.temporal_tls_on and re.search(r"h2 protocol error|GoAway|FRAME_SIZE_ERROR|400 Bad Request",
                                                  text):
        return (f"Temporal at {target} expects TLS: set BOSUN_TEMPORAL_TLS=on (and BOSUN_TEMPORAL_TLS_CA, "
                "BOSUN_TEMPORAL_TLS_CERT/KEY or BOSUN_TEMPORAL_API_KEY as it requires)")
    first = plain_reason(error)
    if settings.temporal_address:
        tls = "" if settings.temporal_tls_on else "; BOSUN_TEMPORAL_TLS=on if it expects TLS"
        return f"cannot reach Temporal at {target} ({first}): check BOSUN_TEMPORAL_ADDRESS{tls}"
    return (f"cannot reach Temporal at {target} ({first}); start the embedded stack with `bosun up`, or set "
            "BOSUN_TEMPORAL_ADDRESS")


PLAIN = ((r"ConnectionRefused|Connection refused", "nothing listens there: connection refused"),
         (r"dns error|failed to lookup address|Name or service not known|nodename nor servname",
          "its host name does not resolve"),
         (r"NetworkUnreachable|HostUnreachable|No route to host|Network is unreachable", "no route to that host"),
         (r"ConnectionReset|Connection reset", "the connection was reset"),
         (r"timed out|Timeout|deadline", "no answer in time"))
"""Low-level connection errors (tonic's, the OS's) in plain words: what a person can act on."""


def plain_reason(error: BaseException) -> str:
    """Why a connection failed, in a few plain words (never a transport library's raw text cut mid-word)."""
    text = str(error)
    if isinstance(error, TimeoutError) or not text:
        return "no answer in time"
    for pattern, words in PLAIN:
        if re.search(pattern, text, re.IGNORECASE):
            return words
    first = re.sub(r"^(Failed client connect: )?(Server connection error: )?", "", text.splitlines()[0]).strip()
    return first if len(first) <= 160 else first[:160].rsplit(" ", 1)[0] + " ..."


def _scrub(text: str, settings: Settings) -> str:
    key = settings.temporal_api_key.get_secret_value() if settings.temporal_api_key else ""
    return text.replace(key, "***") if key else text


async def connect(settings: Settings, *, timeout_s: float = 10.0, tracing: bool = False,
                  runtime: Runtime | None = None) -> Client:
    """Connect to Temporal; a clear ConfigError naming the setting to check when nothing answers at the configured
    address, or TLS, the client certificate or the API key is refused. ``tracing``: add temporalio's
    TracingInterceptor (client and the workers made from this client); ``runtime``: the SDK runtime (its telemetry:
    Temporal's own metrics)."""
    api_key = settings.temporal_api_key.get_secret_value() if settings.temporal_api_key else None
    try:
        return await asyncio.wait_for(
            Client.connect(settings.temporal_target, namespace=settings.temporal_namespace,
                           data_converter=pydantic_data_converter, tls=tls_config(settings), api_key=api_key,
                           interceptors=_tracing() if tracing else [], runtime=runtime), timeout_s)
    except (TimeoutError, RuntimeError, OSError) as e:
        raise ConfigError(_scrub(explain(e, settings), settings)) from None


async def describe(client: Client) -> dict:
    """What the connected Temporal says about itself: ``cluster_name``, ``server_version``, ``history_shards``,
    and ``clusters`` (the clusters of its replication group, when the server lets this client list them; Temporal
    does not tell clients how many hosts serve a cluster)."""
    info = await client.workflow_service.get_cluster_info(GetClusterInfoRequest(), timeout=timedelta(seconds=5))
    out = {"cluster_name": info.cluster_name, "server_version": info.server_version,
           "history_shards": info.history_shard_count, "clusters": None}
    try:
        listed = await client.operator_service.list_clusters(ListClustersRequest(), timeout=timedelta(seconds=5))
        out["clusters"] = len(listed.clusters)
    except Exception:  # noqa: BLE001 - not allowed (Temporal Cloud) or not offered: leave it out
        pass
    return out


def _tracing() -> list:
    """The SDK's OpenTelemetry interceptor, imported only when tracing is on (0.1 s a command that needs none)."""
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor()]
