"""A mixed RL fleet's run cost (engine/rl/rl_fleet.py): each pool's options summed, by hand."""

from __future__ import annotations

import pytest

from clusterdesigner.engine.rl import rl_fleet
from clusterdesigner.engine.rl.rl_fleet import PoolCost, PoolOption


def _pool(name: str, part: str, options: dict[str, float]) -> PoolCost:
    # 2 nodes × 8 GPUs for 0.5 effective days: 0.5 × 24 × 16 = 192 GPU-hours.
    return PoolCost(
        pool=name,
        accelerator=part,
        nodes=2,
        gpus=16,
        effective_days=0.5,
        gpu_hours=192.0,
        options=tuple(PoolOption(k, v, "") for k, v in options.items()),
    )


def test_each_kind_is_the_cheapest_sum_of_one_option_per_pool_by_hand() -> None:
    # Trainers (H100): owned 192 GPU-h × $2.50 = $480; rented 0.5 d × 24 × 2 nodes × $49.24 = $1,181.76.
    # Rollouts (L40S): owned 192 × $1.00 = $192; rented on demand $600 or spot $300.
    trainer = _pool("trainer", "h100-sxm", {"own": 480.0, "cw-h100:on_demand": 1181.76})
    rollout = _pool("rollout", "l40s", {"own": 192.0, "x-l40s:on_demand": 600.0, "x-l40s:spot": 300.0})
    fleet = rl_fleet.fleet_cost(trainer=trainer, rollout=rollout)
    assert fleet is not None
    by_kind = {c.kind: (c.trainer, c.rollout, c.usd) for c in fleet.combinations}
    assert by_kind == {
        "own both": ("own", "own", pytest.approx(672.0)),  # 480 + 192
        "rent both": ("cw-h100:on_demand", "x-l40s:spot", pytest.approx(1481.76)),  # 1,181.76 + 300
        "own trainers, rent rollouts": ("own", "x-l40s:spot", pytest.approx(780.0)),  # 480 + 300
        "rent trainers, own rollouts": ("cw-h100:on_demand", "own", pytest.approx(1373.76)),  # 1,181.76 + 192
    }
    assert fleet.cheapest.kind == "own both" and fleet.cheapest.usd == pytest.approx(672.0)


def test_a_pool_without_a_rent_option_has_no_rented_kinds() -> None:
    trainer = _pool("trainer", "h100-sxm", {"own": 480.0, "cw-h100:on_demand": 1181.76})
    rollout = _pool("rollout", "l40s", {"own": 192.0})
    fleet = rl_fleet.fleet_cost(trainer=trainer, rollout=rollout)
    assert fleet is not None
    assert [c.kind for c in fleet.combinations] == ["own both", "rent trainers, own rollouts"]
    assert rl_fleet.fleet_cost(trainer=trainer, rollout=_pool("rollout", "l40s", {})) is None
