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
sits on docker's default bridge, and reaches the public internet only. Before anything runs in it
(:func:`public_only`, :func:`confine`) the host sets, in its namespace, routes and a packet filter of that
namespace's own (``iptables-restore``: routes alone do not hold against a socket bound to eth0, nor for the
bridge's broadcast). The bridge's subnet is no longer on-link (the default route goes to the gateway ``onlink``);
the private, shared (100.64/10) and link-local (169.254/16: cloud metadata) ranges, the subnet, the gateway and
every address of the host's own (public ones too: a packet to them never leaves the machine, so no firewall of
the network stands in between) go to the loopback and are dropped by the filter, as are broadcast and
multicast; so the host, the other containers and the local network are out of reach. Only the resolvers docker
gave the container (``resolv.conf``) are excepted, on port 53, unless one is the host's; IPv6 is switched off on
its eth0 (the loopback keeps ``::1``). Unlike the no-network case this fails closed: a sandbox whose rules could
not be set is not handed out. Environment builds get the same treatment with less blocked
(:func:`build_only`).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass

log = logging.getLogger(__name__)

PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
"""Routed to the loopback in every sandbox: a connect to them times out instead of failing at once."""

LOCAL_RANGES = (*PRIVATE_RANGES, "100.64.0.0/10", "169.254.0.0/16")
"""What a sandbox with network cannot reach: the private ranges, shared address space (carrier-grade NAT,
overlay networks) and link-local (a cloud's metadata service)."""

_warned: set[str] = set()


def blackhole_private_ranges(pid: int | str) -> str | None:
    """Route :data:`PRIVATE_RANGES` to the loopback in the network namespace of process ``pid`` (a sandbox's
    process), or of the namespace file ``pid`` names (docker's ``SandboxKey``: :func:`namespace_of`). Returns None
    when done, else why not (logged once per reason). Never raises: the sandbox is closed either way."""
    nsenter, ip = shutil.which("nsenter"), shutil.which("ip")
    if nsenter is None or ip is None:
        return _cannot("nsenter or ip (util-linux, iproute2) is not installed on this host")
    batch = "".join(f"route replace {net} dev lo\n" for net in PRIVATE_RANGES)  # (one process: a sandbox's start)
    try:
        _in_namespace(nsenter, pid, [ip, "-batch", "-"], batch, "nsenter")
    except OSError as exc:
        return _cannot(str(exc))
    return None


