"""Error-rate alerts per (tool, model, error class), against a rolling baseline.

Calls are counted in fixed windows of ``window_s`` seconds per (operation, model) — the operation is a tool name or
``model_call``. When a window closes, each error class's rate in it updates that class's baseline (an exponentially
weighted mean of past windows). While a window is open, an error class fires an alert (once per window) when all of:

- the window has at least ``min_calls`` calls, and the (operation, model) has a baseline from earlier windows;
- the class's rate in the window is at least ``min_rate``, and more than ``factor`` times its baseline (a baseline
  below ``FLOOR`` counts as ``FLOOR``);
- the errors are too many to be chance at the baseline rate: the binomial tail P(X >= errors | calls, baseline) is
  below ``P_VALUE``.

So a tool that suddenly fails half the time alerts within its window, and one that always fails 2% of the time never
does. ``ErrorRateMonitor`` is pure (time is passed in); ``AlertSink`` writes alerts to the log, to
``<data dir>/telemetry/alerts.jsonl`` (``bosun alerts``) and to a webhook (Slack-compatible JSON).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx

FLOOR = 0.01
P_VALUE = 1e-3
ALPHA = 0.3
"""Weight of the newest window in the baseline."""

log = logging.getLogger("bosun.alerts")


@dataclass
class Alert:
    operation: str
    model: str
    error_class: str
    rate: float
    baseline: float
    errors: int
    calls: int
    window_start: float
    window_s: float
    time: float

    @property
    def text(self) -> str:
        return (f"bosun alert: {self.operation} on {self.model or 'any model'} fails with {self.error_class} "
                f"{self.rate:.0%} of the time ({self.errors} of {self.calls} calls in the current {self.window_s:g} s "
                f"window; baseline {self.baseline:.1%})")


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), computed in log space (exact for the sizes windows have)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    terms = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q
             for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@dataclass
class _Window:
    start: float
    calls: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    fired: set[str] = field(default_factory=set)


class ErrorRateMonitor:
    """Counts calls and errors per (operation, model) and says when an error class spikes (module docstring)."""

    def __init__(self, *, window_s: float = 300.0, factor: float = 3.0, min_calls: int = 20, min_rate: float = 0.1,
                 baselines: dict[str, dict[str, float]] | None = None) -> None:
        self.window_s, self.factor, self.min_calls, self.min_rate = window_s, factor, min_calls, min_rate
        self.baselines: dict[str, dict[str, float]] = baselines or {}
        """``operation|model`` -> error class -> baseline rate. A key present means it has history."""
        self._windows: dict[str, _Window] = {}

    @staticmethod
    def key(operation: str, model: str) -> str:
        return f"{operation}|{model}"

    def _window(self, key: str, now: float) -> _Window:
        start = math.floor(now / self.window_s) * self.window_s
        w = self._windows.get(key)
        if w is None or w.start != start:
            if w is not None and w.calls:
                self._close(key, w)
            w = self._windows[key] = _Window(start=start)
        return w

    def _close(self, key: str, w: _Window) -> None:
        base = self.baselines.setdefault(key, {})
        for cls in set(base) | set(w.errors):
            rate = w.errors.get(cls, 0) / w.calls
            base[cls] = rate if cls not in base else ALPHA * rate + (1 - ALPHA) * base[cls]

    def record(self, operation: str, model: str, error_class: str | None, now: float) -> list[Alert]:
        """Count one call (``error_class`` None: it succeeded); the alerts it makes fire, if any."""
        key = self.key(operation, model)
        w = self._window(key, now)
        w.calls += 1
        if error_class:
            w.errors[error_class] = w.errors.get(error_class, 0) + 1
        if key not in self.baselines or w.calls < self.min_calls or not error_class or error_class in w.fired:
            return []
        errors = w.errors[error_class]
        rate = errors / w.calls
        baseline = max(self.baselines[key].get(error_class, 0.0), FLOOR)
        if rate < self.min_rate or rate <= self.factor * baseline or binomial_tail(errors, w.calls, baseline) \
                >= P_VALUE:
            return []
        w.fired.add(error_class)
        return [Alert(operation=operation, model=model, error_class=error_class, rate=round(rate, 4),
                      baseline=round(self.baselines[key].get(error_class, 0.0), 4), errors=errors, calls=w.calls,
                      window_start=w.start, window_s=self.window_s, time=now)]


class AlertSink:
    """Where alerts go: the log, ``alerts.jsonl`` in the telemetry folder, and a webhook when one is set."""

    def __init__(self, folder: Path, webhook_url: str | None = None) -> None:
        self.path = folder / "alerts.jsonl"
        self.webhook_url = webhook_url
        folder.mkdir(parents=True, exist_ok=True)

    def emit(self, alert: Alert) -> None:
        log.warning("%s", alert.text)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(alert)) + "\n")

    async def notify(self, alert: Alert) -> bool:
        """POST the alert to the webhook (Slack-compatible: ``text``, plus the fields); False when it failed."""
        if not self.webhook_url:
            return False
        try:
            async with httpx.AsyncClient(timeout=10) as client:
                r = await client.post(self.webhook_url, json={"text": alert.text, "alert": asdict(alert)})
            return r.status_code < 300
        except httpx.HTTPError as e:
            log.warning("alert webhook %s failed: %s", self.webhook_url, e)
            return False


def read_alerts(folder: Path, since: float = 0.0) -> list[dict]:
    """The alerts recorded in ``folder`` since ``since`` (seconds since the epoch), oldest first."""
    path = folder / "alerts.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            a = json.loads(line)
        except ValueError:
            continue
        if isinstance(a, dict) and a.get("time", 0) >= since:
            out.append(a)
    return out


def load_baselines(path: Path) -> dict[str, dict[str, float]]:
    """Baselines saved by an earlier worker (empty when there are none or the file is unreadable)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): {str(c): float(r) for c, r in v.items() if isinstance(r, int | float)}
            for k, v in data.items() if isinstance(v, dict)}


def save_baselines(path: Path, baselines: dict[str, dict[str, float]]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(baselines))
    tmp.replace(path)
