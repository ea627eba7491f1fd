"""Helper processes that bound host-side work on hostile content (sandbox/bounded.py): each bound ends the call
(CPU, memory, wall time), the caller learns which, and the next call gets a working helper."""

from __future__ import annotations

import os
import resource
import time

import pytest

from sandbox.bounded import Bounds, OverBound, Pool


def spin(seconds: float) -> float:
    """Burn CPU for ``seconds`` (of CPU time)."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return seconds


def allocate(megabytes: int) -> int:
    return len(bytearray(megabytes << 20))


def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return "slept"


def pid() -> int:
    return os.getpid()


def fail() -> None:
    raise ValueError("a hostile file broke the parser")


def die() -> None:
    os._exit(3)


def echo(data: bytes, text: str) -> list:
    return [len(data), text]


def environment() -> dict:
    return dict(os.environ)


@pytest.fixture
def pool():
    p = Pool(2)
    yield p
    p.close()


def test_a_call_runs_in_a_kept_helper_and_returns_json(pool: Pool, monkeypatch):
    monkeypatch.setenv("BOSUN_ANTHROPIC_API_KEY", "sk-not-for-helpers")
    assert "BOSUN_ANTHROPIC_API_KEY" not in pool.call(environment)  # none of the worker's variables
    first = pool.call(pid)
    assert first != os.getpid() and pool.call(pid) == first  # the same helper, kept between calls
    assert pool.call(echo, b"\xff" * 10, "déjà") == [10, "déjà"]


def test_cpu_time_past_the_bound_ends_the_call_and_costs_no_more():
    pool = Pool(1)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with pytest.raises(OverBound) as e:
        pool.call(spin, 30.0, bounds=Bounds(cpu_s=0.5))
    assert e.value.why == "cpu" and "more than 0.5 s of CPU" in str(e.value)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert 0.4 < spent < 1.5, spent  # the helper's whole life, start-up included
    assert pool.call(spin, 0.05, bounds=Bounds(cpu_s=0.5)) == 0.05  # a new helper took its place
    pool.close()


def test_memory_past_the_bound_ends_the_call(pool: Pool):
    with pytest.raises(OverBound) as e:
        pool.call(allocate, 600, bounds=Bounds(memory_mb=300))
    assert e.value.why == "memory" and "more than 300 MB" in str(e.value)
    assert pool.call(allocate, 50, bounds=Bounds(memory_mb=300)) == 50 << 20


def test_wall_time_failures_and_crashes_are_reported(pool: Pool):
    with pytest.raises(OverBound) as e:
        pool.call(sleep, 30, bounds=Bounds(wall_s=0.5))
    assert e.value.why == "time"
    with pytest.raises(OverBound) as e:
        pool.call(fail)
    assert e.value.why == "failed" and str(e.value) == "failed (ValueError: a hostile file broke the parser)"
    kept = pool.call(pid)  # an exception leaves the helper working
    with pytest.raises(OverBound) as e:
        pool.call(die)
    assert e.value.why == "crashed" and str(e.value) == "crashed (its helper ended with exit status 3)"
    assert pool.call(pid) != kept


def test_map_runs_on_several_helpers_and_keeps_each_outcome(pool: Pool):
    pool.map(sleep, [(0.3,), (0.3,)])  # both helpers started
    started = time.monotonic()
    out = pool.map(sleep, [(0.5,), (0.5,), (0.5,), (0.5,)])
    assert out == ["slept"] * 4 and time.monotonic() - started < 1.8  # two at a time
    mixed = pool.map(spin, [(0.01,), (30.0,), (0.02,)], Bounds(cpu_s=0.3))
    assert mixed[0] == 0.01 and mixed[2] == 0.02 and isinstance(mixed[1], OverBound) and mixed[1].why == "cpu"
