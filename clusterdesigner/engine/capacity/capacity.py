"""Capacity plan: demand from a workload plan, and the cheapest mix of owned, reserved and burst capacity.

A plan covers ``horizon_months`` months of one node type (``gpus_per_node`` GPUs each). Demand is built per
month as a **representative week** of 168 hourly slots (hour 0 = Monday 00:00); every month is taken to be
``HOURS_PER_MONTH`` = 8,760 / 12 = 730 hours, so each slot of the week stands for 730 / 168 ≈ 4.345 hours of
that month. Stated plainly: demand within a month repeats its representative week.

The cheapest mix is a mixed-integer linear program solved exactly by HiGHS through ``scipy.optimize.milp``
(branch and bound to an optimum proven within the relative gap ``MIP_GAP``, 0.01 %; the gap reached is
reported). The formulation is written out in
``docs/capacity-plan.md``; in short, with months m, slots s, capacity layers k ∈ {owned, reserved,
on_demand, spot}:

variables
  b_m ∈ ℤ≥0            owned nodes that *arrive* in month m (ordered ``lead_time_months`` earlier)
  q_{t,m} ∈ ℤ≥0        reservations of term t starting in month m
  C_{k,m} ≥ 0          owned and reserved nodes in month m: C_own = O₀ + Σ_{a≤m} b_a,
                       C_res = Σ_t Σ_{m−T_t < m' ≤ m} q_{t,m'}; capped spot has the constant cap · g
  x_{r,k,m} ≥ 0        node-hours of training run r done on layer k in month m (spread evenly over it)
  y_{r,k} ∈ {0,1}      run r placed on layer k (only for runs that may not be split)
  Q_{j,m}, e_{j,m}     capacity left for steady demand in the j cheapest limited layers, and the node-hours
                       of steady demand they serve
constraints
  Σ_{k,m} x_{r,k,m} = E_r,  Σ_k x_{r,k,m} ≤ n_r · H          each run's work is done inside its window,
                                                             on at most its own node count
  x_{r,k,m} ≤ n_r · H · y_{r,k},  Σ_k y_{r,k} = 1,          a run that may not be split uses one layer,
  C_{k,m} ≥ n_r · y_{r,k} (owned, reserved, in its window)   and that layer holds all its nodes
  x_{r,spot,m} = 0 when spot's cap < n_r                     (a cap below its nodes never holds it)
  Σ_r x_{r,k,m} / H ≤ C_{k,m}                               training fits in each limited layer
  Q_{j,m} = Σ_{i≤j} (C_{i,m} − Σ_r x_{r,i,m} / H)
  e_{j,m} ≤ W · (A_i + B_i · Q_{j,m})  for every piece i     e_j ≤ E(Q_j): the load-duration curve (below)
steady demand (inference + baseline) is served in every slot from the cheapest layer up (reserved, owned,
capped spot, then the cheapest unlimited layer, on-demand or uncapped spot). With the week's slot demands
d_s, Q nodes serve E(Q) = W · Σ_s min(d_s, Q) node-hours in a month, concave and piecewise linear with a
break at each distinct d_s, so tier j serves e_j − e_{j−1} exactly (see :func:`_dispatch_month`); this is
equivalent to a variable per layer and slot, with one row per distinct demand level instead.
objective (minimise)
  Σ_a b_a · F · (M − a) + (owned node-hours used) · v       owned: fixed cost per node-month from arrival
                                                             to horizon end, energy per node-hour used
  + Σ q_{t,m} · p_t · H · T_t                               reservations bill their whole term
  + (on-demand node-hours) · p_od + (spot node-hours) · p_spot / g
then, lexicographically, the least lateness Σ x_{r,k,m} · (m − start_r) at a cost no more than that mix's

Unit costs are inputs: the service layer resolves them from the catalog and the cost engine
(:func:`owned_option_from_on_prem` turns the cost engine's owning model into F, v and capex per node). A
missing price is a missing option, never a borrowed one.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from clusterdesigner.engine.core.errors import EngineError, InfeasibleError, InputError, SolverLimitError
from clusterdesigner.engine.core.units import HOURS_PER_YEAR
from clusterdesigner.engine.cost.cashflow import discount_factors
from clusterdesigner.engine.cost.failures import failure_model
from clusterdesigner.engine.cost.rent_own import OnPremInputs, on_prem_cost
from clusterdesigner.engine.cost.resale import ResaleCurve

HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0  # 730 h
SLOTS_PER_WEEK = 168
SLOT_WEIGHT_HOURS = (
    HOURS_PER_MONTH / SLOTS_PER_WEEK
)  # hours of a month each representative-week slot stands for
LAYERS = ("owned", "reserved", "on_demand", "spot")
MIP_GAP = 1e-4
MAX_HORIZON_MONTHS = 120
REPRESENTATIVE_WEEK = (
    "Each month is represented by one week of 168 hourly slots (hour 0 = Monday 00:00), repeated: "
    f"a month is {HOURS_PER_MONTH:g} h (8,760 / 12), so each slot stands for {SLOT_WEIGHT_HOURS:.4f} h."
)


# --------------------------------------------------------------------------------------------- inputs


# The largest training run a plan takes, in GPU-hours: far above any run published (Llama 3 405B: 30.84M
# H100 GPU-hours, its model card), yet low enough that no sum of runs overflows.
MAX_GPU_HOURS = 1e10

# While CapacityPlan.from_json runs: every input error found so far, by field path (the first per path), with
# its kind, so that a plan reports all its errors at once instead of one per request.
_ERRORS: ContextVar[dict[str, tuple[str, type[EngineError]]] | None] = ContextVar(
    "capacity_plan_errors", default=None
)


class PlanInputErrors(InputError):
    """Every input error of a plan at once: ``fields`` maps each field path to its message (``field`` and
    ``message`` are the first)."""

    def __init__(self, fields: Mapping[str, str]) -> None:
        path, message = next(iter(fields.items()))
        super().__init__(message, field=path)
        self.fields = dict(fields)


def _invalid(message: str, path: str, kind: type[EngineError] = InputError) -> None:
    """Report one input error: raised at once outside from_json; inside it, collected (the first per
    field)."""
    errors = _ERRORS.get()
    if errors is None:
        raise kind(message, field=path)
    errors.setdefault(path, (message, kind))


def _require(ok: bool, message: str, path: str) -> bool:
    if not ok:
        _invalid(message, path)
    return ok


def _raise_collected() -> None:
    errors = _ERRORS.get() or {}
    if len(errors) == 1:
        ((path, (message, kind)),) = errors.items()
        raise kind(message, field=path)
    if errors:
        raise PlanInputErrors({path: message for path, (message, _) in errors.items()})


def _num(data: Mapping[str, Any], key: str, path: str, *, default: float | None = None) -> float:
    """The number at ``key``; a missing or non-numeric one is an error (NaN stands in while errors are
    collected: every comparison with it is false, so no further check fires on it)."""
    value = data.get(key, default)
    if value is None:
        _invalid("is required", f"{path}{key}")
        return math.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        _invalid("must be a finite number", f"{path}{key}")
        return math.nan
    return float(value)


def _resale_points(value: Any, path: str) -> tuple[tuple[float, float], ...]:
    """[[age in years, fraction of the price new], ...], ages ascending, each fraction 0 to 2."""
    if not isinstance(value, (list, tuple)):
        raise InputError("must be a list of [age in years, fraction of the price new]", field=path)
    points: list[tuple[float, float]] = []
    for i, point in enumerate(value):
        ok = isinstance(point, (list, tuple)) and len(point) == 2
        ok = ok and all(not isinstance(x, bool) and isinstance(x, (int, float)) for x in point)
        ok = ok and all(math.isfinite(x) for x in point) and point[0] >= 0 and 0 <= point[1] <= 2
        if not ok or (points and point[0] <= points[-1][0]):
            raise InputError(
                "must be [age in years >= 0, ascending, fraction of the price new 0 to 2]",
                field=f"{path}.{i}",
            )
        points.append((float(point[0]), float(point[1])))
    return tuple(points)


def _int(data: Mapping[str, Any], key: str, path: str, *, default: int | None = None) -> int:
    value = data.get(key, default)
    if value is None:
        _invalid("is required", f"{path}{key}")
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        _invalid("must be a whole number", f"{path}{key}")
        return 0
    return value


def _check(ok: bool, message: str, path: str) -> None:
    if not ok:
        raise InputError(message, field=path)


@dataclass(frozen=True)
class TrainingRun:
    """A training run: ``gpu_hours`` of work on at most ``gpus`` GPUs at once, between two months.

    ``earliest_start_month`` and ``deadline_month`` are 0-based and inclusive: the run may work in months
    earliest_start_month … deadline_month. A run that is not ``splittable`` runs on one capacity layer.
    """

    name: str
    gpu_hours: float
    gpus: int
    earliest_start_month: int
    deadline_month: int
    splittable: bool = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> TrainingRun:
        return cls(
            name=str(data.get("name") or "training"),
            gpu_hours=_num(data, "gpu_hours", path),
            gpus=_int(data, "gpus", path),
            earliest_start_month=_int(data, "earliest_start_month", path, default=0),
            deadline_month=_int(data, "deadline_month", path),
            splittable=bool(data.get("splittable", False)),
        )


@dataclass(frozen=True)
class InferenceSizing:
    """How the serving engine turned an inference workload's tokens per day into its peak GPUs: the layout
    it chose at the peak demand (mean × peak_to_mean of the daily shape), its replicas and GPUs, and the
    output tokens/s per GPU of that layout."""

    output_tokens_per_day: float
    model: str
    accelerator: str
    peak_to_mean: float
    peak_requests_per_s: float
    layout: str
    batch: int
    replicas: int
    gpus: int
    output_tokens_per_s_per_gpu: float
    ttft_s: float
    tpot_s: float
    source: str


def peak_to_mean_of_day(*, offpeak_fraction: float, peak_start_hour: int, peak_end_hour: int) -> float:
    """Busiest hour ÷ mean of the daily shape: peak P for h = end − start hours, f · P for the other 24 − h,
    so mean = P · (h + f · (24 − h)) / 24 and peak/mean = 24 / (h + f · (24 − h))."""
    hours = peak_end_hour - peak_start_hour
    return 24.0 / (hours + offpeak_fraction * (24.0 - hours))


@dataclass(frozen=True)
class Inference:
    """Inference: ``peak_gpus`` in month 0 (grown by the plan's growth each month) in the daily peak hours
    [peak_start_hour, peak_end_hour), and ``offpeak_fraction`` of that outside them. ``sizing`` says how the
    serving engine derived ``peak_gpus`` from tokens per day, when it did."""

    name: str
    peak_gpus: float
    offpeak_fraction: float = 1.0
    peak_start_hour: int = 8
    peak_end_hour: int = 20
    start_month: int = 0
    sizing: InferenceSizing | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> Inference:
        sizing = data.get("sizing")
        return cls(
            name=str(data.get("name") or "inference"),
            peak_gpus=_num(data, "peak_gpus", path),
            offpeak_fraction=_num(data, "offpeak_fraction", path, default=1.0),
            peak_start_hour=_int(data, "peak_start_hour", path, default=8),
            peak_end_hour=_int(data, "peak_end_hour", path, default=20),
            start_month=_int(data, "start_month", path, default=0),
            sizing=InferenceSizing(**sizing) if isinstance(sizing, Mapping) else None,
        )


@dataclass(frozen=True)
class Baseline:
    """Research and development GPUs by day of week (0 = Monday) × hour of day, in month 0; grows with the
    plan's growth."""

    name: str
    gpus_by_day_hour: tuple[tuple[float, ...], ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> Baseline:
        grid = data.get("gpus_by_day_hour")
        key = f"{path}gpus_by_day_hour"
        _check(isinstance(grid, list | tuple) and len(grid) == 7, "must be 7 days of 24 hourly values", key)
        assert isinstance(grid, list | tuple)
        rows: list[tuple[float, ...]] = []
        for d, row in enumerate(grid):
            _check(isinstance(row, list | tuple) and len(row) == 24, "must be 24 hourly values", f"{key}.{d}")
            rows.append(tuple(_num({"v": v}, "v", f"{key}.{d}.{h}.") for h, v in enumerate(row)))
        return cls(name=str(data.get("name") or "baseline"), gpus_by_day_hour=tuple(rows))

    @classmethod
    def weekly(cls, *, name: str, weekday_gpus: float, weekend_gpus: float, night_gpus: float) -> Baseline:
        """A working-week shape: weekday_gpus 09:00–18:00 Monday–Friday, weekend_gpus 09:00–18:00 at the
        weekend, night_gpus at other hours."""
        rows = tuple(
            tuple((weekday_gpus if d < 5 else weekend_gpus) if 9 <= h < 18 else night_gpus for h in range(24))
            for d in range(7)
        )
        return cls(name=name, gpus_by_day_hour=rows)


@dataclass(frozen=True)
class OwnedOption:
    """Buying nodes: capex per node, a fixed cost per node-month (capital recovery, colocation,
    maintenance, staff, idle power) and the energy per node-hour used above idle."""

    lead_time_months: int
    capex_usd_per_node: float
    fixed_usd_per_node_month: float
    usd_per_node_hour_used: float
    existing_nodes: int = 0
    source: str = ""
    # For the cash view (capex when paid, resale at the end): the capital-recovery share of the fixed cost
    # and the straight-line book value's life and residual. None when the plan gives its own owning costs.
    capital_usd_per_node_month: float | None = None
    depreciation_years: float | None = None
    residual_fraction: float | None = None
    # Market resale (engine/cost/resale.py, as the design's cash flows take it): the residual-value series'
    # points (age in years, fraction of the price new) the cash view reads each purchase's resale from at its
    # age; none, or an age outside the series, takes the straight-line book value, a stated fallback.
    resale_points: tuple[tuple[float, float], ...] = ()
    resale_source: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> OwnedOption:
        cash: dict[str, Any] = {
            key: _num(data, key, path) if data.get(key) is not None else None
            for key in ("capital_usd_per_node_month", "depreciation_years", "residual_fraction")
        }
        cash["resale_points"] = _resale_points(data.get("resale_points") or (), f"{path}resale_points")
        cash["resale_source"] = str(data.get("resale_source", ""))
        return cls(
            lead_time_months=_int(data, "lead_time_months", path),
            capex_usd_per_node=_num(data, "capex_usd_per_node", path),
            fixed_usd_per_node_month=_num(data, "fixed_usd_per_node_month", path),
            usd_per_node_hour_used=_num(data, "usd_per_node_hour_used", path),
            existing_nodes=_int(data, "existing_nodes", path, default=0),
            source=str(data.get("source", "")),
            **cash,
        )


@dataclass(frozen=True)
class ReservationOption:
    """A reservation or committed-use term: every hour of ``term_months`` billed at ``usd_per_node_hour``;
    ``cap_nodes`` the most nodes of this term reserved at once (the quota obtainable; None: no limit)."""

    term_months: int
    usd_per_node_hour: float
    source: str = ""
    cap_nodes: float | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> ReservationOption:
        cap = data.get("cap_nodes")
        return cls(
            term_months=_int(data, "term_months", path),
            usd_per_node_hour=_num(data, "usd_per_node_hour", path),
            source=str(data.get("source", "")),
            cap_nodes=None if cap is None else _num(data, "cap_nodes", path),
        )


@dataclass(frozen=True)
class BurstOption:
    """On-demand or spot node-hours. For spot, ``goodput`` is the fraction of paid hours that does useful
    work (the cost engine's failures model); ``cap_nodes`` the most nodes available at once (spot's
    availability, or the quota obtainable on-demand), an upper bound the plan's MILP holds."""

    usd_per_node_hour: float
    goodput: float = 1.0
    cap_nodes: float | None = None
    source: str = ""
    goodput_source: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> BurstOption:
        cap = data.get("cap_nodes")
        return cls(
            usd_per_node_hour=_num(data, "usd_per_node_hour", path),
            goodput=_num(data, "goodput", path, default=1.0),
            cap_nodes=None if cap is None else _num(data, "cap_nodes", path),
            source=str(data.get("source", "")),
            goodput_source=str(data.get("goodput_source", "")),
        )


def spot_goodput_from_failures(
    *,
    nodes: int,
    gpus_per_node: int,
    preemptions_per_node_day: float,
    failures_per_gpu_day: float,
    restart_minutes: float,
    checkpoint_write_s: float,
) -> float:
    """Spot goodput relative to owned or on-demand nodes of the same job: g = g_spot / g_base.

    Both from the cost engine's failures model (``failures.failure_model``, first-order Young 1974):
    g = 1 − δ/τ* − (τ*/2 + R)/M with τ* = √(2δM), M = 24 h / λ; λ_base = GPUs · failures per GPU-day and
    λ_spot = λ_base + nodes · preemptions per node-day. The plan's other layers already carry hardware
    failures (a design's expected days include them), so spot pays only for what preemption adds, as the
    cost engine's ``spot_hours_factor`` = g_base / g_spot does.
    """

    def goodput(preemptions: float) -> float:
        return failure_model(
            gpus=nodes * gpus_per_node,
            nodes=nodes,
            failures_per_gpu_day=failures_per_gpu_day,
            preemptions_per_node_day=preemptions,
            checkpoint_write_s=checkpoint_write_s,
            restart_minutes=restart_minutes,
            run_days=None,
        ).goodput

    base, spot = goodput(0.0), goodput(preemptions_per_node_day)
    _check(spot > 0, "preemptions leave no useful spot time: give goodput", "supply.spot.goodput")
    return spot / base


@dataclass(frozen=True)
class Supply:
    """The capacity one may buy. An option left out (None, or no reservation terms) is not available."""

    owned: OwnedOption | None = None
    reservations: tuple[ReservationOption, ...] = ()
    on_demand: BurstOption | None = None
    spot: BurstOption | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any], path: str = "") -> Supply:
        def opt(key: str) -> Mapping[str, Any] | None:
            value = data.get(key)
            _check(value is None or isinstance(value, Mapping), "must be an object", f"{path}{key}")
            return value

        owned, od, spot = opt("owned"), opt("on_demand"), opt("spot")
        res = data.get("reservations") or []
        _check(isinstance(res, list | tuple), "must be a list", f"{path}reservations")
        return cls(
            owned=None if owned is None else OwnedOption.from_json(owned, f"{path}owned."),
            reservations=tuple(
                ReservationOption.from_json(r, f"{path}reservations.{i}.") for i, r in enumerate(res)
            ),
            on_demand=None if od is None else BurstOption.from_json(od, f"{path}on_demand."),
            spot=None if spot is None else BurstOption.from_json(spot, f"{path}spot."),
        )


