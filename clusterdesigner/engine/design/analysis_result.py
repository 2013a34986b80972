"""The rows an analysis stores: a sweep's (and a recommendation's) row per (accelerator, nodes, model,
pricing model), and a comparison's row per design. Each is written by ``to_json()`` as the JSON object the
analysis has always stored (same keys, same order) and read back by ``from_json()``, so pages, charts and
the analyses read attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.json_object import JsonObject, omit, written_with
from clusterdesigner.engine.core.offerings import Freshness
from clusterdesigner.engine.cost.defaults import FABRIC, GPUS_PER_NODE, OVERSUBSCRIPTION, OWN, STORAGE
from clusterdesigner.engine.training.user_calibration import CalibrationState, CalibrationStatement


@dataclass(frozen=True)
class SweepRow(JsonObject):
    """One pricing model of one sweep point. A point that does not fit, or cannot be priced, holds only its
    key figures, ``fits`` and ``error``; a priced one holds its figures (``offering``, ``cost_usd`` and
    ``usd_per_gpu_hour`` null where there is none) and ``error`` only when the pricing model has no price.
    ``gpus`` and ``layout`` are in every row written since they were added (older stored rows lack them)."""

    accelerator: str
    nodes: int
    gpus: int | None = omit()
    model: str | None = None
    pricing_model: str = ""
    fits: bool = False
    offering: str | None = written_with("mfu")
    days: float | None = written_with("mfu")
    cost_usd: float | None = written_with("mfu")
    usd_per_gpu_hour: float | None = written_with("mfu")
    mfu: float | None = omit()
    layout: Mapping[str, Any] | None = omit()
    params_b: float | None = omit()
    error: str | None = omit()
    # What choosing the row signs up for beyond one run: owning's capex, a term's commitment and its months.
    capex_usd: float | None = omit()
    commitment_usd: float | None = omit()
    commitment_term_months: int | None = omit()
    start_delay_days: float | None = omit()  # owning: the lead time before the run can start
    # The option's NPV of its monthly cash flows over the cost horizon: the rent-or-own verdict's basis,
    # beside ``cost_usd`` (one run, undiscounted); None without cash flows (no rent option priced).
    npv_usd: float | None = omit()

    @property
    def priced(self) -> bool:
        """Whether the row fits and has a run cost (a point the Pareto chart can show)."""
        return self.fits and self.cost_usd is not None


@dataclass(frozen=True)
class CompareRow(JsonObject):
    """One design of a comparison: its figures (``days`` expected, with failures and restarts;
    ``days_failure_free`` without), or ``error`` when it does not evaluate."""

    design: int
    name: str
    version: int
    error: str | None = omit()
    accelerator: str | None = omit()
    nodes: int | None = omit()
    gpus: int | None = omit()
    fits: bool | None = omit()
    days: float | None = written_with("fits")
    days_failure_free: float | None = omit()
    mfu: float | None = omit()
    best_option: str | None = written_with("fits")
    best_run_cost_usd: float | None = written_with("fits")
    # The NPV over the horizon of the best option's monthly cash flows (the verdict's basis); absent in a
    # comparison stored before it, or for a design with no rent-or-own verdict.
    best_npv_usd: float | None = omit()
    options: tuple[Mapping[str, Any], ...] | None = omit()
    # Whose calibration the design's estimate was made with and whether it applied (issue 40); absent in a
    # comparison stored before it.
    calibration: CalibrationStatement | None = omit()


@dataclass(frozen=True)
class AnalysisSnapshot(JsonObject):
    """What an analysis was planned with, as stored: its ``params``, the ``catalog`` records, the price
    ``freshness`` (older snapshots have none: no stale findings), a sweep's ``models`` (key → model spec) and
    the offering each accelerator's pricing models are priced on (``offerings_by_model``; a sweep stored
    before per-model offerings named one offering per accelerator, ``offerings``)."""

    params: Mapping[str, Any]
    catalog: Mapping[str, Any]
    models: Mapping[str, Any] | None = omit()
    offerings_by_model: Mapping[str, Mapping[str, str]] | None = omit()
    offerings: Mapping[str, str] | None = omit()
    freshness: Freshness | None = omit()
    # The calibration a sweep's (or recommendation's) estimates are made with: the requester's own (issue 40);
    # absent in a snapshot stored before it (the published calibration).
    calibration: CalibrationState | None = omit()
    # Per accelerator, the prices the owner's price book set (apps.designs.pricing.OfferingPrices as JSON);
    # snapshots from before the price book have none (the catalog's prices).
    prices: Mapping[str, Any] | None = omit()
    # The saved site a sweep's owning rows are priced at (engine.cost.site's object, with its id); none: no
    # site.
    site: Mapping[str, Any] | None = omit()

    def priced_on(self, accelerator: str, models: Sequence[str]) -> dict[str, str | None]:
        """The offering each of ``models`` (pricing models, owning excluded) of ``accelerator`` is priced on;
        None where no offering has that model's price."""
        if self.offerings_by_model is not None:
            by_model = self.offerings_by_model.get(accelerator, {})
            return {m: by_model.get(m) for m in models if m != OWN}
        one = (self.offerings or {}).get(accelerator)
        return {m: one for m in models if m != OWN}


@dataclass(frozen=True)
class SweepParams(JsonObject):
    """The figures of a sweep's (or a recommendation's) params that every point is estimated with; one left
    out takes the engines' default (``cost_overrides`` names those the cost engine is given)."""

    training: Mapping[str, Any]
    gpus_per_node: int | None = omit()
    fabric: str | None = omit()
    oversubscription: float | None = omit()
    storage: str | None = omit()
    horizon_years: float | None = omit()
    utilization: float | None = omit()
    on_prem: Mapping[str, Any] | None = omit()

    def cluster(self, accelerator: str, nodes: int) -> dict[str, Any]:
        """The training request's cluster of one sweep point."""
        return {
            "accelerator": accelerator,
            "gpus_per_node": int(_or(self.gpus_per_node, GPUS_PER_NODE.value)),
            "nodes": int(nodes),
            "fabric": _or(self.fabric, FABRIC.value),
            "oversubscription": _or(self.oversubscription, OVERSUBSCRIPTION.value),
        }

    @property
    def storage_or_default(self) -> str:
        return str(_or(self.storage, STORAGE.value))

    def cost_overrides(self) -> dict[str, Any]:
        """The cost request's ``horizon_years``, ``utilization`` and ``on_prem`` the params set."""
        given = {
            "horizon_years": self.horizon_years,
            "utilization": self.utilization,
            "on_prem": self.on_prem,
        }
        return {k: v for k, v in given.items() if v is not None}


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value
