"""The offline span store's files (``BOSUN_DATA_DIR/telemetry/spans-COMPONENT-PID.jsonl``, read by ``bosun trace``
and the web view): where they are, whether telemetry is on, and appending span records to them. No OpenTelemetry
here: a command that records one span of its own (``bosun run``'s start) writes it without loading the SDK."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from infra.settings import Settings

SPAN_FILE_BYTES = 32 * 1024 * 1024
SPAN_FILES_KEPT = 4


def telemetry_dir(settings: Settings) -> Path:
    return settings.data_dir / "telemetry"


def enabled(settings: Settings) -> bool:
    return settings.telemetry and os.environ.get("OTEL_SDK_DISABLED", "").lower() != "true"


def otlp_wanted(signal: str) -> bool:
    """Whether the standard variables ask for an OTLP exporter of ``signal`` (traces or metrics)."""
    if os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "").lower() == "none":
        return False
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT")
                or os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "").lower() == "otlp")


def append(path: Path, records: Iterable[dict[str, Any]]) -> None:
    """Append span records (``infra.telemetry.span_record``'s shape) as JSON lines to ``path``, a file of this
    process; past SPAN_FILE_BYTES it is rotated and only the newest SPAN_FILES_KEPT of its component kept.
    Raises OSError."""
    lines = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)
    if path.exists() and path.stat().st_size > SPAN_FILE_BYTES:
        path.rename(path.with_suffix(f".{int(time.time())}.jsonl"))
        component = path.name.split("-")[1]
        mine = sorted(path.parent.glob(f"spans-{component}-*.jsonl"), key=lambda p: p.stat().st_mtime)
        for old in mine[:-SPAN_FILES_KEPT]:
            old.unlink(missing_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(lines)


def span_file(settings: Settings, component: str) -> Path:
    """This process's span file for ``component`` (its folder made)."""
    folder = telemetry_dir(settings)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"spans-{component}-{os.getpid()}.jsonl"
