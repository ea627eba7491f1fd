"""A sandbox WITH network (``bosun eval swebench --network``): the public internet only, never the host or the
local network; it is docker's alone, and it fails closed (sandbox/netns.py: public_only)."""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from environments.runtime import provider_for
from infra.errors import ConfigError
from infra.privatestack import free_port
from sandbox import netns

from .conftest import TEST_LIMITS, prepare_workspace
from .test_attacks import py

PUBLIC, GATEWAY = "198.18.77.2", "198.18.77.1"
"""A host "on the internet" for the sandboxes (198.18/15: public by the routes' rules): a network namespace of its
own behind a veth of the host's (``internet_host``), reached through the host's routing as any address beyond it;
the host's end of that link is the host's own address, which a sandbox must not reach."""


def test_the_routes_leave_only_the_public_internet() -> None:
    batch = netns.bridge_routes(netns.public_reach("172.17.0.1", "172.17.0.2/16",
                                                   ["10.255.255.53", "172.17.0.1", "1.1.1.1", "169.254.169.253"]))
    lines = batch.splitlines()
    assert lines[:2] == ["route del 172.17.0.0/16 dev eth0", "route replace default via 172.17.0.1 dev eth0 onlink"]
    for net in netns.LOCAL_RANGES:
        assert f"route replace {net} dev lo" in lines
    # a private or link-local resolver is excepted (else nothing resolves); the gateway never (it is the host),
    # and a public one needs no route of its own
    assert "route replace 10.255.255.53/32 via 172.17.0.1 dev eth0 onlink" in lines
    assert "route replace 169.254.169.253/32 via 172.17.0.1 dev eth0 onlink" in lines
    assert not any(line.startswith(("route replace 172.17.0.1/32", "route replace 1.1.1.1")) for line in lines)


def test_the_hosts_own_addresses_are_out_of_reach_even_public_ones() -> None:
    lines = netns.bridge_routes(netns.public_reach("172.17.0.1", "172.17.0.2/16", ["192.0.2.2", "10.0.0.2"],
                                                   ["192.0.2.2", "10.0.0.2", "172.17.0.1"])).splitlines()
    assert "route replace 192.0.2.2/32 dev lo" in lines  # public, but the host's: a packet never leaves the machine
    assert not any("via" in line for line in lines[2:]), lines  # a resolver on the host is not excepted


def test_a_builds_routes_keep_the_host_and_link_local_out_and_the_company_network_in() -> None:
    reach = netns.build_reach("172.17.0.1", "172.17.0.2/16", ["169.254.169.253"],
                              ["10.0.0.2", "192.0.2.2", "169.254.169.254"], ["192.0.2.2", "172.17.0.1"])
    lines = netns.bridge_routes(reach).splitlines()
    assert "route replace 169.254.0.0/16 dev lo" in lines and "route replace 192.0.2.2/32 dev lo" in lines
    assert not any(line.startswith(("route replace 10.0.0.0/8", "route replace 192.168.")) for line in lines)
    # a link-local resolver, and a registry the operator put on this host, are reached through the gateway;
    # the metadata service never is, even named as a registry
    assert "route replace 169.254.169.253/32 via 172.17.0.1 dev eth0 onlink" in lines
    assert "route replace 192.0.2.2/32 via 172.17.0.1 dev eth0 onlink" in lines
    assert not any(line.startswith(("route replace 10.0.0.2", "route replace 169.254.169.254")) for line in lines)
    rules = netns.bridge_filter(reach).splitlines()
    assert "-A OUTPUT -d 169.254.169.253/32 -p udp --dport 53 -j ACCEPT" in rules
    assert "-A OUTPUT -d 192.0.2.2/32 -j ACCEPT" in rules  # the registry: every port
    assert not any("169.254.169.254" in rule for rule in rules)
    assert rules.index("-A OUTPUT -d 192.0.2.2/32 -j ACCEPT") < rules.index("-A OUTPUT -d 192.0.2.2/32 -j DROP")


