"""The cost engine's entry point: a JSON request in, a JSON-ready response out (docs/cost-engine.md).

``tco(request, accelerators=..., fabrics=..., offerings=..., storage_tiers=..., switches=...)`` resolves every
field of the request to a value with its unit and source (the request's own value, a catalog figure, or a
default from :data:`DEFAULTS`), then evaluates owning, renting, break-even, per-run cost, network, storage and
failures from those values alone. The sensitivity tornado re-runs the same evaluation with one value moved,
so every number in the response is a function of the ``assumptions`` list it returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from clusterdesigner.engine import bounds, defaults
from clusterdesigner.engine.cashflow import (
    FINANCING,
    UPFRONT,
    CashflowInputs,
    RentOption,
    cash_flows,
    monte_carlo,
)
from clusterdesigner.engine.catalog import CatalogSpecs
from clusterdesigner.engine.errors import FieldPaths, InputError, UnknownReferenceError, named_by
from clusterdesigner.engine.failures import INTERRUPTIONS_PER_GPU_DAY, FailureResult, failure_model
from clusterdesigner.engine.findings import FindingsInput, design_findings, stale_price_findings
from clusterdesigner.engine.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.network import Topology, dragonfly_plus, fat_tree, network_cost
from clusterdesigner.engine.offerings import (
    COMMITMENT_YEARS,
    PRICING_MODELS,
    SAVINGS_PLANS,
    CloudOfferingSpec,
    Freshness,
    ServerTypeSpec,
    StorageTierSpec,
    SwitchSpec,
    default_offering,
)
from clusterdesigner.engine.resale import ResaleCurve, covering
from clusterdesigner.engine.sensitivity import tornado
from clusterdesigner.engine.storage import (
    capacity_for_write_tib,
    checkpoint_gb,
    dataset_read_gbps,
    save_timings,
)
from clusterdesigner.engine.tco import (
    MONTHS_PER_YEAR,
    Line,
    OnPremInputs,
    break_even_meaning,
    break_even_utilization,
    cloud_cost,
    committed_years,
    num,
    on_prem_cost,
    reservation_break_even,
    usd,
)
from clusterdesigner.engine.verdict import RentOrOwn

ISSUE = defaults.ISSUE
PLACEHOLDER = "ClusterDesigner placeholder (UNVERIFIED, no published figure found): replace with a quote"
# DGX H100: 10.2 kW maximum system power for 8 × 700 W H100 SXM (NVIDIA DGX H100 datasheet, recalled).
NODE_POWER_PER_GPU_TDP = 10.2 / (8 * 0.700)


# AWS Spot Instance Advisor states its frequency of interruption per trailing month; its lowest bucket is
# "< 5 %". The engine's rate is per node-day, so a monthly fraction is divided by 365/12 days.
SPOT_ADVISOR_LOW_BUCKET_PER_MONTH = 0.05
DAYS_PER_MONTH = 365.0 / 12.0


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


def _d(name: str, default: defaults.Default, value: Any = None) -> tuple[str, Assumption]:
    """A design default (clusterdesigner.engine.defaults) as the cost engine's assumption."""
    return _a(name, default.value if value is None else value, default.unit, default.source)


# Every default the engine may use, by request path. Values the catalog supplies (prices, power, switch
# radix) are filled in per request, with the catalog record named as their source.
DEFAULTS: Mapping[str, Assumption] = dict(
    [
        _d("horizon_years", defaults.HORIZON_YEARS, float(defaults.HORIZON_YEARS.value)),
        _d("utilization", defaults.UTILIZATION),
        _d("cluster.accelerator", defaults.ACCELERATOR),
        _d("cluster.gpus_per_node", defaults.GPUS_PER_NODE),
        # A cost request's own example size (a design's default is defaults.NODES).
        _a("cluster.nodes", 8, "nodes", "ClusterDesigner default (illustrative example)"),
        _d("cluster.fabric", defaults.FABRIC),
        _d("cluster.oversubscription", defaults.OVERSUBSCRIPTION),
        _d("cluster.storage", defaults.STORAGE),
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
        _a("cluster.topology", "fat_tree", "fat_tree|dragonfly_plus", "ClusterDesigner default"),
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
        _a("on_prem.maintenance_fraction_per_year", 0.05, "of capex per year", ISSUE),
        _a(
            "on_prem.staff_fte",
            1.0,
            "FTE (at least; nodes ÷ nodes per FTE above that)",
            "ClusterDesigner default: at least one person runs an owned cluster; above 250 nodes"
            " on_prem.nodes_per_fte applies",
        ),
        _a(
            "on_prem.nodes_per_fte",
            250.0,
            "nodes per FTE",
            "Roskies & Zacharia, “Designing and Supporting High-end Computational Facilities”, CTWatch"
            " Quarterly 2(2), May 2006, p. 4: sites add “one FTE for roughly every 250 processors” (read"
            " as 250 nodes; interpretation UNVERIFIED); also “8-12 FTEs for a single, large” HPC system",
        ),
        _a("on_prem.staff_usd_per_fte_year", 180_000.0, "USD/FTE-year", ISSUE),
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
            SPOT_ADVISOR_LOW_BUCKET_PER_MONTH / DAYS_PER_MONTH,
            "per node-day",
            "AWS EC2 Spot Instance Advisor: 'Frequency of interruption represents the rate at which Spot has"
            " reclaimed capacity during the trailing month', buckets < 5 %, 5-10 %, 10-15 %, 15-20 %, > 20 %"
            " (spot-advisor-data.json, as described by grailbio/base spotadvisor); the lowest bucket's top,"
            " 0.05 per node-month, ÷ 30.42 days (365/12) = 0.001644 per node-day",
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
            0,
            "months",
            "ClusterDesigner default: owned capacity usable at once (set the vendor's delivery and install"
            " time; rented meanwhile)",
        ),
        _a("cashflow.financing", "cash", "cash|loan|lease", "ClusterDesigner default: paid in cash"),
        _a("cashflow.loan_rate", 0.08, "per year (APR, monthly = ÷ 12 as Excel PMT)", ISSUE),
        _a("cashflow.loan_months", 60, "months", ISSUE + " (5 years, the depreciation life)"),
        _a(
            "cashflow.tax_rate",
            0.0,
            "fraction",
            "ClusterDesigner default: no tax shield; set the tax rate to credit MACRS 5-year depreciation"
            " (IRS Publication 946, Table A-1)",
        ),
        _a(
            "cashflow.reserved_payment",
            "no_upfront",
            "no_upfront|partial_upfront|all_upfront",
            "ClusterDesigner default: billed monthly (partial: half of the term at its start); reservations"
            " and savings plans alike",
        ),
        _a("uncertainty.spread", 0.25, "±fraction", "ClusterDesigner default: the tornado's ±25 %, uniform"),
        _a("uncertainty.samples", 500, "draws", "ClusterDesigner default"),
        _a("uncertainty.seed", 0, "seed", "ClusterDesigner default: fixed, so a result repeats"),
    ]
)

# Values the tornado moves. Integers (node counts) and switches of kind stay put.
SENSITIVE = (
    "utilization",
    "on_prem.server_usd",
    "on_prem.discount_rate",
    "on_prem.depreciation_years",
    "on_prem.residual_fraction",
    "on_prem.node_power_kw",
    "on_prem.pue",
    "on_prem.load_power_fraction",
    "on_prem.usd_per_kwh",
    "on_prem.colo_usd_per_kw_month",
    "on_prem.maintenance_fraction_per_year",
    "on_prem.staff_usd_per_fte_year",
    "network.switch_usd",
    "cloud.usd_per_node_hour.on_demand",
    "cloud.usd_per_node_hour.reserved_1y",
    "cloud.usd_per_node_hour.reserved_3y",
    "cloud.usd_per_node_hour.spot",
    "cloud.spot_preemptions_per_day",
    "failures.failures_per_gpu_day",
)

# The tornado's inputs as a sentence names them (the verdict's "assumptions that move the answer most").
SENSITIVE_LABELS: Mapping[str, str] = {
    "utilization": "utilization",
    "on_prem.server_usd": "the server price",
    "on_prem.discount_rate": "the discount rate",
    "on_prem.depreciation_years": "the depreciation life",
    "on_prem.residual_fraction": "the resale value",
    "on_prem.node_power_kw": "the node power",
    "on_prem.pue": "the PUE",
    "on_prem.load_power_fraction": "the power drawn at load",
    "on_prem.usd_per_kwh": "the electricity price",
    "on_prem.colo_usd_per_kw_month": "the colocation price",
    "on_prem.maintenance_fraction_per_year": "maintenance",
    "on_prem.staff_usd_per_fte_year": "staff cost",
    "network.switch_usd": "the switch price",
    "cloud.usd_per_node_hour.on_demand": "the on-demand price",
    "cloud.usd_per_node_hour.reserved_1y": "the reserved 1-year price",
    "cloud.usd_per_node_hour.reserved_3y": "the reserved 3-year price",
    "cloud.usd_per_node_hour.savings_1y": "the 1-year savings-plan rate",
    "cloud.usd_per_node_hour.savings_3y": "the 3-year savings-plan rate",
    "cloud.usd_per_node_hour.spot": "the spot price",
    "cloud.spot_preemptions_per_day": "the spot interruption rate",
    "failures.failures_per_gpu_day": "the hardware failure rate",
}

# The owning assumptions a request may give (every one is range-checked by bounds.COST).
ON_PREM_FIELDS = tuple(sorted(p.removeprefix("on_prem.") for p in bounds.COST if p.startswith("on_prem.")))

_MISSING = object()


def field_rule(path: str) -> str | None:
    """The range check :func:`tco` applies to a request field, for forms that mirror it: "pos" (> 0),
    "nonneg" (≥ 0), "frac" ([0, 1)), "util" and "share" ((0, 1]), "ge1" (≥ 1), "int" (whole, ≥ 1), "count"
    (whole, ≥ 0), "change" (> −1, a yearly change); None if unchecked."""
    bound = bounds.COST.get(path)
    return None if bound is None else bound.rule


def field_max(path: str) -> float | None:
    """The largest value :func:`tco` accepts for a request field; None if unchecked."""
    bound = bounds.COST.get(path)
    return None if bound is None else bound.high


