"""A design's defaults, each written once with its source: what a new design, a sweep and a recommendation
start from when the user leaves a field out. Forms, the API, sweeps, the cost engine's assumptions and the
docs read them from here (issue 14, "one defaults module").

The cost engine's own inputs beyond these (owning, network, storage, failures, cash flows) have their defaults
here too, each with its unit and source, by request path: :data:`COST_DEFAULTS` (the cost engine's
``DEFAULTS``), which reads the shared ones above it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from clusterdesigner.engine.core.offerings import PRICING_MODELS
from clusterdesigner.engine.cost.failures import INTERRUPTIONS_PER_GPU_DAY

ISSUE = "ClusterDesigner default (illustrative; set your own)"


@dataclass(frozen=True)
class Default:
    """One default: its value, unit and where it comes from."""

    value: Any
    unit: str
    source: str


# -- the workload -----------------------------------------------------------------------------------------
MODEL_PRESET = Default("llama3-70b", "preset", "ClusterDesigner default: a dense 70B model")
TRAINING_TOKENS = Default(1.0e12, "tokens", ISSUE)
# 1,024 sequences × 4,096 tokens: Llama 2's "global batch-size of 4M tokens" (Touvron et al.,
# arXiv:2307.09288, Sec. 2.2).
GLOBAL_BATCH_TOKENS = Default(
    4_194_304, "tokens", "Llama 2: global batch of 4M tokens (arXiv:2307.09288 §2.2)"
)
PRECISION = Default("bf16", "recipe", "ClusterDesigner default: bf16 mixed precision")

# -- the cluster ------------------------------------------------------------------------------------------
ACCELERATOR = Default("h100-sxm", "slug", "ClusterDesigner default")
GPUS_PER_NODE = Default(8, "GPUs", "HGX/DGX 8-GPU baseboard")
NODES = Default(64, "nodes", "ClusterDesigner default: 512 GPUs (illustrative example)")
FABRIC = Default("ib-ndr400", "slug", "ClusterDesigner default (illustrative example)")
OVERSUBSCRIPTION = Default(
    1.0, "down:up", "non-blocking; Llama 3 pods are full-bisection (arXiv:2407.21783 Sec. 3.3.1)"
)
STORAGE = Default("lustre", "slug", "ClusterDesigner default (illustrative example)")
PARALLELISM = Default("search", "layout|search", "ClusterDesigner default: the fastest layout that fits")

# -- costs ------------------------------------------------------------------------------------------------
HORIZON_YEARS = Default(3, "years", "ClusterDesigner default: the longest common cloud commitment (3 years)")
UTILIZATION = Default(0.7, "fraction of hours busy", "ClusterDesigner default (set your own expected load)")
# Only what the catalog prices: p5 has an on-demand row; a ticked pricing model with no price is refused.
CLOUD_OFFERING = Default("aws-p5-48xlarge", "slug", "ClusterDesigner default: an 8 × H100 SXM instance")
CLOUD_PRICING = Default(("on_demand",), "pricing models", "ClusterDesigner default: on-demand only")

# -- pricing models ---------------------------------------------------------------------------------------
OWN = "own"  # a sweep's or recommendation's owning option, beside the cloud pricing models
SWEEP_PRICING_OPTIONS = (*PRICING_MODELS, OWN)
SWEEP_PRICING = ("on_demand", "reserved_1y", "spot", OWN)
# A recommendation compares these, and spot too when the run tolerates interruptions.
RECOMMEND_PRICING = ("on_demand", "reserved_1y", OWN)

# -- the sweep page's starting point ----------------------------------------------------------------------
SWEEP_ACCELERATORS = ("h100-sxm", "h200", "b200")
SWEEP_NODES = (8, 16, 32, 64)

# Every design default by its spec path (the docs and the editor's help read this table).
DESIGN_DEFAULTS: Mapping[str, Default] = MappingProxyType(
    {
        "workload.model.preset": MODEL_PRESET,
        "workload.training.tokens": TRAINING_TOKENS,
        "workload.training.global_batch_tokens": GLOBAL_BATCH_TOKENS,
        "workload.training.precision": PRECISION,
        "cluster.accelerator": ACCELERATOR,
        "cluster.gpus_per_node": GPUS_PER_NODE,
        "cluster.nodes": NODES,
        "cluster.fabric": FABRIC,
        "cluster.oversubscription": OVERSUBSCRIPTION,
        "cluster.storage": STORAGE,
        "parallelism": PARALLELISM,
        "costs.horizon_years": HORIZON_YEARS,
        "costs.utilization": UTILIZATION,
        "costs.cloud.0.offering": CLOUD_OFFERING,
        "costs.cloud.0.pricing_models": CLOUD_PRICING,
    }
)


def training() -> dict[str, Any]:
    """A new design's training section (also a sweep's and a recommendation's)."""
    return {
        "tokens": TRAINING_TOKENS.value,
        "global_batch_tokens": GLOBAL_BATCH_TOKENS.value,
        "precision": PRECISION.value,
    }


