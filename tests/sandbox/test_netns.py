"""The private ranges' routes are best effort: a host that cannot set them keeps the sandbox closed, says why
once, and never fails the sandbox's start."""

from __future__ import annotations

import logging
import os
import subprocess

from sandbox import netns


def test_a_host_without_nsenter_says_why_and_does_not_raise(monkeypatch, caplog) -> None:
    monkeypatch.setattr(netns.shutil, "which", lambda _name: None)
    monkeypatch.setattr(netns, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="sandbox.netns"):
        assert "not installed" in netns.blackhole_private_ranges(os.getpid())
        assert "not installed" in netns.blackhole_private_ranges(os.getpid())
    assert len(caplog.records) == 1  # said once


def test_a_process_that_is_gone_is_a_reason_not_an_error(monkeypatch) -> None:
    monkeypatch.setattr(netns, "_warned", set())
    gone = subprocess.Popen(["true"])
    gone.wait()
    why = netns.blackhole_private_ranges(gone.pid)
    assert why is not None and why != ""


def test_the_routes_go_into_the_namespace_of_the_process_only() -> None:
    inside = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && exec sleep 30"])  # (as a sandbox's)
    try:
        for _ in range(100):  # (until unshare has exec'd sleep in its new namespace)
            if open(f"/proc/{inside.pid}/cmdline").read().startswith("sleep\0"):  # (exec'd: lo is up)
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert netns.blackhole_private_ranges(inside.pid) is None
        routes = subprocess.run(["nsenter", "-t", str(inside.pid), "-n", "ip", "route", "show"], capture_output=True,
                                text=True, check=True).stdout
        assert all(f"{net} dev lo" in routes for net in netns.PRIVATE_RANGES), routes
        host = subprocess.run(["ip", "route", "show"], capture_output=True, text=True, check=True).stdout
        assert "10.0.0.0/8 dev lo" not in host
    finally:
        inside.kill()
        inside.wait()


def test_bwraps_children_are_read_as_the_kernel_lists_them() -> None:
    """The sandbox's process, whose namespace gets the routes, is bwrap's first child."""
    from sandbox.bwrap import _children

    parent = subprocess.Popen(["sh", "-c", "sleep 30 & wait"])
    try:
        child, cmdline = None, ""
        for _ in range(100):  # (a child caught inside its execve shows an empty command line for a moment)
            children = _children(parent.pid)
            child = children[0] if children else None
            cmdline = open(f"/proc/{child}/cmdline").read() if child else ""
            if "sleep" in cmdline:
                break
            subprocess.run(["sleep", "0.05"], check=True)
        assert child is not None and "sleep" in cmdline, (child, cmdline)
    finally:
        subprocess.run(["pkill", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()
    assert _children(parent.pid) == []
