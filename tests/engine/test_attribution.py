"""engine/design/attribution.py on toy evaluate functions whose answers are worked by hand.

The evaluate function stands in for the design evaluation: it reads the spec and returns an object whose
``design_verdict.saving_usd`` is the figure attributed (the engine reads nothing else of it for the
attribution, and its outputs table reads only what the stand-in sets).
"""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace
from typing import Any

import pytest

from clusterdesigner.engine.core.errors import EngineError, InputError
from clusterdesigner.engine.design.attribution import design_diff, input_changes, unit_of


def _result(saving: float) -> Any:
    own = SimpleNamespace(label="Own", npv_usd=100.0)
    verdict = SimpleNamespace(
        saving_usd=saving,
        winner="own" if saving >= 0 else "rent",
        choice_key="own",
        sentence=f"saves {saving}",
        own=own,
        options=(),
        break_even_utilization=None,
        payback_month=None,
        flips=(),
    )
    return SimpleNamespace(training=None, expected_days=None, design_verdict=verdict)


def _spec(x: float, y: float, z: float = 1.0) -> dict[str, Any]:
    return {"costs": {"x": x, "on_prem": {"y": y}}, "z": z}


def _product(spec: Any) -> Any:
    return _result(spec["costs"]["x"] * spec["costs"]["on_prem"]["y"] * spec["z"])


def test_shapley_on_a_two_input_product_by_hand() -> None:
    # f(x, y) = x·y from (1, 1) to (3, 2): f goes 1 → 6, a change of 5.
    # In the order x, y: x alone gives f(3, 1) = 3 (+2), then y gives 6 (+3).
    # Shapley: φx = ½[(f(3,1) − f(1,1)) + (f(3,2) − f(1,2))] = ½[2 + 4] = 3;
    #          φy = ½[(f(1,2) − f(1,1)) + (f(3,2) − f(3,1))] = ½[1 + 3] = 2; 3 + 2 = 5.
    diff = design_diff(old=_spec(1, 1), new=_spec(3, 2), evaluate=_product)
    assert [c.path for c in diff.inputs] == ["costs.x", "costs.on_prem.y"]
    attribution = diff.attribution
    assert attribution is not None
    assert attribution.total_usd == 5.0
    assert [(s.inputs, s.delta_usd) for s in attribution.steps] == [
        (("costs.x",), 2.0),
        (("costs.on_prem.y",), 3.0),
    ]
    assert {v.input: v.value_usd for v in attribution.shapley or ()} == {
        "costs.x": 3.0,
        "costs.on_prem.y": 2.0,
    }
    swapped = design_diff(
        old=_spec(1, 1), new=_spec(3, 2), evaluate=_product, order=["costs.on_prem.y", "costs.x"]
    )
    assert swapped.attribution is not None
    # y first: f(1, 2) = 2 (+1), then x: +4.
    assert [s.delta_usd for s in swapped.attribution.steps] == [1.0, 4.0]
    assert {v.input: v.value_usd for v in swapped.attribution.shapley or ()} == {
        "costs.x": 3.0,
        "costs.on_prem.y": 2.0,
    }


def test_shapley_is_the_average_over_every_order_for_three_inputs() -> None:
    old, new = _spec(1, 2, 3), _spec(4, 0.5, 7)
    diff = design_diff(old=old, new=new, evaluate=_product)
    assert diff.attribution is not None
    paths = diff.attribution.order
    totals = dict.fromkeys(paths, 0.0)
    orders = list(itertools.permutations(paths))
    for order in orders:
        again = design_diff(old=old, new=new, evaluate=_product, order=list(order))
        assert again.attribution is not None
        for step in again.attribution.steps:
            (path,) = step.inputs
            totals[path] += (step.delta_usd or 0.0) / len(orders)
    shapley = {v.input: v.value_usd for v in diff.attribution.shapley or ()}
    assert shapley == pytest.approx(totals, abs=1e-9)
    # Efficiency: f(new) − f(old) = 4 × 0.5 × 7 − 1 × 2 × 3 = 14 − 6 = 8.
    assert math.fsum(shapley.values()) == pytest.approx(8.0, abs=1e-9)


