"""Model routing: which model runs a role, and what to fall back to when its provider keeps failing.

A role's model is either a spec (``anthropic:claude-sonnet-4-5``) or ``auto``. With ``auto``, ``route`` computes
a complexity score from the request and picks the role's ``small``, ``medium`` or ``large`` model:

    score = 25 * min(plan_subtasks / 8, 1)          plan size
          + 25 * min(files_in_scope / 12, 1)        files the agent may touch
          + 30 * min(failures_so_far / 3, 1)        failed verifications / agent attempts so far
          + 20 * min(task_chars / 6000, 1)          length of the task text

so 0 <= score <= 100. ``score < small_below`` -> small, ``score < large_from`` -> medium, else large; a role's
``min_tier`` raises the pick (the planner defaults to at least medium). Every decision carries the score, the
factors and a sentence saying why, for the history.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agents.profiles import profile_for
from agents.providers import parse_spec
from infra.errors import ConfigError, describe_validation

Tier = Literal["small", "medium", "large"]
TIERS: tuple[Tier, ...] = ("small", "medium", "large")

WEIGHTS = {"plan_subtasks": (25.0, 8), "files_in_scope": (25.0, 12), "failures_so_far": (30.0, 3),
           "task_chars": (20.0, 6000)}
"""Score factor -> (points at saturation, value at which it saturates)."""


class RouteRequest(BaseModel):
    """What is known about the work when a model is picked."""

    task_chars: int = Field(0, ge=0)
    """Length of the task (or subtask goal) text, in characters."""
    plan_subtasks: int = Field(0, ge=0)
    """Subtasks in the plan (0 before planning)."""
    files_in_scope: int = Field(0, ge=0)
    """Files the agent may edit (a subtask's scope), or files the task names."""
    failures_so_far: int = Field(0, ge=0)
    """Red verifications and failed agent attempts on this task so far."""
    failed_models: list[str] = Field(default_factory=list)
    """Specs whose provider kept failing in this task; routing skips them (next in the fallback chain)."""


def _check_spec(spec: str) -> str:
    try:
        parse_spec(spec)
    except ConfigError as e:
        raise ValueError(str(e)) from None
    return spec


def _check_tiers(tiers: dict[Tier, str] | None) -> dict[Tier, str] | None:
    if tiers is None:
        return None
    missing = [t for t in TIERS if t not in tiers]
    if missing:
        raise ValueError(f"tiers must name a spec for {', '.join(missing)}")
    for spec in tiers.values():
        _check_spec(spec)
    return tiers


class RoleRouting(BaseModel):
    """How one role picks its model."""

    model_config = ConfigDict(extra="forbid")

    model: str = "auto"
    """A model spec, or ``auto`` to pick by complexity score from ``tiers``."""
    tiers: dict[Tier, str] | None = None
    """Specs per tier for ``auto``; None = the config's ``tiers``."""
    min_tier: Tier = "small"
    """Lowest tier ``auto`` may pick for this role."""
    fallbacks: list[str] | None = None
    """Specs tried in order when the chosen model's provider keeps failing; None = the other tiers, largest
    first."""

    @field_validator("model")
    @classmethod
    def _model(cls, model: str) -> str:
        return model if model == "auto" else _check_spec(model)

    @field_validator("tiers")
    @classmethod
    def _tiers(cls, tiers: dict[Tier, str] | None) -> dict[Tier, str] | None:
        return _check_tiers(tiers)

    @field_validator("fallbacks")
    @classmethod
    def _fallbacks(cls, specs: list[str] | None) -> list[str] | None:
        return None if specs is None else [_check_spec(s) for s in specs]


class RouterConfig(BaseModel):
    """Model routing for every role."""

    model_config = ConfigDict(extra="forbid")

    tiers: dict[Tier, str] = Field(default_factory=lambda: {
        "small": "openai:gpt-5-mini",
        "medium": "anthropic:claude-sonnet-4-5",
        "large": "openai:gpt-5",
    })
    """Default specs per tier (editable; nothing here is a recommendation beyond 'works with bosun')."""
    roles: dict[str, RoleRouting] = Field(default_factory=lambda: {
        "planner": RoleRouting(min_tier="medium"),
        "fast_edit": RoleRouting(),
        "debugger": RoleRouting(min_tier="medium"),
    })
    """Per-role routing; a role not listed uses ``RoleRouting()`` (auto, min tier small)."""
    model_fallbacks: dict[str, list[str]] = Field(default_factory=dict)
    """Fallback chains by model spec, for any task whatever picked the model (``"*"``: for every model without
    its own entry); a model with neither uses its profile's chain (agents/profiles.py)."""
    small_below: float = 30.0
    """Scores below this pick the small tier."""
    large_from: float = 65.0
    """Scores from this up pick the large tier."""

    @field_validator("tiers")
    @classmethod
    def _all_tiers(cls, tiers: dict[Tier, str]) -> dict[Tier, str]:
        return _check_tiers(tiers) or tiers

    @field_validator("model_fallbacks")
    @classmethod
    def _model_fallbacks(cls, chains: dict[str, list[str]]) -> dict[str, list[str]]:
        for key, specs in chains.items():
            if key != "*":
                _check_spec(key)
            for spec in specs:
                _check_spec(spec)
        return chains

    def role(self, role: str) -> RoleRouting:
        return self.roles.get(role, RoleRouting())

    def choices(self) -> list[str]:
        """Every spec ``auto`` may pick for an agent, fallbacks aside: each listed role's fixed model or its tiers
        from its minimum up, and every tier (the roles not listed, solo among them, take any)."""
        picks = list(self.tiers.values())
        for r in self.roles.values():
            if r.model != "auto":
                picks.append(r.model)
            else:
                tiers = r.tiers or self.tiers
                picks += [tiers[t] for t in TIERS[TIERS.index(r.min_tier):]]
        return list(dict.fromkeys(picks))

    def with_override(self, role: str, model: str) -> RouterConfig:
        """A copy where ``role`` uses ``model`` (a spec or ``auto``): the per-run ``--model`` flag."""
        roles = dict(self.roles)
        roles[role] = RoleRouting.model_validate({**self.role(role).model_dump(), "model": model})
        return self.model_copy(update={"roles": roles})


class RouteDecision(BaseModel):
    """The model picked for a role, and why (recorded in history)."""

    role: str
    model: str
    """The chosen model spec."""
    score: float
    """Complexity score 0-100 (computed even when the model is fixed, for the record)."""
    tier: Tier | None
    """The tier ``auto`` picked; None when the role's model is fixed."""
    factors: dict[str, float]
    """Points contributed by each factor of the score."""
    reason: str


def complexity(request: RouteRequest) -> tuple[float, dict[str, float]]:
    """The documented complexity score (module docstring) and each factor's points."""
    factors = {}
    for name, (points, saturation) in WEIGHTS.items():
        value = getattr(request, name)
        factors[name] = round(points * min(value / saturation, 1.0), 2)
    return round(sum(factors.values()), 2), factors


def _tier_for(score: float, config: RouterConfig) -> Tier:
    return "small" if score < config.small_below else "medium" if score < config.large_from else "large"


def fallbacks(role: str, config: RouterConfig) -> list[str]:
    """The models to try, in order, after the role's model keeps failing (its own pick excluded by caller)."""
    r = config.role(role)
    if r.fallbacks is not None:
        return list(dict.fromkeys(r.fallbacks))
    tiers = r.tiers or config.tiers
    chain = [tiers[t] for t in reversed(TIERS)]
    if r.model != "auto":
        chain = [r.model] + chain
    return list(dict.fromkeys(chain))


def model_fallbacks(model: str, config: RouterConfig) -> list[str]:
    """The fallback chain of a model spec: the configuration's (its own entry, else ``"*"``), else its profile's;
    never the model itself."""
    chain = config.model_fallbacks.get(model, config.model_fallbacks.get("*"))
    if chain is None:
        chain = profile_for(parse_spec(model)).fallbacks
    return [m for m in dict.fromkeys(chain) if m != model]


def route(role: str, request: RouteRequest, config: RouterConfig) -> RouteDecision:
    """Pick the model for ``role``: its fixed spec, or by complexity score; skip models that kept failing."""
    r = config.role(role)
    score, factors = complexity(request)
    described = ", ".join(f"{k}={getattr(request, k)} (+{v:g})" for k, v in factors.items() if v)
    if r.model != "auto":
        model, tier = r.model, None
        reason = f"{role}: model fixed to {model} by configuration (complexity {score:g} not used)"
    else:
        natural = _tier_for(score, config)
        tier = max(natural, r.min_tier, key=TIERS.index)
        model = (r.tiers or config.tiers)[tier]
        floor = f", raised to the role's minimum tier {tier}" if tier != natural else ""
        reason = (f"{role}: complexity {score:g}/100 from {described or 'no signals'} -> {natural} tier{floor} "
                  f"(small < {config.small_below:g} <= medium < {config.large_from:g} <= large): {model}")
    if model in request.failed_models:
        chain = [m for m in [model] + fallbacks(role, config) if m not in request.failed_models]
        if chain:
            reason += f"; {model} kept failing in this task, falling back to {chain[0]}"
            model = chain[0]
        else:
            reason += "; every model of the fallback chain has failed, retrying the first pick"
    return RouteDecision(role=role, model=model, score=score, tier=tier, factors=factors, reason=reason)


def next_model(role: str, current: str, config: RouterConfig, failed: list[str] | None = None) -> str | None:
    """The model after ``current`` in the role's fallback chain, skipping ``failed``; None at the end."""
    chain = [m for m in fallbacks(role, config) if m != current and m not in (failed or [])]
    return chain[0] if chain else None


def load_config(path: Path | None) -> RouterConfig:
    """The router configuration from a JSON file (``BOSUN_ROUTER_CONFIG``), or the defaults when there is none;
    ConfigError naming the setting, the file and the problem."""
    if path is None:
        return RouterConfig()
    try:
        return RouterConfig.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"BOSUN_ROUTER_CONFIG={path}: cannot read it ({e.strerror})") from None
    except ValidationError as e:
        raise ConfigError(f"BOSUN_ROUTER_CONFIG={path}: "
                          f"{describe_validation(e, where='(file)', first_only=True)}") from None