@dataclass(frozen=True)
class CapacityPlan:
    """The whole plan: horizon, node size, workloads, growth and supply options."""

    horizon_months: int
    gpus_per_node: int
    supply: Supply
    training: tuple[TrainingRun, ...] = ()
    inference: tuple[Inference, ...] = ()
    baseline: tuple[Baseline, ...] = ()
    growth_pct_per_month: float = 0.0
    discount_rate: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CapacityPlan:
        _check(isinstance(data, Mapping), "must be an object", "")

        def items(key: str) -> list[Any]:
            value = data.get(key) or []
            _check(isinstance(value, list | tuple), "must be a list", key)
            for i, v in enumerate(value):
                _check(isinstance(v, Mapping), "must be an object", f"{key}.{i}")
            return list(value)

        supply = data.get("supply")
        _check(isinstance(supply, Mapping), "is required: the capacity one may buy", "supply")
        assert isinstance(supply, Mapping)
        # Type errors everywhere, then (when every value has its type) range errors everywhere, each set
        # reported whole. A malformed structure (a list that is not one) still stops at once.
        token = _ERRORS.set({})
        try:
            plan = cls._parse(data, supply, items)
            _raise_collected()
            plan_check(plan=plan)
            _raise_collected()
        finally:
            _ERRORS.reset(token)
        return plan

    @classmethod
    def _parse(cls, data: Mapping[str, Any], supply: Mapping[str, Any], items: Any) -> CapacityPlan:
        return cls(
            horizon_months=_int(data, "horizon_months", ""),
            gpus_per_node=_int(data, "gpus_per_node", ""),
            supply=Supply.from_json(supply, "supply."),
            training=tuple(
                TrainingRun.from_json(r, f"training.{i}.") for i, r in enumerate(items("training"))
            ),
            inference=tuple(
                Inference.from_json(r, f"inference.{i}.") for i, r in enumerate(items("inference"))
            ),
            baseline=tuple(Baseline.from_json(r, f"baseline.{i}.") for i, r in enumerate(items("baseline"))),
            growth_pct_per_month=_num(data, "growth_pct_per_month", "", default=0.0),
            discount_rate=_num(data, "discount_rate", "", default=0.0),
        )


