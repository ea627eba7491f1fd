"""The build activity's time limit comes from the worker's settings, through the prepare step's result."""

from __future__ import annotations

from activities.models import EnvironmentState
from environments.bases import BASE_BUILD_MAX_S
from environments.service import ensure_timeout_s
from infra.settings import Settings
from workflows.placement import BUILD_MINUTES_DEFAULT, build_minutes


def test_the_build_timeout_follows_the_setting():
    fast, slow = Settings(env_build_timeout_s=600), Settings(env_build_timeout_s=5 * 3600)
    assert ensure_timeout_s(fast) == 2 * (600 + BASE_BUILD_MAX_S) < ensure_timeout_s(slow)
    needed = EnvironmentState(status="needed", build_timeout_s=ensure_timeout_s(slow))
    assert build_minutes(needed) == ensure_timeout_s(slow) / 60 > 5 * 60
    assert build_minutes(EnvironmentState(status="needed")) == BUILD_MINUTES_DEFAULT
