"""A capacity plan of several node types (accelerators), solved as one MILP.

Each node type is a plan of its own (engine/capacity/capacity.py: its node size, its supply options and the
demand it serves), and the demand of each type is met by its own nodes only: an H100 node never serves an L40S
pool's hours. The types share the horizon, growth and discount rate. What joins them is **coupling**: runs
that must run at the same time, the two pools of one RL run (a trainer on one part, rollout engines on
another, engine/rl/rl_fleet.py), do the same share of their work in every month,

    Σ_k x_{a,k,m} / W_a = Σ_k x_{b,k,m} / W_b    for every month m of their (common) window,

where x_{r,k,m} is run r's node-hours on layer k in month m and W_r its node-hours of work, so neither pool
is scheduled in months the other does not run. Without a coupling the problem separates by type, and the
joint optimum is the sum of each type's own (a test holds this).

All types' columns and rows go into one HiGHS model (``capacity._build`` once per type), solved once to an
optimum proven within the gap, then read back per type (``capacity._Built.result``); the plan's result sums
the money over the types (NPV, cash out, capex, cost by layer, cash flows) and lists each type's own result
under ``node_types``. With one type this is not used: a one-type plan is ``capacity.plan_solve`` as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterdesigner.engine.capacity.capacity import (
    HOURS_PER_MONTH,
    MIP_GAP,
    Alternative,
    CapacityPlan,
    MonthRow,
    NodeTypeResult,
    PlanResult,
    Supply,
    _build,
    _Built,
    _infeasible,
    _Model,
    _solved,
    _stopped,
    _unique,
    plan_check,
)
from clusterdesigner.engine.core.errors import InfeasibleError, InputError, SolverLimitError


@dataclass(frozen=True)
class NodeType:
    """One accelerator's nodes in a plan of several: ``plan`` holds its node size, supply and workloads (its
    horizon, growth and discount rate are the fleet's)."""

    accelerator: str
    plan: CapacityPlan


@dataclass(frozen=True)
class Coupling:
    """Runs that run together (an RL run's trainer and rollout pools), each named by (node type index, run
    index in that type's plan): every month each does the same share of its work."""

    name: str
    runs: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class FleetPlan:
    """A plan of several node types: each type's plan, and the runs that must run in the same months."""

    node_types: tuple[NodeType, ...]
    couplings: tuple[Coupling, ...] = ()

    @property
    def horizon_months(self) -> int:
        return self.node_types[0].plan.horizon_months

    @property
    def training_runs(self) -> int:
        return sum(len(t.plan.training) for t in self.node_types)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_types": [{"accelerator": t.accelerator, "plan": t.plan.to_json()} for t in self.node_types],
            "couplings": [{"name": c.name, "runs": [list(r) for r in c.runs]} for c in self.couplings],
        }


def fleet_check(*, plan: FleetPlan) -> None:
    """Refuse a fleet that cannot mean anything, naming the field: at least two types, of distinct
    accelerators, one horizon, growth and discount rate; coupled runs that exist and share their window."""
    types = plan.node_types
    if len(types) < 2:
        raise InputError(
            "must list at least two node types (a plan of one type gives its own)", field="node_types"
        )
    first = types[0].plan
    seen: set[str] = set()
    for i, t in enumerate(types):
        if t.accelerator in seen:
            raise InputError(f"{t.accelerator} is listed twice", field=f"node_types.{i}.accelerator")
        seen.add(t.accelerator)
        p = t.plan
        same = (p.horizon_months, p.growth_pct_per_month, p.discount_rate)
        if same != (first.horizon_months, first.growth_pct_per_month, first.discount_rate):
            raise InputError(
                "must share the plan's horizon, growth and discount rate", field=f"node_types.{i}"
            )
        plan_check(plan=p)
    for c in plan.couplings:
        _check_coupling(plan, c)


def _check_coupling(plan: FleetPlan, c: Coupling) -> None:
    windows = set()
    for t, r in c.runs:
        if not (0 <= t < len(plan.node_types) and 0 <= r < len(plan.node_types[t].plan.training)):
            raise InputError(f"{c.name}: names no run of the plan", field="couplings")
        run = plan.node_types[t].plan.training[r]
        windows.add((run.earliest_start_month, run.deadline_month))
    if len(windows) > 1:
        raise InputError(f"{c.name}: coupled runs must share their months", field="couplings")


