"""The settings of a private stack: one that never collides with another stack on the same machine.

Benchmarks, tests and ``bosun cluster up`` start stacks (``bosun up``, ``bosun worker``) beside a developer's own and
beside each other. Each gets its own data dir, its own worker id and a free port for every ``*_port`` setting that
is on by default (those whose default is None, Prometheus's, listen only when set: left unset, they cannot collide).
This is the one place that knows which settings those are: it reads them off :class:`infra.settings.Settings`, so a
new port setting is covered the day it is added.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

from infra.settings import Settings

_RANGE = range(20000, 32000)
SLICE_VAR = "BOSUN_PORT_SLICE"
"""``index/count``: the process (and the processes it starts, which inherit it) takes ports only from slice
``index`` of ``count`` equal slices of 20000-32000. Unset, the whole range."""


def _ports(spec: str) -> Iterator[int]:
    index, _, count = spec.partition("/")
    if not (index.isdigit() and count.isdigit() and int(index) < int(count)):
        raise ValueError(f"{SLICE_VAR}={spec!r} is invalid: expected index/count with 0 <= index < count, like 0/4")
    size = len(_RANGE) // int(count)
    part = range(_RANGE.start + int(index) * size, _RANGE.start + (int(index) + 1) * size)
    return iter(random.Random(os.getpid()).sample(part, len(part)))


_PORTS = _ports(os.environ.get(SLICE_VAR) or "0/1")


def use_port_slice(index: int, count: int) -> None:
    """From now on this process and those it starts take ports only from slice ``index`` of ``count``.
    Cooperating processes that each take their own slice (the suite's parallel processes) never pick the same
    port, even between one choosing a port and its server binding it."""
    global _PORTS
    _PORTS = _ports(f"{index}/{count}")
    os.environ[SLICE_VAR] = f"{index}/{count}"


def free_port() -> int:
    """A free loopback port BELOW the kernel's ephemeral range (32768+): a port the kernel hands out for port 0
    can be taken by any outgoing connection before our server binds it. Never the same port twice per process."""
    for port in _PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port left in 20000-32000")


@contextlib.contextmanager
def held_port() -> Iterator[int]:
    """A loopback port that is bound here but not listening, for as long as the block runs: a connection to it is
    refused, and no other process can take it meanwhile (as it could a port that was only free when chosen)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", free_port()))
        yield s.getsockname()[1]


def port_settings() -> dict[str, object]:
    """Every ``*_port`` setting with its default."""
    return {name: field.get_default(call_default_factory=True) for name, field in Settings.model_fields.items()
            if name.endswith("_port")}


def private_stack_env(data_dir: Path, *, worker_id: str | None = None) -> dict[str, str]:
    """The environment of a private stack in ``data_dir``: ``BOSUN_DATA_DIR``, ``BOSUN_WORKER_ID`` (``worker_id``,
    or one made from the process and the folder) and a free port for each port setting that is on by default."""
    env = {f"BOSUN_{name.upper()}": str(free_port()) for name, default in port_settings().items()
           if default is not None}
    env["BOSUN_DATA_DIR"] = str(data_dir)
    env["BOSUN_WORKER_ID"] = worker_id or f"private-{os.getpid()}-{Path(data_dir).name}"
    return env