def _lookup(request: Mapping[str, Any], path: str) -> Any:
    node: Any = request
    for part in path.split("."):
        if not isinstance(node, Mapping):
            raise InputError("must be an object", field=path.rsplit(".", 1)[0])
        if node.get(part) is None:
            return _MISSING
        node = node[part]
    return node


def _checked(path: str, value: Any) -> Any:
    bound = bounds.COST.get(path)
    if bound is None:
        return value
    rule = bound.rule
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"must be a number, got {value!r}", field=path)
    problems = {
        "pos": (value <= 0, "must be more than zero"),
        "nonneg": (value < 0, "must be zero or more"),
        "frac": (not 0 <= value < 1, "must be a fraction in [0, 1)"),
        "util": (not 0 < value <= 1, "must be in (0, 1]: the fraction of hours the cluster is busy"),
        "ge1": (value < 1, "must be 1 or more"),
        "int": (value < 1 or int(value) != value, "must be a whole number, 1 or more"),
        "share": (not 0 < value <= 1, "must be a fraction in (0, 1]"),
        "count": (value < 0 or int(value) != value, "must be a whole number, 0 or more"),
        "change": (value <= -1, "must be more than −1 (a change of −100 % a year)"),
    }
    bad, message = problems[rule]
    if bad:
        raise InputError(f"{message}, got {value!r}", field=path)
    if bound.low is not None and value < bound.low:
        raise InputError(f"must be at least {bound.low:g}, got {value:g}", field=path)
    most = bound.high
    if value > most:
        shown = f"{most:,.0f}" if most >= 10_000 else f"{most:g}"
        raise InputError(f"must be at most {shown}, got {value:g}", field=path)
    return int(value) if rule in ("int", "count") else value


@dataclass
class _Resolver:
    """Collects every value used, with unit and source, while reading the request."""

    request: Mapping[str, Any]
    used: dict[str, Assumption] = field(default_factory=dict)

    def given(self, path: str) -> bool:
        return _lookup(self.request, path) is not _MISSING

    def get(
        self, path: str, default: Any = _MISSING, unit: str = "", source: str = "", as_of: str = ""
    ) -> Any:
        value = _lookup(self.request, path)
        if value is not _MISSING:
            value = _checked(path, value)
            base = DEFAULTS.get(path)
            self.used[path] = Assumption(path, value, unit or (base.unit if base else ""), "request")
            return value
        if default is _MISSING:
            base = DEFAULTS[path]
            self.used[path] = base
            return base.value
        self.used[path] = Assumption(path, default, unit, source, as_of)
        return default

    def prefer(self, path: str, catalog_value: Any, source: str) -> Any:
        """The request's value, else the catalog's (when it has one), else the engine default."""
        if catalog_value is None:
            return self.get(path)
        return self.get(path, catalog_value, DEFAULTS[path].unit, source)


@dataclass(frozen=True)
class _Context:
    """What the evaluation needs besides numbers: the chosen specs and switches of kind."""

    accelerator: AcceleratorSpec
    fabric: FabricSpec
    switch: SwitchSpec
    tier: StorageTierSpec | None
    tiers: Mapping[str, StorageTierSpec]
    offering: CloudOfferingSpec | None
    pricing_models: tuple[str, ...]
    rail_optimized: bool
    topology: str
    async_checkpoint: bool
    run_source: str  # training | run.days | run.gpu_hours | none
    checkpoint_interval_minutes: float | None
    tokens: float | None
    tokens_per_second: float | None
    training: Mapping[str, Any] | None
    cluster_accelerators: tuple[AcceleratorSpec, ...]
    colo_all_in: bool = False