def fleet_solve(
    *,
    plan: FleetPlan,
    time_limit_s: float = 60.0,
    compare: bool = True,
    mip_gap: float = MIP_GAP,
    node_limit: int | None = None,
) -> PlanResult:
    """The cheapest mix of every node type's supply that serves each type's demand from its own nodes and
    runs coupled runs in the same months: one MILP (HiGHS), as :func:`capacity.plan_solve` for one type.
    With ``compare``, all-own and all-rent are solved for the whole fleet too. An infeasible fleet names the
    node type whose supply cannot serve its own demand (``node_types.<i>.supply``), else the couplings."""
    fleet_check(plan=plan)
    limits: dict[str, Any] = {"time_limit_s": time_limit_s, "mip_gap": mip_gap, "node_limit": node_limit}
    result = _fleet_solve(plan, limits)
    if not compare:
        return result
    own = [replace(t.plan.supply, reservations=(), on_demand=None, spot=None) for t in plan.node_types]
    rent = [replace(t.plan.supply, owned=None) for t in plan.node_types]
    alternatives = (
        _alternative(plan, "all own", own, all(t.plan.supply.owned for t in plan.node_types), limits),
        _alternative(plan, "all rent", rent, all(_rents(t.plan.supply) for t in plan.node_types), limits),
    )
    return replace(result, alternatives=alternatives)


def _rents(s: Supply) -> bool:
    return bool(s.reservations or s.on_demand or s.spot)


def _with_supplies(plan: FleetPlan, supplies: Sequence[Supply]) -> FleetPlan:
    pairs = zip(plan.node_types, supplies, strict=True)
    types = tuple(replace(t, plan=replace(t.plan, supply=s)) for t, s in pairs)
    return replace(plan, node_types=types)


def _alternative(
    plan: FleetPlan, name: str, supplies: Sequence[Supply], offered: bool, limits: Mapping[str, Any]
) -> Alternative:
    if not offered:
        return Alternative(name=name, total_usd=None, reason="not every node type offers such capacity")
    try:
        solved = _fleet_solve(_with_supplies(plan, supplies), limits)
    except (SolverLimitError, InfeasibleError) as exc:
        return Alternative(name=name, total_usd=None, reason=exc.message.split(": ")[0])
    return Alternative(
        name=name, total_usd=solved.total_usd, reason=solved.solver_message, npv_usd=solved.npv_usd
    )


def _fleet_solve(plan: FleetPlan, limits: Mapping[str, Any]) -> PlanResult:
    model = _Model()
    built = [_build(model, t.plan) for t in plan.node_types]
    for c in plan.couplings:
        _couple(model, built, c)
    sol, size, outcome = _solved(model, limits, lambda: _fleet_infeasible(plan, limits))
    parts = [b.result(sol, size) for b in built]
    return _stopped(_combined(plan, parts, size), outcome)


def _couple(model: _Model, built: Sequence[_Built], c: Coupling) -> None:
    """Σ_k x_{a,k,m} / W_a − Σ_k x_{b,k,m} / W_b = 0 each month, for the first run a and each other b."""

    def share(t: int, r: int, sign: float) -> list[tuple[Any, float]]:
        part = built[t]
        run = part.plan.training[r]
        work = run.gpu_hours / float(part.plan.gpus_per_node)  # node-hours of work, as _run_columns
        return [(cols, sign / work) for cols in part.cols.x[r].values()]

    (t0, r0), *others = c.runs
    months = len(built[t0].cols.x[r0][next(iter(built[t0].cols.x[r0]))])
    for t, r in others:
        model.constraints(months, [*share(t0, r0, 1.0), *share(t, r, -1.0)], lo=0.0, hi=0.0)


def _fleet_infeasible(plan: FleetPlan, limits: Mapping[str, Any]) -> InfeasibleError:
    """Which part cannot be served: the first node type infeasible on its own (its supply), else the
    coupling of runs that each type could hold apart but not in the same months."""
    for i, t in enumerate(plan.node_types):
        model = _Model()
        _build(model, t.plan)
        try:
            _solved(model, limits, lambda t=t: _infeasible(t.plan.supply))
        except InfeasibleError as exc:
            return InfeasibleError(
                f"{t.accelerator}: {exc.message}", field=f"node_types.{i}.{exc.field or 'supply'}"
            )
        except SolverLimitError:
            continue
    return InfeasibleError(
        "each node type can serve its own demand, but not the coupled runs (an RL run's pools) in the same "
        "months: offer more capacity of one part or move the deadlines",
        field="training",
    )


