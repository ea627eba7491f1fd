"""The health records the stack's processes write into the data dir every 2 s, read back: a record counts only
while fresh. Apart from the processes themselves so that `bosun status` and `bosun run` read them without loading
what those processes run."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from infra.settings import Settings

MAX_AGE_S = 10.0
"""A record older than this is stale: its process stopped writing it."""
STARTER_FILE = "events-starter-health.json"
"""The events starter's record (entry/starter.py)."""
WORKER_FILE = "worker-health.json"
"""The worker's record (entry/worker.py; read by ``worker_health``)."""


def fresh_record(path: Path, max_age_s: float = MAX_AGE_S) -> dict[str, Any] | None:
    """The JSON record at ``path`` when it was written within ``max_age_s``; None when absent, unreadable or stale."""
    try:
        info = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not isinstance(info.get("ts", 0), int | float) or \
            time.time() - info.get("ts", 0) > max_age_s:
        return None
    return info


def starter_health(settings: Settings) -> dict[str, Any] | None:
    """The starter's health record when fresh and it is consuming; else None."""
    info = fresh_record(settings.data_dir / STARTER_FILE)
    if info is None or not info.get("ready") or not info.get("nats"):
        return None
    return info


def pid_matches(pid: int | None, marker: str) -> bool:
    """True if ``pid`` is alive and its command line contains ``marker``."""
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rsplit(")", 1)[-1].split()[0] == "Z":
        return False
    return marker in cmdline


def worker_health(s: Settings) -> dict | None:
    """The worker's own health record (written every 2 s while it polls), or None when absent, stale or not of a
    live worker."""
    info = fresh_record(s.data_dir / WORKER_FILE)
    if info is None or not pid_matches(info.get("pid"), "worker"):
        return None
    return info
