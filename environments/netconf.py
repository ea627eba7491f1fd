"""The host's network configuration a build needs to reach the package registries: proxy variables, the CA bundle
and the pip/uv index configuration. Builds are the only place environments have network; sandboxes never do (but
those of ``bosun eval swebench --network``). The registries' and proxies' addresses stay reachable from the build
when its routes keep the host and link-local addresses out (sandbox/netns.py: build_only).

Index URLs come from uv's and pip's variables and configuration files; ``file://`` indexes and find-links
directories are host paths the build cannot see and are left out (said in the build log). Credentials inside an
index URL reach the build (the repository's setup code can read them): prefer a proxy that adds them.
"""

from __future__ import annotations

import configparser
import os
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy",
              "all_proxy")
CA_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "UV_CA_BUNDLE")
CA_DEFAULT = "/etc/ssl/certs/ca-certificates.crt"
CA_IN_BUILD = "/opt/bosun-tools/ca.crt"
PIP_FILES = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf", "~/.config/pip/pip.conf", "~/.pip/pip.conf")
UV_FILES = ("/etc/uv/uv.toml", "~/.config/uv/uv.toml")


@dataclass
class BuildNetwork:
    env: dict[str, str] = field(default_factory=dict)
    """Variables for the build (proxies, CA paths inside the build, index URLs)."""
    ca_bundle: bytes | None = None
    """The host's CA bundle, copied into the build at CA_IN_BUILD."""
    notes: list[str] = field(default_factory=list)

    def registry_hosts(self) -> list[str]:
        """The host names (or address literals) of the indexes, find-links and proxies the build is given."""
        hosts = []
        for name in ("UV_DEFAULT_INDEX", "UV_INDEX", "UV_FIND_LINKS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                     "http_proxy", "https_proxy", "all_proxy"):
            for url in self.env.get(name, "").split():
                try:
                    host = urlsplit(url if "://" in url else f"http://{url}").hostname
                except ValueError:
                    continue
                if host:
                    hosts.append(host)
        return list(dict.fromkeys(hosts))

    def registry_addresses(self) -> list[str]:
        """The IPv4 addresses of :meth:`registry_hosts` as this host resolves them (a name that does not resolve
        is left out: the build will say so when it fails to reach it)."""
        found: list[str] = []
        for host in self.registry_hosts():
            try:
                infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
            except (OSError, UnicodeError):
                continue
            found += [str(info[4][0]) for info in infos]
        return list(dict.fromkeys(found))


def _remote(url: str) -> bool:
    return url.startswith(("http://", "https://"))


def _pip_config(environ: dict[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    files = [environ["PIP_CONFIG_FILE"]] if environ.get("PIP_CONFIG_FILE") else list(PIP_FILES)
    for name in files:
        path = Path(name).expanduser()
        cfg = configparser.RawConfigParser(strict=False, interpolation=None)
        try:
            cfg.read_string(path.read_text(), source=str(path))
        except (OSError, configparser.Error, UnicodeDecodeError):
            continue
        for section in ("global", "install"):
            for key in ("index-url", "extra-index-url", "trusted-host", "find-links"):
                if cfg.has_option(section, key):
                    found[key] = cfg.get(section, key)
    return found


def _uv_config() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {"default": [], "extra": []}
    for name in UV_FILES:
        try:
            data = tomllib.loads(Path(name).expanduser().read_text())
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data.get("index-url"), str):
            found["default"].append(data["index-url"])
        found["extra"] += [u for u in data.get("extra-index-url", []) if isinstance(u, str)]
        for index in data.get("index", []) if isinstance(data.get("index"), list) else []:
            if isinstance(index, dict) and isinstance(index.get("url"), str):
                found["default" if index.get("default") else "extra"].append(index["url"])
    return found


def build_network(environ: dict[str, str] | None = None) -> BuildNetwork:
    """What the build gets from this host (see the module docstring)."""
    environ = dict(os.environ if environ is None else environ)
    net = BuildNetwork()
    for name in PROXY_VARS:
        if environ.get(name):
            net.env[name] = environ[name]
    for path in [*(environ.get(name) for name in CA_VARS), CA_DEFAULT]:
        if path and Path(path).is_file():
            try:
                net.ca_bundle = Path(path).read_bytes()[:8 << 20]
            except OSError:
                continue
            break
    if net.ca_bundle is not None:
        for name in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
                     "NODE_EXTRA_CA_CERTS"):
            net.env[name] = CA_IN_BUILD
    pip = _pip_config(environ)
    uv = _uv_config()
    default = [environ.get("UV_DEFAULT_INDEX") or environ.get("UV_INDEX_URL") or environ.get("PIP_INDEX_URL")
               or pip.get("index-url") or "", *uv["default"]]
    extra = " ".join(filter(None, [environ.get("UV_INDEX", ""), environ.get("UV_EXTRA_INDEX_URL", ""),
                                   environ.get("PIP_EXTRA_INDEX_URL", ""), pip.get("extra-index-url", ""),
                                   " ".join(uv["extra"])])).split()
    default_url = next((u for u in default if u), "")
    if default_url and _remote(default_url):
        net.env["UV_DEFAULT_INDEX"] = default_url
        net.env["PIP_INDEX_URL"] = default_url
    elif default_url:
        net.notes.append(f"left out the host-local index {default_url} (not reachable inside the build)")
    remote_extra = [u for u in dict.fromkeys(extra) if _remote(u)]
    for url in dict.fromkeys(extra):
        if not _remote(url):
            net.notes.append(f"left out the host-local extra index {url} (not reachable inside the build)")
    if remote_extra:
        net.env["UV_INDEX"] = " ".join(remote_extra)
        net.env["PIP_EXTRA_INDEX_URL"] = " ".join(remote_extra)
    links = (environ.get("PIP_FIND_LINKS") or pip.get("find-links") or "").split()
    for link in links:
        if _remote(link):
            net.env["UV_FIND_LINKS"] = link
            net.env["PIP_FIND_LINKS"] = link
        else:
            net.notes.append(f"left out the host-local find-links {link} (not reachable inside the build)")
    hosts = environ.get("UV_INSECURE_HOST") or environ.get("PIP_TRUSTED_HOST") or pip.get("trusted-host")
    if hosts:
        net.env["UV_INSECURE_HOST"] = " ".join(hosts.split())
    return net
