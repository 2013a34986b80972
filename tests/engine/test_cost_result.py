"""The cost engine's typed result (engine.cost.cost_result) writes back the JSON tco() gives, key for key and
in the same order, in every shape the engine has: a priced cloud, one node (no network), no cloud price, spot
that cannot finish, no option that can finish, a storage target and a training-engine result."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_cost_fixtures import CATALOG, EXAMPLE

from clusterdesigner.engine.cost.cost import tco
from clusterdesigner.engine.cost.cost_result import CostResult

CASES: dict[str, dict[str, Any]] = {
    "example": EXAMPLE,
    "defaults": {},
    "one node": {"cluster": {"nodes": 1}, "run": {"days": 5}},
    "no cloud price": {"cluster": {"accelerator": "rtx-4090", "nodes": 2}, "on_prem": {"server_usd": 30000}},
    "spot cannot finish": {
        "cluster": {"nodes": 2048},
        "run": {"days": 30},
        "cloud": {"usd_per_node_hour": {"on_demand": 50.0, "spot": 20.0}, "spot_preemptions_per_day": 0.05},
    },
    "no option finishes": {"run": {"days": 10}, "failures": {"failures_per_gpu_day": 100}},
    "storage target": {
        "run": {"params_b": 405},
        "storage": {"capacity_tb": 1000, "mb_s_per_tib": 125, "target_write_s": 60},
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_typed_result_writes_the_json_tco_gives_byte_for_byte(name: str) -> None:
    out = tco(CASES[name], **CATALOG)
    typed = CostResult.from_json(out)
    assert json.dumps(typed.to_json()) == json.dumps(out)
    # Stored JSON comes back from PostgreSQL's jsonb with its keys reordered: read the same.
    assert CostResult.from_json(json.loads(json.dumps(out, sort_keys=True))) == typed


def test_each_shape_reads_as_what_it_is() -> None:
    one = CostResult.from_json(tco(CASES["one node"], **CATALOG))
    assert one.network.topology == "none" and one.network.chosen is None and one.network.capex_usd == 0.0
    bare = CostResult.from_json(tco(CASES["no cloud price"], **CATALOG))
    assert bare.cloud == {} and bare.verdict is None and bare.cashflow.own is None
    assert bare.cashflow.note is not None and bare.cloud_note is not None
    assert bare.sensitivity.pricing_model is None and bare.sensitivity.rows == ()
    spot = CostResult.from_json(tco(CASES["spot cannot finish"], **CATALOG))
    assert "spot" in spot.cloud_unavailable and spot.failures.spot_hours_factor is None
    assert spot.per_run.spot_effective_days is None and spot.per_run.usd is not None
    none = CostResult.from_json(tco(CASES["no option finishes"], **CATALOG))
    assert none.per_run.cannot_finish is not None and none.per_run.usd is None
    target = CostResult.from_json(tco(CASES["storage target"], **CATALOG))
    assert target.storage.capacity_for_target_write_tib is not None


def test_a_stored_result_missing_a_figure_names_it() -> None:
    out = tco(EXAMPLE, **CATALOG)
    del out["on_prem"]["npv_usd"]
    with pytest.raises(ValueError, match="OnPrem lacks npv_usd"):
        CostResult.from_json(out)
