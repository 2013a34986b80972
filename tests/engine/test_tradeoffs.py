"""Pareto front, best per figure and the recommendation (engine.design.tradeoffs), shared by pages and
analyses."""

from __future__ import annotations

import math
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.design.analysis_result import SweepRow
from clusterdesigner.engine.design.spec import CloudChoice
from clusterdesigner.engine.design.tradeoffs import (
    best_per_figure,
    compare_column,
    default_option_key,
    expected_days,
    pareto_front,
    pareto_indices,
    recommend,
)
from clusterdesigner.engine.training.training import estimate
from clusterdesigner.engine.training.training_result import TrainingEstimate


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
    stored = [
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
    front = [SweepRow.from_json(r) for r in stored]
    out = recommend(rows=front, front=front, params={"deadline_days": 30})
    assert out["recommendation"] is front[1]
    # These rows carry no NPV (no cash flows): the choice is per run, and each sentence says so (issue #31).
    assert out["basis"] == "per_run"
    assert out["reasons"][0] == (
        "cheapest by cost per run (no cash flows to discount) of 1 Pareto-optimal options that meet the"
        " 30-day deadline"
    )
    assert (
        out["reasons"][1] == "h100 × 64 GPUs (8 nodes), own: 20.0 days, $200 per run, undiscounted, MFU 0 %"
    )  # no MFU given
    cheap = recommend(rows=front, front=front, params={"deadline_days": 50})
    # The spot option meets 50 days at $100; own would finish 20 days sooner for $200 − $100 more.
    assert cheap["recommendation"] is front[0]
    assert cheap["reasons"][1] == (
        "finishing in 20.0 days instead of 40.0 would cost $100 more per run (h100 × 64 GPUs, own)"
    )
    missed = recommend(rows=front, front=front, params={"deadline_days": 10})
    assert missed["recommendation"] is front[1]
    assert missed["reasons"][0].startswith("no option meets both")


# compare_column: one design's column on the compare page and in the compare analysis.
OPTIONS = [
    {"key": "own", "label": "Own", "pricing_model": "own", "days": 30.5, "run_cost_usd": 900.0},
    {"key": "p5:spot", "label": "p5 spot", "pricing_model": "spot", "days": 33.0, "run_cost_usd": 500.0},
    {"key": "p5:on_demand", "label": "p5 on demand", "pricing_model": "on_demand", "days": 30.5},
]
CLOUD = [CloudChoice(offering="p5", pricing_models=("reserved_1y", "spot", "on_demand"))]


def _training() -> TrainingEstimate:
    # A 7B model on 4 × 8 A100 80GB, searched: any fitting estimate serves, the column copies its figures.
    response = estimate(
        {
            "model": {"preset": "llama2-7b"},
            "training": {"tokens": 1e12, "global_batch_seqs": 512},
            "cluster": {"accelerator": "a100-80gb", "nodes": 4, "fabric": "ib-hdr200"},
        },
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    )
    return TrainingEstimate.from_json(response)


def test_default_option_is_the_first_cloud_choices_first_priced_model_else_own() -> None:
    # reserved_1y has no option (unpriced), so spot, the next listed, is the default.
    assert default_option_key(options=OPTIONS, cloud_choices=CLOUD) == "p5:spot"
    assert default_option_key(options=OPTIONS, cloud_choices=[]) == "own"


def test_expected_days_skip_spot_interruptions_and_none_without_options() -> None:
    assert expected_days(OPTIONS[1:]) == 30.5  # the on-demand option's, not spot's 33.0
    assert expected_days([OPTIONS[1]]) is None
    assert expected_days([]) is None


def test_compare_column_shows_the_asked_option_else_the_default_and_copies_the_layout() -> None:
    training = _training()
    asked = compare_column(training=training, options=OPTIONS, cloud_choices=CLOUD, option_key="own")
    assert (asked.option_key, asked.shown["label"], asked.best["label"]) == ("own", "Own", "Own")
    unknown = compare_column(training=training, options=OPTIONS, cloud_choices=CLOUD, option_key="nope")
    assert (unknown.option_key, unknown.shown["run_cost_usd"]) == ("p5:spot", 500.0)
    assert unknown.expected_days == 30.5
    chosen = training.chosen
    assert (unknown.fits, unknown.mfu, unknown.days_failure_free) == (
        chosen.fits,
        chosen.mfu,
        chosen.time_to_train_days,
    )
    assert unknown.memory_gib == chosen.memory_per_gpu_gib.total
    assert unknown.gpus == 32


def test_compare_column_without_options_shows_nothing_rather_than_another_figure() -> None:
    column = compare_column(training=_training(), options=[], option_key="own")
    assert (column.option_key, dict(column.shown), dict(column.best), column.expected_days) == (
        "own",
        {},
        {},
        None,
    )


def test_recommend_counts_owning_s_lead_time_against_the_deadline() -> None:
    # Owning finishes in 20 days but starts after a 121.7-day lead time (4 months × 365/12): a 30-day deadline
    # is met only by renting, at twice the price.
    own = SweepRow(
        accelerator="h100",
        nodes=8,
        gpus=64,
        pricing_model="own",
        fits=True,
        days=20.0,
        cost_usd=100.0,
        start_delay_days=4 * 365 / 12,
        capex_usd=2_580_000.0,
        mfu=0.4,
    )
    rent = replace(own, pricing_model="on_demand", cost_usd=200.0, start_delay_days=None, capex_usd=None)
    out = recommend(rows=[own, rent], front=[own, rent], params={"deadline_days": 30})
    assert out["recommendation"] is rent
    no_deadline = recommend(rows=[own, rent], front=[own, rent], params={})
    assert no_deadline["recommendation"] is own
    assert (
        "20.0 days after a 121.7-day lead time, $100 per run, undiscounted"
        " (owning: $2,580,000 capex up front)" in (no_deadline["reasons"][1])
    )