def test_a_step_that_cannot_be_evaluated_is_reported_and_grouped_with_the_next() -> None:
    def evaluate(spec: Any) -> Any:
        if spec["costs"]["x"] == 3 and spec["costs"]["on_prem"]["y"] == 1:
            raise InputError("x of 3 needs y above 1", field="spec.costs.x")
        return _product(spec)

    diff = design_diff(old=_spec(1, 1), new=_spec(3, 2), evaluate=evaluate)
    attribution = diff.attribution
    assert attribution is not None
    first, second = attribution.steps
    assert (first.inputs, first.evaluated, first.delta_usd) == (("costs.x",), False, None)
    assert first.reason == "spec.costs.x: x of 3 needs y above 1"
    assert (second.inputs, second.evaluated, second.delta_usd) == (("costs.x", "costs.on_prem.y"), True, 5.0)
    # The group is one player: its Shapley value is the whole change.
    assert [(v.inputs, v.value_usd) for v in attribution.shapley or ()] == [
        (("costs.x", "costs.on_prem.y"), 5.0)
    ]


def test_no_shapley_when_a_subset_outside_the_stated_order_cannot_be_evaluated() -> None:
    # Every prefix of x, y, z evaluates, but z changed without x does not: Shapley needs that subset.
    def evaluate(spec: Any) -> Any:
        if spec["z"] == 5 and spec["costs"]["x"] == 1:
            raise InputError("z of 5 needs x above 1", field="spec.z")
        return _product(spec)

    diff = design_diff(old=_spec(1, 1, 1), new=_spec(2, 3, 5), evaluate=evaluate)
    attribution = diff.attribution
    assert attribution is not None
    assert [s.delta_usd for s in attribution.steps] == [1.0, 4.0, 24.0]  # 1 → 2 → 6 → 30
    assert attribution.shapley is None
    assert attribution.shapley_note == (
        "the spec with only z changed could not be evaluated (spec.z: z of 5 needs x above 1)"
    )


def test_an_order_that_misses_an_input_is_refused() -> None:
    with pytest.raises(EngineError) as caught:
        design_diff(old=_spec(1, 1), new=_spec(3, 2), evaluate=_product, order=["costs.x"])
    assert caught.value.field == "order"


def test_lists_and_sections_are_one_input_and_units_come_from_the_defaults() -> None:
    old = {"costs": {"cloud": [{"offering": "a"}], "utilization": 0.7}, "parallelism": "search"}
    new = {"costs": {"cloud": [{"offering": "b"}], "utilization": 0.7, "cashflow": {"lead_time_months": 3}}}
    changes = {c.path: c for c in input_changes(old, new)}
    assert set(changes) == {"costs.cloud", "costs.cashflow", "parallelism"}
    assert changes["costs.cloud"].whole and changes["costs.cashflow"].whole
    assert changes["parallelism"].new is None
    assert unit_of("costs.utilization") == "fraction of hours busy"
    assert unit_of("cluster.nodes") == "nodes"
    assert unit_of("costs.on_prem.pue") == "ratio"
    assert unit_of("costs.on_prem.server_usd") == "USD"


def test_steps_sum_to_the_change_for_figures_too_large_for_a_millionth_of_a_dollar() -> None:
    # Savings near $3e10 (a double holds them to about 4e-6): the steps still telescope to the change.
    def evaluate(spec: Any) -> Any:
        return _result(3e10 + spec["costs"]["x"] * 0.1 + spec["costs"]["on_prem"]["y"] * 1e-3 + spec["z"] / 3)

    diff = design_diff(old=_spec(1, 1, 1), new=_spec(7.3, 11.9, 2.2), evaluate=evaluate)
    assert diff.attribution is not None
    steps = diff.attribution.steps
    assert math.fsum(s.delta_usd or 0.0 for s in steps) == pytest.approx(diff.attribution.total_usd, abs=1e-4)
    assert diff.attribution.total_usd == pytest.approx(0.63 + 0.0109 + 0.4, abs=1e-4)