def _in_namespace(nsenter: str, target: int | str, argv: list[str], text: str, what: str) -> None:
    """Run ``argv`` (the host's program) in the network namespace ``target`` with ``text`` on its stdin;
    OSError saying ``what`` failed, and how, when it does not exit 0."""
    try:
        done = subprocess.run([*_enter(nsenter, target), *argv], input=text.encode(), capture_output=True,
                              timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OSError(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        raise OSError(f"{what} failed: "
                      + (done.stderr.decode("utf-8", "replace").strip()[:300] or f"exit {done.returncode}"))


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


METADATA = ("169.254.169.254",)
"""A cloud's metadata service (AWS, GCP, Azure, OCI): never open on every port, even when it is also the resolver
(GCP's is): then port 53 only."""


@dataclass(frozen=True)
class Reach:
    """What a container on docker's default bridge may reach, for :func:`bridge_routes` and :func:`bridge_filter`:
    the public internet, but ``blocked`` (ranges), its bridge's subnet, the gateway and the ``host``'s own
    addresses; of those, the ``dns`` resolvers on port 53 and the ``open`` addresses on every port."""
    gateway: str
    subnet: str
    blocked: tuple[str, ...]
    host: tuple[str, ...] = ()
    dns: tuple[str, ...] = ()
    open: tuple[str, ...] = ()

    def networks(self) -> tuple[ipaddress.IPv4Address, ipaddress.IPv4Network, list[ipaddress.IPv4Network],
                                set[ipaddress.IPv4Address]]:
        """(gateway, subnet, blocked ranges, the host's addresses and the gateway); ValueError when not IPv4."""
        gw = ipaddress.IPv4Address(self.gateway)
        return (gw, ipaddress.IPv4Network(self.subnet, strict=False),
                [ipaddress.IPv4Network(r) for r in self.blocked], {ipaddress.IPv4Address(a) for a in self.host} | {gw})


def public_reach(gateway: str, subnet: str, resolvers: list[str], host: list[str] | None = None) -> Reach:
    """A sandbox with network: the public internet only (module docstring). Its resolvers on port 53, unless one
    is the host itself."""
    own = {*(host or []), gateway}
    return Reach(gateway, subnet, LOCAL_RANGES, tuple(host or ()), tuple(r for r in resolvers if r not in own))


def build_reach(gateway: str, subnet: str, resolvers: list[str], registries: list[str],
                host: list[str] | None = None) -> Reach:
    """An environment build: all but the host, the other containers and :data:`BUILD_BLOCKED`; its resolvers on
    port 53 (one on the host too: builds need names), the registries' and proxies' addresses on every port (but
    :data:`METADATA`)."""
    return Reach(gateway, subnet, BUILD_BLOCKED, tuple(host or ()), tuple(resolvers),
                 tuple(r for r in registries if r not in METADATA))


def bridge_routes(reach: Reach) -> str:
    """The ``ip -batch`` text for a container on a docker bridge: its subnet no longer on-link (the default route
    to the gateway ``onlink``), the blocked ranges, the subnet, the gateway and the host's own addresses routed to
    its loopback; each ``dns`` or ``open`` address that this blocks routed through the gateway. (Routes decide
    where a packet goes unless a socket names its interface: :func:`bridge_filter` is what holds.)"""
    gw, net, ranges, own = reach.networks()
    lines = [f"route del {net} dev eth0", f"route replace default via {gw} dev eth0 onlink"]
    lines += [f"route replace {r} dev lo" for r in reach.blocked]
    lines += [f"route replace {net} dev lo"]  # (a bridge outside the blocked ranges: the other containers too)
    lines += [f"route replace {a}/32 dev lo" for a in sorted(own) if not any(a in r for r in [*ranges, net])]
    for addr in dict.fromkeys(ipaddress.IPv4Address(a) for a in [*reach.dns, *reach.open]):
        if addr in own or any(addr in r for r in ranges) or addr in net:
            lines.append(f"route replace {addr}/32 via {gw} dev eth0 onlink")
    return "".join(line + "\n" for line in lines)


def bridge_filter(reach: Reach) -> str:
    """The ``iptables-restore`` text of the container's own namespace: its loopback free; broadcast and multicast
    dropped; the ``dns`` resolvers on port 53 (UDP, TCP) and the ``open`` addresses accepted; the blocked ranges,
    the subnet, the gateway and the host's addresses dropped (a connect times out, as through the routes). It holds
    where the routes do not: a socket bound to eth0 (``SO_BINDTODEVICE``, ``IP_UNICAST_IF``) skips the routes to
    the loopback, and the bridge's broadcast is a local route."""
    gw, net, ranges, own = reach.networks()
    rules = ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT ACCEPT [0:0]",
             "-A OUTPUT -o lo -j ACCEPT",
             "-A OUTPUT -m addrtype --dst-type BROADCAST -j DROP",
             "-A OUTPUT -m addrtype --dst-type MULTICAST -j DROP"]
    for addr in dict.fromkeys(ipaddress.IPv4Address(a) for a in reach.dns):
        rules += [f"-A OUTPUT -d {addr}/32 -p {proto} --dport 53 -j ACCEPT" for proto in ("udp", "tcp")]
    rules += [f"-A OUTPUT -d {addr}/32 -j ACCEPT" for addr in dict.fromkeys(ipaddress.IPv4Address(a)
                                                                          for a in reach.open)]
    rules += [f"-A OUTPUT -d {r} -j DROP" for r in [*ranges, net]]
    rules += [f"-A OUTPUT -d {a}/32 -j DROP" for a in sorted(own)]
    return "\n".join([*rules, "COMMIT", ""])


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


def namespace_of(state: dict) -> int | str:
    """Where a docker container's network namespace is, from ``inspect_container``'s answer: its file
    (``SandboxKey``, which goes with the container: no process id that could be reused meanwhile), else its
    process's id."""
    key = (state.get("NetworkSettings") or {}).get("SandboxKey") or ""
    return key if key.startswith("/") and os.path.exists(key) else int(state["State"]["Pid"])


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
            try:
                addr = ipaddress.IPv4Interface(parts[parts.index("inet") + 1]).ip
            except ValueError:
                continue
            if not addr.is_loopback:
                found.append(str(addr))
    return found


def public_only(target: int | str, gateway: str, subnet: str, resolvers: list[str]) -> Reach:
    """:func:`public_reach` (the host's addresses as they are now) in the network namespace ``target`` (a
    process id or a namespace file); OSError when that fails (the caller destroys the sandbox: one with network is
    never handed out with its local network in reach)."""
    reach = public_reach(gateway, subnet, resolvers, host_addresses())
    confine(target, reach)
    return reach


BUILD_BLOCKED = ("169.254.0.0/16",)
"""What an environment build cannot reach beyond the host itself and the other containers: link-local (a cloud's
metadata service and the credentials it hands out). The private ranges stay reachable: registries, proxies and
git servers of a company's own network live there."""


def build_only(target: int | str, gateway: str, subnet: str, resolvers: list[str], registries: list[str]) -> Reach:
    """:func:`build_reach` (the host's addresses as they are now) in the network namespace ``target`` of an
    environment build's container; OSError when that fails."""
    reach = build_reach(gateway, subnet, resolvers, registries, host_addresses())
    confine(target, reach)
    return reach


def _enter(nsenter: str, target: int | str) -> list[str]:
    return [nsenter, f"--net={target}"] if isinstance(target, str) else [nsenter, "-t", str(target), "-n"]


def confine(target: int | str, reach: Reach) -> None:
    """In the network namespace ``target``: :func:`bridge_routes`, IPv6 off on eth0 (:data:`NO_IPV6`), then
    :func:`bridge_filter`; OSError when any of it fails (a gateway or subnet that is not IPv4 included)."""
    nsenter, ip, restore = shutil.which("nsenter"), shutil.which("ip"), shutil.which("iptables-restore")
    if nsenter is None or ip is None or restore is None:
        raise OSError("nsenter, ip and iptables-restore (util-linux, iproute2, iptables) are needed on the host to "
                      "keep the local network out of a bridged container's reach")
    # (the host's own sh in that namespace only: /proc/sys/net is the namespace's)
    try:
        routes, rules = bridge_routes(reach), bridge_filter(reach)
    except ValueError as exc:
        raise OSError(f"the container's bridge is not IPv4 ({reach.gateway!r}, {reach.subnet!r}): {exc}") from None
    for what, argv, text in (("setting the container's routes", [ip, "-batch", "-"], routes),
                             ("switching IPv6 off in the container", ["sh", "-c", NO_IPV6], ""),
                             ("setting the container's packet filter", [restore, "-w", "5"], rules)):
        _in_namespace(nsenter, target, argv, text, what)


NO_IPV6 = ('f=/proc/sys/net/ipv6/conf/eth0/disable_ipv6; [ ! -e "$f" ] || { echo 1 > "$f" && ip -6 route flush '
           'dev eth0 >/dev/null 2>&1; [ "$(cat "$f")" = 1 ]; }')
"""Run by the host's sh in the sandbox's network namespace only (/proc/sys/net is that namespace's): IPv6 off on
eth0, its routes gone; fails unless it is off. (docker does it for a bridge without IPv6; one with it would be a
way around the rules; the loopback keeps ::1.)"""
