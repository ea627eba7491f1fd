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

A sandbox WITH network (``bosun eval swebench --network``, docker only: the harness's containers have network)
sits on docker's default bridge, and reaches the public internet only. Its routes are set the same way before
anything runs in it (:func:`public_only`): the bridge's own subnet is no longer on-link (the default route goes
to the gateway ``onlink``), the private, shared (100.64/10) and link-local (169.254/16: cloud metadata) ranges go
to the loopback, so the host (its bridge address and every address it has, public ones too: a packet to them
never leaves the machine, so no firewall of the network stands in between), the other containers and the local
network are out of reach; only the resolvers docker gave the container (``resolv.conf``) are excepted
when they are private, else no name would resolve. IPv6 is switched off on its bridge interface (the loopback
keeps ``::1``). Unlike the no-network case this fails closed: a sandbox whose
routes could not be set is not handed out.
"""

from __future__ import annotations

import ipaddress
import logging
import shutil
import subprocess

log = logging.getLogger(__name__)

PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
"""Routed to the loopback in every sandbox: a connect to them times out instead of failing at once."""

LOCAL_RANGES = (*PRIVATE_RANGES, "100.64.0.0/10", "169.254.0.0/16")
"""What a sandbox with network cannot reach: the private ranges, shared address space (carrier-grade NAT,
overlay networks) and link-local (a cloud's metadata service)."""

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


def nameservers(resolv_conf: str) -> list[str]:
    """The IPv4 ``nameserver`` addresses of a resolv.conf's text (what docker wrote for a container); anything else
    on those lines is ignored."""
    found = []
    for line in resolv_conf.splitlines()[:200]:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "nameserver":
            try:
                found.append(str(ipaddress.IPv4Address(parts[1])))
            except ValueError:
                continue
    return found


def public_routes(gateway: str, subnet: str, resolvers: list[str], host: list[str] | None = None) -> str:
    """The ``ip -batch`` text that leaves a bridged sandbox only the public internet (module docstring):
    ``gateway`` and ``subnet`` (``172.17.0.0/16``) of its bridge, ``resolvers`` its nameservers, ``host`` the
    host's own IPv4 addresses (a public one is the host too: what listens there on every address must stay out
    of reach; a resolver there is not excepted). ValueError for a gateway or subnet that is not an IPv4 address
    or network."""
    own = {*(host or []), gateway}
    return bridge_routes(gateway, subnet, blocked=LOCAL_RANGES, host=host or [],
                         excepted=[r for r in resolvers if r not in own])


def bridge_routes(gateway: str, subnet: str, *, blocked: tuple[str, ...], host: list[str],
                  excepted: list[str]) -> str:
    """The ``ip -batch`` text for a container on a docker bridge: its subnet no longer on-link (the default route
    to ``gateway`` ``onlink``), the ``blocked`` ranges, the subnet, the gateway and the ``host``'s own addresses
    routed to its loopback; each of the ``excepted`` addresses that this blocks routed through the gateway."""
    gw = ipaddress.IPv4Address(gateway)
    net = ipaddress.IPv4Network(subnet, strict=False)
    ranges = [ipaddress.IPv4Network(r) for r in blocked]
    own = {ipaddress.IPv4Address(a) for a in host} | {gw}
    lines = [f"route del {net} dev eth0", f"route replace default via {gw} dev eth0 onlink"]
    lines += [f"route replace {r} dev lo" for r in blocked]
    lines += [f"route replace {net} dev lo"]  # (a bridge outside the blocked ranges: the other containers too)
    lines += [f"route replace {a}/32 dev lo" for a in sorted(own) if not any(a in r for r in [*ranges, net])]
    for addr in dict.fromkeys(ipaddress.IPv4Address(a) for a in excepted):
        if addr in own or any(addr in r for r in ranges) or addr in net:
            lines.append(f"route replace {addr}/32 via {gw} dev eth0 onlink")
    return "".join(line + "\n" for line in lines)


def bridge_of(state: dict) -> tuple[str, str, list[str]]:
    """(gateway, address/prefix, resolvers) of a started container on docker's default bridge, from
    ``inspect_container``'s answer: the bridge network's own entry (the top-level fields are deprecated in docker's
    API), else those; the resolvers from the ``resolv.conf`` docker wrote for it (read before anything ran there;
    none when it cannot be read)."""
    settings = state.get("NetworkSettings") or {}
    net = (settings.get("Networks") or {}).get("bridge") or settings
    try:
        with open(state.get("ResolvConfPath") or "/nonexistent", encoding="utf-8", errors="replace") as f:
            resolvers = nameservers(f.read(65536))
    except OSError:
        resolvers = []
    return net.get("Gateway") or "", f"{net.get('IPAddress') or ''}/{net.get('IPPrefixLen') or 0}", resolvers


def host_addresses() -> list[str]:
    """The host's own IPv4 addresses but the loopback's (``ip -o -4 addr show``: the host's command, read here);
    OSError when they cannot be had."""
    ip = shutil.which("ip")
    if ip is None:
        raise OSError("ip (iproute2) is not installed on this host")
    try:
        done = subprocess.run([ip, "-o", "-4", "addr", "show"], capture_output=True, text=True, timeout=10,
                              check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise OSError(f"listing the host's addresses failed: {exc}") from None
    found = []
    for line in done.stdout.splitlines():
        parts = line.split()
        if "inet" in parts[:-1]:
            addr = ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).ip
            if not addr.is_loopback:
                found.append(str(addr))
    return found


def public_only(pid: int, gateway: str, subnet: str, resolvers: list[str]) -> None:
    """Set :func:`public_routes` (the host's addresses as they are now) in the network namespace of process
    ``pid``; OSError when that fails (the caller destroys the sandbox: one with network is never handed out with
    its local network in reach)."""
    try:
        batch = public_routes(gateway, subnet, resolvers, host_addresses())
    except ValueError as exc:
        raise OSError(f"the sandbox's bridge is not IPv4 ({gateway!r}, {subnet!r}): {exc}") from None
    apply_routes(pid, batch)


BUILD_BLOCKED = ("169.254.0.0/16",)
"""What an environment build cannot reach beyond the host itself and the other containers: link-local (a cloud's
metadata service and the credentials it hands out). The private ranges stay reachable: registries, proxies and
git servers of a company's own network live there."""


def build_only(pid: int, gateway: str, subnet: str, excepted: list[str]) -> None:
    """Routes for an environment build's container (process ``pid``): the host (every address of its own), the
    other containers and :data:`BUILD_BLOCKED` out of reach, the ``excepted`` addresses (its resolvers, the
    configured registries and proxies) through the gateway; IPv6 off on eth0. OSError when that fails."""
    try:
        batch = bridge_routes(gateway, subnet, blocked=BUILD_BLOCKED, host=host_addresses(), excepted=excepted)
    except ValueError as exc:
        raise OSError(f"the build's bridge is not IPv4 ({gateway!r}, {subnet!r}): {exc}") from None
    apply_routes(pid, batch)


def apply_routes(pid: int, batch: str) -> None:
    """Run ``ip -batch`` text in the network namespace of process ``pid``, then switch IPv6 off on its eth0
    (:data:`NO_IPV6`); OSError when either fails."""
    nsenter, ip = shutil.which("nsenter"), shutil.which("ip")
    if nsenter is None or ip is None:
        raise OSError("nsenter and ip (util-linux, iproute2) are needed on the host to keep the local network out "
                      "of a bridged container's reach")
    try:
        done = subprocess.run([nsenter, "-t", str(pid), "-n", ip, "-batch", "-"], input=batch.encode(),
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"setting the container's routes failed: {exc}") from None
    if done.returncode != 0:
        raise OSError("setting the container's routes failed: "
                      + (done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"))
    # IPv6 off on the bridge's side (docker does it for a bridge without IPv6; one with it would be a way around
    # the routes above); the loopback keeps ::1
    try:
        done = subprocess.run([nsenter, "-t", str(pid), "-n", "sh", "-c", NO_IPV6], capture_output=True, timeout=10,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"switching IPv6 off in the container failed: {exc}") from None
    if done.returncode != 0:
        raise OSError("switching IPv6 off in the container failed: "
                      + (done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"))


NO_IPV6 = ('f=/proc/sys/net/ipv6/conf/eth0/disable_ipv6; [ ! -e "$f" ] || { echo 1 > "$f" && ip -6 route flush '
           'dev eth0 >/dev/null 2>&1; [ "$(cat "$f")" = 1 ]; }')
"""Run by the host's sh in the sandbox's network namespace only (/proc/sys/net is that namespace's): IPv6 off on
eth0, its routes gone; fails unless it is off."""
