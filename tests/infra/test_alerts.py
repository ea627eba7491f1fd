"""Error-rate alerts: a spike fires within its window, a steady rate never does; where alerts go."""

from __future__ import annotations

import json
import random

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from infra.alerts import AlertSink, ErrorRateMonitor, binomial_tail, load_baselines, read_alerts, save_baselines
from tests.infra.events.fakes import serve

W = 300.0


def feed(monitor: ErrorRateMonitor, start: float, calls: int, rate: float, rng: random.Random,
         operation: str = "run_tests", error: str = "Timeout") -> list:
    fired = []
    for i in range(calls):
        fired += monitor.record(operation, "openai:gpt-5", error if rng.random() < rate else None,
                                start + i * (W / calls) * 0.999)
    return fired


def test_a_spike_to_half_failing_fires_within_its_window():
    rng = random.Random(7)
    m = ErrorRateMonitor(window_s=W)
    assert feed(m, 0, 200, 0.02, rng) == []  # the first window only makes the baseline
    fired = feed(m, W, 200, 0.5, rng)
    assert len(fired) == 1  # once per window and class
    a = fired[0]
    assert (a.operation, a.model, a.error_class) == ("run_tests", "openai:gpt-5", "Timeout")
    assert a.window_start == W and a.calls <= 40  # it fired early in the window, not at its end
    assert a.rate >= 0.1 and "fails with Timeout" in a.text


def test_a_steady_two_percent_never_fires():
    rng = random.Random(11)
    m = ErrorRateMonitor(window_s=W)
    fired = []
    for w in range(200):
        fired += feed(m, w * W, 150, 0.02, rng)
    assert fired == []
    assert m.baselines["run_tests|openai:gpt-5"]["Timeout"] == pytest.approx(0.02, abs=0.015)


def test_no_alert_without_a_baseline_or_with_too_few_calls():
    rng = random.Random(3)
    m = ErrorRateMonitor(window_s=W, min_calls=20)
    assert feed(m, 0, 200, 0.5, rng) == []  # no history yet: a tool's usual rate is not known
    m2 = ErrorRateMonitor(window_s=W, min_calls=20, baselines={"run_tests|openai:gpt-5": {"Timeout": 0.0}})
    assert feed(m2, 0, 19, 1.0, rng) == []  # 19 calls: below the volume
    assert len(m2.record("run_tests", "openai:gpt-5", "Timeout", 19 * W / 19 * 0.99)) == 1


def test_a_new_error_class_on_a_known_tool_fires_and_others_are_separate():
    m = ErrorRateMonitor(window_s=W, baselines={"str_replace|m": {"ToolFailed": 0.15}})
    fired = [a for i in range(40) for a in m.record("str_replace", "m", "ToolFailed" if i % 4 else "Unknown", i)]
    # ToolFailed at 75% is 5x its 15% baseline; Unknown at 25% against a 1% floor: both fire, once each
    assert sorted(a.error_class for a in fired) == ["ToolFailed", "Unknown"]


def test_binomial_tail():
    assert binomial_tail(0, 10, 0.5) == 1.0
    assert binomial_tail(11, 10, 0.5) == 0.0
    assert binomial_tail(10, 10, 0.5) == pytest.approx(0.5 ** 10)
    assert binomial_tail(3, 100, 0.02) == pytest.approx(0.3233, abs=1e-3)


def test_baselines_survive_a_restart_and_bad_files_are_ignored(tmp_path):
    path = tmp_path / "b.json"
    save_baselines(path, {"run_tests|m": {"Timeout": 0.02}})
    assert load_baselines(path) == {"run_tests|m": {"Timeout": 0.02}}
    path.write_text("[not json")
    assert load_baselines(path) == {}


async def test_alerts_go_to_the_file_and_the_webhook(tmp_path):
    got: list[dict] = []

    async def hook(request: Request) -> JSONResponse:
        got.append(await request.json())
        return JSONResponse({"ok": True})

    m = ErrorRateMonitor(window_s=W, baselines={"model_call|anthropic:claude-sonnet-4-5": {}})
    alert = next(a for i in range(30) for a in m.record("model_call", "anthropic:claude-sonnet-4-5",
                                                           "ProviderError", float(i)))
    async with serve(Starlette(routes=[Route("/hook", hook, methods=["POST"])])) as url:
        sink = AlertSink(tmp_path, f"{url}/hook")
        sink.emit(alert)
        assert await sink.notify(alert)
    assert got[0]["text"].startswith("bosun alert: model_call on anthropic:claude-sonnet-4-5 fails with ProviderError")
    assert got[0]["alert"]["error_class"] == "ProviderError"
    assert [a["error_class"] for a in read_alerts(tmp_path)] == ["ProviderError"]
    assert json.loads((tmp_path / "alerts.jsonl").read_text())["calls"] == 20
    assert not await AlertSink(tmp_path, "http://127.0.0.1:1/nothing").notify(alert)  # a dead hook is logged only
