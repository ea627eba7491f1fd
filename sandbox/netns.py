"""A sandbox's network: none, and private addresses that time out as they do behind a real network's NAT.

A sandbox has its own network namespace with a loopback only. There, a connection to any other address fails at
once (``ENETUNREACH``). On a machine with a network, a connection to a private address that no one answers
(``10.255.255.1``) is not refused: its SYN goes unanswered and the client times out. Test suites use such
addresses on purpose to test connect timeouts (requests' ``TestTimeout``: ``ConnectTimeout`` expected, a
``ConnectionError`` is a failure). So the private ranges (RFC 1918) are routed to the loopback, where the kernel
drops what is not addressed to it: a connect there times out, and nothing leaves the sandbox either way. Public
addresses still fail at once, and names still do not resolve.

The host sets the routes from outside (``nsenter -n`` into the sandbox's namespace, ``ip route``): the sandbox
itself has no capability to change them. A host that cannot (not root, no ``nsenter``/``ip``) leaves them out:
the sandbox is as closed as before; :func:`blackhole_private_ranges` says why once.
"""

from __future__ import annotations

import logging
import shutil
import subprocess

log = logging.getLogger(__name__)

PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
"""Routed to the loopback in every sandbox: a connect to them times out instead of failing at once."""

_warned: set[str] = set()


def blackhole_private_ranges(pid: int) -> str | None:
    """Route :data:`PRIVATE_RANGES` to the loopback in the network namespace of process ``pid`` (a sandbox's
    process). Returns None when done, else why not (logged once per reason). Never raises: the sandbox is closed
    either way."""
    nsenter, ip = shutil.which("nsenter"), shutil.which("ip")
    if nsenter is None or ip is None:
        return _cannot("nsenter or ip (util-linux, iproute2) is not installed on this host")
    batch = "".join(f"route replace {net} dev lo\n" for net in PRIVATE_RANGES)  # (one process: a sandbox's start)
    try:
        done = subprocess.run([nsenter, "-t", str(pid), "-n", ip, "-batch", "-"], input=batch.encode(),
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _cannot(f"nsenter failed: {exc}")
    if done.returncode != 0:
        return _cannot(done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}")
    return None


def _cannot(why: str) -> str:
    if why not in _warned:
        _warned.add(why)
        log.warning("sandboxes keep private addresses unreachable (a connect fails at once, not by timeout): %s",
                    why)
    return why