def test_the_packet_filter_holds_what_the_routes_cannot() -> None:
    """Broadcast, multicast and the blocked addresses are dropped whatever interface a socket names; a resolver
    is open on port 53 only, even when it is the metadata server (GCP's resolver is)."""
    text = netns.bridge_filter(netns.public_reach("172.17.0.1", "172.17.0.2/16", ["169.254.169.254"],
                                                  ["192.0.2.2"]))
    rules = text.splitlines()
    assert rules[:4] == ["*filter", ":INPUT ACCEPT [0:0]", ":FORWARD DROP [0:0]", ":OUTPUT ACCEPT [0:0]"]
    assert text.endswith("\nCOMMIT\n")
    for rule in ("-A OUTPUT -m addrtype --dst-type BROADCAST -j DROP",
                 "-A OUTPUT -m addrtype --dst-type MULTICAST -j DROP",
                 "-A OUTPUT -d 169.254.169.254/32 -p udp --dport 53 -j ACCEPT",
                 "-A OUTPUT -d 169.254.169.254/32 -p tcp --dport 53 -j ACCEPT",
                 "-A OUTPUT -d 10.0.0.0/8 -j DROP", "-A OUTPUT -d 169.254.0.0/16 -j DROP",
                 "-A OUTPUT -d 172.17.0.0/16 -j DROP", "-A OUTPUT -d 192.0.2.2/32 -j DROP",
                 "-A OUTPUT -d 172.17.0.1/32 -j DROP"):
        assert rule in rules, rule
    assert "-A OUTPUT -d 169.254.169.254/32 -j ACCEPT" not in rules


def test_a_bridge_outside_the_private_ranges_is_out_of_reach_too() -> None:
    lines = netns.bridge_routes(netns.public_reach("198.18.0.1", "198.18.0.5/24", [])).splitlines()
    assert "route replace 198.18.0.0/24 dev lo" in lines


def test_resolv_conf_is_read_as_data() -> None:
    text = "# docker\nnameserver 10.0.0.2\nnameserver ::1\nnameserver $(reboot)\nsearch x\nnameserver 8.8.8.8 x\n"
    assert netns.nameservers(text) == ["10.0.0.2", "8.8.8.8"]


@pytest.mark.parametrize("gateway, subnet", [("", "172.17.0.2/16"), ("172.17.0.1", "/0"), ("fe80::1", "x")])
def test_a_bridge_that_is_not_ipv4_fails_closed(gateway: str, subnet: str) -> None:
    with pytest.raises(OSError, match="not IPv4"):
        netns.public_only(1, gateway, subnet, [])


def test_a_host_without_nsenter_fails_closed(monkeypatch) -> None:
    monkeypatch.setattr(netns.shutil, "which", lambda _name: None)
    with pytest.raises(OSError, match="iproute2"):
        netns.public_only(1, "172.17.0.1", "172.17.0.2/16", [])


def ns(pid: int, *cmd: str) -> str:
    return subprocess.run(["nsenter", "-t", str(pid), "-n", *cmd], capture_output=True, text=True,
                          check=True).stdout