def model() -> dict[str, Any]:
    return {"preset": MODEL_PRESET.value}


_SPEC: Mapping[str, Any] = MappingProxyType(
    {
        "workload": {"model": model(), "training": training()},
        "cluster": {
            "accelerator": ACCELERATOR.value,
            "gpus_per_node": GPUS_PER_NODE.value,
            "nodes": NODES.value,
            "fabric": FABRIC.value,
            "oversubscription": OVERSUBSCRIPTION.value,
            "storage": STORAGE.value,
        },
        "parallelism": PARALLELISM.value,
        "costs": {
            "horizon_years": HORIZON_YEARS.value,
            "utilization": UTILIZATION.value,
            "on_prem": {},
            "cloud": [{"offering": CLOUD_OFFERING.value, "pricing_models": list(CLOUD_PRICING.value)}],
        },
    }
)


def design_spec() -> dict[str, Any]:
    """A new design's whole spec (a fresh copy: callers edit it)."""
    return copy.deepcopy(dict(_SPEC))


def markdown_table() -> str:
    """The design defaults as the README's table (a test keeps the README's copy equal to this)."""
    rows = ["| spec field | default | unit | source |", "|---|---|---|---|"]
    for path, default in DESIGN_DEFAULTS.items():
        value = default.value
        shown = (
            ", ".join(value)
            if isinstance(value, tuple)
            else f"{value:g}"
            if isinstance(value, float)
            else value
        )
        unit, source = (text.replace("|", "\\|") for text in (default.unit, default.source))
        rows.append(f"| `{path}` | `{shown}` | {unit} | {source} |")
    return "\n".join(rows)


# -- the cost engine's own inputs ----------------------------------------------------------------------

PLACEHOLDER = "ClusterDesigner placeholder (UNVERIFIED, no published figure found): replace with a quote"
# DGX H100: 10.2 kW maximum system power for 8 × 700 W H100 SXM (NVIDIA DGX H100 datasheet, recalled).
NODE_POWER_PER_GPU_TDP = 10.2 / (8 * 0.700)


# AWS Spot Instance Advisor states its frequency of interruption per trailing month; its lowest bucket is
# "< 5 %". The engine's rate is per node-day, so a monthly fraction is divided by 365/12 days. This is the
# one spot interruption default: the catalog's offerings, the cost engine and docs/cost-engine.md read it.
SPOT_ADVISOR_LOW_BUCKET_PER_MONTH = 0.05
DAYS_PER_MONTH = 365.0 / 12.0
SPOT_INTERRUPTIONS_PER_NODE_DAY = SPOT_ADVISOR_LOW_BUCKET_PER_MONTH / DAYS_PER_MONTH  # 0.001644
# Spot nodes obtainable when the request gives none (conservative; see COST_DEFAULTS).
SPOT_CAPACITY_NODES = 8

