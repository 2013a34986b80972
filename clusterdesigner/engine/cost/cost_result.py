"""What the cost engine returns: frozen dataclasses whose ``to_json()`` is the dict ``cost.tco()`` has always
given (and every stored evaluation holds under ``costs.<offering>``), and whose ``from_json()`` reads that
JSON back. Pages, exports and analyses read attributes of these instead of ``.get()`` chains.

Money is in USD, utilization a fraction in (0, 1], times in days, hours, minutes or seconds as the names
say. How each figure is computed is documented where it is computed (``cost._evaluate_*``, ``tco.py``,
``cashflow.py``, ``docs/cost-engine.md``).

A key that the engine writes only in some cases (a note, a warning, a reservation's break-even with
on-demand) is a field defaulting to None with ``_omit``: None is written as no key, and no key reads as
None. A field with ``_with`` ("written with <field>") is written, null or not, whenever that field is set.
A field with ``since(n)`` is one results stored before ENGINE_VERSION n lack (engine.core.json_object).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.json_object import JsonObject, since
from clusterdesigner.engine.core.json_object import omit as _omit
from clusterdesigner.engine.core.json_object import written_with as _with
from clusterdesigner.engine.cost.cashflow import CashflowInputs, Commitment, Uncertainty
from clusterdesigner.engine.cost.network import Topology
from clusterdesigner.engine.cost.verdict import RentOrOwn


@dataclass(frozen=True, kw_only=True)
class Line(JsonObject):
    """One figure and the formula that gives it, in words and numbers."""

    usd: float
    formula: str


@dataclass(frozen=True, kw_only=True)
class LinearCost(JsonObject):
    """Cost over the horizon as a line in utilization u: fixed_usd + per_utilization_usd · u."""

    fixed_usd: float
    per_utilization_usd: float


@dataclass(frozen=True, kw_only=True)
class CloudOption(JsonObject):
    """One pricing model's bill over the horizon (``tco.cloud_cost``). A savings plan adds the commitment
    that covers the cluster (nodes × the plan's rate, $/hour, for every hour of each term) and its formula;
    a reservation or savings plan, when on-demand is priced too, the utilization above which it costs less
    than on-demand."""

    usd_per_node_hour: float
    total_usd: float
    total_formula: str
    parts: Mapping[str, Line]
    usd_per_gpu_hour: float
    usd_per_gpu_hour_formula: str
    billed_node_hours: float
    cost_vs_utilization: LinearCost
    commitment_usd_per_hour: float | None = _omit()
    commitment_formula: str | None = _omit()
    break_even_vs_on_demand_utilization: float | None = _omit()
    break_even_vs_on_demand_formula: str | None = _omit()


@dataclass(frozen=True, kw_only=True)
class YearRow(JsonObject):
    """One year of owning (``tco.YearRow``); the last year of a fractional horizon is partial."""

    year: int
    fraction: float
    cash_usd: float
    accounting_usd: float
    annualized_usd: float
    opex_usd: float


@dataclass(frozen=True, kw_only=True)
class OnPrem(JsonObject):
    """Owning over the horizon (``tco.on_prem_cost``): capex, a year's costs by part at the utilization,
    the annualised total compared with renting, NPV and $ per GPU-hour used."""

    capex_usd: float
    capex_parts: Mapping[str, Line]
    annual_usd: float
    annual: Mapping[str, Line]
    years: tuple[YearRow, ...]
    total_usd: float
    total_formula: str
    cash_total_usd: float
    accounting_total_usd: float
    npv_usd: float
    npv_formula: str
    usd_per_gpu_hour: float
    usd_per_gpu_hour_formula: str
    it_power_kw: float
    cost_vs_utilization: LinearCost


@dataclass(frozen=True, kw_only=True)
class BreakEven(JsonObject):
    """The utilization in (0, 1] at which owning and one rent option cost the same NPV of their monthly cash
    flows (cashflow.break_even_utilization, the one solver); None when one side is cheaper at every
    utilization in (0, 1], as ``meaning`` says. A result stored before ``basis`` was written holds the
    annualised closed form u* = (A − C)/(c − B) instead, which could lie outside (0, 1]."""

    utilization: float | None
    meaning: str
    formula: str
    basis: str | None = _omit()


@dataclass(frozen=True, kw_only=True)
class Curves:
    """Cost at 20 utilizations: owning and each priced model (``<model>_usd`` in JSON), on ``basis``: the NPV
    of the monthly cash flows, the verdict's (None in a result stored before it, or without a rent option:
    the cost over the horizon, owning's annualised)."""

    utilization: tuple[float, ...]
    on_prem_usd: tuple[float, ...]
    rent_usd: Mapping[str, tuple[float, ...]]
    basis: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "utilization": list(self.utilization),
            "on_prem_usd": list(self.on_prem_usd),
            **{f"{model}_usd": list(ys) for model, ys in self.rent_usd.items()},
            **({} if self.basis is None else {"basis": self.basis}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Curves:
        rent = {
            key.removesuffix("_usd"): tuple(ys)
            for key, ys in data.items()
            if key.endswith("_usd") and key != "on_prem_usd"
        }
        return cls(
            utilization=tuple(data["utilization"]),
            on_prem_usd=tuple(data["on_prem_usd"]),
            rent_usd=rent,
            basis=data.get("basis"),
        )

    def series(self) -> dict[str, tuple[float, ...]]:
        """Every cost series by option key (``on_prem`` and the pricing models)."""
        return {"on_prem": self.on_prem_usd, **self.rent_usd}


@dataclass(frozen=True, kw_only=True)
class RunCost(JsonObject):
    """One run's cost with one option, in its frame: owning adds the whole-horizon figure and what it
    assumes; a reservation its whole commitment and the share of it the run uses."""

    usd: float
    formula: str
    # The run's cost at the ends of the training estimate's error band (cost._per_run_band).
    usd_low: float | None = _omit()
    usd_high: float | None = _omit()
    assumption: str | None = _omit()
    horizon_usd: float | None = _omit()
    commitment_usd: float | None = _omit()
    share_of_commitment: float | None = _omit()
    commitment_term_months: int | None = _omit()
    commitment_per_term_usd: float | None = _omit()
    start_delay_days: float | None = _omit()  # owning: the procurement lead time before the run can start


@dataclass(frozen=True, kw_only=True)
class PerRun(JsonObject):
    """Days of the run with failures and restarts and its cost per option. Without run days (no training
    estimate, days or GPU-hours) only ``source`` is set; when no option can finish, ``cannot_finish`` says
    why."""

    source: str | None
    warning: str | None = _omit()
    days: float | None = _omit()
    cannot_finish: str | None = _omit()
    effective_days: float | None = _omit()
    spot_effective_days: float | None = _with("effective_days")
    days_formula: str | None = _omit()
    effective_days_formula: str | None = _omit()
    usd: Mapping[str, RunCost] | None = _omit()
    # The ends of the training estimate's error band (cost._per_run_band), when the days are its.
    days_low: float | None = _omit()
    days_high: float | None = _omit()
    effective_days_low: float | None = _omit()
    effective_days_high: float | None = _omit()
    spot_effective_days_low: float | None = _omit()
    spot_effective_days_high: float | None = _omit()


@dataclass(frozen=True, kw_only=True)
class Network(JsonObject):
    """The scale-out network: the chosen topology and both candidates, capex by part, power. One node has
    no scale-out network: only topology "none", zero capex and power, and a note."""

    topology: str
    chosen: Topology | None = _omit()
    fat_tree: Topology | None = _with("chosen")
    dragonfly_plus: Topology | None = _with("chosen")
    rail_only: Topology | None = _omit()  # when cluster.topology is rail_only and it can be built
    endpoints: int | None = _omit()
    nic_gbps: float | None = _omit()
    switch: str | None = _omit()
    switch_radix: int | None = _omit()
    oversubscription: float | None = _omit()
    rail_optimized: bool | None = _omit()
    bisection_gbps: float | None = _omit()
    capex_parts: Mapping[str, Line] | None = _omit()
    capex_usd: float
    power_kw: float
    power_formula: str | None = _omit()
    # The switches, cables and transceivers counted, when the capex is a quote's lump sum or in the server.
    counted_capex_usd: float | None = _omit()
    note: str | None = _omit()
    warning: str | None = _omit()
    share_of_capex: float


@dataclass(frozen=True, kw_only=True)
class TierTiming(JsonObject):
    """A storage tier's checkpoint save and dataset read at this cluster's size (``storage.TierTiming``)."""

    slug: str
    name: str
    kind: str
    write_gbps: float
    read_gbps: float
    blocking_save_s: float
    async_blocking_s: float | None
    async_upload_s: float | None
    read_needed_gbps: float | None
    read_ok: bool | None


@dataclass(frozen=True, kw_only=True)
class Storage(JsonObject):
    """Checkpoint size, capacity, save time on every tier, dataset bandwidth; owning's capex and the cloud's
    bill for the capacity."""

    tier: str | None
    checkpoint_gb: float
    checkpoint_formula: str
    capacity_tb: float
    capacity_formula: str
    checkpoint_write_s: float
    capacity_tib: float
    capacity_for_target_write_tib: float | None = _omit()
    capacity_for_target_write_formula: str | None = _omit()
    async_checkpoint: bool
    dataset_read_needed_gbps: float | None
    tiers: Mapping[str, TierTiming]
    on_prem_capex: Line
    cloud_cost: Line


@dataclass(frozen=True, kw_only=True)
class FailureFigures(JsonObject):
    """Young's (1974) first-order model for one option: interruptions, checkpoint interval, goodput, days
    with failures. A figure that is infinite (no interruption) is null."""

    interruptions_per_day: float
    mtbi_hours: float | None
    optimal_interval_minutes: float | None
    interval_minutes: float | None
    goodput: float
    run_days: float | None
    effective_days: float | None
    expected_interruptions: float | None
    lost_days: float | None


@dataclass(frozen=True, kw_only=True)
class Failures(JsonObject):
    """Hardware failures, which every option shares, and spot with preemptions on top; spot buys
    ``spot_hours_factor`` hours per hour of progress (null when an option cannot finish)."""

    on_prem_and_reserved: FailureFigures
    spot: FailureFigures
    spot_hours_factor: float | None
    model: str


@dataclass(frozen=True, kw_only=True)
class Offering(JsonObject):
    """The cloud offering priced, and the date of each pricing model's price."""

    slug: str
    provider: str
    instance_type: str
    region: str
    price_as_of: Mapping[str, str]


@dataclass(frozen=True, kw_only=True)
class RankedOption(JsonObject):
    option: str
    total_usd: float


@dataclass(frozen=True, kw_only=True)
class Ranking(JsonObject):
    """Owning and every priced model cheapest first in one ``frame``: the NPV of the monthly cash flows (the
    verdict's basis; a result stored before it: "whole horizon", owning's annualised total and each bill)."""

    frame: str
    options: tuple[RankedOption, ...]


@dataclass(frozen=True, kw_only=True)
class OptionFlows(JsonObject):
    """One option's costs at the end of each month (index 0: the start), NPV, undiscounted total, yearly
    sums (``cashflow.OptionFlows``); a rent option adds its label."""

    name: str
    monthly_usd: tuple[float, ...]
    npv_usd: float
    total_usd: float
    yearly_usd: tuple[float, ...]
    label: str | None = _omit()


@dataclass(frozen=True, kw_only=True)
class ResaleAtHorizon(JsonObject):
    """What owned hardware fetches at the horizon: the fraction of capex, its dollars, its basis (market: the
    catalog series at the owned age; request; book_value: the fallback), the age, the series' date, source."""

    fraction: float
    usd: float
    basis: str
    age_years: float
    as_of: str | None
    source: str


@dataclass(frozen=True, kw_only=True)
class Cashflow(JsonObject):
    """Monthly cash flows of owning and each rent option, NPV difference against the cheapest rent option
    (rent − own; > 0: owning costs less), payback and IRR; or, with no rent option priced, only a note."""

    note: str | None = _omit()
    own: OptionFlows | None = _omit()
    rent: tuple[OptionFlows, ...] | None = _omit()
    reference: str | None = _omit()
    npv_difference_usd: float | None = _omit()
    payback_month: int | None = _with("own")
    irr_per_year: float | None = _with("own")
    loan_payment_usd: float | None = _with("own")
    break_even_utilization: Mapping[str, float | None] | None = _omit()
    commitments: tuple[Commitment, ...] | None = _omit()
    resale: ResaleAtHorizon | None = _omit()
    inputs: CashflowInputs | None = _omit()
    uncertainty: Uncertainty | None = _omit()
    convention: str | None = _omit()


@dataclass(frozen=True, kw_only=True)
class SensitivityRow(JsonObject):
    """One input at ± the fraction: own − rent in USD and the break-even at each end (``sensitivity``)."""

    name: str
    base: float
    low: float
    high: float
    own_minus_rent_low_usd: float
    own_minus_rent_high_usd: float
    swing_usd: float
    break_even_low: float | None
    break_even_high: float | None
    break_even_swing: float | None


@dataclass(frozen=True, kw_only=True)
class Sensitivity(JsonObject):
    """The tornado against the cheapest pricing model at the utilization (none when nothing is priced)."""

    pricing_model: str | None
    fraction: float
    basis: str | None = _omit()  # what own − rent measures (since engine 12: the NPV of the cash flows)
    rows: tuple[SensitivityRow, ...]
    base_own_minus_rent_usd: float | None = _with("pricing_model")
    base_break_even: float | None = _with("pricing_model")
    not_comparable: tuple[str, ...] | None = _omit()


@dataclass(frozen=True, kw_only=True)
class Finding(JsonObject):
    code: str
    severity: str
    message: str
    source: str


@dataclass(frozen=True, kw_only=True)
class CostAssumption(JsonObject):
    """An input the result used, with its unit and source; a catalog price adds its date."""

    name: str
    value: Any
    unit: str
    source: str
    as_of: str | None = _omit()


@dataclass(frozen=True, kw_only=True)
class CostResult(JsonObject):
    """The cost engine's response for one cloud offering (or owning only): owning, each priced model, the
    break-evens, cost curves, one run's cost, network, storage, failures, cash flows and the verdict."""

    on_prem: OnPrem
    cloud: Mapping[str, CloudOption]
    cloud_unavailable: Mapping[str, str] = since(1, factory=dict)
    break_even_utilization: Mapping[str, BreakEven]
    curves: Curves
    per_run: PerRun
    network: Network
    storage: Storage
    failures: Failures
    cloud_note: str | None = _omit()
    offering: Offering | None
    ranking: Ranking | None = since(2)
    cashflow: Cashflow | None = since(2)
    verdict: RentOrOwn | None = since(2)  # its JSON adds the sentence composed from its numbers
    sensitivity: Sensitivity
    findings: tuple[Finding, ...]
    assumptions: tuple[CostAssumption, ...]

    def npv_of(self, model: str) -> float | None:
        """The NPV of ``model``'s monthly cash flows over the horizon (``own``/``on_prem``: owning's), the
        rent-or-own verdict's basis; None without cash flows (no rent option priced) or that option."""
        flows = self.cashflow
        if flows is None or flows.own is None:
            return None
        if model in ("own", "on_prem"):
            return flows.own.npv_usd
        return next((r.npv_usd for r in flows.rent or () if r.name == model), None)


@dataclass(frozen=True, kw_only=True)
class DesignOption(JsonObject):
    """One row of a design evaluation's options table (owning, or an offering's pricing model), built from
    the cost results: its cost over the horizon, per GPU-hour, per run and expected days; the break-even
    utilization with owning when it lies in (0, 1]."""

    key: str  # "own" or "<offering>:<pricing model>"
    label: str
    kind: str  # own | cloud
    offering: str | None
    pricing_model: str | None
    total_usd: float
    usd_per_gpu_hour: float
    run_cost_usd: float | None
    days: float | None
    break_even_utilization: float | None
    break_even_meaning: str | None = _omit()
    # The run's cost and expected days at the ends of the training estimate's error band (PerRun, RunCost).
    run_cost_usd_low: float | None = _omit()
    run_cost_usd_high: float | None = _omit()
    days_low: float | None = _omit()
    days_high: float | None = _omit()
