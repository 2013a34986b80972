"""A quota on the nodes obtainable (issue #35: the price book's quota, or a plan's own cap) is an upper bound
the capacity plan's MILP holds, on on-demand as on spot and on each reservation term.

The plan: 5 nodes of steady inference (40 GPUs of 8-GPU nodes, the same every hour, no growth) for 12 months
(8,760 hours). Hand figures, undiscounted (total_usd): on-demand at $10 a node-hour for everything is
5 × 8,760 × 10 = $438,000."""

from __future__ import annotations

from typing import Any

import pytest

from clusterdesigner.engine.capacity.capacity import CapacityPlan, plan_solve

HOURS = 8_760.0


def _plan(supply: dict[str, Any]) -> CapacityPlan:
    return CapacityPlan.from_json(
        {
            "horizon_months": 12,
            "gpus_per_node": 8,
            "discount_rate": 0.0,
            "inference": [{"name": "chat", "peak_gpus": 40, "offpeak_fraction": 1.0}],
            "supply": supply,
        }
    )


def test_an_on_demand_quota_caps_the_on_demand_nodes_and_the_rest_is_reserved() -> None:
    # Reserved at $12 costs more than on-demand at $10, so without a cap everything is on-demand.
    supply = {
        "on_demand": {"usd_per_node_hour": 10.0},
        "reservations": [{"term_months": 12, "usd_per_node_hour": 12.0}],
    }
    free = plan_solve(plan=_plan(supply))
    assert free.total_usd == pytest.approx(5 * HOURS * 10, rel=1e-6)  # $438,000
    capped = plan_solve(plan=_plan({**supply, "on_demand": {"usd_per_node_hour": 10.0, "cap_nodes": 3}}))
    # 3 nodes on-demand (3 × 8,760 × $10 = $262,800) and 2 reserved (2 × 8,760 × $12 = $210,240): $473,040.
    assert capped.total_usd == pytest.approx(3 * HOURS * 10 + 2 * HOURS * 12, rel=1e-6)
    assert max(m.on_demand_node_hours for m in capped.months) == pytest.approx(3 * HOURS / 12, rel=1e-6)
    assert {m.reserved_nodes for m in capped.months} == {2}


def test_a_reservation_quota_caps_the_nodes_of_that_term_held_at_once() -> None:
    supply = {
        "on_demand": {"usd_per_node_hour": 10.0},
        "reservations": [{"term_months": 12, "usd_per_node_hour": 5.0}],
    }
    free = plan_solve(plan=_plan(supply))
    assert free.total_usd == pytest.approx(5 * HOURS * 5, rel=1e-6)  # all reserved: $219,000
    capped = plan_solve(
        plan=_plan(
            {**supply, "reservations": [{"term_months": 12, "usd_per_node_hour": 5.0, "cap_nodes": 2}]}
        )
    )
    # 2 reserved (2 × 8,760 × $5 = $87,600) and 3 on-demand (3 × 8,760 × $10 = $262,800): $350,400.
    assert capped.total_usd == pytest.approx(2 * HOURS * 5 + 3 * HOURS * 10, rel=1e-6)
    assert {m.reserved_nodes for m in capped.months} == {2}
