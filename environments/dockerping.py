"""One question to the docker engine without the docker SDK (which takes most of a second to import): does an image
exist? Used on the cached path of ``bosun env build`` so that a second build of a revision stays well under a
second. Speaks HTTP over the engine's unix socket (``DOCKER_HOST=unix://...`` or the default); for any other
``DOCKER_HOST`` it answers None and the caller asks the SDK.
"""

from __future__ import annotations

import http.client
import os
import socket
import urllib.parse

DEFAULT_SOCKET = "/var/run/docker.sock"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def socket_path() -> str | None:
    host = os.environ.get("DOCKER_HOST", "")
    if not host:
        return DEFAULT_SOCKET
    if host.startswith("unix://"):
        return host[len("unix://"):]
    return None


def image_exists(tag: str, timeout: float = 5.0) -> bool | None:
    """True/False when the engine answers; None when it cannot be asked this way (no socket, remote engine)."""
    path = socket_path()
    if path is None or not os.path.exists(path):
        return None
    conn = _UnixConnection(path, timeout)
    try:
        conn.request("GET", f"/images/{urllib.parse.quote(tag, safe='')}/json")
        status = conn.getresponse().status
    except OSError:
        return None
    finally:
        conn.close()
    return True if status == 200 else False if status == 404 else None