def test_the_routes_and_ipv6_in_a_real_namespace_with_a_bridge_like_link() -> None:
    """A namespace with an eth0 as docker gives one (a veth to the host, an address, a default route, IPv6 on):
    after public_only the subnet is not on-link, the local ranges go to its loopback, the private resolver goes
    through the gateway, IPv6 is off on eth0 and the loopback keeps ::1."""
    inside = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && exec sleep 30"])
    peer = f"bosun-t{os.getpid() % 100000}"
    try:
        wait_exec(inside.pid)
        subprocess.run(["ip", "link", "add", peer, "type", "veth", "peer", "name", "eth0", "netns", str(inside.pid)],
                       check=True)
        subprocess.run(["ip", "addr", "add", "198.51.100.1/24", "dev", peer], check=True)
        subprocess.run(["ip", "link", "set", peer, "up"], check=True)
        ns(inside.pid, "sh", "-c", "ip addr add 198.51.100.2/24 dev eth0 && ip link set eth0 up && "
                                   "ip route add default via 198.51.100.1 && "
                                   "echo 0 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6")
        netns.public_only(inside.pid, "198.51.100.1", "198.51.100.2/24", ["10.9.9.9", "8.8.8.8"])
        routes = ns(inside.pid, "ip", "route").splitlines()
        assert "default via 198.51.100.1 dev eth0 onlink " in routes or \
            "default via 198.51.100.1 dev eth0 onlink" in routes, routes
        assert not any(r.startswith("198.51.100.0/24 dev eth0") for r in routes), routes
        assert any(r.startswith("198.51.100.0/24 dev lo") for r in routes), routes
        assert any(r.startswith("172.16.0.0/12 dev lo") for r in routes), routes
        assert any(r.startswith("10.9.9.9 via 198.51.100.1 dev eth0") for r in routes), routes
        assert ns(inside.pid, "cat", "/proc/sys/net/ipv6/conf/eth0/disable_ipv6").strip() == "1"
        rules = ns(inside.pid, "iptables", "-S", "OUTPUT").splitlines()
        assert "-A OUTPUT -d 10.0.0.0/8 -j DROP" in rules and \
            "-A OUTPUT -d 10.9.9.9/32 -p udp -m udp --dport 53 -j ACCEPT" in rules, rules
        assert "-A OUTPUT -d 10.0.0.0/8 -j DROP" not in subprocess.run(["iptables", "-S", "OUTPUT"],
                                                                      capture_output=True, text=True).stdout
        assert "inet6" not in ns(inside.pid, "ip", "-6", "addr", "show", "dev", "eth0")
        assert "::1" in ns(inside.pid, "ip", "-6", "addr", "show", "dev", "lo")
    finally:
        subprocess.run(["ip", "link", "del", peer], capture_output=True, check=False)
        inside.kill()
        inside.wait()


def test_bwrap_sandboxes_never_get_network(tiny_env) -> None:
    with pytest.raises(ConfigError, match="needs the docker backend"):
        provider_for(tiny_env, "bwrap", limits=TEST_LIMITS, network=True)


SERVE = """
import socket, sys
server = socket.create_server(("0.0.0.0", int(sys.argv[1])))
while True:
    conn, _ = server.accept()
    conn.sendall(b"hello")
    conn.close()
"""


@contextlib.contextmanager
def internet_host():
    """PUBLIC answering "hello" on a port (its own namespace, see PUBLIC), and the same port open on every address
    of the host itself. Yields the port."""
    port, link = free_port(), f"bosun-i{os.getpid() % 100000}"
    inside = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && exec sleep 600"])
    answering = None
    host = socketserver.ThreadingTCPServer(("0.0.0.0", port), Hello)  # noqa: S104 - the point of the test
    echo = socketserver.ThreadingUDPServer(("0.0.0.0", port), Echo)  # noqa: S104
    for server in (host, echo):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        wait_exec(inside.pid)
        subprocess.run(["ip", "link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", str(inside.pid)],
                       check=True)
        subprocess.run(["ip", "addr", "add", f"{GATEWAY}/30", "dev", link], check=True)
        subprocess.run(["ip", "link", "set", link, "up"], check=True)
        ns(inside.pid, "sh", "-c", f"ip addr add {PUBLIC}/30 dev eth0 && ip link set eth0 up")
        answering = subprocess.Popen(["nsenter", "-t", str(inside.pid), "-n", sys.executable, "-c", SERVE,
                                      str(port)])
        for _ in range(100):  # (until it listens)
            with contextlib.suppress(OSError), socket.create_connection((PUBLIC, port), timeout=1) as c:
                if c.recv(5) == b"hello":
                    break
            time.sleep(0.05)
        yield port
    finally:
        if answering is not None:
            answering.kill()
            answering.wait()
        subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
        inside.kill()
        inside.wait()
        for server in (host, echo):
            server.shutdown()
            server.server_close()


