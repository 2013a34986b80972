"""Pareto front, best per figure and the recommendation (engine.tradeoffs), shared by pages and analyses."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from clusterdesigner.engine.tradeoffs import best_per_figure, pareto_front, pareto_indices, recommend


def test_pareto_front_keeps_points_no_other_beats_on_both_axes() -> None:
    # (days, cost): (10, 9) and (20, 5) and (30, 4) trade off; (25, 6) is beaten by (20, 5).
    points = [(20.0, 5.0), (10.0, 9.0), (25.0, 6.0), (30.0, 4.0)]
    assert pareto_indices(points) == [1, 0, 3]


def test_points_with_a_missing_or_infinite_figure_are_never_on_the_front() -> None:
    assert pareto_indices([(None, 1.0), (1.0, math.inf), (2.0, 2.0), (math.nan, 0.0)]) == [2]


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), max_size=30))
def test_no_point_on_the_front_is_dominated_and_every_point_off_it_is(points: list[tuple[int, int]]) -> None:
    front = set(pareto_indices([(float(x), float(y)) for x, y in points]))

    def dominated(i: int) -> bool:
        (x, y) = points[i]
        return any(
            (a <= x and b <= y and (a, b) != (x, y)) or ((a, b) == (x, y) and j < i)
            for j, (a, b) in enumerate(points)
            if j != i
        )

    assert front == {i for i in range(len(points)) if not dominated(i)}


def test_the_row_front_swaps_the_axes_but_finds_the_same_rows() -> None:
    rows = [
        {"cost_usd": c, "days": d, "id": i} for i, (d, c) in enumerate([(20, 5), (10, 9), (25, 6), (30, 4)])
    ]
    assert [r["id"] for r in pareto_front(rows)] == [3, 0, 1]  # cheapest first


def test_best_per_figure_skips_rows_with_errors() -> None:
    rows = [
        {"design": 1, "days": 30.0, "best_run_cost_usd": 100.0, "mfu": 0.4},
        {"design": 2, "days": 20.0, "best_run_cost_usd": 150.0, "mfu": 0.5},
        {"design": 3, "days": 1.0, "error": "does not fit"},
    ]
    assert best_per_figure(rows) == {"days": 2, "best_run_cost_usd": 1, "mfu": 2}


def test_recommend_picks_the_cheapest_front_option_within_the_deadline() -> None:
    front = [
        {
            "cost_usd": 100.0,
            "days": 40.0,
            "accelerator": "a100",
            "gpus": 64,
            "nodes": 8,
            "pricing_model": "spot",
        },
        {
            "cost_usd": 200.0,
            "days": 20.0,
            "accelerator": "h100",
            "gpus": 64,
            "nodes": 8,
            "pricing_model": "own",
        },
    ]
    out = recommend(rows=front, front=front, params={"deadline_days": 30})
    assert out["recommendation"] is front[1]
    assert out["reasons"][0] == "cheapest of 1 Pareto-optimal options that meet the 30-day deadline"
    missed = recommend(rows=front, front=front, params={"deadline_days": 10})
    assert missed["recommendation"] is front[1]
    assert missed["reasons"][0].startswith("no option meets both")