# Staff running the cluster (the operator's own infrastructure team; a colocation's facility staff are in
# its fee): "a dedicated infrastructure engineering team — typically 1 FTE per 50-100 GPU servers at
# enterprise scale" (TensorMesh, tensorsmesh.com/blog/article-5.html, secondary). 75 nodes per FTE, the
# middle of that range; fractional, so one 8-GPU node carries 1/75 FTE, not one person.
NODES_PER_FTE = 75.0
STAFF_SOURCE = (
    "a dedicated infrastructure engineering team, typically 1 FTE per 50-100 GPU servers at enterprise"
    " scale (TensorMesh, tensorsmesh.com/blog/article-5.html, secondary): 75 nodes per FTE, the middle of"
    " that range; FTE = nodes ÷ this, fractional (no floor of one person). Give on_prem.staff_fte to set the"
    " count, or on_prem.staff_fte_per_mw to scale staff with the IT MW instead"
)
NOT_CHARGED = "ClusterDesigner default: not charged unless given"


@dataclass(frozen=True)
class Assumption:
    name: str
    value: Any
    unit: str
    source: str
    as_of: str = ""  # for a catalog price, the date of that price (ISO)

    def as_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "value": self.value, "unit": self.unit, "source": self.source}
        return {**out, "as_of": self.as_of} if self.as_of else out


def _a(name: str, value: Any, unit: str, source: str) -> tuple[str, Assumption]:
    return name, Assumption(name, value, unit, source)


def _d(name: str, default: Default, value: Any = None) -> tuple[str, Assumption]:
    """A design default (clusterdesigner.engine.cost.defaults) as the cost engine's assumption."""
    return _a(name, default.value if value is None else value, default.unit, default.source)


