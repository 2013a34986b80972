"""One set of bounds (engine/core/bounds.py): the design spec's parser and the cost engine read the same
table, so a value inside the spec's bounds is never refused by the engine, and each engine bound holds at its
ends."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from clusterdesigner.engine.core import bounds
from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.design import spec

# Every spec field whose number the cost engine reads, with the engine's path of it.
SPEC_FIELDS: list[tuple[Mapping[str, spec.Rule], str, str]] = [
    (spec.CLUSTER, "gpus_per_node", "cluster.gpus_per_node"),
    (spec.CLUSTER, "nodes", "cluster.nodes"),
    (spec.CLUSTER, "oversubscription", "cluster.oversubscription"),
    (spec.COSTS, "horizon_years", "horizon_years"),
    (spec.COSTS, "utilization", "utilization"),
    (spec.COSTS, "egress_tb", "cloud.egress_tb"),
    (spec.COSTS, "managed_overhead_fraction", "cloud.managed_overhead_fraction"),
    (spec.COSTS, "spot_capacity_nodes", "cloud.spot_capacity_nodes"),
]


def _inside(bound: bounds.Bound) -> list[float]:
    """The ends of a bound (an open end approached from inside: a fraction's [0, 1)) and a value between."""
    low = bound.floor if bound.floor is not None else bound.high * 1e-6
    high = bound.high * (1 - 1e-9) if bound.rule == "frac" else bound.high
    return [low, (low + high) / 2 if bound.rule not in ("int", "count") else low + 1, high]


@pytest.mark.parametrize(("rules", "key", "path"), SPEC_FIELDS, ids=[p for _, _, p in SPEC_FIELDS])
def test_a_value_inside_the_spec_bounds_is_never_refused_by_the_cost_engine(
    rules: Mapping[str, spec.Rule], key: str, path: str
) -> None:
    rule, bound = rules[key], bounds.COST[path]
    assert rule.low is not None and rule.high is not None
    assert rule.high == bound.high
    # The spec's floor is the engine's, or (horizon, utilization) a floor of its own above the engine's.
    assert rule.low == bound.floor or (bound.floor is None and rule.low > 0)
    for value in (rule.low, (rule.low + rule.high) / 2, rule.high):
        number: Any = round(value) if rule.kind == "int" else value
        assert cost.check_input(path, number) == number


def test_every_spec_number_the_cost_engine_reads_takes_its_bounds_from_the_table() -> None:
    # Numbers of the cluster and costs sections, other than the cost engine's own sections (checked by it).
    numbers = {
        (id(rules), key)
        for rules in (spec.CLUSTER, spec.COSTS)
        for key, rule in rules.items()
        if rule.kind in ("int", "float")
    }
    assert numbers == {(id(rules), key) for rules, key, _ in SPEC_FIELDS}


@pytest.mark.parametrize("path", list(bounds.COST))
def test_the_cost_engine_accepts_every_bound_at_its_ends_and_refuses_past_them(path: str) -> None:
    bound = bounds.COST[path]
    for value in _inside(bound):
        cost.check_input(path, value)
    with pytest.raises(InputError) as caught:
        cost.check_input(path, bound.high * 1.01 + 1)
    assert caught.value.field == path
    if bound.floor is not None:
        with pytest.raises(InputError):
            cost.check_input(path, bound.floor - (1 if bound.floor >= 1 else bound.floor / 2 or 0.5))


def test_a_negotiated_price_of_zero_is_refused_by_the_spec_with_the_engines_reason() -> None:
    # The spec accepted 0 (its bound was [0, 1e6]) and the cost engine then refused it at save.
    with pytest.raises(spec.SpecError) as caught:
        spec.parse_costs({"cloud": [{"offering": "aws-p5-48xlarge", "usd_per_node_hour": {"spot": 0}}]})
    assert caught.value.errors == {
        "cloud": {"0": {"usd_per_node_hour": {"spot": ["must be more than zero, got 0"]}}}
    }
    assert spec.parse_costs({"cloud": [{"offering": "x", "usd_per_node_hour": {"spot": 1e6}}]})["cloud"]
    assert {m: r.high for m, r in spec.NEGOTIATED.items()} == {
        m: bounds.COST[f"cloud.usd_per_node_hour.{m}"].high for m in spec.NEGOTIATED
    }