def plan_check(*, plan: CapacityPlan) -> None:
    """Refuse a plan that cannot mean anything, naming the field."""
    p = plan
    _require(
        1 <= p.horizon_months <= MAX_HORIZON_MONTHS, f"must be 1 to {MAX_HORIZON_MONTHS}", "horizon_months"
    )
    _require(1 <= p.gpus_per_node <= 64, "must be 1 to 64", "gpus_per_node")
    _require(-50 <= p.growth_pct_per_month <= 100, "must be −50 to 100 (% per month)", "growth_pct_per_month")
    _require(0 <= p.discount_rate <= 1, "must be 0 to 1 (a yearly rate)", "discount_rate")
    _check_training(p)
    _check_inference(p)
    _check_supply(p.supply, horizon_months=p.horizon_months)


def _check_training(p: CapacityPlan) -> None:
    """Each training run: positive GPU-hours and GPUs, a window inside the horizon that can hold its hours."""
    for i, r in enumerate(p.training):
        path = f"training.{i}."
        # Whether the fit check below can mean anything: each value it reads is valid.
        ok = all(
            [
                _require(r.gpu_hours > 0, "must be more than zero", path + "gpu_hours")
                and _require(
                    r.gpu_hours <= MAX_GPU_HOURS, f"must be at most {MAX_GPU_HOURS:,.0f}", path + "gpu_hours"
                ),
                _require(r.gpus >= 1, "must be at least 1", path + "gpus"),
                _require(
                    0 <= r.earliest_start_month < p.horizon_months,
                    "must be inside the horizon",
                    path + "earliest_start_month",
                ),
                _require(
                    r.earliest_start_month <= r.deadline_month < p.horizon_months,
                    "must be inside the horizon and not before the earliest start",
                    path + "deadline_month",
                ),
            ]
        )
        window = (r.deadline_month - r.earliest_start_month + 1) * HOURS_PER_MONTH
        if ok and r.gpus * window < r.gpu_hours - 1e-6:
            _invalid(
                f"{r.name}: {r.gpu_hours:,.0f} GPU-hours do not fit on {r.gpus} GPUs in months "
                f"{r.earliest_start_month}–{r.deadline_month} ({r.gpus * window:,.0f} GPU-hours at most); "
                "move the deadline or allow more GPUs",
                path + "deadline_month",
                InfeasibleError,
            )


def _check_inference(p: CapacityPlan) -> None:
    """Each inference workload's peak, off-peak share, hours and start; each baseline's GPUs an hour."""
    for i, inf in enumerate(p.inference):
        path = f"inference.{i}."
        _require(inf.peak_gpus >= 0, "must be zero or more", path + "peak_gpus")
        _require(0 <= inf.offpeak_fraction <= 1, "must be 0 to 1", path + "offpeak_fraction")
        _require(0 <= inf.peak_start_hour <= 23, "must be 0 to 23", path + "peak_start_hour")
        _require(
            inf.peak_start_hour < inf.peak_end_hour <= 24,
            "must be after the start, at most 24",
            path + "peak_end_hour",
        )
        _require(0 <= inf.start_month < p.horizon_months, "must be inside the horizon", path + "start_month")
    for i, b in enumerate(p.baseline):
        for d, row in enumerate(b.gpus_by_day_hour):
            for h, v in enumerate(row):
                _require(v >= 0, "must be zero or more", f"baseline.{i}.gpus_by_day_hour.{d}.{h}")


def _check_supply(s: Supply, *, horizon_months: int) -> None:
    """The capacity options' prices, terms and limits; at least one option given."""
    if s.owned is not None:
        _check_owned(s.owned, horizon_months=horizon_months)
    for i, res in enumerate(s.reservations):
        _require(res.term_months in (12, 36), "must be 12 or 36", f"supply.reservations.{i}.term_months")
        _require(
            res.cap_nodes is None or res.cap_nodes >= 0,
            "must be zero or more",
            f"supply.reservations.{i}.cap_nodes",
        )
        _require(
            res.usd_per_node_hour > 0, "must be more than zero", f"supply.reservations.{i}.usd_per_node_hour"
        )
    for key, burst in (("on_demand", s.on_demand), ("spot", s.spot)):
        if burst is not None:
            _check_burst(burst, key)
    if s.owned is None and not s.reservations and s.on_demand is None and s.spot is None:
        _invalid("offers no capacity: give at least one option with its price", "supply")


def _check_owned(o: OwnedOption, *, horizon_months: int) -> None:
    _require(
        0 <= o.lead_time_months < horizon_months,
        "must be 0 up to the horizon",
        "supply.owned.lead_time_months",
    )
    for key in ("capex_usd_per_node", "fixed_usd_per_node_month", "usd_per_node_hour_used"):
        _require(getattr(o, key) >= 0, "must be zero or more", f"supply.owned.{key}")
    _require(o.existing_nodes >= 0, "must be zero or more", "supply.owned.existing_nodes")
    # The cash basis's parts (plan_flows): capex less the capital share is paid monthly, and the book value
    # divides by the life, so a life of 0 or a capital share above the fixed cost cannot mean anything.
    if o.capital_usd_per_node_month is not None:
        _require(
            0 <= o.capital_usd_per_node_month <= o.fixed_usd_per_node_month,
            "must be zero up to fixed_usd_per_node_month (it is the capital share of that fixed cost)",
            "supply.owned.capital_usd_per_node_month",
        )
    if o.depreciation_years is not None:
        _require(
            0 < o.depreciation_years <= 50,
            "must be more than 0, at most 50 (years)",
            "supply.owned.depreciation_years",
        )
    if o.residual_fraction is not None:
        _require(0 <= o.residual_fraction <= 1, "must be 0 to 1 (of capex)", "supply.owned.residual_fraction")


def _check_burst(burst: BurstOption, key: str) -> None:
    _require(burst.usd_per_node_hour > 0, "must be more than zero", f"supply.{key}.usd_per_node_hour")
    _require(0 < burst.goodput <= 1, "must be more than 0, at most 1", f"supply.{key}.goodput")
    _require(
        burst.cap_nodes is None or burst.cap_nodes >= 0, "must be zero or more", f"supply.{key}.cap_nodes"
    )


def owned_option_from_on_prem(
    *, inputs: OnPremInputs, lead_time_months: int, existing_nodes: int = 0
) -> OwnedOption:
    """Per-node owning costs from the cost engine's owning model (:func:`tco.on_prem_cost`).

    The cost engine's owning cost over a year is linear in utilization u: A + B·u (its ``linear``). Per node:
    F = A / (12 · nodes) per node-month (capital recovery, colocation, maintenance, staff, idle power) and
    v = B / (8,760 · nodes) per node-hour used (energy above idle); capex per node = capex / nodes.
    Shared network and storage are spread evenly over the nodes.
    """
    result = on_prem_cost(inputs=inputs, utilization=1.0, horizon_years=1.0)
    n = inputs.nodes
    return OwnedOption(
        lead_time_months=lead_time_months,
        capex_usd_per_node=result.capex_usd / n,
        fixed_usd_per_node_month=result.linear.fixed_usd / (12.0 * n),
        usd_per_node_hour_used=result.linear.per_utilization_usd / (HOURS_PER_YEAR * n),
        existing_nodes=existing_nodes,
        source="cost engine owning model (tco.on_prem_cost), per node",
        capital_usd_per_node_month=result.annual_parts["capital"].usd / (12.0 * n),
        depreciation_years=inputs.depreciation_years,
        residual_fraction=inputs.residual_fraction,
    )


# --------------------------------------------------------------------------------------------- demand


def _growth(plan: CapacityPlan) -> NDArray[np.float64]:
    months = np.arange(plan.horizon_months, dtype=float)
    return np.asarray((1.0 + plan.growth_pct_per_month / 100.0) ** months, dtype=np.float64)


def demand_weeks(*, plan: CapacityPlan) -> dict[str, NDArray[np.float64]]:
    """Steady demand in GPUs by workload: for each inference and baseline workload an array
    [month, slot of the representative week].

    inference: peak_gpus · (1 + g)^m in its peak hours, × offpeak_fraction outside them, from start_month;
    baseline: gpus_by_day_hour[day][hour] · (1 + g)^m;  g = growth_pct_per_month / 100.
    """
    grow = _growth(plan)
    hours = np.arange(SLOTS_PER_WEEK) % 24
    out: dict[str, NDArray[np.float64]] = {}
    for inf in plan.inference:
        shape = np.where(
            (hours >= inf.peak_start_hour) & (hours < inf.peak_end_hour), 1.0, inf.offpeak_fraction
        )
        active = (np.arange(plan.horizon_months) >= inf.start_month).astype(float)
        out[_unique(out, inf.name)] = inf.peak_gpus * np.outer(grow * active, shape)
    for b in plan.baseline:
        week = np.asarray(b.gpus_by_day_hour, dtype=float).reshape(SLOTS_PER_WEEK)
        out[_unique(out, b.name)] = np.outer(grow, week)
    return out


def _unique(seen: Mapping[str, object], name: str) -> str:
    if name not in seen:
        return name
    i = 2
    while f"{name} ({i})" in seen:
        i += 1
    return f"{name} ({i})"


# --------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class OwnedPurchase:
    arrival_month: int
    order_month: int
    nodes: int
    capex_usd: float


@dataclass(frozen=True)
class ReservationStart:
    term_months: int
    start_month: int
    nodes: int
    committed_usd: float


@dataclass(frozen=True)
class RunSchedule:
    name: str
    node_hours_by_layer: Mapping[str, float]
    node_hours_by_month: tuple[float, ...]
    finish_month: int
    deadline_month: int
    slack_months: int


@dataclass(frozen=True)
class MonthRow:
    month: int
    demand_mean_gpus: float
    demand_peak_gpus: float
    training_gpus: float
    owned_nodes: int
    reserved_nodes: int
    on_demand_node_hours: float
    spot_node_hours: float
    owned_utilization: float | None
    cost_usd: Mapping[str, float]


