"""A mixed RL fleet's cost per run (issue 39): the trainer pool and a rollout pool of its own, each priced by
the cost engine on its own part, server type and cloud offerings, then combined: own both, rent both, or
own one and rent the other.

Each pool's options are its cost result's per-run options (cost.py ``_per_run_options``): owning
``effective days × 24 × GPUs × owned $/GPU-hour`` (the rest of the horizon used at the design's
utilization), renting ``days × 24 × nodes × $/node-hour × (1 + managed overhead)``. The run lasts the RL
estimate's days in both pools (the step loop holds both); each pool's effective days are its own cost
result's (failures and restarts of its GPUs). A fleet's run cost is the sum of one option per pool; a pool
never takes the other's price: a pool without a price for an option has no such option.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from clusterdesigner.engine.core.json_object import JsonObject
from clusterdesigner.engine.cost.cost_result import CostResult

OWN = "own"
# How a combination is named: by what each pool does.
KINDS = ("own both", "rent both", "own trainers, rent rollouts", "rent trainers, own rollouts")


@dataclass(frozen=True)
class PoolOption(JsonObject):
    """One way to supply one pool for the run: ``key`` "own" or "<offering>:<pricing model>"."""

    key: str
    usd: float
    formula: str


@dataclass(frozen=True)
class PoolCost(JsonObject):
    """One pool's part, size, GPU-hours of the run (effective days × 24 × GPUs) and options."""

    pool: str
    accelerator: str
    nodes: int
    gpus: int
    effective_days: float
    gpu_hours: float
    options: tuple[PoolOption, ...]


@dataclass(frozen=True)
class FleetCombination(JsonObject):
    """The cheapest run of one kind (KINDS): an option per pool and their sum."""

    kind: str
    trainer: str
    rollout: str
    usd: float


@dataclass(frozen=True)
class FleetCost(JsonObject):
    pools: tuple[PoolCost, ...]
    combinations: tuple[FleetCombination, ...]
    cheapest: FleetCombination


def pool_cost(
    *, pool: str, accelerator: str, nodes: int, gpus_per_node: int, costs: Mapping[str, CostResult]
) -> PoolCost:
    """One pool's options from its cost results (one per cloud offering compared, each also pricing owning:
    the owning option is the same in each, taken from the first)."""
    options: dict[str, PoolOption] = {}
    days = 0.0
    for key, result in costs.items():
        run = result.per_run
        if run.usd is None or run.effective_days is None:
            continue
        days = float(run.effective_days)
        for model, cost in run.usd.items():
            name = OWN if model == "on_prem" else f"{key}:{model}"
            options.setdefault(name, PoolOption(name, float(cost.usd), cost.formula))
    gpus = nodes * gpus_per_node
    return PoolCost(pool, accelerator, nodes, gpus, days, days * 24.0 * gpus, tuple(options.values()))


def _kind(trainer: str, rollout: str) -> str:
    own_t, own_r = trainer == OWN, rollout == OWN
    if own_t and own_r:
        return KINDS[0]
    if not own_t and not own_r:
        return KINDS[1]
    return KINDS[2] if own_t else KINDS[3]


def fleet_cost(*, trainer: PoolCost, rollout: PoolCost) -> FleetCost | None:
    """The cheapest combination of each kind (own both, rent both, mixed either way) and the cheapest of all;
    None when a pool has no priced option. usd = trainer option's usd + rollout option's usd."""
    if not trainer.options or not rollout.options:
        return None
    best: dict[str, FleetCombination] = {}
    for t in trainer.options:
        for r in rollout.options:
            kind = _kind(t.key, r.key)
            usd = t.usd + r.usd
            if kind not in best or usd < best[kind].usd:
                best[kind] = FleetCombination(kind, t.key, r.key, usd)
    ordered = tuple(best[k] for k in KINDS if k in best)
    return FleetCost(
        pools=(trainer, rollout), combinations=ordered, cheapest=min(ordered, key=lambda c: c.usd)
    )