def _combined(plan: FleetPlan, parts: Sequence[PlanResult], size: Any) -> PlanResult:
    """The whole plan's result from each type's: money summed over the types; node counts and node-hours
    summed too (each type's own under ``node_types``); runs, workloads and notes listed together."""
    first = parts[0]
    layers = {k: sum(p.cost_by_layer_usd.get(k, 0.0) for p in parts) for k in first.cost_by_layer_usd}
    used, owned_h = 0.0, 0.0
    for p in parts:
        for m in p.months:
            owned_h += m.owned_nodes * HOURS_PER_MONTH
            used += (m.owned_utilization or 0.0) * m.owned_nodes * HOURS_PER_MONTH
    cash = [p.cash_flows_usd for p in parts]
    return replace(
        first,
        total_usd=sum(p.total_usd for p in parts),
        npv_usd=sum(p.npv_usd for p in parts),
        capex_usd=sum(p.capex_usd for p in parts),
        cost_by_layer_usd=layers,
        owned_purchases=tuple(x for p in parts for x in p.owned_purchases),
        reservations=tuple(x for p in parts for x in p.reservations),
        on_demand_node_hours=sum(p.on_demand_node_hours for p in parts),
        spot_node_hours=sum(p.spot_node_hours for p in parts),
        owned_utilization=used / owned_h if owned_h > 0 else None,
        months=tuple(_month_sum([p.months[m] for p in parts]) for m in range(plan.horizon_months)),
        runs=tuple(r for p in parts for r in p.runs),
        demand_mean_gpus_by_workload=_workloads(plan, parts),
        size=size,
        notes=_notes(plan, parts),
        inference_sizing={k: v for p in parts for k, v in p.inference_sizing.items()},
        cash_flows_usd=None if any(c is None for c in cash) else _flows_sum(cash),
        cash_npv_usd=None if any(c is None for c in cash) else sum(p.cash_npv_usd or 0.0 for p in parts),
        node_types=tuple(
            NodeTypeResult(t.accelerator, t.plan.gpus_per_node, p)
            for t, p in zip(plan.node_types, parts, strict=True)
        ),
    )


def _month_sum(rows: Sequence[MonthRow]) -> MonthRow:
    owned = sum(r.owned_nodes for r in rows)
    used = sum((r.owned_utilization or 0.0) * r.owned_nodes for r in rows)
    return MonthRow(
        month=rows[0].month,
        demand_mean_gpus=sum(r.demand_mean_gpus for r in rows),
        demand_peak_gpus=sum(r.demand_peak_gpus for r in rows),
        training_gpus=sum(r.training_gpus for r in rows),
        owned_nodes=owned,
        reserved_nodes=sum(r.reserved_nodes for r in rows),
        on_demand_node_hours=sum(r.on_demand_node_hours for r in rows),
        spot_node_hours=sum(r.spot_node_hours for r in rows),
        owned_utilization=used / owned if owned else None,
        cost_usd={k: sum(r.cost_usd[k] for r in rows) for k in rows[0].cost_usd},
    )


def _flows_sum(flows: Sequence[tuple[float, ...] | None]) -> tuple[float, ...]:
    """Each type's cash flows summed index by index (a reservation term past the horizon lengthens one)."""
    longest = max(len(f or ()) for f in flows)
    total: NDArray[np.float64] = np.zeros(longest)
    for f in flows:
        total[: len(f or ())] += np.asarray(f or (), dtype=float)
    return tuple(float(x) for x in total)


def _workloads(plan: FleetPlan, parts: Sequence[PlanResult]) -> dict[str, tuple[float, ...]]:
    """Each workload's mean GPUs by month, of whichever type; a name two types share is told apart."""
    out: dict[str, tuple[float, ...]] = {}
    for t, p in zip(plan.node_types, parts, strict=True):
        for name, gpus in p.demand_mean_gpus_by_workload.items():
            out[name if name not in out else _unique(out, f"{name} ({t.accelerator})")] = gpus
    return out


def _notes(plan: FleetPlan, parts: Sequence[PlanResult]) -> tuple[str, ...]:
    """The notes every type shares (the representative week, the objective) once, then the fleet's, then
    each type's own, named by its accelerator."""
    shared = [n for n in parts[0].notes if all(n in p.notes for p in parts)]
    own = [
        f"{t.accelerator}: {n}"
        for t, p in zip(plan.node_types, parts, strict=True)
        for n in p.notes
        if n not in shared
    ]
    return (*shared, _fleet_note(plan), *own)


def _fleet_note(plan: FleetPlan) -> str:
    kinds = ", ".join(f"{t.accelerator} ({t.plan.gpus_per_node} GPUs a node)" for t in plan.node_types)
    coupled = "; ".join(c.name for c in plan.couplings)
    return (
        f"Node types solved together in one MILP: {kinds}; each type's demand is served by its own nodes "
        "only, and node counts and node-hours above are summed over the types (each type's own are listed "
        "with it)."
        + (
            f" Runs coupled to the same months (each pool does the same share of its work): {coupled}."
            if coupled
            else ""
        )
    )