@dataclass(frozen=True)
class Alternative:
    """Another mix for comparison: its NPV (the objective it was chosen on) and its cash out undiscounted,
    or why it cannot serve the plan. ``npv_usd`` is None in results stored before the NPV objective."""

    name: str
    total_usd: float | None
    reason: str = ""
    npv_usd: float | None = None


@dataclass(frozen=True)
class ProblemSize:
    variables: int
    integer_variables: int
    constraints: int
    nonzeros: int
    solve_seconds: float
    mip_gap: float  # relative gap between the mix found and HiGHS's proven lower bound
    nodes: int = 0  # branch-and-bound nodes HiGHS explored (the work the node limit bounds)


@dataclass(frozen=True)
class PlanResult:
    """A solved plan. ``npv_usd`` is the objective the mix was chosen on: the NPV of the plan's monthly cash
    flows (:func:`plan_flows`); ``total_usd`` the same flows undiscounted ("cash out, undiscounted")."""

    total_usd: float
    npv_usd: float
    cost_by_layer_usd: Mapping[str, float]
    owned_purchases: tuple[OwnedPurchase, ...]
    reservations: tuple[ReservationStart, ...]
    on_demand_node_hours: float
    spot_node_hours: float
    owned_utilization: float | None
    months: tuple[MonthRow, ...]
    runs: tuple[RunSchedule, ...]
    demand_mean_gpus_by_workload: Mapping[str, tuple[float, ...]]
    alternatives: tuple[Alternative, ...]
    size: ProblemSize
    notes: tuple[str, ...] = field(default=())
    inference_sizing: Mapping[str, InferenceSizing] = field(default_factory=dict)
    # Cash view (engine/cost/cashflow.py's conventions): index 0 is the start, index m the end of month m;
    # None when the owned option has no capital share to take out of its fixed cost.
    cash_flows_usd: tuple[float, ...] | None = None
    cash_npv_usd: float | None = None
    capex_usd: float = 0.0
    # "optimal" (proven within the MIP gap), or "work_limit" / "time_limit": the solver stopped at its node
    # limit or its wall-clock backstop and this is the best plan it had found; ``solver_message`` says so.
    solver_status: str = "optimal"
    solver_message: str = ""
    # A plan of several node types (capacity_fleet.py): each type's own result; the fields above are then
    # the whole plan's (money summed, node counts and node-hours summed over the types). Empty for one type,
    # and then left out of the JSON, so a one-type result is stored as before.
    node_types: tuple[NodeTypeResult, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.node_types:
            del data["node_types"]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PlanResult:
        d = dict(data)
        d["owned_purchases"] = tuple(OwnedPurchase(**x) for x in d["owned_purchases"])
        d["reservations"] = tuple(ReservationStart(**x) for x in d["reservations"])
        d["months"] = tuple(MonthRow(**x) for x in d["months"])
        d["runs"] = tuple(
            RunSchedule(**{**x, "node_hours_by_month": tuple(x["node_hours_by_month"])}) for x in d["runs"]
        )
        d["demand_mean_gpus_by_workload"] = {
            k: tuple(v) for k, v in d["demand_mean_gpus_by_workload"].items()
        }
        d["alternatives"] = tuple(Alternative(**x) for x in d["alternatives"])
        d["size"] = ProblemSize(**d["size"])
        d["notes"] = tuple(d.get("notes", ()))
        d["inference_sizing"] = {k: InferenceSizing(**v) for k, v in d.get("inference_sizing", {}).items()}
        if d.get("cash_flows_usd") is not None:
            d["cash_flows_usd"] = tuple(d["cash_flows_usd"])
        d["node_types"] = tuple(
            NodeTypeResult(x["accelerator"], x["gpus_per_node"], PlanResult.from_json(x["result"]))
            for x in d.get("node_types", ())
        )
        return cls(**d)


@dataclass(frozen=True)
class NodeTypeResult:
    """One node type's part of a plan of several: its accelerator, node size and its own result (purchases,
    reservations, burst, months and runs of that type alone)."""

    accelerator: str
    gpus_per_node: int
    result: PlanResult


def cash_basis(owned: OwnedOption | None) -> bool:
    """Whether owning can be paid as cash (capex at delivery, opex monthly, resale at the end): it needs the
    capital share of its fixed cost, its life and residual. Without an owned option there is nothing to
    split, so the plan is on the cash basis too."""
    return owned is None or (
        owned.capital_usd_per_node_month is not None
        and owned.depreciation_years is not None
        and owned.residual_fraction is not None
    )


def monthly_usd_per_node(owned: OwnedOption) -> float:
    """What an owned node pays each month it is owned, apart from energy: on the cash basis its opex, F less
    the capital share (colocation, maintenance, staff, idle power; capex is paid at delivery instead),
    otherwise the whole fixed cost F as given."""
    capital = owned.capital_usd_per_node_month if cash_basis(owned) else None
    return owned.fixed_usd_per_node_month - (capital or 0.0)


def resale_fraction(owned: OwnedOption, *, age_years: float) -> float:
    """The share of capex a purchase ``age_years`` old sells for at the horizon: the market value from the
    residual-value series (``owned.resale_points``, straight-line between points; engine/cost/resale.py, as
    the design's cash flows read it), or where no series covers that age, the stated fallback, the
    straight-line book value 1 − (1 − residual) · min(age, life) / life."""
    if owned.resale_points:
        market = ResaleCurve("", "", owned.resale_points, "", "").fraction_at(age_years=age_years)
        if market is not None:
            return market
    life, residual = float(owned.depreciation_years or 0.0), float(owned.residual_fraction or 0.0)
    return 1.0 - (1.0 - residual) * min(age_years, life) / life


def plan_flows(
    *,
    months: int,
    owned: OwnedOption | None,
    owned_nodes: NDArray[np.float64] | NDArray[np.int_],
    owned_hours_used: NDArray[np.float64],
    purchases: Sequence[OwnedPurchase],
    reservations: Sequence[tuple[int, int, float, int]],
    burst_usd: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The plan's money as paid, in engine/cost/cashflow.py's conventions: index 0 the start, index m + 1 the
    end of month m (0-based), each index discounted by :func:`cashflow.discount_factors`.

    On the cash basis (:func:`cash_basis`): each purchase's capex at delivery (index = its arrival month a,
    the start of month a, when its costs begin); per month owned nodes × (F − capital share) + node-hours
    used × v (F less its capital recovery is colocation, maintenance, staff and idle power); at the end each
    purchase sold at capex · :func:`resale_fraction` of its age. Nodes the plan already owns (existing_nodes)
    pay opex only: their capex is sunk. Owning costs given without their capital share are paid as given:
    F per owned node-month and v per node-hour, no capex or resale (owning annualised, the only split the
    plan has). Reservations: every month of each whole term, past the horizon too, each in its own month
    (``reservations`` holds (start month, nodes, $ a month, term months)). On-demand and spot: each month's
    bill (``burst_usd``)."""
    end = max([months] + [m + term for m, _, _, term in reservations])
    flows = np.zeros(end + 1)
    flows[1 : months + 1] += burst_usd
    if owned is not None:
        per_node = monthly_usd_per_node(owned)
        flows[1 : months + 1] += owned_nodes * per_node + owned_hours_used * owned.usd_per_node_hour_used
        for p in purchases if cash_basis(owned) else ():
            flows[p.arrival_month] += p.capex_usd
            flows[months] -= p.capex_usd * resale_fraction(owned, age_years=(months - p.arrival_month) / 12.0)
    for start, _, monthly, term in reservations:
        flows[start + 1 : start + term + 1] += monthly
    return flows


def flows_npv(flows: NDArray[np.float64], *, discount_rate: float) -> float:
    """Σ_k flows_k / (1 + i)^k, i = (1 + r)^(1/12) − 1 (cashflow.discount_factors)."""
    return float((flows * discount_factors(yearly_rate=discount_rate, periods=len(flows) - 1)).sum())


def cash_view(
    *,
    months: int,
    discount_rate: float,
    owned: OwnedOption | None,
    owned_nodes: NDArray[np.float64] | NDArray[np.int_],
    owned_hours_used: NDArray[np.float64],
    purchases: Sequence[OwnedPurchase],
    reservations: Sequence[tuple[int, int, float, int]],
    burst_usd: NDArray[np.float64],
) -> tuple[tuple[float, ...], float] | None:
    """The plan's cash flows and their NPV (:func:`plan_flows` on the cash basis), or None when the owned
    option has no capital share (the plan gave its own owning costs, which cannot be split into capital and
    opex)."""
    if not cash_basis(owned):
        return None
    flows = plan_flows(
        months=months,
        owned=owned,
        owned_nodes=owned_nodes,
        owned_hours_used=owned_hours_used,
        purchases=purchases,
        reservations=reservations,
        burst_usd=burst_usd,
    )
    return tuple(float(x) for x in flows), flows_npv(flows, discount_rate=discount_rate)


# --------------------------------------------------------------------------------------------- the MILP

IntArray = NDArray[np.int64]
# Ties between equally cheap schedules are broken lexicographically, not by a small cost term: a first solve
# minimises cost (proven within the gap); a second keeps its integer decisions and a cost at most its mix's,
# and minimises each run's lateness, the node-hours it does in month m weighted by m − its earliest start (a
# linear program, solved exactly). A tie-break term in the cost (1e-7 $ per node-hour-month before) is far
# smaller than the MIP gap, so the solver could stop on a mix of the same cost with a later finish month.


class _Model:
    """Columns and sparse rows of a MILP, added in numpy blocks."""

    def __init__(self) -> None:
        self.n = 0
        self.m = 0
        self.cost: list[NDArray[np.float64]] = []
        self.lb: list[NDArray[np.float64]] = []
        self.ub: list[NDArray[np.float64]] = []
        self.integer: list[NDArray[np.float64]] = []
        self.rows: list[IntArray] = []
        self.cols: list[IntArray] = []
        self.vals: list[NDArray[np.float64]] = []
        self.lo: list[NDArray[np.float64]] = []
        self.hi: list[NDArray[np.float64]] = []
        self.lateness: list[NDArray[np.float64]] = []

    def variables(
        self,
        count: int,
        *,
        cost: float | NDArray[np.float64],
        ub: float | NDArray[np.float64] = np.inf,
        lb: float = 0.0,
        integer: bool = False,
        lateness: float | NDArray[np.float64] = 0.0,
    ) -> IntArray:
        idx = np.arange(self.n, self.n + count, dtype=np.int64)
        self.n += count
        self.cost.append(np.broadcast_to(np.asarray(cost, dtype=float), (count,)).astype(float))
        self.lateness.append(np.broadcast_to(np.asarray(lateness, dtype=float), (count,)).astype(float))
        self.lb.append(np.full(count, lb))
        self.ub.append(np.broadcast_to(np.asarray(ub, dtype=float), (count,)).astype(float))
        self.integer.append(np.full(count, 1.0 if integer else 0.0))
        return idx

    def constraints(
        self,
        count: int,
        terms: Sequence[tuple[IntArray | int, float]],
        *,
        lo: float | NDArray[np.float64],
        hi: float | NDArray[np.float64],
    ) -> None:
        """``count`` rows; each term puts coefficient ``value`` on column ``cols[i]`` of row i (a scalar
        column appears in every row)."""
        rows = np.arange(self.m, self.m + count, dtype=np.int64)
        self.m += count
        for cols, value in terms:
            self.rows.append(rows)
            self.cols.append(np.broadcast_to(np.asarray(cols, dtype=np.int64), (count,)))
            self.vals.append(np.broadcast_to(np.asarray(value, dtype=float), (count,)).astype(float))
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (count,)).astype(float))
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (count,)).astype(float))

    def solve(
        self, *, time_limit_s: float, mip_gap: float, node_limit: int | None = None
    ) -> tuple[NDArray[np.float64] | None, str, str, ProblemSize]:
        """The MILP solved by HiGHS: (solution or None, outcome, HiGHS's message, size). The outcome is
        "optimal", "infeasible", "work_limit" (``node_limit`` branch-and-bound nodes explored: a bound on
        work that does not depend on the machine's load), "time_limit" (the wall-clock backstop) or
        "error"; a stopped solve's solution is the best mix found, if any."""
        # A plan can have no constraint row at all (steady demand only, with no deadline, reservation or
        # cap): np.concatenate of nothing raises, so an empty matrix stands in.
        empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0)
        rows = np.concatenate(self.rows) if self.rows else empty_i
        cols = np.concatenate(self.cols) if self.cols else empty_i
        vals = np.concatenate(self.vals) if self.vals else empty_f
        lo = np.concatenate(self.lo) if self.lo else empty_f
        hi = np.concatenate(self.hi) if self.hi else empty_f
        matrix = coo_matrix((vals, (rows, cols)), shape=(self.m, self.n)).tocsr()
        integrality = np.concatenate(self.integer)
        bounds = Bounds(np.concatenate(self.lb), np.concatenate(self.ub))
        cost = np.concatenate(self.cost)
        start = time.perf_counter()
        res = milp(
            c=cost,
            integrality=integrality,
            bounds=bounds,
            constraints=LinearConstraint(matrix, lo, hi) if self.m else (),
            options={
                "mip_rel_gap": mip_gap,
                "time_limit": time_limit_s,
                "presolve": True,
                **({} if node_limit is None else {"node_limit": node_limit}),
            },
        )
        gap = float(getattr(res, "mip_gap", 0.0) or 0.0)
        x = None if res.x is None else np.asarray(res.x, dtype=float)
        outcome = _outcome(int(res.status), str(res.message))
        lateness = np.concatenate(self.lateness)
        if outcome == "optimal" and x is not None and lateness.any():
            x = self._earliest(x, cost, lateness, integrality, bounds, matrix, lo, hi, time_limit_s, start)
        size = ProblemSize(
            variables=self.n,
            integer_variables=int(integrality.sum()),
            constraints=self.m,
            nonzeros=int(matrix.nnz),
            solve_seconds=time.perf_counter() - start,
            mip_gap=gap,
            nodes=int(getattr(res, "mip_node_count", 0) or 0),
        )
        return x, outcome, str(res.message), size

    def _earliest(
        self,
        x: NDArray[np.float64],
        cost: NDArray[np.float64],
        lateness: NDArray[np.float64],
        integrality: NDArray[np.float64],
        bounds: Bounds,
        matrix: Any,
        lo: NDArray[np.float64],
        hi: NDArray[np.float64],
        time_limit_s: float,
        start: float,
    ) -> NDArray[np.float64]:
        """The second, lexicographic solve: the first solve's integer decisions (nodes bought, reservations
        begun, each unsplittable run's layer) kept, least lateness among the schedules that cost at most the
        first solve's mix (its cost plus 1e-9 of it, the solver's feasibility tolerance). With the integers
        fixed this is a linear program, solved exactly. Keeps the first mix if it finds no solution."""
        best = float(cost @ x)
        budget = LinearConstraint(cost.reshape(1, -1), -np.inf, best + 1e-9 * abs(best) + 1e-6)
        constraints = [budget] + ([LinearConstraint(matrix, lo, hi)] if self.m else [])
        whole = integrality > 0
        fixed = Bounds(np.where(whole, np.round(x), bounds.lb), np.where(whole, np.round(x), bounds.ub))
        left = max(time_limit_s - (time.perf_counter() - start), 1.0)
        res = milp(c=lateness, bounds=fixed, constraints=constraints, options={"time_limit": left})
        return x if res.x is None else np.asarray(res.x, dtype=float)


def _outcome(status: int, message: str) -> str:
    """scipy's milp status as what happened: 0 optimal, 2 infeasible, 1 a limit ("Time limit reached" for
    the wall clock, else an iteration limit), and HiGHS's model status 16 (its node limit, mip_max_nodes),
    which scipy 1.17 reports as status 4, "not recognized"."""
    if status == 0:
        return "optimal"
    if status == 2:
        return "infeasible"
    if status == 1:
        return "time_limit" if "time limit" in message.lower() else "work_limit"
    if "HiGHS Status 16" in message:
        return "work_limit"
    return "error"


def _stopped_message(outcome: str, size: ProblemSize, npv_usd: float | None) -> str:
    where = "the work limit" if outcome == "work_limit" else "the time limit"
    head = f"stopped at {where} after {size.nodes:,} nodes ({size.solve_seconds:.1f} s)"
    if npv_usd is None:
        return f"{head} before finding any plan that serves the demand; it was not shown infeasible"
    return f"{head}; best plan found has NPV ${npv_usd:,.0f}, gap {size.mip_gap:.2%}"


@dataclass(frozen=True)
class _Layer:
    name: str
    usd_per_node_hour: float  # per node-hour of useful work (spot: price ÷ goodput)


def _layers(supply: Supply) -> list[_Layer]:
    out: list[_Layer] = []
    if supply.owned is not None:
        out.append(_Layer("owned", supply.owned.usd_per_node_hour_used))
    if supply.reservations:
        out.append(_Layer("reserved", 0.0))
    if supply.on_demand is not None:
        out.append(_Layer("on_demand", supply.on_demand.usd_per_node_hour / supply.on_demand.goodput))
    if supply.spot is not None:
        out.append(_Layer("spot", supply.spot.usd_per_node_hour / supply.spot.goodput))
    return out


def _capped_bursts(supply: Supply) -> dict[str, BurstOption]:
    """The burst options with a cap on the nodes obtainable at once (spot's availability, an on-demand
    quota): each is a limited layer, an upper bound the MILP holds, not an unlimited one."""
    bursts = {"on_demand": supply.on_demand, "spot": supply.spot}
    return {name: b for name, b in bursts.items() if b is not None and b.cap_nodes is not None}


@dataclass(frozen=True)
class _Dispatch:
    """How steady demand is served in every slot: from the cheapest layer up (merit order). ``stack`` are the
    layers of limited capacity by cost per node-hour, ``top`` the cheapest unlimited layer (None: every slot
    must be served from the stack), ``limits`` the constant capacity of limited layers that have no capacity
    variable (capped spot: cap × goodput nodes of useful work)."""

    stack: tuple[_Layer, ...]
    top: _Layer | None
    limits: Mapping[str, float]

    @classmethod
    def of(cls, layers: Sequence[_Layer], supply: Supply) -> _Dispatch:
        capped = _capped_bursts(supply)
        limited = [k for k in layers if k.name in ("owned", "reserved") or k.name in capped]
        unlimited = [k for k in layers if k not in limited]
        limits = {k.name: float("nan") for k in limited if k.name in ("owned", "reserved")}
        for name, burst in capped.items():
            limits[name] = float(burst.cap_nodes or 0.0) * burst.goodput
        return cls(
            stack=tuple(sorted(limited, key=lambda k: (k.usd_per_node_hour, LAYERS.index(k.name)))),
            top=min(unlimited, key=lambda k: k.usd_per_node_hour) if unlimited else None,
            limits=limits,
        )


def _dispatch_month(
    model: _Model,
    dispatch: _Dispatch,
    steady_nodes: NDArray[np.float64],
    capacity: Mapping[str, IntArray],
    month: int,
    training: Any,
    discount: float,
) -> tuple[IntArray, float]:
    """One month's steady dispatch as a load-duration curve, exactly.

    With the week's slot demands d_s (nodes), the node-hours that Q nodes of capacity serve are
    E(Q) = W · Σ_s min(d_s, Q), concave and piecewise linear with a break at each distinct d_s: for the levels
    l_1 < … < l_n with counts n_i, E(Q) = min_k W · (A_k + B_k · Q), A_k = Σ_{i≤k} n_i l_i, B_k = Σ_{i>k} n_i.
    Tier j of the stack serves E(Q_j) − E(Q_{j−1}), where Q_j is the capacity left after training in the
    first j layers. Variables e_j ≤ E(Q_j) (one row per piece) carry that; cheaper layers first makes the
    objective push each e_j up to E(Q_j). Returns the e columns and the month's steady node-hours T = E(∞).
    The month's bill is paid at its end: every cost is weighted by that index's ``discount`` factor.
    """
    level, count = np.unique(np.round(steady_nodes, 9), return_counts=True)
    a = np.concatenate([[0.0], np.cumsum(level * count)]) * SLOT_WEIGHT_HOURS
    b = (count.sum() - np.concatenate([[0.0], np.cumsum(count)])) * SLOT_WEIGHT_HOURS
    total = float(a[-1])
    stack = dispatch.stack
    costs = [k.usd_per_node_hour for k in stack] + [dispatch.top.usd_per_node_hour if dispatch.top else 0.0]
    e = model.variables(
        len(stack), cost=np.asarray([(costs[j] - costs[j + 1]) * discount for j in range(len(stack))])
    )
    q = model.variables(len(stack), cost=0.0)
    for j in range(len(stack)):
        # Q_j = Σ_{i≤j} (C_i − training on i)  (capped spot: its constant limit instead of C)
        terms: list[tuple[IntArray | int, float]] = [(int(q[j]), 1.0)]
        constant = 0.0
        for below in stack[: j + 1]:
            if below.name in capacity:
                terms.append((int(capacity[below.name][month]), -1.0))
            else:
                constant += dispatch.limits[below.name]
            terms += training(below.name, month, 1.0)
        model.constraints(1, terms, lo=constant, hi=constant)
        model.constraints(len(a), [(int(e[j]), 1.0), (int(q[j]), -b)], lo=-np.inf, hi=a)
        if j:
            model.constraints(1, [(int(e[j]), 1.0), (int(e[j - 1]), -1.0)], lo=0.0, hi=np.inf)
    if dispatch.top is None:
        if not stack:
            raise InfeasibleError("no capacity can serve the steady demand", field="supply")
        model.constraints(1, [(int(e[-1]), 1.0)], lo=total - 1e-6, hi=np.inf)
    return e, total


def _capacity_bound(plan: CapacityPlan, steady_nodes: NDArray[np.float64]) -> float:
    """No optimum holds more nodes of a kind than the peak demand could use."""
    runs = sum(r.gpus for r in plan.training) / plan.gpus_per_node
    return float(math.ceil(float(steady_nodes.max(initial=0.0)) + runs + 1e-9))


def plan_solve(
    *,
    plan: CapacityPlan,
    time_limit_s: float = 60.0,
    compare: bool = True,
    mip_gap: float = MIP_GAP,
    node_limit: int | None = None,
) -> PlanResult:
    """The cheapest mix of the plan's supply options that serves its demand and meets every deadline.

    Solves the mixed-integer program in this module's docstring with HiGHS (``scipy.optimize.milp``) to an
    optimum proven within the relative gap ``mip_gap``. With ``compare``, also solves all-own (owned nodes
    only) and all-rent (every option but owned) for comparison. Raises :class:`InfeasibleError` (field
    ``supply``) when no mix of the offered capacity can serve the plan.

    Each solve stops after ``node_limit`` branch-and-bound nodes (HiGHS's mip_max_nodes: the same work on a
    loaded machine as on an idle one) or ``time_limit_s`` of wall clock, a backstop; stopped, it returns the
    best plan found with ``solver_status`` "work_limit" or "time_limit" and a ``solver_message`` giving the
    nodes, cost and gap, or raises :class:`SolverLimitError` if it had found none (never "infeasible").
    """
    plan_check(plan=plan)
    limits: dict[str, Any] = {"time_limit_s": time_limit_s, "mip_gap": mip_gap, "node_limit": node_limit}
    result = _solve(plan=plan, **limits)
    if not compare:
        return result
    alternatives = (
        _alternative(
            plan,
            "all own",
            replace(plan.supply, reservations=(), on_demand=None, spot=None),
            plan.supply.owned is not None,
            limits,
        ),
        _alternative(
            plan,
            "all rent",
            replace(plan.supply, owned=None),
            bool(plan.supply.reservations or plan.supply.on_demand or plan.supply.spot),
            limits,
        ),
    )
    return replace(result, alternatives=alternatives)


def _alternative(
    plan: CapacityPlan, name: str, supply: Supply, offered: bool, limits: Mapping[str, Any]
) -> Alternative:
    if not offered:
        return Alternative(name=name, total_usd=None, reason="the plan offers no such capacity")
    try:
        solved = _solve(plan=replace(plan, supply=supply), **limits)
        return Alternative(
            name=name, total_usd=solved.total_usd, reason=solved.solver_message, npv_usd=solved.npv_usd
        )
    except SolverLimitError as exc:
        return Alternative(name=name, total_usd=None, reason=exc.message)
    except InfeasibleError as exc:
        # The main solve's advice (offer on-demand, …) does not apply to a comparison that leaves it out.
        return Alternative(name=name, total_usd=None, reason=exc.message.split(": ")[0])


@dataclass
class _Columns:
    """The decision columns of one solve, by what they decide, and each month's steady dispatch."""

    capacity: dict[str, IntArray] = field(default_factory=dict)  # "owned"/"reserved" nodes by month
    buys: IntArray | None = None  # owned nodes arriving each month
    starts: list[tuple[ReservationOption, IntArray]] = field(default_factory=list)  # reservations begun
    x: list[dict[str, IntArray]] = field(default_factory=list)  # each run's node-hours by layer and month
    tiers: list[IntArray] = field(default_factory=list)  # each month's steady node-hours by stack tier
    totals: list[float] = field(default_factory=list)  # each month's steady node-hours
    # The discount factor of each index of the plan's flows (index m + 1: the end of month m), through the
    # end of the longest reservation term begun in the last month: every cost in the objective is weighted
    # by the factor of the index it is paid at, so the objective is the NPV of plan_flows.
    discount: NDArray[np.float64] = field(default_factory=lambda: np.ones(1))


@dataclass
class _Built:
    """One node type's part of a MILP: its plan, steady demand, layers, dispatch and decision columns."""

    plan: CapacityPlan
    weeks: dict[str, NDArray[np.float64]]
    layers: list[_Layer]
    dispatch: _Dispatch
    cols: _Columns

    def result(self, sol: NDArray[np.float64], size: ProblemSize) -> PlanResult:
        return _result(self.plan, self.weeks, self.layers, self.dispatch, self.cols, sol, size)


def _build(model: _Model, plan: CapacityPlan) -> _Built:
    """Add one plan's columns and rows (a node type's supply and the demand it serves) to ``model``."""
    weeks = demand_weeks(plan=plan)
    steady_gpus = sum(weeks.values(), np.zeros((plan.horizon_months, SLOTS_PER_WEEK)))
    steady = steady_gpus / float(plan.gpus_per_node)  # nodes
    supply = plan.supply
    layers = _layers(supply)
    bound = _capacity_bound(plan, steady)
    longest = max((res.term_months for res in supply.reservations), default=0)
    cols = _Columns(
        discount=discount_factors(yearly_rate=plan.discount_rate, periods=plan.horizon_months + longest)
    )
    if supply.owned is not None:
        _owned_columns(model, plan, supply.owned, bound, cols)
    if supply.reservations:
        _reservation_columns(model, plan, bound, cols)
    for r in plan.training:
        cols.x.append(_run_columns(model, plan, r, layers, cols))
    dispatch = _Dispatch.of(layers, supply)
    _monthly_rows(model, plan, dispatch, steady, cols)
    _fixed_cost_column(model, plan, dispatch, cols)
    return _Built(plan, weeks, layers, dispatch, cols)


def _solved(
    model: _Model, limits: Mapping[str, Any], infeasible: Any
) -> tuple[NDArray[np.float64], ProblemSize, str]:
    """Solve ``model``: (solution, size, outcome), the outcome "optimal" or a stop with a solution found.
    Raises SolverLimitError for a stop without one, ``infeasible()`` when HiGHS proves there is none."""
    sol, outcome, message, size = model.solve(**limits)
    if outcome in ("work_limit", "time_limit"):
        if sol is None:
            raise SolverLimitError(_stopped_message(outcome, size, None))
        return sol, size, outcome
    if outcome == "infeasible":
        raise infeasible()
    if sol is None or outcome != "optimal":
        raise EngineError(f"the solver failed: {message}", field="supply")
    return sol, size, outcome


def _stopped(result: PlanResult, outcome: str) -> PlanResult:
    """A result marked with where a stopped solve stopped (unchanged when it is optimal)."""
    if outcome == "optimal":
        return result
    message = _stopped_message(outcome, result.size, result.npv_usd)
    return replace(result, solver_status=outcome, solver_message=message)


def _solve(*, plan: CapacityPlan, time_limit_s: float, mip_gap: float, node_limit: int | None) -> PlanResult:
    model = _Model()
    built = _build(model, plan)
    limits = {"time_limit_s": time_limit_s, "mip_gap": mip_gap, "node_limit": node_limit}
    sol, size, outcome = _solved(model, limits, lambda: _infeasible(plan.supply))
    return _stopped(built.result(sol, size), outcome)


def _owned_columns(model: _Model, plan: CapacityPlan, o: OwnedOption, bound: float, cols: _Columns) -> None:
    """Owned nodes bought each month (integer, from the lead time on) and the fleet they add up to."""
    M = plan.horizon_months
    buy_ub = np.where(np.arange(M) >= o.lead_time_months, bound, 0.0)
    buys = model.variables(M, cost=_buy_npv(o, M, cols.discount), ub=buy_ub, integer=True)
    owned = model.variables(M, cost=0.0)
    cols.buys, cols.capacity["owned"] = buys, owned
    # C_m − C_{m−1} − b_m = 0 (C_{−1} = existing nodes)
    model.constraints(1, [(owned[0], 1.0), (buys[0], -1.0)], lo=o.existing_nodes, hi=o.existing_nodes)
    if M > 1:
        model.constraints(M - 1, [(owned[1:], 1.0), (owned[:-1], -1.0), (buys[1:], -1.0)], lo=0.0, hi=0.0)


def _months_left_npv(months: int, discount: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_{m=a}^{M−1} d_{m+1} for each arrival month a: the NPV of $1 a month from month a to the horizon's
    end (at a zero rate exactly M − a)."""
    return np.asarray(np.cumsum(discount[1 : months + 1][::-1])[::-1], dtype=np.float64)


def _buy_npv(o: OwnedOption, months: int, discount: NDArray[np.float64]) -> NDArray[np.float64]:
    """The NPV of one owned node arriving in month a, for each a, as plan_flows pays it: on the cash basis
    capex · d_a − capex · resale_fraction(age (M − a)/12) · d_M + (F − capital share) · Σ_{m≥a} d_{m+1};
    owning costs given without their capital share, F · Σ_{m≥a} d_{m+1} (owning annualised, at a zero rate
    F · (M − a), the objective before the NPV)."""
    left = _months_left_npv(months, discount)
    if not cash_basis(o):
        return np.asarray(o.fixed_usd_per_node_month * left, dtype=np.float64)
    arrival = np.arange(months)
    resale = np.asarray([resale_fraction(o, age_years=(months - a) / 12.0) for a in arrival])
    capex = o.capex_usd_per_node
    return np.asarray(
        capex * discount[arrival] - capex * resale * discount[months] + monthly_usd_per_node(o) * left,
        dtype=np.float64,
    )


def _reservation_columns(model: _Model, plan: CapacityPlan, bound: float, cols: _Columns) -> None:
    """Reservations begun each month per term (integer, billed whole) and the reserved fleet they hold."""
    M = plan.horizon_months
    reserved = cols.capacity["reserved"] = model.variables(M, cost=0.0)
    for res in plan.supply.reservations:
        cols.starts.append(
            (
                res,
                model.variables(M, cost=_term_npv(res, M, cols.discount), ub=bound, integer=True),
            )
        )
    for m in range(M):
        terms: list[tuple[IntArray | int, float]] = [(int(reserved[m]), 1.0)]
        for res, q in cols.starts:
            held = [(int(q[j]), 1.0) for j in range(max(0, m - res.term_months + 1), m + 1)]
            terms += [(c, -1.0) for c, _ in held]
            if res.cap_nodes is not None:  # the term's quota: at most cap nodes of it held in any month
                model.constraints(1, held, lo=0.0, hi=float(res.cap_nodes))
        model.constraints(1, terms, lo=0.0, hi=0.0)


def _term_npv(res: ReservationOption, months: int, discount: NDArray[np.float64]) -> NDArray[np.float64]:
    """The NPV of one node reserved from month m, for each m: every month of the whole term billed at the end
    of its month, also past the horizon, p · H · Σ_{k=m+1}^{m+T} d_k (at a zero rate p · H · T)."""
    T = res.term_months
    sums = np.asarray([discount[m + 1 : m + T + 1].sum() for m in range(months)])
    return np.asarray(res.usd_per_node_hour * HOURS_PER_MONTH * sums, dtype=np.float64)


def _run_columns(
    model: _Model,
    plan: CapacityPlan,
    r: TrainingRun,
    layers: Sequence[_Layer],
    cols: _Columns,
) -> dict[str, IntArray]:
    """A training run's node-hours on each layer in each month of its window (x[layer]), each paid at the end
    of its month (discounted by its factor), all of its work done and no more than its nodes at once; a run
    that may not be split sits on one layer."""
    H = HOURS_PER_MONTH
    months = np.arange(r.earliest_start_month, r.deadline_month + 1)
    nodes = r.gpus / float(plan.gpus_per_node)
    xr = {
        k.name: model.variables(
            len(months),
            cost=k.usd_per_node_hour * cols.discount[months + 1],
            ub=nodes * H,
            lateness=(months - r.earliest_start_month).astype(float),
        )
        for k in layers
    }
    work = r.gpu_hours / float(plan.gpus_per_node)
    model.constraints(1, [(int(c), 1.0) for k in xr.values() for c in k], lo=work, hi=work)
    model.constraints(len(months), [(k, 1.0) for k in xr.values()], lo=0.0, hi=nodes * H)
    if not r.splittable:
        capped = _capped_bursts(plan.supply)
        too_small = {name for name, b in capped.items() if float(b.cap_nodes or 0.0) < nodes}
        _unsplit_run(model, layers, xr, months, nodes, cols.capacity, too_small)
    return xr


def _unsplit_run(
    model: _Model,
    layers: Sequence[_Layer],
    xr: Mapping[str, IntArray],
    months: NDArray[np.int_],
    nodes: float,
    capacity: Mapping[str, IntArray],
    too_small: set[str],
) -> None:
    """A run that may not be split needs its nodes together: it sits on one layer (y[layer] = 1), and an
    owned or reserved fleet that hosts it holds at least the run's nodes through the run's window. A layer
    capped below the run's node count (``too_small``: spot or on-demand with ``cap_nodes`` < n_r) can never
    hold it, so the run does no work there (y = 0): the cap bounds the nodes obtainable at once, and the run
    needs all of its nodes at once, however many node-hours the cap would allow over the month."""
    H = HOURS_PER_MONTH
    y = model.variables(len(layers), cost=0.0, ub=1.0, integer=True) if len(layers) > 1 else None
    if y is not None:
        model.constraints(1, [(int(c), 1.0) for c in y], lo=1.0, hi=1.0)
    for j, k in enumerate(layers):
        if k.name in too_small:
            model.constraints(len(months), [(xr[k.name], 1.0)], lo=0.0, hi=0.0)
        if y is not None:
            model.constraints(len(months), [(xr[k.name], 1.0), (int(y[j]), -nodes * H)], lo=-np.inf, hi=0.0)
        if k.name in capacity:
            cap = capacity[k.name][months]
            if y is None:
                model.constraints(len(months), [(cap, 1.0)], lo=nodes, hi=np.inf)
            else:
                model.constraints(len(months), [(cap, 1.0), (int(y[j]), -nodes)], lo=0.0, hi=np.inf)


def _training_terms(
    plan: CapacityPlan, x: Sequence[Mapping[str, IntArray]], layer: str, m: int, scale: float = 1.0
) -> list[tuple[IntArray | int, float]]:
    """The training node-hours on ``layer`` in month ``m``, as nodes (÷ H) times ``scale``."""
    terms: list[tuple[IntArray | int, float]] = []
    for r, xr in zip(plan.training, x, strict=True):
        if r.earliest_start_month <= m <= r.deadline_month and layer in xr:
            terms.append((int(xr[layer][m - r.earliest_start_month]), scale / HOURS_PER_MONTH))
    return terms


def _monthly_rows(
    model: _Model, plan: CapacityPlan, dispatch: _Dispatch, steady: NDArray[np.float64], cols: _Columns
) -> None:
    """Each month: training fits inside each limited layer, and the steady demand's dispatch (its tier
    columns and node-hours go to ``cols.tiers`` and ``cols.totals``)."""
    capacity = cols.capacity
    training_terms = functools.partial(_training_terms, plan, cols.x)
    for m in range(plan.horizon_months):
        # Training fits inside each limited layer: C_k − Σ_r x_{r,k,m} / H ≥ 0.
        for layer in dispatch.limits:
            if layer in capacity:
                model.constraints(
                    1, [(int(capacity[layer][m]), 1.0), *training_terms(layer, m, -1.0)], lo=0.0, hi=np.inf
                )
            else:
                model.constraints(
                    1, training_terms(layer, m) or [(0, 0.0)], lo=0.0, hi=dispatch.limits[layer]
                )
        e, total = _dispatch_month(
            model, dispatch, steady[m], capacity, m, training_terms, float(cols.discount[m + 1])
        )
        cols.tiers.append(e)
        cols.totals.append(total)


def _fixed_cost_column(model: _Model, plan: CapacityPlan, dispatch: _Dispatch, cols: _Columns) -> None:
    """The costs that no decision changes (steady demand priced at the top layer, existing owned nodes: opex
    on the cash basis, their capex sunk) enter as one fixed column, discounted as paid, so that the
    objective, and the gap HiGHS proves, is the plan's whole NPV."""
    M, d = plan.horizon_months, cols.discount
    top = dispatch.top.usd_per_node_hour if dispatch.top else 0.0
    constant = float((np.asarray(cols.totals) * top * d[1 : M + 1]).sum())
    owned = plan.supply.owned
    if owned is not None:
        constant += owned.existing_nodes * monthly_usd_per_node(owned) * float(_months_left_npv(M, d)[0])
    model.variables(1, cost=constant, lb=1.0, ub=1.0)


def _infeasible(supply: Supply) -> InfeasibleError:
    return InfeasibleError(
        "no mix of the offered capacity serves the plan"
        + (f" (owned nodes arrive only from month {supply.owned.lead_time_months})" if supply.owned else "")
        + "".join(f" and {name.replace('_', '-')} is capped" for name in _capped_bursts(supply))
        + ": offer on-demand capacity, allow more spot, or move the deadlines",
        field="supply",
    )


@dataclass
class _Costs:
    """The solution's cost by layer and month, with what the result lists beside it."""

    by_month: dict[str, NDArray[np.float64]]  # layer → $ per month
    after_horizon: float = 0.0  # reservation months billed after the horizon
    purchases: list[OwnedPurchase] = field(default_factory=list)
    reservations: list[ReservationStart] = field(default_factory=list)
    billed: list[tuple[int, int, float, int]] = field(default_factory=list)  # (start, nodes, $/month, term)


def _result(
    plan: CapacityPlan,
    weeks: Mapping[str, NDArray[np.float64]],
    layers: Sequence[_Layer],
    dispatch: _Dispatch,
    cols: _Columns,
    sol: NDArray[np.float64],
    size: ProblemSize,
) -> PlanResult:
    M, H = plan.horizon_months, HOURS_PER_MONTH
    supply = plan.supply
    used = _steady_use(plan, layers, dispatch, cols, sol)
    runs, train_by_month = _run_schedules(plan, cols.x, sol, used)
    fleet = {
        name: np.rint(sol[cols.capacity[name]]).astype(int)
        if name in cols.capacity
        else np.zeros(M, dtype=int)
        for name in ("owned", "reserved")
    }
    costs = _costs(plan, layers, cols, sol, used, fleet["owned"])
    cost = costs.by_month
    burst_hours = {
        name: used[name] / opt.goodput if name in used and opt is not None else np.zeros(M)
        for name, opt in (("on_demand", supply.on_demand), ("spot", supply.spot))
    }
    by_layer = {name: float(cost[name].sum()) for name in LAYERS}
    by_layer["reserved_after_horizon"] = costs.after_horizon
    owned_hours = float(fleet["owned"].sum()) * H
    flows = plan_flows(
        months=M,
        owned=supply.owned,
        owned_nodes=fleet["owned"],
        owned_hours_used=used["owned"] if "owned" in used else np.zeros(M),
        purchases=costs.purchases,
        reservations=costs.billed,
        burst_usd=cost["on_demand"] + cost["spot"],
    )
    npv = flows_npv(flows, discount_rate=plan.discount_rate)
    cash = (tuple(float(x) for x in flows), npv) if cash_basis(supply.owned) else None
    return PlanResult(
        cash_flows_usd=None if cash is None else cash[0],
        cash_npv_usd=None if cash is None else cash[1],
        capex_usd=float(sum(p.capex_usd for p in costs.purchases)),
        total_usd=float(sum(by_layer.values())),
        npv_usd=npv,
        cost_by_layer_usd=by_layer,
        owned_purchases=tuple(costs.purchases),
        reservations=tuple(costs.reservations),
        on_demand_node_hours=float(burst_hours["on_demand"].sum()),
        spot_node_hours=float(burst_hours["spot"].sum()),
        owned_utilization=(float(used["owned"].sum()) / owned_hours) if owned_hours > 0 else None,
        months=_month_rows(plan, weeks, train_by_month, fleet, used, burst_hours, cost),
        runs=tuple(runs),
        demand_mean_gpus_by_workload=_demand_by_workload(plan, weeks, runs),
        alternatives=(),
        size=size,
        notes=_notes(plan, cash, costs.after_horizon),
        inference_sizing={inf.name: inf.sizing for inf in plan.inference if inf.sizing is not None},
    )


def _demand_by_workload(
    plan: CapacityPlan, weeks: Mapping[str, NDArray[np.float64]], runs: Sequence[RunSchedule]
) -> dict[str, tuple[float, ...]]:
    """Each workload's mean GPUs by month: steady ones from their weeks, training runs from their schedule."""
    gpn = float(plan.gpus_per_node)
    return {
        **{name: tuple(float(v) for v in week.mean(axis=1)) for name, week in weeks.items()},
        **{
            r.name: tuple(float(v) for v in np.asarray(run.node_hours_by_month) / HOURS_PER_MONTH * gpn)
            for r, run in zip(plan.training, runs, strict=True)
        },
    }


def _steady_use(
    plan: CapacityPlan,
    layers: Sequence[_Layer],
    dispatch: _Dispatch,
    cols: _Columns,
    sol: NDArray[np.float64],
) -> dict[str, NDArray[np.float64]]:
    """Node-hours of steady demand served per layer and month (training is added by _run_schedules)."""
    used = {k.name: np.zeros(plan.horizon_months) for k in layers}
    for m in range(plan.horizon_months):
        tiers = cols.tiers[m]
        served = np.diff(np.concatenate([[0.0], sol[tiers]]))
        for layer, hours in zip(dispatch.stack, served, strict=True):
            used[layer.name][m] += max(0.0, float(hours))
        if dispatch.top is not None:
            below = float(sol[tiers[-1]]) if len(tiers) else 0.0
            used[dispatch.top.name][m] += max(0.0, cols.totals[m] - below)
    return used


def _run_schedules(
    plan: CapacityPlan,
    x: Sequence[Mapping[str, IntArray]],
    sol: NDArray[np.float64],
    used: dict[str, NDArray[np.float64]],
) -> tuple[list[RunSchedule], NDArray[np.float64]]:
    """Each run's schedule, and the training node-hours by month; adds each run's node-hours to ``used``."""
    train_by_month = np.zeros(plan.horizon_months)
    runs: list[RunSchedule] = []
    for r, xr in zip(plan.training, x, strict=True):
        by_month = np.zeros(plan.horizon_months)
        by_layer: dict[str, float] = {}
        for name, cols in xr.items():
            hours = np.clip(sol[cols], 0.0, None)
            used[name][r.earliest_start_month : r.deadline_month + 1] += hours
            by_month[r.earliest_start_month : r.deadline_month + 1] += hours
            if hours.sum() > 1e-6:
                by_layer[name] = float(hours.sum())
        train_by_month += by_month
        done = np.nonzero(by_month > 1e-6)[0]
        finish = int(done.max()) if done.size else r.earliest_start_month
        runs.append(
            RunSchedule(
                name=r.name,
                node_hours_by_layer=by_layer,
                node_hours_by_month=tuple(float(v) for v in by_month),
                finish_month=finish,
                deadline_month=r.deadline_month,
                slack_months=r.deadline_month - finish,
            )
        )
    return runs, train_by_month


def _costs(
    plan: CapacityPlan,
    layers: Sequence[_Layer],
    cols: _Columns,
    sol: NDArray[np.float64],
    used: Mapping[str, NDArray[np.float64]],
    owned_nodes: NDArray[np.int_],
) -> _Costs:
    """Each layer's cost by month, undiscounted, as plan_flows pays it: owned opex (or, without a capital
    share, the fixed cost) and energy, on the cash basis each purchase's capex in its arrival month and its
    resale credited in the last month; reservations over whole terms; burst by use."""
    M = plan.horizon_months
    costs = _Costs(by_month={name: np.zeros(M) for name in LAYERS})
    o = plan.supply.owned
    if o is not None and cols.buys is not None:
        cash = cash_basis(o)
        costs.by_month["owned"] = (
            owned_nodes * monthly_usd_per_node(o) + used["owned"] * o.usd_per_node_hour_used
        )
        for a, n in enumerate(np.rint(sol[cols.buys]).astype(int)):
            if n > 0:
                purchase = OwnedPurchase(a, a - o.lead_time_months, int(n), float(n * o.capex_usd_per_node))
                costs.purchases.append(purchase)
                if cash:
                    costs.by_month["owned"][a] += purchase.capex_usd
                    age = (M - a) / 12.0
                    costs.by_month["owned"][M - 1] -= purchase.capex_usd * resale_fraction(o, age_years=age)
    for res, q in cols.starts:
        for m, n in enumerate(np.rint(sol[q]).astype(int)):
            if n > 0:
                _bill_reservation(costs, res, m, int(n), M)
    rate = {k.name: k.usd_per_node_hour for k in layers}
    for name in ("on_demand", "spot"):
        if name in used:
            costs.by_month[name] = used[name] * rate[name]
    return costs


def _bill_reservation(costs: _Costs, res: ReservationOption, m: int, n: int, M: int) -> None:
    """``n`` nodes reserved from month ``m`` for the whole term: months past the horizon are counted too."""
    monthly = n * res.usd_per_node_hour * HOURS_PER_MONTH
    end = m + res.term_months
    costs.by_month["reserved"][m : min(end, M)] += monthly
    costs.after_horizon += monthly * max(0, end - M)
    costs.billed.append((m, n, float(monthly), res.term_months))
    costs.reservations.append(ReservationStart(res.term_months, m, n, float(monthly * res.term_months)))


def _month_rows(
    plan: CapacityPlan,
    weeks: Mapping[str, NDArray[np.float64]],
    train_by_month: NDArray[np.float64],
    fleet: Mapping[str, NDArray[np.int_]],
    used: Mapping[str, NDArray[np.float64]],
    burst_hours: Mapping[str, NDArray[np.float64]],
    cost: Mapping[str, NDArray[np.float64]],
) -> tuple[MonthRow, ...]:
    M, H = plan.horizon_months, HOURS_PER_MONTH
    steady_gpus = sum(weeks.values(), np.zeros((M, SLOTS_PER_WEEK)))
    training_gpus = train_by_month / H * float(plan.gpus_per_node)
    owned_nodes, reserved_nodes = fleet["owned"], fleet["reserved"]
    months: list[MonthRow] = []
    for m in range(M):
        owned_use = float(used["owned"][m]) if "owned" in used else 0.0
        months.append(
            MonthRow(
                month=m,
                demand_mean_gpus=float(steady_gpus[m].mean() + training_gpus[m]),
                demand_peak_gpus=float(steady_gpus[m].max() + training_gpus[m]),
                training_gpus=float(training_gpus[m]),
                owned_nodes=int(owned_nodes[m]),
                reserved_nodes=int(reserved_nodes[m]),
                on_demand_node_hours=float(burst_hours["on_demand"][m]),
                spot_node_hours=float(burst_hours["spot"][m]),
                owned_utilization=owned_use / float(owned_nodes[m] * H) if owned_nodes[m] > 0 else None,
                cost_usd={name: float(cost[name][m]) for name in LAYERS},
            )
        )
    return tuple(months)


def _notes(
    plan: CapacityPlan, cash: tuple[tuple[float, ...], float] | None, after_horizon: float
) -> tuple[str, ...]:
    """What a reader of the result needs to know about how it was computed."""
    supply = plan.supply
    notes = [
        REPRESENTATIVE_WEEK,
        f"Objective: the NPV of the plan's monthly cash flows at {plan.discount_rate:.2%} a year, discounted"
        " monthly at (1 + r)^(1/12) − 1 as the design's cash flows are (each month's bills at its end,"
        " capex at delivery); the cash out undiscounted is the same flows summed.",
    ]
    if cash is None:
        notes.append(
            "No cash view: the owned option's fixed cost was given without its capital share"
            " (capital_usd_per_node_month, depreciation_years, residual_fraction), so the NPV pays owning"
            " as that fixed cost per node-month (owning annualised); price owned nodes from a design to have"
            " one."
        )
    else:
        owned = supply.owned
        resale = (
            f"resale at the end at the market value of {owned.resale_source or 'the given series'} at each"
            " purchase's age (the straight-line book value where the series does not reach that age)"
            if owned is not None and owned.resale_points
            else "resale at the straight-line book value at the end (no residual-value series given)"
        )
        notes.append(
            f"Cash view: capex when each purchase is delivered, opex monthly, {resale}; NPV ${cash[1]:,.0f}"
            f" at {plan.discount_rate:.2%}, the objective the mix was chosen on."
        )
    if after_horizon > 0:
        notes.append(
            f"Reservations bill their whole term: ${after_horizon:,.0f} of it falls after the horizon"
            " and is counted."
        )
    if supply.spot is not None:
        notes.append(
            f"Spot goodput {supply.spot.goodput:.4f}: {supply.spot.goodput_source or 'given with the plan'};"
            " spot costs its price ÷ goodput per node-hour of useful work."
        )
    if supply.owned is not None and cash is not None:
        notes.append(
            "Owned nodes pay their capex on arrival, then opex (colocation, maintenance, staff, idle power)"
            " each month to the end of the horizon plus energy per node-hour used, and are sold at the end."
        )
    elif supply.owned is not None:
        notes.append(
            "Owned nodes cost a fixed amount per node-month from arrival to the end of the horizon (capital "
            "recovery, colocation, maintenance, staff, idle power) plus energy per node-hour used; capex is "
            "listed with each purchase."
        )
    return tuple(notes)