# Every default the engine may use, by request path. Values the catalog supplies (prices, power, switch
# radix) are filled in per request, with the catalog record named as their source.
COST_DEFAULTS: Mapping[str, Assumption] = dict(
    [
        _d("horizon_years", HORIZON_YEARS, float(HORIZON_YEARS.value)),
        _d("utilization", UTILIZATION),
        _d("cluster.accelerator", ACCELERATOR),
        _d("cluster.gpus_per_node", GPUS_PER_NODE),
        # A cost request's own example size (a design's default is NODES).
        _a("cluster.nodes", 8, "nodes", "ClusterDesigner default (illustrative example)"),
        _d("cluster.fabric", FABRIC),
        _d("cluster.oversubscription", OVERSUBSCRIPTION),
        _d("cluster.storage", STORAGE),
        _a(
            "cluster.switch",
            "ib-ndr-64",
            "slug",
            "ClusterDesigner default: 64-port NDR (NVIDIA Quantum-2 QM9700, QM97X0 user manual 'Interfaces')",
        ),
        _a(
            "cluster.rail_optimized",
            True,
            "bool",
            "NVIDIA DGX SuperPOD reference architecture (rail-optimised)",
        ),
        _a(
            "cluster.topology",
            "fat_tree",
            "fat_tree|dragonfly_plus|rail_only",
            "ClusterDesigner default (rail_only: one switch, or one leaf-spine, per NIC rail and no"
            ' spine across rails, Wang et al., "Rail-only", arXiv:2307.12169)',
        ),
        _a("on_prem.depreciation_years", 5.0, "years", ISSUE),
        _a("on_prem.discount_rate", 0.08, "per year", ISSUE + " (cost of capital, also the NPV rate)"),
        _a("on_prem.residual_fraction", 0.2, "of capex", ISSUE),
        _a("on_prem.pue", 1.3, "ratio", ISSUE),
        _a("on_prem.usd_per_kwh", 0.08, "USD/kWh", ISSUE),
        _a("on_prem.colo_usd_per_kw_month", 150.0, "USD/kW-month", ISSUE),
        _a(
            "on_prem.load_power_fraction",
            0.76,
            "of nameplate server power at full load",
            "Latif et al., arXiv:2506.14551 (2025): 8-GPU H100 nodes under compute-intensive training run at"
            " 76 % of the 10.2 kW rating; Latif et al., IEEE Access 13:61740 (2025): 8.4 kW peak, 18 % below",
        ),
        _a(
            "colocation.pricing",
            "space_only",
            "space_only|all_in",
            "ClusterDesigner default: colocation quoted for space and cooling, power billed by the kWh"
            " (all_in: the $/kW-month includes power, so no energy line)",
        ),
        _a(
            "colocation.basis",
            "contracted_kw",
            "contracted_kw|drawn_kw|nameplate_kw",
            "ClusterDesigner default: colocation bills the contracted kW"
            " (on_prem.colo_contracted_kw, else the IT draw at full load), used or not; drawn_kw"
            " bills the average draw at the utilization; nameplate_kw the servers' rating. Energy"
            " is billed once: the IT draw × PUE × $/kWh (none when all_in)",
        ),
        _a("on_prem.maintenance_fraction_per_year", 0.05, "of capex per year", ISSUE),
        _a(
            "on_prem.nodes_per_fte",
            NODES_PER_FTE,
            "nodes per FTE (fractional: no floor of one person)",
            STAFF_SOURCE,
        ),
        _a("on_prem.staff_usd_per_fte_year", 180_000.0, "USD/FTE-year", ISSUE),
        _a("on_prem.software_usd_per_gpu_year", 0.0, "USD/GPU-year", NOT_CHARGED + " (software licences)"),
        _a("on_prem.insurance_fraction_per_year", 0.0, "of capex per year", NOT_CHARGED + " (insurance)"),
        _a(
            "on_prem.property_tax_fraction_per_year",
            0.0,
            "of capex per year",
            NOT_CHARGED + " (property tax)",
        ),
        _a("on_prem.spares_fraction", 0.0, "of server capex", NOT_CHARGED + " (a spares pool)"),
        _a(
            "on_prem.facility_capex_usd_per_mw",
            0.0,
            "USD per MW of IT power",
            NOT_CHARGED
            + " (colocated, the building belongs to the colocation provider; give it for a facility you"
            " build)",
        ),
        _a(
            "on_prem.facility_ops_usd_per_year",
            0.0,
            "USD/year",
            NOT_CHARGED + " (a facility and ops lump sum)",
        ),
        _a(
            "on_prem.facility_capex_usd",
            0.0,
            "USD (capex)",
            NOT_CHARGED + " (a facility you build, as a lump sum; added to facility_capex_usd_per_mw × MW)",
        ),
        _a(
            "on_prem.capital_payments_per_year",
            1,
            "level payments a year",
            "ClusterDesigner default: capital recovered in one level payment a year, capex × CRF(r, n)"
            " (Newnan, Engineering Economic Analysis, (A/P, i, n)); 12 recovers it in level monthly"
            " payments at r/12, Excel PMT(r/12, 12n, −capex) × 12, as the SemiAnalysis AI Cloud TCO model"
            " amortises capex at its WACC",
        ),
        _a(
            "on_prem.idle_power_fraction",
            0.3,
            "of full IT power",
            "linear power model of Fan, Weber & Barroso, ISCA "
            "2007; 0.3 idle share is a placeholder (UNVERIFIED)",
        ),
        _a("on_prem.installation_fraction", 0.03, "of hardware capex", PLACEHOLDER),
        _a("on_prem.storage_usd_per_tb", 200.0, "USD/TB (capex)", PLACEHOLDER),
        _a("on_prem.server_price_to_gpu_list", 1.25, "× GPU list price × GPUs", PLACEHOLDER),
        _a(
            "on_prem.server_usd_per_gpu",
            0.0,
            "USD/GPU",
            "no default: used only when given and the catalog has no priced server type of the"
            " accelerator (one accelerator’s price never stands in for another’s)",
        ),
        _a(
            "network.switch_usd",
            30_000.0,
            "USD/switch",
            "NVIDIA does not publish the QM9700 price; " + PLACEHOLDER,
        ),
        _a(
            "network.included_in_server",
            False,
            "bool",
            "ClusterDesigner default: the server price excludes the scale-out network; set true"
            " when the quote includes switches, cables and optics (no network capex is added; its"
            " power still counts)",
        ),
        _a("network.cable_usd", 150.0, "USD/cable", PLACEHOLDER),
        _a("network.transceiver_usd", 1_200.0, "USD/transceiver", PLACEHOLDER),
        _a("network.switch_power_w", 1_000.0, "W/switch", PLACEHOLDER),
        _a(
            "network.node_transceiver_w",
            8.0,
            "W/transceiver",
            "NVIDIA MMA4Z00-NS400 400Gb/s single-port OSFP (ConnectX-7 side): 8 W typical, 9 W maximum"
            " (NVIDIA product specification, Connectivity Scenarios)",
        ),
        _a(
            "network.node_ports_per_transceiver",
            1,
            "NIC ports/transceiver",
            "one single-port 400G OSFP or QSFP112 per PCIe ConnectX-7 (NVIDIA MMA4Z00-NS400 and MMA1Z00-NS400"
            " product specifications); 2 on a DGX H100/H200/B200, whose four OSFP ports serve eight"
            " ConnectX-7 with a two-port transceiver each (NVIDIA DGX BasePOD and SuperPOD reference"
            " architectures)",
        ),
        _a(
            "network.switch_transceiver_w",
            15.0,
            "W/transceiver",
            "NVIDIA MMA4Z00-NS 800Gb/s twin-port OSFP (switch side): 15 W in every configuration (NVIDIA"
            " product specification, Overview)",
        ),
        _a(
            "cloud.managed_overhead_fraction",
            0.0,
            "of compute",
            "ClusterDesigner default (illustrative example)",
        ),
        _a("cloud.egress_tb", 0.0, "TB over the horizon", "ClusterDesigner default (illustrative example)"),
        _a(
            "cloud.egress_usd_per_gb",
            0.09,
            "USD/GB",
            "AWS EC2 data transfer out to the internet, first 10 TB/month, us-east-1 (recalled, UNVERIFIED)",
        ),
        _a("cloud.storage_usd_per_tb_month", 0.0, "USD/TB-month", "storage tier has no price in the catalog"),
        _a(
            "cloud.spot_preemptions_per_day",
            SPOT_INTERRUPTIONS_PER_NODE_DAY,
            "per node-day",
            "AWS EC2 Spot Instance Advisor: 'Frequency of interruption represents the rate at which Spot has"
            " reclaimed capacity during the trailing month', buckets < 5 %, 5-10 %, 10-15 %, 15-20 %, > 20 %"
            " (spot-advisor-data.json, as described by grailbio/base spotadvisor); the lowest bucket's top,"
            " 0.05 per node-month, ÷ 30.42 days (365/12) = 0.001644 per node-day",
        ),
        _a(
            "cloud.spot_capacity_nodes",
            SPOT_CAPACITY_NODES,
            "nodes obtainable on spot",
            "ClusterDesigner conservative default: no provider publishes how much spot GPU capacity"
            " it holds, and spot capacity is reclaimed when the provider needs it back; one 8-node"
            " (64-GPU) block is assumed obtainable, no more (give what your provider's quota or spot"
            " placement score shows). Above it, spot is not offered for the design",
        ),
        _a(
            "failures.failures_per_gpu_day",
            INTERRUPTIONS_PER_GPU_DAY,
            "per GPU-day",
            "Llama 3: 419 unexpected interruptions / (54 days × 16,384 GPUs), arXiv:2407.21783 Sec. 3.3.4",
        ),
        _a(
            "failures.restart_minutes",
            10.0,
            "minutes",
            "MegaScale (NSDI'24) Sec. 6.2-6.3: detection + diagnosis < 10 min; consistent with Llama 3's"
            " > 90 % effective time over 419 interruptions in 54 days (≤ 18.6 min lost each, derived)",
        ),
        _a(
            "storage.checkpoint_bytes_per_param",
            14.0,
            "bytes/parameter",
            "bf16 weights 2 + fp32 master 4 + Adam m, v 8 (ZeRO, "
            "SC'20 Sec. 3.1); BLOOM-176B 2.3 TB = 13.1 B/param",
        ),
        _a(
            "storage.bytes_per_token",
            4.0,
            "bytes/token",
            "int32 token ids (vocabularies over 65,535 need 4 bytes)",
        ),
        _a("storage.checkpoints_kept", 3.0, "checkpoints", PLACEHOLDER),
        _a("storage.dataset_tb", 10.0, "TB", PLACEHOLDER),
        _a(
            "storage.async_checkpoint",
            False,
            "bool",
            "ClusterDesigner default: blocking saves (conservative)",
        ),
        _a("run.params_b", 70.0, "billion parameters", "placeholder: Llama 3 70B when no model is given"),
        _a("sensitivity.fraction", 0.25, "±fraction", "ClusterDesigner default: ±25 %"),
        _a(
            "cashflow.cloud_price_change_per_year",
            0.0,
            "fraction per year",
            "ClusterDesigner default: flat prices (set your own; AWS cut p5 on-demand from $98.32 to $55.04"
            " an hour in June 2025, −44 %, AWS price-cut announcement cited in the catalog)",
        ),
        _a("cashflow.power_escalation_per_year", 0.0, "fraction per year", "ClusterDesigner default: flat"),
        _a(
            "cashflow.lead_time_months",
            4,
            "months",
            "Procurement lead time of GPU servers, order to usable (rented meanwhile): 4 months, the low end"
            " of the 4–10 months GPU Lease Index reports for B200 in 2026"
            " (gpuleaseindex.com/alerts/b200/virginia); HPE quoted 20+ weeks for H100 servers (Q1 2024"
            " earnings call, ComputerWeekly) and Dell"
            " 8–12 weeks (Dell Taiwan to United Daily News, April 2024). Capped below the horizon when not"
            " given",
        ),
        _a("cashflow.financing", "cash", "cash|loan|lease", "ClusterDesigner default: paid in cash"),
        _a("cashflow.loan_rate", 0.08, "per year (APR, monthly = ÷ 12 as Excel PMT)", ISSUE),
        _a("cashflow.loan_months", 60, "months", ISSUE + " (5 years, the depreciation life)"),
        _a(
            "cashflow.tax_rate",
            0.0,
            "fraction",
            "ClusterDesigner default: pre-tax. Set the tax rate to deduct rent bills, owning's opex, lease"
            " payments and loan interest, depreciate capex and tax the sale's gain over book value",
        ),
        _a(
            "cashflow.depreciation_schedule",
            "macrs_5",
            "macrs_5|straight_line",
            "US MACRS 5-year property (computers), half-year convention: IRS Publication 946, Table A-1"
            " (20, 32, 19.2, 11.52, 11.52, 5.76 %); straight_line: to zero over on_prem.depreciation_years",
        ),
        _a(
            "cashflow.reserved_payment",
            "no_upfront",
            "no_upfront|partial_upfront|all_upfront",
            "ClusterDesigner default: billed monthly (partial: half of the term at its start); reservations"
            " and savings plans alike",
        ),
        _a("uncertainty.spread", 0.25, "±fraction", "ClusterDesigner default: the tornado's ±25 %, uniform"),
        _a(
            "uncertainty.samples",
            100_000,
            "draws",
            "ClusterDesigner default: P10/P50/P90 stable across seeds to well under 1 % of the P10–P90 spread"
            " (standard errors by batch means in the result)",
        ),
        _a("uncertainty.seed", 0, "seed", "ClusterDesigner default: fixed, so a result repeats"),
    ]
)


def cost_assumptions() -> list[dict[str, Any]]:
    """Every default the cost engine falls back on, with unit and source, for forms to show."""
    return [a.as_dict() for a in COST_DEFAULTS.values()]
