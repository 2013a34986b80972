"""The bounds of every number a cost input may take, written once: the design spec's parser
(engine/design/spec.py), the cost engine (engine/cost/cost_request.py) and the serving engine's cost section
read this table, so that a value the spec accepts is never refused by an engine (issue 14, "one design spec").

Each bound is a rule (its lower end: "pos" > 0, "nonneg" ≥ 0, "frac" [0, 1), "util" and "share" (0, 1],
"ge1" ≥ 1, "int" whole ≥ 1, "count" whole ≥ 0, "change" > −1, a yearly change) and a largest value. The
largest values are far above any real cluster but low enough that no sum or product the engine forms can
overflow to inf or NaN (a server at 1e308 USD would), so every figure of a result is finite.

Where the spec's parser and the cost engine disagreed, the spec's bound is kept: it is what the API has always
promised at save and for sweeps, so no stored design or sweep falls outside it, and each is generous:
a horizon of at most 20 years (longer than any accelerator's service life; the engine allowed 50); at most
100,000 nodes (800,000 GPUs of 8, above any cluster built; the engine allowed 1e6); at most 72 GPUs a node
(a GB200 NVL72 rack, the largest NVLink domain in the catalog; the engine allowed 1,024); egress up to 1e7 TB
(10 EB; the engine allowed 1e9); a managed-service overhead up to 5, i.e. 500 % (the cost and serving engines
allowed 10). A design's spec keeps two floors of its own, a horizon of at least 0.1 years and a utilization
of at least 0.01: the serving engine prices the utilization its demand implies, which may be far lower (a
millionth), and a horizon of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from clusterdesigner.engine.core.offerings import PRICING_MODELS

# The least value each rule accepts, where it accepts one (pos, frac, util, share, change have open ends).
_FLOORS: Mapping[str, float] = {"nonneg": 0, "frac": 0, "ge1": 1, "int": 1, "count": 0}


@dataclass(frozen=True)
class Bound:
    """How one numeric input is bounded: ``rule`` (its lower end and whether it is whole) and ``high`` (its
    largest value)."""

    rule: str
    high: float

    @property
    def floor(self) -> float | None:
        """The least value accepted, or None where the lower end is open (a price must be more than 0)."""
        return _FLOORS.get(self.rule)


COST: Mapping[str, Bound] = MappingProxyType(
    {
        "horizon_years": Bound("pos", 20),
        "utilization": Bound("util", 1.0),
        "cluster.gpus_per_node": Bound("int", 72),  # a GB200 NVL72 rack as one node
        "cluster.nodes": Bound("int", 100_000),
        "cluster.nics_per_node": Bound("int", 1_024),
        "cluster.nics_per_tray": Bound("int", 1_024),
        "cluster.oversubscription": Bound("ge1", 64.0),
        "on_prem.server_usd": Bound("nonneg", 1e8),  # per node: a GB200 NVL72 rack is a few million
        "on_prem.depreciation_years": Bound("pos", 50),
        "on_prem.discount_rate": Bound("nonneg", 1),  # 100 % a year
        "on_prem.residual_fraction": Bound("frac", 1),
        "on_prem.node_power_kw": Bound("nonneg", 1_000),  # per node: an NVL72 rack draws about 130 kW
        "on_prem.pue": Bound("ge1", 5),
        "on_prem.usd_per_kwh": Bound("nonneg", 10),
        "on_prem.colo_usd_per_kw_month": Bound("nonneg", 10_000),
        "on_prem.maintenance_fraction_per_year": Bound("nonneg", 1),
        "on_prem.staff_fte": Bound("nonneg", 100_000),
        "on_prem.nodes_per_fte": Bound("pos", 1e6),
        "on_prem.staff_fte_per_mw": Bound("nonneg", 1_000),
        "on_prem.staff_usd_per_fte_year": Bound("nonneg", 1e7),
        "on_prem.software_usd_per_gpu_year": Bound("nonneg", 1e6),
        "on_prem.insurance_fraction_per_year": Bound("nonneg", 1),
        "on_prem.property_tax_fraction_per_year": Bound("nonneg", 1),
        "on_prem.spares_fraction": Bound("nonneg", 1),
        "on_prem.facility_capex_usd_per_mw": Bound("nonneg", 1e9),  # a new-build AI hall is ~$10M-$20M/MW
        "on_prem.facility_ops_usd_per_year": Bound("nonneg", 1e10),
        "on_prem.facility_capex_usd": Bound("nonneg", 1e11),  # a facility you build, as a lump sum
        "on_prem.facility_life_years": Bound("pos", 100),  # a building outlasts its servers (15 y, 20 y)
        "on_prem.capital_payments_per_year": Bound("int", 365),  # 1: yearly (CRF), 12: monthly (PMT)
        "on_prem.colo_contracted_kw": Bound("pos", 1e7),
        "network.capex_usd": Bound("nonneg", 1e11),
        "cloud.spot_capacity_nodes": Bound("count", 100_000),
        "on_prem.idle_power_fraction": Bound("frac", 1),
        "on_prem.load_power_fraction": Bound("share", 1),
        "on_prem.installation_fraction": Bound("nonneg", 10),
        "on_prem.storage_usd_per_tb": Bound("nonneg", 1e6),
        "on_prem.server_price_to_gpu_list": Bound("pos", 100),
        "on_prem.server_usd_per_gpu": Bound("nonneg", 1e7),
        "network.switch_usd": Bound("nonneg", 1e7),
        "network.cable_usd": Bound("nonneg", 1e5),
        "network.transceiver_usd": Bound("nonneg", 1e5),
        "network.switch_power_w": Bound("nonneg", 1e6),
        "network.node_transceiver_w": Bound("nonneg", 1e4),
        "network.switch_transceiver_w": Bound("nonneg", 1e4),
        "network.node_ports_per_transceiver": Bound("int", 2),
        "cloud.managed_overhead_fraction": Bound("nonneg", 5),
        "cloud.egress_tb": Bound("nonneg", 1e7),
        "cloud.egress_usd_per_gb": Bound("nonneg", 100),
        "cloud.storage_usd_per_tb_month": Bound("nonneg", 1e6),
        "cloud.spot_preemptions_per_day": Bound("nonneg", 1_000),
        "cloud.spot_interruptions_per_node_month": Bound("nonneg", 30_000),
        "failures.failures_per_gpu_day": Bound("nonneg", 100),
        "failures.restart_minutes": Bound("nonneg", 1e6),
        "storage.checkpoint_bytes_per_param": Bound("pos", 1_000),
        "storage.bytes_per_token": Bound("pos", 1_000),
        "storage.checkpoints_kept": Bound("nonneg", 1e6),
        "storage.dataset_tb": Bound("nonneg", 1e9),
        "storage.capacity_tb": Bound("nonneg", 1e9),
        "storage.mb_s_per_tib": Bound("pos", 1e6),
        "storage.target_write_s": Bound("pos", 1e7),
        "run.params_b": Bound("pos", 1e7),
        "run.gpu_hours": Bound("pos", 1e13),
        "run.days": Bound("pos", 1e6),
        "run.tokens": Bound("pos", 1e18),
        "run.tokens_per_second": Bound("pos", 1e15),
        "run.checkpoint_interval_minutes": Bound("pos", 1e7),
        "sensitivity.fraction": Bound("frac", 1),
        "cashflow.cloud_price_change_per_year": Bound("change", 10),
        "cashflow.power_escalation_per_year": Bound("change", 10),
        "cashflow.lead_time_months": Bound("count", 600),
        "cashflow.loan_rate": Bound("nonneg", 1),
        "cashflow.loan_months": Bound("int", 600),
        "cashflow.lease_usd_per_month": Bound("nonneg", 1e12),
        "cashflow.tax_rate": Bound("frac", 1),
        "cashflow.resale_fraction": Bound("frac", 1),
        "cashflow.wacc_debt_share": Bound("frac", 1),
        "cashflow.wacc_cost_of_debt": Bound("nonneg", 1),
        "cashflow.wacc_cost_of_equity": Bound("nonneg", 1),
        "uncertainty.spread": Bound("frac", 1),
        "uncertainty.samples": Bound("int", 1_000_000),
        "uncertainty.seed": Bound("count", 2**32 - 1),
        **{f"cloud.usd_per_node_hour.{m}": Bound("pos", 1e6) for m in PRICING_MODELS},
        # Nodes obtainable on each pricing model (a quota; 0: effectively unavailable).
        **{f"cloud.capacity_nodes.{m}": Bound("count", 100_000) for m in PRICING_MODELS},
    }
)
