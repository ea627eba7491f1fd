import pytest
from pydantic import ValidationError

from agents.router import RoleRouting, RouterConfig, RouteRequest, complexity, fallbacks, next_model, route

CONFIG = RouterConfig(tiers={"small": "openai:gpt-5-mini", "medium": "anthropic:claude-sonnet-4-5",
                             "large": "openai:gpt-5"})


def test_score_is_documented_sum_of_saturating_factors():
    assert complexity(RouteRequest())[0] == 0
    top = RouteRequest(task_chars=10**6, plan_subtasks=100, files_in_scope=100, failures_so_far=100)
    assert complexity(top)[0] == 100
    score, factors = complexity(RouteRequest(task_chars=3000, plan_subtasks=4, files_in_scope=3, failures_so_far=1))
    assert factors == {"plan_subtasks": 12.5, "files_in_scope": 6.25, "failures_so_far": 10.0, "task_chars": 10.0}
    assert score == 38.75


def test_auto_picks_tiers_by_score():
    small = route("fast_edit", RouteRequest(task_chars=200, files_in_scope=1), CONFIG)
    assert (small.tier, small.model) == ("small", "openai:gpt-5-mini")
    assert "complexity" in small.reason and "small tier" in small.reason
    medium = route("fast_edit", RouteRequest(task_chars=3000, plan_subtasks=4, files_in_scope=3, failures_so_far=1),
                   CONFIG)
    assert (medium.tier, medium.model) == ("medium", "anthropic:claude-sonnet-4-5")
    large = route("debugger", RouteRequest(task_chars=6000, failures_so_far=3, files_in_scope=12), CONFIG)
    assert (large.tier, large.model) == ("large", "openai:gpt-5") and large.score >= CONFIG.large_from


def test_role_minimum_tier_is_explained():
    d = route("planner", RouteRequest(task_chars=100), CONFIG)
    assert d.tier == "medium" and "raised to the role's minimum tier medium" in d.reason


def test_fixed_model_per_role_and_override():
    cfg = CONFIG.with_override("fast_edit", "anthropic:claude-haiku-4-5")
    d = route("fast_edit", RouteRequest(failures_so_far=10), cfg)
    assert (d.model, d.tier) == ("anthropic:claude-haiku-4-5", None)
    assert "fixed" in d.reason and d.score == 30
    assert route("fast_edit", RouteRequest(), cfg.with_override("fast_edit", "auto")).tier == "small"
    with pytest.raises(ValidationError, match="not of the form"):
        CONFIG.with_override("fast_edit", "gpt-5")


def test_unknown_role_uses_auto():
    assert route("reviewer", RouteRequest(), CONFIG).model == "openai:gpt-5-mini"


def test_fallback_chain_and_failed_models():
    assert fallbacks("fast_edit", CONFIG) == ["openai:gpt-5", "anthropic:claude-sonnet-4-5", "openai:gpt-5-mini"]
    cfg = RouterConfig(tiers=CONFIG.tiers, roles={"debugger": RoleRouting(
        model="anthropic:claude-opus-4-1", fallbacks=["openai:gpt-5", "openai:gpt-5", "anthropic:claude-sonnet-4-5"])})
    assert fallbacks("debugger", cfg) == ["openai:gpt-5", "anthropic:claude-sonnet-4-5"]
    d = route("debugger", RouteRequest(failed_models=["anthropic:claude-opus-4-1"]), cfg)
    assert d.model == "openai:gpt-5" and "kept failing" in d.reason
    assert next_model("debugger", "openai:gpt-5", cfg) == "anthropic:claude-sonnet-4-5"
    assert next_model("debugger", "openai:gpt-5", cfg, failed=["anthropic:claude-sonnet-4-5"]) is None
    everything = route("debugger", RouteRequest(failed_models=["anthropic:claude-opus-4-1", "openai:gpt-5",
                                                                "anthropic:claude-sonnet-4-5"]), cfg)
    assert everything.model == "anthropic:claude-opus-4-1" and "every model" in everything.reason


def test_config_validation():
    with pytest.raises(ValidationError, match="tiers must name a spec for large"):
        RouterConfig(tiers={"small": "openai:a", "medium": "openai:b"})
    with pytest.raises(ValidationError, match="provider 'mistral'"):
        RoleRouting(fallbacks=["mistral:large"])
    with pytest.raises(ValidationError):
        RoleRouting(modle="auto")


def test_decision_is_serializable_for_history():
    d = route("fast_edit", RouteRequest(task_chars=50), CONFIG)
    assert set(d.model_dump()) == {"role", "model", "score", "tier", "factors", "reason"}


def test_choices_are_every_model_auto_may_pick():
    """What `bosun run --model auto` checks for keys before the start: the tiers (roles not listed take any),
    each role's tiers from its minimum up, and a role's fixed model; not the fallbacks."""
    config = RouterConfig(tiers={"small": "openai:gpt-5-mini", "medium": "anthropic:claude-sonnet-4-5",
                                 "large": "openai:gpt-5"},
                          roles={"planner": RoleRouting(model="anthropic:claude-opus-4-5"),
                                 "debugger": RoleRouting(min_tier="large", tiers={
                                     "small": "openai:gpt-4.1-nano", "medium": "openai:gpt-4.1-mini",
                                     "large": "openai-compatible:http://h:1/v1#big"},
                                     fallbacks=["anthropic:claude-haiku-4-5"])})
    assert config.choices() == ["openai:gpt-5-mini", "anthropic:claude-sonnet-4-5", "openai:gpt-5",
                                "anthropic:claude-opus-4-5", "openai-compatible:http://h:1/v1#big"]
    assert set(RouterConfig().choices()) == {"openai:gpt-5-mini", "anthropic:claude-sonnet-4-5", "openai:gpt-5"}
