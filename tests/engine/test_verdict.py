"""A design's verdict against its deadline and budget: sentences composed from numbers, computed by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.verdict import BUDGET_NPV_BASIS, RunEstimate, compose, explore, usd_short

OWN = "Own (on-prem)"
EXPECTED = "expected, with failures and restarts, for the cheapest option by NPV, Own (on-prem)"


def test_meets_the_deadline_with_its_slack() -> None:
    # 30 − 27.7 = 2.3 days of slack.
    v = compose(deadline_days=30, budget_usd=None, design=RunEstimate(64, 27.7, 3.2e6), option=OWN)
    assert v.status == "meets"
    assert v.deadline is not None and v.deadline.slack_days == pytest.approx(2.3)
    assert v.messages == (f"Meets the 30-day deadline: 27.7 days on 64 nodes (2.3 days slack; {EXPECTED})",)
    assert v.budget is None


def test_misses_the_deadline_and_names_the_node_count_that_meets_it() -> None:
    # 46.4 days on 64 nodes is 16.4 days late; 128 nodes give 24.6 days ≤ 30.
    v = compose(
        deadline_days=30,
        budget_usd=None,
        design=RunEstimate(64, 46.4),
        larger=[RunEstimate(128, 24.6)],
        option=OWN,
    )
    assert v.status == "misses"
    assert v.deadline is not None
    assert v.deadline.slack_days == pytest.approx(-16.4)
    assert v.deadline.meeting_nodes == 128
    assert (
        v.messages[0]
        == f"Misses the 30-day deadline: 64 nodes give 46.4 days; 128 nodes give 24.6 days ({EXPECTED})"
    )


def test_misses_the_deadline_at_every_node_count_tried() -> None:
    larger = [RunEstimate(16, 70.2), RunEstimate(32, 41.0), RunEstimate(64, 30.5)]
    v = compose(deadline_days=30, budget_usd=None, design=RunEstimate(8, 130.0), larger=larger, option=OWN)
    assert v.deadline is not None and v.deadline.meeting_nodes is None
    assert v.messages[0] == (
        "Misses the 30-day deadline: 8 nodes give 130.0 days; 16 nodes give 70.2 days; "
        "32 nodes give 41.0 days; "
        f"64 nodes give 30.5 days; none of the node counts tried, up to 64, meets it ({EXPECTED})"
    )


def test_a_larger_count_that_cannot_be_estimated_or_never_finishes_says_so() -> None:
    larger = [RunEstimate(128, math.inf), RunEstimate(256, None, error="no parallel layout fits")]
    v = compose(deadline_days=10, budget_usd=None, design=RunEstimate(64, 12.0), larger=larger, option=OWN)
    message = v.messages[0]
    assert "128 nodes never finish (interruptions outpace progress)" in message
    assert "256 nodes: no estimate (no parallel layout fits)" in message
    assert v.deadline is not None and v.deadline.to_json()["larger"][0]["days"] is None  # inf is not JSON


def test_within_the_budget_with_what_is_left() -> None:
    # $5.0M − $3.2M = $1.8M to spare.
    v = compose(deadline_days=None, budget_usd=5e6, design=RunEstimate(64, 27.7, 3.2e6), option=OWN)
    assert v.status == "meets"
    assert v.budget is not None and v.budget.margin_usd == pytest.approx(1.8e6)
    assert v.messages == (
        "Within the $5.0M budget: the cheapest option by NPV, Own (on-prem), costs $3.2M per run"
        " ($1.8M to spare)",
    )


def test_over_the_budget_by_the_difference() -> None:
    # $3.2M − $2.0M = $1.2M over.
    v = compose(deadline_days=None, budget_usd=2e6, design=RunEstimate(64, 27.7, 3.2e6), option=OWN)
    assert v.status == "misses"
    assert v.budget is not None and v.budget.margin_usd == pytest.approx(-1.2e6)
    assert v.messages == (
        "Over the $2.0M budget by $1.2M: the cheapest option by NPV, Own (on-prem), costs $3.2M per run",
    )


def test_one_goal_missed_misses_and_the_deadline_comes_first() -> None:
    v = compose(deadline_days=30, budget_usd=2e6, design=RunEstimate(64, 27.7, 3.2e6), option=OWN)
    assert v.status == "misses"
    assert v.deadline is not None and v.deadline.status == "meets"
    assert v.budget is not None and v.budget.status == "misses"
    assert v.messages[0].startswith("Meets the 30-day deadline") and v.messages[1].startswith(
        "Over the $2.0M"
    )


def test_with_a_budget_the_larger_counts_give_their_cost_per_run() -> None:
    v = compose(
        deadline_days=30,
        budget_usd=4e6,
        design=RunEstimate(64, 46.4, 3.2e6),
        larger=[RunEstimate(128, 24.6, 3.4e6)],
        option=OWN,
    )
    assert "128 nodes give 24.6 days at $3.4M per run" in v.messages[0]
    # With the count's NPV over the horizon (issue #31, one basis) that leads, the per-run cost beside it,
    # each labelled; a horizon budget alone also asks for the larger counts' costs.
    v = compose(
        deadline_days=30,
        budget_usd=None,
        budget_npv_usd=12e6,
        design=RunEstimate(64, 46.4, 3.2e6),
        larger=[RunEstimate(128, 24.6, 3.4e6, npv_usd=9.1e6)],
        option=OWN,
        npv_usd=8e6,
    )
    assert (
        "128 nodes give 24.6 days at $9.1M NPV over the horizon ($3.4M per run, undiscounted)"
        in v.messages[0]
    )


def test_no_goals_no_verdict() -> None:
    v = compose(deadline_days=None, budget_usd=None, design=RunEstimate(64, 27.7, 3.2e6), option=OWN)
    assert (v.status, v.messages, v.deadline, v.budget) == ("none", (), None, None)
    assert v.to_json() == {
        "status": "none",
        "messages": [],
        "days_basis": "expected",
        "option": OWN,
        "deadline": None,
        "budget": None,
    }


def test_failure_free_days_are_named_as_such() -> None:
    v = compose(deadline_days=30, budget_usd=None, design=RunEstimate(64, 20.0), days_basis="failure_free")
    assert v.messages[0].endswith("(10.0 days slack; failure-free training estimate)")


def test_a_budget_without_a_cost_cannot_be_checked() -> None:
    v = compose(deadline_days=None, budget_usd=1e6, design=RunEstimate(64, 20.0), option="")
    assert v.status == "none"
    assert v.budget is not None and v.budget.status == "unknown"
    assert v.messages == ("The $1.0M budget cannot be checked: no option has a cost per run",)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("goals.deadline_days", {"deadline_days": 0, "budget_usd": None}),
        ("goals.budget_usd", {"deadline_days": None, "budget_usd": -5.0}),
        ("goals.deadline_days", {"deadline_days": math.nan, "budget_usd": None}),
    ],
)
def test_rejects_a_goal_that_is_not_a_positive_number(field: str, kwargs: dict[str, float | None]) -> None:
    with pytest.raises(InputError) as info:
        compose(design=RunEstimate(64, 20.0), **kwargs)
    assert info.value.field == field


def test_explore_stops_at_the_first_node_count_that_meets_the_deadline() -> None:
    # Days halve as nodes double: 64 nodes 46.4 days, 128 → 23.2 ≤ 30: one extra estimate only.
    calls: list[int] = []

    def estimate(nodes: int) -> RunEstimate:
        calls.append(nodes)
        return RunEstimate(nodes, 46.4 * 64 / nodes)

    runs = explore(nodes=64, deadline_days=30, estimate=estimate)
    assert calls == [128]
    assert runs == (RunEstimate(128, 23.2),)


def test_explore_tries_at_most_three_larger_counts() -> None:
    calls: list[int] = []

    def estimate(nodes: int) -> RunEstimate:
        calls.append(nodes)
        return RunEstimate(nodes, 1000.0)

    assert [r.nodes for r in explore(nodes=8, deadline_days=30, estimate=estimate)] == [16, 32, 64]
    assert calls == [16, 32, 64]


def test_explore_stops_when_a_count_cannot_be_estimated_and_at_the_node_limit() -> None:
    def fails(nodes: int) -> RunEstimate:
        return RunEstimate(nodes, None, error="no layout")

    assert [r.nodes for r in explore(nodes=8, deadline_days=30, estimate=fails)] == [16]
    slow = explore(nodes=40_000, deadline_days=30, estimate=lambda n: RunEstimate(n, 99.0), max_nodes=100_000)
    assert [r.nodes for r in slow] == [80_000]


@pytest.mark.parametrize(
    ("usd", "shown"),
    [
        (3.2e6, "$3.2M"),
        (1.5e9, "$1.5B"),
        (758_931.2, "$759k"),
        (8_500, "$8,500"),
        (-1.2e6, "$1.2M"),
    ],
)
def test_money_reads_as_a_sentence_says_it(usd: float, shown: str) -> None:
    assert usd_short(usd) == shown


@given(
    days=st.floats(min_value=0.01, max_value=1e4),
    deadline=st.floats(min_value=0.01, max_value=1e4),
    cost=st.floats(min_value=1.0, max_value=1e10),
    budget=st.floats(min_value=1.0, max_value=1e10),
)
def test_misses_exactly_when_a_goal_is_missed(
    days: float, deadline: float, cost: float, budget: float
) -> None:
    v = compose(deadline_days=deadline, budget_usd=budget, design=RunEstimate(8, days, cost), option=OWN)
    assert (v.status == "misses") == (days > deadline or cost > budget)
    assert v.status in ("meets", "misses")


def test_a_horizon_budget_is_checked_on_the_npv_of_the_options_cash_out() -> None:
    # goals.budget_npv_usd against the NPV of the chosen option's monthly cash out: $30M − $22.6M = $7.4M.
    v = compose(
        deadline_days=None,
        budget_usd=None,
        design=RunEstimate(32, 50.0, 3.2e6),
        option="Own (on-prem)",
        budget_npv_usd=30e6,
        npv_usd=22.6e6,
        horizon_years=3,
    )
    assert v.status == "meets" and v.budget is None
    assert v.budget_npv is not None and v.budget_npv.margin_usd == pytest.approx(7.4e6)
    assert v.messages == (
        "Within the $30.0M budget over the horizon: Own (on-prem), the cheapest option by NPV, costs $22.6M"
        " (NPV of its cash out over 3 years; $7.4M to spare)",
    )
    assert v.to_json()["budget_npv"]["basis"] == BUDGET_NPV_BASIS
    over = compose(
        deadline_days=None, budget_usd=None, design=RunEstimate(32, 50.0), option="x", budget_npv_usd=20e6,
        npv_usd=22.6e6, horizon_years=1,
    )  # fmt: skip
    assert over.status == "misses" and over.budget_npv is not None
    assert over.budget_npv.margin_usd == pytest.approx(-2.6e6)
    assert over.messages[0].startswith("Over the $20.0M budget over the horizon by $2.6M: x,")
    with pytest.raises(InputError) as err:
        compose(deadline_days=None, budget_usd=None, design=RunEstimate(1, 1.0), budget_npv_usd=-1.0)
    assert err.value.field == "goals.budget_npv_usd"
    # Without a goal for it, the JSON has no key: results stored before it read the same.
    plain = compose(deadline_days=None, budget_usd=None, design=RunEstimate(1, 1.0))
    assert "budget_npv" not in plain.to_json()
