import pytest

from agents.budget import Budget, BudgetExhausted, BudgetTracker
from agents.messages import Usage
from infra.errors import BosunError


def tracker(**limits) -> BudgetTracker:
    return BudgetTracker(budget=Budget(**limits), started_at=1000.0, scope="agent planner-1")


def test_charge_and_check_each_resource():
    t = tracker(tokens=1000, turns=3, usd=0.5, wall_clock_s=60)
    t.charge(Usage(input_tokens=300, output_tokens=100, cached_input_tokens=200), 0.1)
    assert (t.spent.tokens, t.spent.turns, t.spent.cached_input_tokens) == (400, 1, 200)
    t.check(now=1010.0)
    assert t.remaining("tokens") == 600 and t.remaining("wall_clock_s", 1010.0) == 50
    t.charge(Usage(input_tokens=600), 0.0)
    with pytest.raises(BudgetExhausted) as e:
        t.check(now=1010.0)
    assert (e.value.resource, e.value.limit, e.value.used) == ("tokens", 1000, 1000)
    assert e.value.kind == "BudgetExhausted" and isinstance(e.value, BosunError)
    assert "agent planner-1 budget exhausted: tokens used 1000 tokens of a limit of 1000 tokens" in str(e.value)


@pytest.mark.parametrize("limits,charges,now,resource", [
    ({"turns": 2}, [(Usage(), 0.0)] * 2, None, "turns"),
    ({"usd": 1.0}, [(Usage(), 0.6), (Usage(), 0.5)], None, "usd"),
    ({"wall_clock_s": 30}, [], 1030.0, "wall_clock_s"),
])
def test_exhaustion_by_kind(limits, charges, now, resource):
    t = tracker(**limits)
    for usage, cost in charges:
        t.charge(usage, cost)
    with pytest.raises(BudgetExhausted) as e:
        t.check(now)
    assert e.value.resource == resource


def test_wall_clock_is_only_checked_with_a_time():
    t = tracker(wall_clock_s=1)
    t.check()  # no time passed in: nothing read from the clock
    with pytest.raises(BudgetExhausted):
        t.check(now=2000.0)


def test_unlimited_never_exhausts():
    t = tracker()
    for _ in range(100):
        t.charge(Usage(input_tokens=10**6, output_tokens=10**6), 100.0)
    t.check(now=10**9)
    assert t.remaining("usd") is None


def test_fan_out():
    t = tracker(tokens=1_000_000, usd=10.0, wall_clock_s=3600)
    each = Budget(tokens=300_000, usd=2.0, wall_clock_s=1200)
    assert t.max_agents(each, now=1000.0) == 3
    assert t.can_start(3, each, now=1000.0) and not t.can_start(4, each, now=1000.0)
    t.charge(Usage(input_tokens=500_000), 1.0)
    assert t.max_agents(each) == 1
    assert not t.can_start(1, each, now=1000.0 + 3000)  # 600 s left, an agent may need 1200
    assert t.can_start(50, Budget())  # no estimate: nothing limits


def test_tracker_survives_serialization():
    t = tracker(tokens=10).charge(Usage(input_tokens=4), 0.01, turns=2)
    again = BudgetTracker.model_validate_json(t.model_dump_json())
    assert again == t and again.spent.turns == 2


def test_budget_scaled_and_validation():
    b = Budget(tokens=100, turns=3, usd=1.5, wall_clock_s=10).scaled(2)
    assert (b.tokens, b.turns, b.usd, b.wall_clock_s) == (200, 6, 3.0, 10)
    with pytest.raises(ValueError):
        Budget(tokens=-1)