class Hello(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hello")


class Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        data, sock = self.request
        sock.sendto(b"echo " + data, self.client_address)


def wait_exec(pid: int) -> None:
    """Until ``unshare`` has exec'd sleep in its new namespace (its loopback is up then)."""
    for _ in range(100):
        if open(f"/proc/{pid}/cmdline").read().startswith("sleep\0"):
            return
        time.sleep(0.05)


AROUND = """
import socket, struct, sys
port, eth0 = int(sys.argv[1]), socket.if_nametoindex("eth0")
for host in sys.argv[2:]:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(1.5)
    u.setsockopt(socket.IPPROTO_IP, 50, struct.pack("!I", eth0))  # IP_UNICAST_IF: past the routes to lo
    try:
        u.sendto(b"ping", (host, port))
        print("udp-answered", host, u.recv(20))
    except OSError as e:
        print("udp-silent", host, type(e).__name__)
    t = socket.socket()
    t.settimeout(1.5)
    try:
        t.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, b"eth0")
        t.connect((host, port))
        print("tcp-bound-reached", host)
    except OSError as e:
        print("tcp-bound-failed", host, type(e).__name__)
b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
b.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
b.settimeout(1.5)
try:
    b.sendto(b"ping", ("255.255.255.255", port))
    print("broadcast-answered", b.recvfrom(20))
except OSError as e:
    print("broadcast-silent", type(e).__name__)
"""
"""Ways around routes: a UDP socket naming eth0, a TCP socket bound to it, the bridge's limited broadcast."""


REACH = """
import socket, sys
for host in sys.argv[2:]:
    s = socket.socket()
    s.settimeout(1.5)
    try:
        s.connect((host, int(sys.argv[1])))
        print("reached", host, s.recv(5).decode())
    except TimeoutError:
        print("timeout", host)
    except OSError as e:
        print("failed", host, e.errno)
"""


@pytest.mark.docker
async def test_a_sandbox_with_network_reaches_the_internet_and_nothing_local(docker_image: str,
                                                                             workspace: Path) -> None:
    from sandbox.docker_backend import DockerProvider

    prepare_workspace("docker", workspace)
    opened = DockerProvider(TEST_LIMITS, image=docker_image, network=True)
    closed = DockerProvider(TEST_LIMITS, image=docker_image)
    assert opened.limits_report()["network"]["value"] == "public"
    assert closed.limits_report()["network"]["value"] == "none"
    with internet_host() as port:
        box = await opened.acquire(workspace)
        try:
            state = opened.api.inspect_container(box.container_id)  # type: ignore[attr-defined]
            gateway = state["NetworkSettings"]["Gateway"]
            own = [a for a in netns.host_addresses() if a not in (gateway, GATEWAY)][:1]
            res = await box.exec(["python3", "-c", REACH, str(port), PUBLIC, gateway, GATEWAY, *own, "10.255.255.1",
                                  "127.0.0.1"], timeout_s=60)
            around = await box.exec(["python3", "-c", AROUND, str(port), gateway, GATEWAY, *own], timeout_s=60)
            routes = subprocess.run(["nsenter", "-t", str(state["State"]["Pid"]), "-n", "ip", "route"],
                                    capture_output=True, text=True, check=True).stdout
        finally:
            await box.close()
        assert f"reached {PUBLIC} hello" in res.stdout, res.stdout + res.stderr  # the "internet", via the gateway
        for host_address in (gateway, GATEWAY, *own):  # the host itself, on any of its addresses: out of reach
            assert f"timeout {host_address}" in res.stdout, res.stdout
        assert "timeout 10.255.255.1" in res.stdout, res.stdout  # the local network
        assert "failed 127.0.0.1 111" in res.stdout, res.stdout  # its own loopback, not the host's
        # nor around the routes: the packet filter holds
        assert "answered" not in around.stdout and "reached" not in around.stdout, around.stdout + around.stderr
        assert around.stdout.count("udp-silent") == len({gateway, GATEWAY, *own}), around.stdout
        for resolver in netns.nameservers(Path("/etc/resolv.conf").read_text()):
            if resolver not in netns.host_addresses() and resolver.startswith(("10.", "192.168.", "172.", "169.254.")):
                assert f"{resolver} via {gateway}" in routes, routes  # private resolvers stay reachable
        box = await closed.acquire(workspace)
        try:
            res = await py(box, f"import socket; s = socket.socket(); s.settimeout(1.5)\n"
                                f"try:\n    s.connect(({PUBLIC!r}, {port})); print('reached')\n"
                                f"except OSError as e: print('failed', e.errno)")
        finally:
            await box.close()
        assert "failed 101" in res.stdout, res.stdout  # no network: nothing, not even the "internet"
