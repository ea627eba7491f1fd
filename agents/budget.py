"""Budgets: how much an agent (or a whole task) may spend in tokens, turns, wall-clock time and money.

Deterministic on purpose, so workflow code can use it: time is always passed in (``workflow.now()``), never
read, and the tracker is a pydantic model that survives continue-as-new as a plain value.

Control flow is by typed exception: ``BudgetTracker.check(now)`` raises ``BudgetExhausted`` naming the exhausted
resource, its limit and what was used.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.messages import Usage
from infra.errors import BosunError

Resource = Literal["tokens", "turns", "wall_clock_s", "usd"]
RESOURCES: tuple[Resource, ...] = ("tokens", "turns", "wall_clock_s", "usd")


class Budget(BaseModel):
    """Limits; ``None`` means unlimited for that resource."""

    model_config = ConfigDict(extra="forbid")

    tokens: int | None = Field(None, ge=0)
    """Input plus output tokens over all model calls (cached input tokens included: they fill the window too)."""
    turns: int | None = Field(None, ge=0)
    """Model calls."""
    wall_clock_s: float | None = Field(None, ge=0)
    """Seconds from the tracker's start."""
    usd: float | None = Field(None, ge=0)
    """Money, from ``agents.profiles.cost_usd``."""

    def limit(self, resource: Resource) -> float | None:
        return getattr(self, resource)

    def scaled(self, n: float) -> Budget:
        """This budget times ``n`` (wall-clock is not scaled: parallel agents share the clock)."""
        return Budget(tokens=None if self.tokens is None else int(self.tokens * n),
                      turns=None if self.turns is None else int(self.turns * n),
                      wall_clock_s=self.wall_clock_s,
                      usd=None if self.usd is None else self.usd * n)


class Spent(BaseModel):
    """What has been used so far."""

    tokens: int = 0
    turns: int = 0
    usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


class BudgetExhausted(BosunError):
    """A budget ran out. ``resource`` is ``tokens``, ``turns``, ``wall_clock_s`` or ``usd``.

    (Its ``kind``, as every BosunError's, is its class name; the exhausted dimension is ``resource``.)
    """

    def __init__(self, resource: Resource, limit: float, used: float, *, scope: str = "agent") -> None:
        unit = {"tokens": " tokens", "turns": " turns", "wall_clock_s": " s", "usd": " USD"}[resource]
        shown_used = f"{used:.4f}" if resource == "usd" else f"{used:g}"
        super().__init__(f"{scope} budget exhausted: {resource} used {shown_used}{unit} of a limit of "
                         f"{limit:g}{unit}")
        self.resource: Resource = resource
        self.limit = limit
        self.used = used
        self.scope = scope


class BudgetTracker(BaseModel):
    """Spending against one Budget, for one agent run or one task (``scope``)."""

    budget: Budget
    started_at: float
    """When the run started, in seconds (``workflow.now().timestamp()``)."""
    scope: str = "agent"
    """Shown in messages: ``agent``, ``task``, or an agent id."""
    spent: Spent = Field(default_factory=Spent)

    def charge(self, usage: Usage, cost: float, turns: int = 1) -> BudgetTracker:
        """Record one model call's usage and cost (and ``turns`` turns). Never raises: ``check`` decides."""
        s = self.spent
        s.input_tokens += usage.input_tokens
        s.output_tokens += usage.output_tokens
        s.cached_input_tokens += usage.cached_input_tokens
        s.tokens += usage.input_tokens + usage.output_tokens
        s.turns += turns
        s.usd += cost
        return self

    def used(self, resource: Resource, now: float | None = None) -> float:
        if resource == "wall_clock_s":
            return 0.0 if now is None else max(0.0, now - self.started_at)
        return getattr(self.spent, resource)

    def remaining(self, resource: Resource, now: float | None = None) -> float | None:
        """What is left of ``resource`` (never negative), or None when it is unlimited."""
        limit = self.budget.limit(resource)
        return None if limit is None else max(0.0, limit - self.used(resource, now))

    def exhausted(self, now: float | None = None) -> BudgetExhausted | None:
        """The first exhausted resource as an exception (not raised), or None. Wall-clock only when ``now``."""
        for resource in RESOURCES:
            limit = self.budget.limit(resource)
            if limit is None or (resource == "wall_clock_s" and now is None):
                continue
            used = self.used(resource, now)
            if used >= limit:
                return BudgetExhausted(resource, limit, used, scope=self.scope)
        return None

    def check(self, now: float | None = None) -> None:
        """Raise BudgetExhausted when any limit is reached (call before starting the next turn)."""
        error = self.exhausted(now)
        if error is not None:
            raise error

    def can_start(self, n_agents: int, estimate: Budget, now: float | None = None) -> bool:
        """Whether ``n_agents`` more agents, each expected to spend ``estimate``, fit in what is left."""
        return self.max_agents(estimate, now) >= n_agents

    def max_agents(self, estimate: Budget, now: float | None = None) -> int:
        """How many agents of cost ``estimate`` fit in what is left (a large number when nothing limits it)."""
        if self.exhausted(now) is not None:
            return 0
        fits = 1_000_000
        for resource in ("tokens", "turns", "usd"):
            left, each = self.remaining(resource, now), estimate.limit(resource)
            if left is None or not each:
                continue
            fits = min(fits, int(left // each))
        left_s, each_s = self.remaining("wall_clock_s", now), estimate.wall_clock_s
        if left_s is not None and each_s and each_s > left_s:
            return 0  # parallel agents share the clock: one that cannot finish in time cannot start
        return fits