def _number(section: Any, key: str) -> float | None:
    value = section.get(key) if isinstance(section, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _slug(resolver: _Resolver, path: str, catalog: Mapping[str, Any], what: str) -> Any:
    slug = resolver.get(path)
    if not isinstance(slug, str) or slug not in catalog:
        known = ", ".join(sorted(catalog)) or "none"
        raise UnknownReferenceError(f"unknown {what} {slug!r}; known: {known}", field=path)
    return catalog[slug]


def _server_price(
    r: _Resolver,
    catalog: CatalogSpecs,
    server: ServerTypeSpec | None,
    accelerator: AcceleratorSpec,
    gpn: int,
) -> float:
    """USD per node, in this order: the request's price; the named server type's catalog price; the
    catalog's priced server type of this accelerator with this many GPUs (newest figure, then slug); the
    request's price per GPU × GPUs; this accelerator's own list price × GPUs × the server factor. Never
    another accelerator's figure: with none of these the request must give one (an error naming the field).
    """
    path = "on_prem.server_usd"
    if r.given(path):
        return float(r.get(path))
    server = _owned_server(catalog, server, accelerator, gpn)
    if server is not None and server.price_usd is not None:
        return float(
            r.get(
                path, server.price_usd, "USD/node", f"server type {server.slug} (catalog)", as_of=server.as_of
            )
        )
    if r.given("on_prem.server_usd_per_gpu"):
        per_gpu = float(r.get("on_prem.server_usd_per_gpu"))
        return float(r.get(path, per_gpu * gpn, "USD/node", f"{gpn} GPUs × {usd(per_gpu)}/GPU (request)"))
    if accelerator.list_price_usd:
        mult = r.get("on_prem.server_price_to_gpu_list")
        return float(
            r.get(
                path,
                accelerator.list_price_usd * gpn * mult,
                "USD/node",
                f"{gpn} × {accelerator.slug} list price {usd(accelerator.list_price_usd)} (catalog) × "
                f"{num(mult)} (no priced {gpn}-GPU server type of {accelerator.slug} in the catalog)",
                as_of=accelerator.as_of,
            )
        )
    raise InputError(
        f"the catalog has no price for {accelerator.slug} servers of {gpn} GPUs, nor a list price for "
        f"{accelerator.slug}: give the server price (USD per node), or a price per GPU",
        field=path,
    )


def _resolve_cashflow(r: _Resolver, v: dict[str, Any]) -> None:
    """The money-over-time inputs: price paths, lead time, financing, tax shield, Monte Carlo."""
    for name in (
        "cashflow.cloud_price_change_per_year",
        "cashflow.power_escalation_per_year",
        "cashflow.lead_time_months",
        "cashflow.tax_rate",
        "uncertainty.spread",
        "uncertainty.samples",
        "uncertainty.seed",
    ):
        v[name] = r.get(name)
    for name, choices in (("cashflow.financing", FINANCING), ("cashflow.reserved_payment", UPFRONT)):
        v[name] = r.get(name)
        if v[name] not in choices:
            raise InputError(f"must be one of {', '.join(choices)}", field=name)
    if v["cashflow.financing"] == "loan":
        v["cashflow.loan_rate"] = r.get("cashflow.loan_rate")
        v["cashflow.loan_months"] = r.get("cashflow.loan_months")
    if v["cashflow.financing"] == "lease":
        if not r.given("cashflow.lease_usd_per_month"):
            raise InputError(
                "an operating lease needs its monthly payment (USD a month for the whole cluster)",
                field="cashflow.lease_usd_per_month",
            )
        v["cashflow.lease_usd_per_month"] = r.get("cashflow.lease_usd_per_month", unit="USD/month")


def _staff_fte(r: _Resolver, nodes: int) -> float:
    """FTEs running the cluster: the request's, else max(1, nodes ÷ nodes per FTE)."""
    if r.given("on_prem.staff_fte"):
        return float(r.get("on_prem.staff_fte"))
    per_fte = float(r.get("on_prem.nodes_per_fte"))
    fte = max(1.0, nodes / per_fte)
    return float(
        r.get("on_prem.staff_fte", fte, "FTE", f"max(1, {num(nodes)} nodes ÷ {num(per_fte)} nodes per FTE)")
    )


def _check_on_prem_keys(request: Mapping[str, Any]) -> None:
    """Refuse unknown owning fields and range-check every one given, also those this request does not read."""
    on_prem = request.get("on_prem")
    if isinstance(on_prem, Mapping):
        unknown = sorted(set(on_prem) - set(ON_PREM_FIELDS))
        if unknown:
            raise InputError(
                f"unknown on_prem field {unknown[0]!r}; known: {', '.join(ON_PREM_FIELDS)}",
                field=f"on_prem.{unknown[0]}",
            )
        # Every owning input given is checked, also one this request does not read (a server price per GPU
        # beside a server price): a saved design holds no number out of range.
        for key in sorted(on_prem):
            if on_prem[key] is not None:
                _checked(f"on_prem.{key}", on_prem[key])


def _resolve_accelerator(
    r: _Resolver, request: Mapping[str, Any], catalog: CatalogSpecs
) -> tuple[ServerTypeSpec | None, AcceleratorSpec, list[AcceleratorSpec]]:
    """The server type (when named), the accelerator, and every accelerator of a mixed cluster."""
    accelerators, server_types = catalog.accelerators, catalog.server_types
    server: ServerTypeSpec | None = None
    if r.given("cluster.server_type"):
        server = _slug(r, "cluster.server_type", server_types, "server type")
    if server is not None and not r.given("cluster.accelerator"):
        r.get("cluster.accelerator", server.accelerator, "slug", f"server type {server.slug}")
        accelerator = accelerators.get(server.accelerator)
        if accelerator is None:
            raise UnknownReferenceError(
                f"server type {server.slug} names unknown accelerator {server.accelerator!r}",
                field="cluster.server_type",
            )
    else:
        accelerator = _slug(r, "cluster.accelerator", accelerators, "accelerator")
    mixed = [accelerator]
    extra = _lookup(request, "cluster.accelerators")
    if extra is not _MISSING:
        if not isinstance(extra, list):
            raise InputError("must be a list of accelerator slugs", field="cluster.accelerators")
        for i, slug in enumerate(extra):
            if slug not in accelerators:
                raise UnknownReferenceError(
                    f"unknown accelerator {slug!r}", field=f"cluster.accelerators.{i}"
                )
            mixed.append(accelerators[slug])
    return server, accelerator, mixed


def _resolve_cluster(r: _Resolver, v: dict[str, Any], server: ServerTypeSpec | None) -> tuple[bool, str]:
    """GPUs per node, nodes, NICs, oversubscription; returns (rail-optimised, topology)."""
    gpn_default = DEFAULTS["cluster.gpus_per_node"]
    if server is not None:
        v["gpus_per_node"] = r.get(
            "cluster.gpus_per_node", server.gpus_per_node, "GPUs", f"server {server.slug}"
        )
    else:
        v["gpus_per_node"] = r.get(
            "cluster.gpus_per_node", gpn_default.value, gpn_default.unit, gpn_default.source
        )
    v["nodes"] = r.get("cluster.nodes")
    nics = server.nics_per_node if server is not None and server.nics_per_node else v["gpus_per_node"]
    v["nics_per_node"] = r.get(
        "cluster.nics_per_node",
        nics,
        "NICs",
        "one NIC per GPU (rail-optimised HGX/DGX)" if server is None else f"server {server.slug}",
    )
    v["oversubscription"] = r.get("cluster.oversubscription")
    rail = bool(r.get("cluster.rail_optimized"))
    topology = r.get("cluster.topology")
    if topology not in ("fat_tree", "dragonfly_plus"):
        raise InputError("must be fat_tree or dragonfly_plus", field="cluster.topology")

    return rail, str(topology)


def _resolve_trays(
    r: _Resolver, v: dict[str, Any], catalog: CatalogSpecs, accelerator: AcceleratorSpec
) -> None:
    """NICs per tray: a rack-scale node (a GB200 NVL72 rack of 18 compute trays) reaches the scale-out
    network through its trays, so the fabric is sized for racks × trays of the tray's NICs, not for "nodes"
    of 72 NICs each. The tray is the catalog's smaller server type of the same accelerator whose GPUs divide
    the node's; without one, the node is its own tray."""
    nics, gpn = int(v["nics_per_node"]), int(v["gpus_per_node"])
    trays = sorted(
        (
            s
            for s in catalog.server_types.values()
            if s.accelerator == accelerator.slug
            and s.gpus_per_node < gpn
            and gpn % s.gpus_per_node == 0
            and s.nics_per_node
            and nics % (s.nics_per_node * gpn // s.gpus_per_node) == 0
        ),
        key=lambda s: (-s.gpus_per_node, s.slug),
    )
    if trays:
        tray = trays[0]
        default, source = (
            int(tray.nics_per_node or nics),
            f"server type {tray.slug}: {tray.gpus_per_node} GPUs a tray",
        )
    else:
        default, source = nics, "the node is its own tray (no smaller server type of this accelerator)"
    v["nics_per_tray"] = r.get("cluster.nics_per_tray", default, "NICs", source)
    if nics % int(v["nics_per_tray"]):
        raise InputError(
            f"must divide the {nics} NICs per node, got {v['nics_per_tray']}", field="cluster.nics_per_tray"
        )


def _resolve_switch(r: _Resolver, switches: Mapping[str, SwitchSpec], fabric: FabricSpec) -> SwitchSpec:
    """The named switch, the default, else the catalog's largest of the fabric's kind, else a generic one."""
    switch: SwitchSpec
    if r.given("cluster.switch") or DEFAULTS["cluster.switch"].value in switches:
        switch = _slug(r, "cluster.switch", switches, "switch")
    else:
        match = sorted((s for s in switches.values() if s.fabric_kind == fabric.kind), key=lambda s: -s.ports)
        switch = (
            match[0] if match else SwitchSpec("generic-64", "generic 64-port switch", 64, fabric.port_gbps)
        )
        r.get(
            "cluster.switch",
            switch.slug,
            "slug",
            "catalog has no ib-ndr-64; largest catalog switch of the fabric's kind"
            if match
            else "catalog has no switch; generic 64-port switch at the fabric's port rate",
        )

    return switch


def _resolve_tier(r: _Resolver, storage_tiers: Mapping[str, StorageTierSpec]) -> StorageTierSpec | None:
    """The named storage tier, the default (lustre), else the catalog's first; None without tiers."""
    tier: StorageTierSpec | None = None
    if r.given("cluster.storage") or DEFAULTS["cluster.storage"].value in storage_tiers:
        if storage_tiers or r.given("cluster.storage"):
            tier = _slug(r, "cluster.storage", storage_tiers, "storage tier")
    elif storage_tiers:
        tier = next(iter(storage_tiers.values()))
        r.get("cluster.storage", tier.slug, "slug", "first catalog storage tier (catalog has no lustre)")

    return tier


def _resolve_resale(r: _Resolver, v: dict[str, Any], resale: Sequence[ResaleCurve]) -> None:
    """The residual value after the depreciation life from the catalog's series of the accelerator that
    covers that age (resale.py), when the request gives none; else the request's value or the default."""
    if r.given("on_prem.residual_fraction"):
        return
    age = float(v["on_prem.depreciation_years"])
    curve = covering(resale, age_years=age)
    fraction = None if curve is None else curve.fraction_at(age_years=age)
    if curve is None or fraction is None or not 0 <= fraction < 1:
        return
    unit = DEFAULTS["on_prem.residual_fraction"].unit
    # The series' date goes in the source sentence, not in as_of: as_of marks a price the stale-price check
    # reads, and a resale curve is no price to refresh from a price list.
    v["on_prem.residual_fraction"] = r.get(
        "on_prem.residual_fraction", fraction, unit, curve.describe(age_years=age)
    )


def _resolve_owning(
    r: _Resolver,
    v: dict[str, Any],
    catalog: CatalogSpecs,
    server: ServerTypeSpec | None,
    accelerator: AcceleratorSpec,
    switch: SwitchSpec,
) -> str:
    """Staff, horizon, utilization, the owning rates, server price, node power and network prices; returns
    the colocation pricing (space_only | all_in)."""
    v["on_prem.staff_fte"] = _staff_fte(r, int(v["nodes"]))
    colo_pricing = r.get("colocation.pricing")
    if colo_pricing not in ("space_only", "all_in"):
        raise InputError("must be space_only or all_in", field="colocation.pricing")
    v["horizon_years"] = r.get("horizon_years")
    v["utilization"] = r.get("utilization")
    for name in (
        "depreciation_years",
        "discount_rate",
        "residual_fraction",
        "pue",
        "usd_per_kwh",
        "colo_usd_per_kw_month",
        "maintenance_fraction_per_year",
        "staff_usd_per_fte_year",
        "idle_power_fraction",
        "load_power_fraction",
        "installation_fraction",
        "storage_usd_per_tb",
    ):
        v[f"on_prem.{name}"] = r.get(f"on_prem.{name}")

    v["on_prem.server_usd"] = _server_price(r, catalog, server, accelerator, int(v["gpus_per_node"]))
    _resolve_node_power(r, v, server, accelerator)

    for name, attr in (("switch_usd", "price_usd"), ("switch_power_w", "power_w")):
        v[f"network.{name}"] = r.prefer(
            f"network.{name}", getattr(switch, attr), f"switch {switch.slug} (catalog)"
        )
    v["network.cable_usd"] = r.get("network.cable_usd")
    v["network.transceiver_usd"] = r.get("network.transceiver_usd")
    _resolve_node_optics(r, v, _owned_server(catalog, server, accelerator, int(v["gpus_per_node"])))
    v["network.switch_transceiver_w"] = r.get("network.switch_transceiver_w")

    return str(colo_pricing)


# Server types whose scale-out NICs sit behind twin-port OSFP cages, one two-port transceiver per cage: "Four
# OSFP ports serving eight single-port NVIDIA ConnectX-7 VPI" (DGX H100/H200; DGX B200: "4x OSFP ports serving
# 8x single-port NVIDIA ConnectX-7 VPI"), NVIDIA DGX BasePOD reference architecture, Core Components; "The
# compute fabric ports in the middle use a two-port transceiver to access all eight GPUs", NVIDIA DGX
# SuperPOD H100 reference architecture, Network Fabrics. A DGX A100's eight HDR ConnectX-6 have a port each.
TWIN_PORT_SERVERS = frozenset({"dgx-h100", "dgx-h200", "dgx-b200"})
TWIN_PORT_SOURCE = (
    "four OSFP ports serve eight single-port ConnectX-7 (NVIDIA DGX BasePOD reference architecture, Core"
    " Components), each with a two-port transceiver (NVIDIA DGX SuperPOD H100 reference architecture, Network"
    " Fabrics)"
)
TWIN_PORT_TRANSCEIVER_W = (
    15.0,
    "NVIDIA MMA4Z00-NS 800Gb/s twin-port OSFP: 15 W in every configuration (NVIDIA product specification,"
    " Overview); the DGX side takes its flat-top form",
)


def _owned_server(
    catalog: CatalogSpecs, server: ServerTypeSpec | None, accelerator: AcceleratorSpec, gpn: int
) -> ServerTypeSpec | None:
    """The server type owning buys: the named one, else the catalog's priced server type of this accelerator
    with this many GPUs (newest figure, then slug), as _server_price picks it; None without one."""
    if server is not None:
        return server
    priced = [
        s
        for s in catalog.server_types.values()
        if s.accelerator == accelerator.slug and s.gpus_per_node == gpn and s.price_usd is not None
    ]
    return max(priced, key=lambda s: (s.as_of, s.slug), default=None)


def _resolve_node_optics(r: _Resolver, v: dict[str, Any], server: ServerTypeSpec | None) -> None:
    """NIC ports per node-side transceiver (2 on a twin-port-cage DGX, else 1) and that transceiver's power
    (15 W twin-port, else the single-port default), each the request's value when given."""
    path = "network.node_ports_per_transceiver"
    if server is not None and server.slug in TWIN_PORT_SERVERS and not r.given(path):
        v[path] = r.get(path, 2, DEFAULTS[path].unit, f"server type {server.slug}: {TWIN_PORT_SOURCE}")
    else:
        v[path] = r.get(path)
    watts = "network.node_transceiver_w"
    if int(v[path]) == 2 and not r.given(watts):
        v[watts] = r.get(watts, TWIN_PORT_TRANSCEIVER_W[0], "W/transceiver", TWIN_PORT_TRANSCEIVER_W[1])
    else:
        v[watts] = r.get(watts)


def _resolve_node_power(
    r: _Resolver, v: dict[str, Any], server: ServerTypeSpec | None, accelerator: AcceleratorSpec
) -> None:
    """Node power: the server type's, else GPUs × TDP × the DGX H100 ratio, else the request's (required)."""
    gpn = v["gpus_per_node"]
    if server is not None and server.node_power_kw is not None:
        v["on_prem.node_power_kw"] = r.get(
            "on_prem.node_power_kw", server.node_power_kw, "kW/node", f"server type {server.slug} (catalog)"
        )
    elif accelerator.tdp_w > 0:
        v["on_prem.node_power_kw"] = r.get(
            "on_prem.node_power_kw",
            gpn * accelerator.tdp_w / 1000.0 * NODE_POWER_PER_GPU_TDP,
            "kW/node",
            f"{gpn} × {num(accelerator.tdp_w)} W TDP × {NODE_POWER_PER_GPU_TDP:.3f} (DGX H100: 10.2 kW for"
            " 8 × 700 W, NVIDIA DGX H100 datasheet, recalled)",
        )
    elif r.given("on_prem.node_power_kw"):
        v["on_prem.node_power_kw"] = r.get("on_prem.node_power_kw")
    else:
        raise InputError(
            f"{accelerator.name} has no TDP in the catalog; give the node power",
            field="on_prem.node_power_kw",
        )


def _resolve_offering(
    r: _Resolver,
    v: dict[str, Any],
    offerings: Mapping[str, CloudOfferingSpec],
    accelerator: AcceleratorSpec,
    freshness: Freshness | None,
) -> CloudOfferingSpec | None:
    """The named offering, else offerings.default_offering's pick; None when nothing rents the accelerator."""
    # Cloud: the named offering, or the one offerings.default_offering picks for this accelerator: a current
    # (not stale) on-demand price first, whole nodes of this size, the newest price, then the cheaper.
    offering: CloudOfferingSpec | None = None
    if r.given("cloud.offering"):
        offering = _slug(r, "cloud.offering", offerings, "cloud offering")
    else:
        slug = default_offering(
            offerings,
            accelerator=accelerator.slug,
            gpus_per_node=int(v["gpus_per_node"]),
            freshness=freshness,
        )
        if slug is not None:
            offering = offerings[slug]
            r.get(
                "cloud.offering",
                slug,
                "slug",
                f"default offering for {accelerator.slug}: "
                + (f"on-demand priced in the last {freshness.stale_after_days} days, " if freshness else "")
                + f"{offering.gpu_count}-GPU nodes, newest price"
                f" ({offering.price_as_of.get('on_demand', '?')}), then cheaper per GPU",
            )
    return offering


def _resolve_spot_rate(r: _Resolver, v: dict[str, Any], offering: CloudOfferingSpec | None) -> None:
    """Spot interruptions per node-day, given per day or per trailing month (AWS Spot Advisor's unit); the
    assumptions show both units."""
    monthly = "cloud.spot_interruptions_per_node_month"
    if r.given(monthly) and not r.given("cloud.spot_preemptions_per_day"):
        per_month = r.get(monthly, unit="per node per trailing month (AWS Spot Advisor's unit)")
        v["cloud.spot_preemptions_per_day"] = r.get(
            "cloud.spot_preemptions_per_day",
            per_month / DAYS_PER_MONTH,
            "per node-day",
            f"{monthly} {num(per_month)} ÷ {DAYS_PER_MONTH:.2f} days",
        )
    else:
        v["cloud.spot_preemptions_per_day"] = r.prefer(
            "cloud.spot_preemptions_per_day",
            None if offering is None else offering.spot_preemptions_per_day,
            f"{None if offering is None else offering.slug} (catalog)",
        )
        r.get(
            monthly,
            v["cloud.spot_preemptions_per_day"] * DAYS_PER_MONTH,
            "per node per trailing month (AWS Spot Advisor's unit)",
            f"cloud.spot_preemptions_per_day × {DAYS_PER_MONTH:.2f} days (the same rate, shown per month)",
        )


def _resolve_cloud(
    r: _Resolver,
    v: dict[str, Any],
    offerings: Mapping[str, CloudOfferingSpec],
    accelerator: AcceleratorSpec,
    tier: StorageTierSpec | None,
    freshness: Freshness | None,
) -> tuple[CloudOfferingSpec | None, list[str]]:
    """The offering, each priced model's $/node-hour, overheads, cloud storage and the spot rate."""
    gpn = v["gpus_per_node"]
    offering = _resolve_offering(r, v, offerings, accelerator, freshness)
    models: list[str] = []
    for model in PRICING_MODELS:
        path = f"cloud.usd_per_node_hour.{model}"
        if r.given(path):
            v[path] = r.get(path, unit="USD/node-hour")
        elif offering is not None and model in offering.usd_per_hour:
            scale = gpn / offering.gpu_count
            price = offering.usd_per_hour[model] * scale
            note = "" if scale == 1 else f" × {num(gpn)}/{offering.gpu_count} GPUs"
            v[path] = r.get(
                path,
                price,
                "USD/node-hour",
                f"{offering.slug} {model} {usd(offering.usd_per_hour[model])}/instance-h{note}, as of "
                f"{offering.price_as_of.get(model, '?')}: {offering.price_source.get(model, '')}",
                as_of=offering.price_as_of.get(model, ""),
            )
        else:
            continue
        models.append(model)
    for name in ("managed_overhead_fraction", "egress_tb", "egress_usd_per_gb"):
        v[f"cloud.{name}"] = r.get(f"cloud.{name}")
    v["cloud.storage_usd_per_tb_month"] = r.prefer(
        "cloud.storage_usd_per_tb_month",
        None if tier is None else tier.usd_per_tb_month,
        f"storage tier {None if tier is None else tier.slug} (catalog)",
    )
    _resolve_spot_rate(r, v, offering)
    return offering, models


def _resolve_storage(r: _Resolver, v: dict[str, Any]) -> bool:
    """Failure rates and storage sizing; returns whether checkpoints are asynchronous."""
    for name in ("storage.mb_s_per_tib", "storage.target_write_s"):
        if r.given(name):
            v[name] = r.get(name, unit="MB/s per TiB provisioned" if name.endswith("tib") else "s")
    v["failures.failures_per_gpu_day"] = r.get("failures.failures_per_gpu_day")
    v["failures.restart_minutes"] = r.get("failures.restart_minutes")
    for name in ("checkpoint_bytes_per_param", "bytes_per_token", "checkpoints_kept", "dataset_tb"):
        v[f"storage.{name}"] = r.get(f"storage.{name}")
    async_ckpt = bool(r.get("storage.async_checkpoint"))
    if r.given("storage.capacity_tb"):
        v["storage.capacity_tb"] = r.get("storage.capacity_tb")

    return async_ckpt


def _resolve_run(
    r: _Resolver, v: dict[str, Any], training: Mapping[str, Any] | None
) -> tuple[str, float | None, float | None, float | None]:
    """The run: days from the training engine, else given days, else GPU-hours; params, tokens, tokens/s
    and the checkpoint interval. Returns (run source, tokens, tokens/s, interval minutes)."""
    # The run: days from the training engine, else given days, else GPU-hours on this cluster.
    run_source = "none"
    if training is not None and training.get("fits", True) and training.get("time_to_train_days"):
        v["run.days"] = r.get(
            "run.days",
            float(training["time_to_train_days"]),
            "days",
            "training engine estimate (time_to_train_days)",
        )
        run_source = "training" if not r.given("run.days") else "run.days"
    elif r.given("run.days"):
        v["run.days"] = r.get("run.days")
        run_source = "run.days"
    elif r.given("run.gpu_hours"):
        v["run.gpu_hours"] = r.get("run.gpu_hours", unit="GPU-hours")
        run_source = "run.gpu_hours"
    # The training engine's estimate() reports params and tokens under summary; tokens_per_second at the top.
    summary = (training or {}).get("summary") or {}
    params = _number(training, "params") or _number(summary.get("model"), "params")
    if params is not None and not r.given("run.params_b"):
        v["run.params_b"] = r.get(
            "run.params_b", params / 1e9, "billion parameters", "training engine result"
        )
    else:
        v["run.params_b"] = r.get("run.params_b")
    tokens = _number(summary.get("training"), "tokens")
    if r.given("run.tokens") or tokens is None:
        tokens = r.get("run.tokens", unit="tokens") if r.given("run.tokens") else None
    else:
        r.get("run.tokens", tokens, "tokens", "training engine result")
    tps = _number(training, "tokens_per_second")
    if r.given("run.tokens_per_second") or tps is None:
        tps = r.get("run.tokens_per_second", unit="tokens/s") if r.given("run.tokens_per_second") else None
    else:
        r.get("run.tokens_per_second", tps, "tokens/s", "training engine result")
    interval = (
        r.get("run.checkpoint_interval_minutes", unit="minutes")
        if r.given("run.checkpoint_interval_minutes")
        else None
    )
    return run_source, tokens, tps, interval


def _resolve(
    request: Mapping[str, Any],
    catalog: CatalogSpecs,
    training: Mapping[str, Any] | None,
    freshness: Freshness | None = None,
    resale: Sequence[ResaleCurve] = (),
) -> tuple[dict[str, Any], _Context, _Resolver]:
    """Every value the evaluation uses, with its unit and source (request, catalog or DEFAULTS), in order."""
    if not isinstance(request, Mapping):
        raise InputError("the request must be a JSON object", field="")
    _check_on_prem_keys(request)
    r = _Resolver(request)
    v: dict[str, Any] = {}
    server, accelerator, mixed = _resolve_accelerator(r, request, catalog)
    fabric = _slug(r, "cluster.fabric", catalog.fabrics, "fabric")
    rail, topology = _resolve_cluster(r, v, server)
    _resolve_trays(r, v, catalog, accelerator)
    switch = _resolve_switch(r, catalog.switches, fabric)
    tier = _resolve_tier(r, catalog.storage_tiers)
    colo_pricing = _resolve_owning(r, v, catalog, server, accelerator, switch)
    _resolve_resale(r, v, resale)
    offering, models = _resolve_cloud(r, v, catalog.offerings, accelerator, tier, freshness)
    async_ckpt = _resolve_storage(r, v)
    run_source, tokens, tps, interval = _resolve_run(r, v, training)
    v["sensitivity.fraction"] = r.get("sensitivity.fraction")
    _resolve_cashflow(r, v)
    ctx = _Context(
        accelerator=accelerator,
        fabric=fabric,
        switch=switch,
        tier=tier,
        tiers=catalog.storage_tiers,
        offering=offering,
        pricing_models=tuple(models),
        rail_optimized=rail,
        topology=topology,
        async_checkpoint=async_ckpt,
        run_source=run_source,
        checkpoint_interval_minutes=interval,
        tokens=tokens,
        tokens_per_second=tps,
        training=training,
        cluster_accelerators=tuple(mixed),
        colo_all_in=colo_pricing == "all_in",
    )
    return v, ctx, r


def _line(x: Line) -> dict[str, Any]:
    return x.as_dict()


def _network(v: Mapping[str, Any], ctx: _Context) -> tuple[dict[str, Any], float, float]:
    racks, per_tray = int(v["nodes"]), int(v["nics_per_tray"])
    # The fabric sees trays: a rack-scale node of 72 NICs is 18 trays of 4 (rails per tray, not per rack).
    nodes, nics = racks * (int(v["nics_per_node"]) // per_tray), per_tray
    if racks == 1:
        return (
            {"topology": "none", "capex_usd": 0.0, "power_kw": 0.0, "note": "one node: no scale-out network"},
            0.0,
            0.0,
        )
    per_cage = 2 if ctx.fabric.kind == "infiniband" else 1  # NDR twin-port OSFP: 2 ports per cage
    port, radix = ctx.fabric.port_gbps, ctx.switch.ports
    node_cage = int(v["network.node_ports_per_transceiver"])
    tree = fat_tree(
        nodes=nodes,
        nics_per_node=nics,
        port_gbps=port,
        radix=radix,
        oversubscription=float(v["oversubscription"]),
        rail_optimized=ctx.rail_optimized,
        ports_per_transceiver=per_cage,
        node_ports_per_transceiver=node_cage,
    )
    # Dragonfly+ is the large-cluster alternative: sized when asked for or when a fat-tree runs out of tiers.
    dfp = None
    if tree is None or ctx.topology == "dragonfly_plus":
        dfp = dragonfly_plus(
            nodes=nodes,
            nics_per_node=nics,
            port_gbps=port,
            radix=radix,
            ports_per_transceiver=per_cage,
            node_ports_per_transceiver=node_cage,
        )
    chosen: Topology = tree if tree is not None and dfp is None else dfp  # type: ignore[assignment]
    cost = network_cost(
        topology=chosen,
        switch_usd=v["network.switch_usd"],
        cable_usd=v["network.cable_usd"],
        transceiver_usd=v["network.transceiver_usd"],
        switch_power_w=v["network.switch_power_w"],
        node_transceiver_w=v["network.node_transceiver_w"],
        switch_transceiver_w=v["network.switch_transceiver_w"],
    )
    out = {
        "topology": chosen.name,
        "chosen": chosen.as_dict(),
        "fat_tree": None if tree is None else tree.as_dict(),
        "dragonfly_plus": None if dfp is None else dfp.as_dict(),
        "endpoints": chosen.endpoints,
        "nic_gbps": ctx.fabric.port_gbps,
        "switch": ctx.switch.slug,
        "switch_radix": ctx.switch.ports,
        "oversubscription": v["oversubscription"],
        "rail_optimized": ctx.rail_optimized,
        "bisection_gbps": chosen.bisection_gbps,
        "capex_parts": {
            "switches": _line(
                Line(cost.switches_usd, f"{chosen.switches} switches × {usd(v['network.switch_usd'])}")
            ),
            "cables": _line(Line(cost.cables_usd, f"{chosen.cables} cables × {usd(v['network.cable_usd'])}")),
            "transceivers": _line(
                Line(
                    cost.transceivers_usd,
                    f"({chosen.node_transceivers} node-side: {nodes} nodes × ⌈{nics} NICs ÷ {node_cage}⌉ + "
                    f"{chosen.switch_transceivers} switch-side) transceivers × "
                    f"{usd(v['network.transceiver_usd'])}",
                )
            ),
        },
        "capex_usd": cost.capex_usd,
        "power_kw": cost.power_kw,
        "power_formula": f"{chosen.switches} switches × {num(v['network.switch_power_w'])} W + "
        f"{chosen.node_transceivers} node-side transceivers × {num(v['network.node_transceiver_w'])} W + "
        f"{chosen.switch_transceivers} switch-side × {num(v['network.switch_transceiver_w'])} W",
    }
    if tree is None:
        out["note"] = "beyond a three-tier fat-tree of this radix: Dragonfly+ used"
    if ctx.switch.port_gbps < ctx.fabric.port_gbps:
        out["warning"] = (
            f"switch {ctx.switch.slug} ports run at {num(ctx.switch.port_gbps)} Gb/s, below the "
            f"{num(ctx.fabric.port_gbps)} Gb/s NICs"
        )
    return out, cost.capex_usd, cost.power_kw


def _evaluate_storage(
    v: Mapping[str, Any], ctx: _Context
) -> tuple[dict[str, Any], float, float | None, float]:
    """Checkpoint size, capacity, save time and dataset bandwidth; returns (storage, capacity TB, run days,
    blocking write seconds)."""
    nodes, gpn = int(v["nodes"]), int(v["gpus_per_node"])
    gpus = nodes * gpn
    # Storage: checkpoint size, capacity, save time, dataset bandwidth.
    params = float(v["run.params_b"]) * 1e9
    ckpt_gb = checkpoint_gb(params=params, bytes_per_param=float(v["storage.checkpoint_bytes_per_param"]))
    capacity_tb = v.get("storage.capacity_tb")
    capacity_formula = "request"
    if capacity_tb is None:
        dataset_tb = float(v["storage.dataset_tb"])
        if ctx.tokens is not None:
            dataset_tb = ctx.tokens * float(v["storage.bytes_per_token"]) / 1e12
        capacity_tb = dataset_tb + float(v["storage.checkpoints_kept"]) * ckpt_gb / 1000.0
        capacity_formula = (
            f"{num(dataset_tb)} TB dataset + {num(v['storage.checkpoints_kept'])} checkpoints × "
            f"{num(ckpt_gb / 1000.0)} TB"
        )
    days: float | None = None
    if "run.days" in v:
        days = float(v["run.days"])
    elif "run.gpu_hours" in v:
        days = float(v["run.gpu_hours"]) / gpus / 24.0
    tps = ctx.tokens_per_second
    if tps is None and ctx.tokens is not None and days is not None:
        tps = ctx.tokens / (days * 86_400.0)
    read_needed = (
        None
        if tps is None
        else dataset_read_gbps(tokens_per_s=tps, bytes_per_token=float(v["storage.bytes_per_token"]))
    )
    tiers, per_tib = ctx.tiers, v.get("storage.mb_s_per_tib")
    if per_tib is not None and ctx.tier is not None:
        tiers = {**tiers, ctx.tier.slug: replace(ctx.tier, mb_s_per_tib=float(per_tib))}
    capacity_tib = float(capacity_tb) * 1e12 / 2**40
    timings = save_timings(
        checkpoint_size_gb=ckpt_gb,
        nodes=nodes,
        tiers=tiers,
        read_needed_gbps=read_needed,
        capacity_tib=capacity_tib,
    )
    write_s = 0.0
    if ctx.tier is not None:
        chosen = timings[ctx.tier.slug]
        write_s = chosen.blocking_save_s
        if ctx.async_checkpoint and chosen.async_blocking_s is not None:
            write_s = chosen.async_blocking_s
    storage = {
        "tier": None if ctx.tier is None else ctx.tier.slug,
        "checkpoint_gb": ckpt_gb,
        "checkpoint_formula": f"{num(v['run.params_b'])}e9 params × "
        f"{num(v['storage.checkpoint_bytes_per_param'])}"
        " bytes/param",
        "capacity_tb": capacity_tb,
        "capacity_formula": capacity_formula,
        "checkpoint_write_s": write_s,
        "capacity_tib": capacity_tib,
        **_capacity_for_target(v, ctx, tiers, ckpt_gb),
        "async_checkpoint": ctx.async_checkpoint,
        "dataset_read_needed_gbps": read_needed,
        "tiers": {slug: t.as_dict() for slug, t in timings.items()},
    }

    return storage, float(capacity_tb), days, write_s


def _capacity_for_target(
    v: Mapping[str, Any], ctx: _Context, tiers: Mapping[str, StorageTierSpec], ckpt_gb: float
) -> dict[str, Any]:
    """With storage.target_write_s and a per-TiB tier: the TiB that save a checkpoint in that time."""
    target = v.get("storage.target_write_s")
    tier = None if ctx.tier is None else tiers[ctx.tier.slug]
    if target is None or tier is None or tier.mb_s_per_tib is None:
        return {}
    tib = capacity_for_write_tib(
        checkpoint_size_gb=ckpt_gb, target_write_s=float(target), mb_s_per_tib=tier.mb_s_per_tib
    )
    return {
        "capacity_for_target_write_tib": tib,
        "capacity_for_target_write_formula": f"{num(ckpt_gb)} GB × 1,000 ÷ ({num(target)} s × "
        f"{num(tier.mb_s_per_tib)} MB/s/TiB)",
    }


def _evaluate_failures(
    v: Mapping[str, Any], ctx: _Context, write_s: float, days: float | None
) -> tuple[FailureResult, FailureResult, dict[str, Any], dict[str, str], tuple[str, ...]]:
    """Every option shares hardware failures; spot adds preemptions. Returns (base, spot, failures,
    unavailable options with why, the pricing models that can finish)."""
    nodes, gpn = int(v["nodes"]), int(v["gpus_per_node"])
    gpus = nodes * gpn
    # Failures: every option shares hardware failures; spot adds preemptions on top.
    fail_rate = float(v["failures.failures_per_gpu_day"])
    restart = float(v["failures.restart_minutes"])
    base = failure_model(
        gpus=gpus,
        nodes=nodes,
        failures_per_gpu_day=fail_rate,
        preemptions_per_node_day=0.0,
        checkpoint_write_s=write_s,
        restart_minutes=restart,
        run_days=days,
        interval_minutes=ctx.checkpoint_interval_minutes,
    )
    spot = failure_model(
        gpus=gpus,
        nodes=nodes,
        failures_per_gpu_day=fail_rate,
        preemptions_per_node_day=float(v["cloud.spot_preemptions_per_day"]),
        checkpoint_write_s=write_s,
        restart_minutes=restart,
        run_days=days,
        interval_minutes=ctx.checkpoint_interval_minutes,
    )
    # An option whose goodput is 0 never finishes the run: it is left out of the comparison and said so.
    spot_factor = base.goodput / spot.goodput if spot.goodput > 0 and base.goodput > 0 else None
    unavailable: dict[str, str] = {}
    if spot_factor is None and "spot" in ctx.pricing_models:
        unavailable["spot"] = _cannot_finish("spot", spot if spot.goodput <= 0 else base)
    priced_models = tuple(m for m in ctx.pricing_models if m not in unavailable)
    failures = {
        "on_prem_and_reserved": _failure_dict(base),
        "spot": _failure_dict(spot),
        "spot_hours_factor": spot_factor,
        "model": "goodput = 1 − δ/τ − (τ/2 + restart)/MTBI; τ* = √(2·δ·MTBI) (Young 1974)",
    }

    return base, spot, failures, unavailable, priced_models


def _evaluate_owning(
    v: Mapping[str, Any],
    ctx: _Context,
    network: dict[str, Any],
    network_capex: float,
    network_kw: float,
    storage: dict[str, Any],
    capacity_tb: float,
) -> tuple[Any, dict[str, Any]]:
    """Owning over the horizon (tco.on_prem_cost) and its JSON; adds network and storage capex shares."""
    nodes, gpn = int(v["nodes"]), int(v["gpus_per_node"])
    u, horizon = float(v["utilization"]), float(v["horizon_years"])
    # Owning.
    storage_capex = capacity_tb * float(v["on_prem.storage_usd_per_tb"])
    inputs = OnPremInputs(
        nodes=nodes,
        gpus_per_node=gpn,
        server_usd=float(v["on_prem.server_usd"]),
        network_capex_usd=network_capex,
        storage_capex_usd=storage_capex,
        installation_fraction=float(v["on_prem.installation_fraction"]),
        node_power_kw=float(v["on_prem.node_power_kw"]),
        network_power_kw=network_kw,
        pue=float(v["on_prem.pue"]),
        usd_per_kwh=float(v["on_prem.usd_per_kwh"]),
        idle_power_fraction=float(v["on_prem.idle_power_fraction"]),
        colo_usd_per_kw_month=float(v["on_prem.colo_usd_per_kw_month"]),
        maintenance_fraction_per_year=float(v["on_prem.maintenance_fraction_per_year"]),
        staff_fte=float(v["on_prem.staff_fte"]),
        staff_usd_per_fte_year=float(v["on_prem.staff_usd_per_fte_year"]),
        depreciation_years=float(v["on_prem.depreciation_years"]),
        discount_rate=float(v["on_prem.discount_rate"]),
        residual_fraction=float(v["on_prem.residual_fraction"]),
        load_power_fraction=float(v["on_prem.load_power_fraction"]),
        colo_all_in=ctx.colo_all_in,
    )
    own = on_prem_cost(inputs=inputs, utilization=u, horizon_years=horizon)
    network["share_of_capex"] = network_capex / own.capex_usd if own.capex_usd else 0.0
    on_prem = {
        "capex_usd": own.capex_usd,
        "capex_parts": {k: _line(x) for k, x in own.capex_parts.items()},
        "annual_usd": own.annual_usd,
        "annual": {k: _line(x) for k, x in own.annual_parts.items()},
        "years": [row.__dict__ for row in own.years],
        "total_usd": own.total.usd,
        "total_formula": own.total.formula,
        "cash_total_usd": sum(row.cash_usd for row in own.years),
        "accounting_total_usd": sum(row.accounting_usd for row in own.years),
        "npv_usd": own.npv.usd,
        "npv_formula": own.npv.formula,
        "usd_per_gpu_hour": own.usd_per_gpu_hour.usd,
        "usd_per_gpu_hour_formula": own.usd_per_gpu_hour.formula,
        "it_power_kw": own.it_power_kw,
        "cost_vs_utilization": {
            "fixed_usd": own.linear.fixed_usd,
            "per_utilization_usd": own.linear.per_utilization_usd,
        },
    }
    storage["on_prem_capex"] = _line(
        Line(storage_capex, f"{num(capacity_tb)} TB × {usd(v['on_prem.storage_usd_per_tb'])}/TB")
    )

    return own, on_prem


def _evaluate_renting(
    v: Mapping[str, Any],
    ctx: _Context,
    models: tuple[str, ...],
    own: Any,
    storage: dict[str, Any],
    capacity_tb: float,
    spot_factor: float | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Each pricing model's bill over the horizon, its break-even with owning, the cost curves and each
    model's cost line in utilization."""
    priced_models = models
    nodes, gpn = int(v["nodes"]), int(v["gpus_per_node"])
    u, horizon = float(v["utilization"]), float(v["horizon_years"])
    # Renting.
    months = horizon * MONTHS_PER_YEAR
    storage_usd = capacity_tb * float(v["cloud.storage_usd_per_tb_month"]) * months
    egress_usd = float(v["cloud.egress_tb"]) * 1000.0 * float(v["cloud.egress_usd_per_gb"])
    storage["cloud_cost"] = _line(
        Line(
            storage_usd,
            f"{num(capacity_tb)} TB × "
            f"{usd(v['cloud.storage_usd_per_tb_month'])}/TB-month × "
            f"{num(months)} months",
        )
    )
    cloud: dict[str, Any] = {}
    break_even: dict[str, Any] = {}
    rent_lines = {}
    for model in priced_models:
        price = float(v[f"cloud.usd_per_node_hour.{model}"])
        res = cloud_cost(
            pricing_model=model,
            usd_per_node_hour=price,
            nodes=nodes,
            gpus_per_node=gpn,
            utilization=u,
            horizon_years=horizon,
            managed_overhead_fraction=float(v["cloud.managed_overhead_fraction"]),
            storage_usd=storage_usd,
            egress_usd=egress_usd,
            spot_hours_factor=spot_factor if model == "spot" and spot_factor is not None else 1.0,
        )
        rent_lines[model] = res.linear
        cloud[model] = {
            "usd_per_node_hour": price,
            "total_usd": res.total.usd,
            "total_formula": res.total.formula,
            "parts": {k: _line(x) for k, x in res.parts.items()},
            "usd_per_gpu_hour": res.usd_per_gpu_hour.usd,
            "usd_per_gpu_hour_formula": res.usd_per_gpu_hour.formula,
            "billed_node_hours": res.billed_node_hours,
            "cost_vs_utilization": {
                "fixed_usd": res.linear.fixed_usd,
                "per_utilization_usd": res.linear.per_utilization_usd,
            },
        }
        if model in SAVINGS_PLANS:
            nodes = int(v["nodes"])
            cloud[model]["commitment_usd_per_hour"] = nodes * price
            cloud[model]["commitment_formula"] = (
                f"{nodes} nodes × {usd(price)}/node-h, committed for every hour of each "
                f"{num(COMMITMENT_YEARS[model])}-year term"
            )
        if model in COMMITMENT_YEARS and "on_demand" in ctx.pricing_models:
            od = float(v["cloud.usd_per_node_hour.on_demand"])
            billed_years = committed_years(pricing_model=model, horizon_years=horizon) or horizon
            cloud[model]["break_even_vs_on_demand_utilization"] = reservation_break_even(
                reserved_usd_per_hour=price,
                on_demand_usd_per_hour=od,
                billed_years=billed_years,
                horizon_years=horizon,
            )
            cloud[model]["break_even_vs_on_demand_formula"] = (
                f"{num(billed_years)} billed years ÷ {num(horizon)}-year horizon × "
                f"{usd(price)} {'committed' if model in SAVINGS_PLANS else 'reserved'} ÷ {usd(od)} on-demand"
            )
        u_star = break_even_utilization(own=own.linear, rent=res.linear)
        slope = res.linear.per_utilization_usd - own.linear.per_utilization_usd
        break_even[model] = {
            "utilization": u_star,
            "meaning": break_even_meaning(own=own.linear, rent=res.linear, u_star=u_star),
            "formula": f"(own fixed {usd(own.linear.fixed_usd)} − rent fixed {usd(res.linear.fixed_usd)}) ÷ "
            f"(rent per-utilization {usd(res.linear.per_utilization_usd)} − own per-utilization "
            f"{usd(own.linear.per_utilization_usd)})"
            if abs(slope) > 0
            else "parallel cost lines",
        }
    grid = np.round(np.linspace(0.05, 1.0, 20), 4)
    curves = {
        "utilization": grid.tolist(),
        "on_prem_usd": (own.linear.fixed_usd + own.linear.per_utilization_usd * grid).tolist(),
        **{
            f"{m}_usd": (ln.fixed_usd + ln.per_utilization_usd * grid).tolist()
            for m, ln in rent_lines.items()
        },
    }

    return cloud, break_even, curves, rent_lines


def _evaluate_per_run(
    v: Mapping[str, Any],
    ctx: _Context,
    days: float | None,
    base: FailureResult,
    spot: FailureResult,
    models: tuple[str, ...],
    own: Any,
    cloud: Mapping[str, Any],
) -> dict[str, Any]:
    """Days with failures and the cost of one run per option, or why no option can finish it."""
    gpus = int(v["nodes"]) * int(v["gpus_per_node"])
    priced_models = models
    # Per run.
    per_run: dict[str, Any] = {"source": ctx.run_source}
    trained_on = ((ctx.training or {}).get("summary") or {}).get("cluster") or {}
    if ctx.run_source == "training" and trained_on.get("gpus") not in (None, gpus):
        per_run["warning"] = (
            f"the training estimate is for {trained_on['gpus']} GPUs, this design has {gpus}: "
            "its days do not apply"
        )
    if days is not None and base.goodput <= 0:
        per_run["days"] = days
        per_run["cannot_finish"] = _cannot_finish("any option", base)
    elif days is not None:
        eff = base.effective_days if base.effective_days is not None else days
        spot_eff = spot.effective_days if spot.goodput > 0 and spot.effective_days is not None else None
        per_run.update(
            {
                "days": days,
                "effective_days": eff,
                "spot_effective_days": spot_eff,
                "days_formula": (
                    f"{num(v['run.gpu_hours'])} GPU-hours ÷ {gpus} GPUs ÷ 24"
                    if "run.gpu_hours" in v
                    else ctx.run_source
                ),
                "effective_days_formula": f"{num(days)} days ÷ goodput {base.goodput:.4f}",
            }
        )
        per_run["usd"] = _per_run_options(v, ctx, priced_models, own, cloud, eff, spot_eff)
        _per_run_band(per_run, ctx)

    return per_run


def _band_ratios(ctx: _Context) -> tuple[float, float] | None:
    """(low, high) of the training estimate's error band as fractions of its days (engine/error_band.py),
    when the run's days are the training estimate's and it carries a band."""
    training = ctx.training or {}
    band, days = training.get("error_band"), _number(training, "time_to_train_days")
    if ctx.run_source != "training" or not isinstance(band, Mapping) or not days:
        return None
    return float(band["days_low"]) / days, float(band["days_high"]) / days


def _per_run_band(per_run: dict[str, Any], ctx: _Context) -> None:
    """Carry the training estimate's error band to the run: days, effective days and every option's cost
    scale with the failure-free days (each is days × a rate, the goodput taken at the estimate's days), so
    each gets ``_low`` and ``_high`` at the band's ends."""
    ratios = _band_ratios(ctx)
    if ratios is None:
        return
    low, high = ratios
    for key in ("days", "effective_days", "spot_effective_days"):
        if per_run.get(key) is not None:
            per_run[f"{key}_low"], per_run[f"{key}_high"] = per_run[key] * low, per_run[key] * high
    for option in per_run["usd"].values():
        option["usd_low"], option["usd_high"] = option["usd"] * low, option["usd"] * high


def _evaluate(v: Mapping[str, Any], ctx: _Context) -> dict[str, Any]:
    """Everything except sensitivity and findings, from resolved values ``v`` alone."""
    network, network_capex, network_kw = _network(v, ctx)
    storage, capacity_tb, days, write_s = _evaluate_storage(v, ctx)
    base, spot, failures, unavailable, models = _evaluate_failures(v, ctx, write_s, days)
    own, on_prem = _evaluate_owning(v, ctx, network, network_capex, network_kw, storage, capacity_tb)
    cloud, break_even, curves, rent_lines = _evaluate_renting(
        v, ctx, models, own, storage, capacity_tb, failures["spot_hours_factor"]
    )
    return {
        "on_prem": on_prem,
        "cloud": cloud,
        "cloud_unavailable": unavailable,
        "break_even_utilization": break_even,
        "curves": curves,
        "per_run": _evaluate_per_run(v, ctx, days, base, spot, models, own, cloud),
        "network": network,
        "storage": storage,
        "failures": failures,
        "_own_linear": own.linear,
        "_rent_linear": rent_lines,
    }


def _per_run_options(
    v: Mapping[str, Any],
    ctx: _Context,
    models: tuple[str, ...],
    own: Any,
    cloud: Mapping[str, Any],
    eff: float,
    spot_eff: float | None,
) -> dict[str, Any]:
    """Cost of one run per option, each in its frame: owning assumes the rest of the horizon is used at the
    design's utilization and shows the whole-horizon cost beside it; a reservation shows its whole
    commitment and the share of it the run uses; pay-as-you-go pays the run's hours."""
    nodes, gpus = int(v["nodes"]), int(v["nodes"]) * int(v["gpus_per_node"])
    u, over = float(v["utilization"]), 1.0 + float(v["cloud.managed_overhead_fraction"])
    owned = Line(
        eff * 24.0 * gpus * own.usd_per_gpu_hour.usd,
        f"{num(eff)} d × 24 × {gpus} GPUs × {usd(own.usd_per_gpu_hour.usd)}/GPU-h owned at {num(u)}"
        " utilization",
    )
    options: dict[str, Any] = {
        "on_prem": {
            **_line(owned),
            "assumption": f"the rest of the {num(v['horizon_years'])}-year horizon is used at {num(u)} "
            "utilization; otherwise the whole-horizon cost applies",
            "horizon_usd": own.total.usd,
        }
    }
    for model in models:
        price = float(v[f"cloud.usd_per_node_hour.{model}"])
        run_days = spot_eff if model == "spot" and spot_eff is not None else eff
        text = f"{num(run_days)} d × 24 × {nodes} nodes × {usd(price)}/node-h × {num(over)}"
        row: dict[str, Any] = _line(Line(run_days * 24.0 * nodes * price * over, text))
        if model in COMMITMENT_YEARS:
            billed = float(cloud[model]["billed_node_hours"])
            row["commitment_usd"] = float(cloud[model]["parts"]["compute"]["usd"])
            row["share_of_commitment"] = min(1.0, run_days * 24.0 * nodes / billed)
            row["formula"] += (
                f"; the commitment is {usd(row['commitment_usd'])} ({num(billed)} node-hours billed),"
                f" of which this run uses {row['share_of_commitment']:.1%}"
            )
        options[model] = row
    return options


def _cashflow_inputs(v: Mapping[str, Any], core: Mapping[str, Any]) -> CashflowInputs:
    """The monthly cash-flow model's inputs from resolved values and the evaluated horizon figures."""
    horizon, u = float(v["horizon_years"]), float(v["utilization"])
    months = max(1, round(horizon * 12))
    own, annual = core["on_prem"], core["on_prem"]["annual"]
    idle = float(v["on_prem.idle_power_fraction"])
    draw = idle + (1.0 - idle) * u
    life, residual = float(v["on_prem.depreciation_years"]), float(v["on_prem.residual_fraction"])
    used = min(horizon, life)
    spot_factor = core["failures"]["spot_hours_factor"] or 1.0
    upfront = str(v["cashflow.reserved_payment"])
    rent = tuple(
        RentOption(
            model=m,
            usd_per_node_hour=float(c["usd_per_node_hour"]),
            term_months=int(COMMITMENT_YEARS.get(m, 0) * 12),
            upfront=upfront if m in COMMITMENT_YEARS else "no_upfront",
            hours_factor=spot_factor if m == "spot" else 1.0,
        )
        for m, c in core["cloud"].items()
    )
    first = next(iter(core["cloud"].values()), None)
    extra = (
        0.0
        if first is None
        else (first["parts"]["storage"]["usd"] + first["parts"]["egress"]["usd"]) / months
    )
    return CashflowInputs(
        months=months,
        discount_rate=float(v["on_prem.discount_rate"]),
        nodes=int(v["nodes"]),
        utilization=u,
        capex_usd=float(own["capex_usd"]),
        power_full_usd_per_month=annual["energy"]["usd"] / draw / 12.0,
        idle_power_fraction=idle,
        other_opex_usd_per_month=sum(annual[k]["usd"] for k in ("colocation", "maintenance", "staff")) / 12.0,
        # Resale at the straight-line book value: residual after the depreciation life, linear before it.
        resale_fraction=1.0 - (1.0 - residual) * used / life,
        rent=rent,
        managed_overhead_fraction=float(v["cloud.managed_overhead_fraction"]),
        rent_extra_usd_per_month=extra,
        cloud_price_change_per_year=float(v["cashflow.cloud_price_change_per_year"]),
        power_escalation_per_year=float(v["cashflow.power_escalation_per_year"]),
        lead_time_months=int(v["cashflow.lead_time_months"]),
        financing=str(v["cashflow.financing"]),
        loan_rate=float(v.get("cashflow.loan_rate", 0.08)),
        loan_months=int(v.get("cashflow.loan_months", 60)),
        lease_usd_per_month=v.get("cashflow.lease_usd_per_month"),
        tax_rate=float(v["cashflow.tax_rate"]),
    )


def _cashflow(v: Mapping[str, Any], core: Mapping[str, Any]) -> dict[str, Any]:
    """Monthly cash flows, NPV, payback, IRR and the Monte Carlo; a note in words when there is no rent
    option to compare owning with."""
    if not core["cloud"]:
        return {"note": "no cloud price to compare owning with: cash flows of owning only are not compared"}
    inputs = _cashflow_inputs(v, core)
    result = cash_flows(inputs=inputs)
    spread = monte_carlo(
        inputs=inputs,
        spread=float(v["uncertainty.spread"]),
        samples=int(v["uncertainty.samples"]),
        seed=int(v["uncertainty.seed"]),
    )
    out = result.to_json()
    for row in out["rent"]:
        row["label"] = MODEL_LABELS.get(row["name"], row["name"])
    return {
        **out,
        "inputs": inputs.to_json(),
        "uncertainty": spread.to_json(),
        "convention": "monthly, end of month, discounted at (1 + r)^(1/12) − 1; rent − own (> 0: owning"
        " costs less); see docs/cost-engine.md",
    }


def _ranking(core: Mapping[str, Any]) -> dict[str, Any]:
    """Options cheapest first in one frame, the whole horizon (owning's annualised total, each rent option's
    bill over the horizon): never per-run and horizon figures mixed in one ranking."""
    totals = {"on_prem": float(core["on_prem"]["total_usd"])}
    totals.update({m: float(c["total_usd"]) for m, c in core["cloud"].items()})
    order = sorted(totals, key=lambda k: (totals[k], k))
    return {"frame": "whole horizon", "options": [{"option": k, "total_usd": totals[k]} for k in order]}


def _verdict(
    v: Mapping[str, Any],
    ctx: _Context,
    core: Mapping[str, Any],
    cashflow: Mapping[str, Any],
    sensitivity: Mapping[str, Any],
) -> dict[str, Any] | None:
    """The rent-or-own answer composed from the cash flows, the closed-form break-even and the tornado."""
    if "reference" not in cashflow:
        return None
    paygo = "on_demand" if "on_demand" in core["cloud"] else cashflow["reference"]
    be = core["break_even_utilization"].get(paygo, {}).get("utilization")
    top = sensitivity.get("rows", [])[:3]
    answer = RentOrOwn(
        horizon_years=float(v["horizon_years"]),
        utilization=float(v["utilization"]),
        gpus=int(v["nodes"]) * int(v["gpus_per_node"]),
        accelerator=ctx.accelerator.slug,
        discount_rate=float(v["on_prem.discount_rate"]),
        own_npv_usd=float(cashflow["own"]["npv_usd"]),
        rent_npv_usd={MODEL_LABELS.get(r["name"], r["name"]): float(r["npv_usd"]) for r in cashflow["rent"]},
        saving_usd=float(cashflow["npv_difference_usd"]),
        cheapest_rent=MODEL_LABELS.get(cashflow["reference"], cashflow["reference"]),
        payback_month=cashflow["payback_month"],
        break_even_utilization=be,
        break_even_option=MODEL_LABELS.get(paygo, paygo),
        movers=tuple(SENSITIVE_LABELS.get(row["name"], row["name"]) for row in top),
    )
    return answer.to_json()


def _cannot_finish(what: str, f: FailureResult) -> str:
    """Why an option never finishes, in words: interruptions arrive faster than checkpoints save work."""
    return (
        f"{what} cannot finish the run: at {f.interruptions_per_day:,.1f} interruptions a day (one every "
        f"{f.mtbi_hours * 60:,.0f} min) each checkpoint interval loses more work than it saves (goodput 0, "
        "Young 1974 first-order model); lower the interruption rate, the node count or the checkpoint time"
    )


def _failure_dict(f: FailureResult) -> dict[str, Any]:
    def finite(x: float | None) -> float | None:
        return None if x is None or not math.isfinite(x) else x

    return {
        "interruptions_per_day": f.interruptions_per_day,
        "mtbi_hours": finite(f.mtbi_hours),
        "optimal_interval_minutes": finite(f.optimal_interval_minutes),
        "interval_minutes": finite(f.interval_minutes),
        "goodput": f.goodput,
        "run_days": f.run_days,
        "effective_days": finite(f.effective_days),
        "expected_interruptions": finite(f.expected_interruptions),
        "lost_days": finite(f.lost_days),
    }


def _reference_model(core: Mapping[str, Any]) -> str | None:
    """The cheapest pricing model at the requested utilization: the one the tornado compares owning with."""
    cloud = core["cloud"]
    return min(cloud, key=lambda m: cloud[m]["total_usd"]) if cloud else None


def tco(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    offerings: Mapping[str, CloudOfferingSpec],
    storage_tiers: Mapping[str, StorageTierSpec],
    switches: Mapping[str, SwitchSpec],
    training: Mapping[str, Any] | None = None,
    server_types: Mapping[str, ServerTypeSpec] | None = None,
    freshness: Freshness | None = None,
    resale: Sequence[ResaleCurve] = (),
    paths: FieldPaths | None = None,
) -> dict[str, Any]:
    """Rent-vs-own total cost of ownership for one cluster design (request and response: docs/cost-engine.md).

    Owning, per year: capex · CRF − residual · SFF + energy + colocation + maintenance + staff
    (tco.on_prem_cost).
    Renting: on-demand pays hours used, reserved every hour of whole terms, spot hours used ÷ relative goodput
    (tco.cloud_cost). Break-even u* = (A − C)/(c − B) for own = A + B·u, rent = C + c·u. Network: folded Clos
    (Al-Fares 2008) or Dragonfly+ (Shpiner 2017); failures: Young (1974) interval and first-order goodput.
    ``training`` is an optional training-engine result (fits, time_to_train_days, parallelism, ...).
    ``freshness`` (today's date and the age after which a catalog price is stale), when given, keeps a stale
    price from being picked as the default offering while a fresh one exists, and adds a ``stale_price``
    finding for each stale catalog price the result uses (each such price carries its ``as_of`` in
    ``assumptions``).
    ``resale``, the accelerator's sourced residual-value series (resale.py): the one covering the depreciation
    life sets the residual value the request does not give, its source in ``assumptions``.
    Raises UnknownReferenceError for unknown slugs and InputError for bad numbers, naming the field (by
    ``paths`` when given: the user's path of a request built for them).
    """
    catalog = CatalogSpecs(accelerators, fabrics, offerings, storage_tiers, switches, server_types or {})
    with named_by(paths):
        return _tco(request, catalog, training, freshness, resale)


def _tco(
    request: Mapping[str, Any],
    catalog: CatalogSpecs,
    training: Mapping[str, Any] | None,
    freshness: Freshness | None,
    resale: Sequence[ResaleCurve],
) -> dict[str, Any]:
    v, ctx, resolver = _resolve(request, catalog, training, freshness, resale)
    core = _evaluate(v, ctx)
    sensitivity = _sensitivity(v, ctx, core)
    findings = _findings(v, ctx, core)
    if freshness is not None:
        findings += stale_price_findings(prices=_dated_prices(resolver, ctx), freshness=freshness)
    core.pop("_own_linear")
    core.pop("_rent_linear")
    if not core["cloud"]:
        core["cloud_note"] = (
            f"no cloud prices: the catalog has no offering for {ctx.accelerator.slug}; "
            "give cloud.offering or cloud.usd_per_node_hour"
        )
    cashflow = _cashflow(v, core)
    return {
        **core,
        "offering": _offering(ctx),
        "ranking": _ranking(core),
        "cashflow": cashflow,
        "verdict": _verdict(v, ctx, core, cashflow, sensitivity),
        "sensitivity": sensitivity,
        "findings": findings,
        "assumptions": [a.as_dict() for a in resolver.used.values()],
    }


def _sensitivity(v: Mapping[str, Any], ctx: _Context, core: Mapping[str, Any]) -> dict[str, Any]:
    """The tornado: own − rent against the cheapest pricing model (and its break-even) with each sensitive
    input moved ± sensitivity.fraction, the whole evaluation run again at each end."""
    reference = _reference_model(core)
    fraction = float(v["sensitivity.fraction"])

    def outcome(values: Mapping[str, Any]) -> tuple[float, float | None] | None:
        again = _evaluate(values, ctx)
        assert reference is not None
        if reference not in again["cloud"]:
            return None  # moved this far, the reference option cannot finish the run
        delta = again["on_prem"]["total_usd"] - again["cloud"][reference]["total_usd"]
        return delta, again["break_even_utilization"][reference]["utilization"]

    sensitivity: dict[str, Any] = {"pricing_model": reference, "fraction": fraction, "rows": []}
    if reference is not None:
        names = [n for n in SENSITIVE if n in v]
        sensitivity.update(
            tornado(
                values=v,
                names=names,
                fraction=fraction,
                outcome=outcome,
                bounds={
                    "utilization": (1e-6, 1.0),
                    "on_prem.residual_fraction": (0.0, 0.999),
                    "on_prem.load_power_fraction": (1e-6, 1.0),
                    "on_prem.depreciation_years": (1e-6, math.inf),
                },
            )
        )
    return sensitivity


def _findings(v: Mapping[str, Any], ctx: _Context, core: Mapping[str, Any]) -> list[dict[str, str]]:
    """The design's findings (findings.design_findings) and one for each option that cannot finish the run."""
    findings = design_findings(
        FindingsInput(
            nodes=int(v["nodes"]),
            gpus_per_node=int(v["gpus_per_node"]),
            accelerator=ctx.accelerator,
            cluster_accelerators=ctx.cluster_accelerators,
            fabric=ctx.fabric,
            oversubscription=float(v["oversubscription"]),
            storage_kind=None if ctx.tier is None else ctx.tier.kind,
            network_share_of_capex=core["network"].get("share_of_capex"),
            training=ctx.training,
            utilization=float(v["utilization"]),
            reserved_break_even={
                m: c["break_even_vs_on_demand_utilization"]
                for m, c in core["cloud"].items()
                if "break_even_vs_on_demand_utilization" in c
            },
            spot_priced="spot" in ctx.pricing_models,
            checkpoint_interval_minutes=ctx.checkpoint_interval_minutes,
            spot_optimal_interval_minutes=core["failures"]["spot"]["optimal_interval_minutes"],
        )
    )
    return findings + [
        {
            "code": "option_cannot_finish",
            "severity": "warning",
            "message": why,
            "source": core["failures"]["model"],
        }
        for why in core["cloud_unavailable"].values()
    ]


def _offering(ctx: _Context) -> dict[str, Any] | None:
    """The cloud offering priced, with each compared pricing model's price date."""
    if ctx.offering is None:
        return None
    return {
        "slug": ctx.offering.slug,
        "provider": ctx.offering.provider,
        "instance_type": ctx.offering.instance_type,
        "region": ctx.offering.region,
        "price_as_of": {m: ctx.offering.price_as_of.get(m, "") for m in ctx.pricing_models},
    }


def _dated_prices(resolver: _Resolver, ctx: _Context) -> list[tuple[str, str]]:
    """(what, as_of) for every catalog price the result uses: the cloud offering's prices and the owning
    price per node, when they came from the catalog (a price given in the request has no catalog date)."""
    out: list[tuple[str, str]] = []
    for path, item in resolver.used.items():
        if not item.as_of:
            continue
        if path.startswith("cloud.usd_per_node_hour.") and ctx.offering is not None:
            model = path.rsplit(".", 1)[1]
            label = MODEL_LABELS.get(model, model)
            what = f"The {label} price of {ctx.offering.slug} ({ctx.offering.instance_type})"
        else:
            what = f"The owning price per node ({item.source})"
        out.append((what, item.as_of))
    return out


MODEL_LABELS: Mapping[str, str] = {
    "on_demand": "on-demand",
    "reserved_1y": "reserved 1-year",
    "reserved_3y": "reserved 3-year",
    "savings_1y": "savings plan 1-year",
    "savings_3y": "savings plan 3-year",
    "spot": "spot",
}


def check_request(
    request: Mapping[str, Any], catalog: CatalogSpecs, *, paths: FieldPaths | None = None
) -> None:
    """Raise what :func:`tco` would raise for the request's inputs (slugs, ranges, unknown fields), without
    computing anything: for callers that store a request now and evaluate it later. Errors name their field
    by ``paths`` when given."""
    with named_by(paths):
        _resolve(request, catalog, None)


def input_names(section: str) -> tuple[str, ...]:
    """The request inputs under ``section`` (``cashflow``, ``storage``, ...) by their names in it: those with
    a default (DEFAULTS) and those the engine range-checks without one (a lease payment, storage MB/s per
    TiB), sorted."""
    prefix = f"{section}."
    names = {n for n in (*DEFAULTS, *bounds.COST) if n.startswith(prefix)}
    return tuple(sorted(n[len(prefix) :] for n in names))


def check_input(path: str, value: Any) -> Any:
    """The value of request input ``path`` as the engine reads it (a count as int), or InputError naming the
    path when it breaks the input's rule or maximum: for a caller storing an input that this request may not
    read (a loan rate while paying cash), so that no stored number is out of range."""
    return _checked(path, value)


def default_assumptions() -> list[dict[str, Any]]:
    """Every default the cost engine falls back on, with unit and source, for forms to show."""
    return [a.as_dict() for a in DEFAULTS.values()]
