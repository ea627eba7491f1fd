"""The settings of a private stack: one that never collides with another stack on the same machine.

Benchmarks, tests and ``bosun cluster up`` start stacks (``bosun up``, ``bosun worker``) beside a developer's own and
beside each other. Each gets its own data dir, its own worker id and a free port for every ``*_port`` setting that
is on by default (those whose default is None, Prometheus's, listen only when set: left unset, they cannot collide).
This is the one place that knows which settings those are: it reads them off :class:`infra.settings.Settings`, so a
new port setting is covered the day it is added.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

from infra.settings import Settings

_PORTS = iter(random.Random(os.getpid()).sample(range(20000, 32000), 12000))


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
