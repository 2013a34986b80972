"""The cost engine's request, read: every field resolved to a value with its unit and source (the request's
own value, a catalog figure, or a default from :data:`clusterdesigner.engine.cost.defaults.COST_DEFAULTS`),
each number checked against its bound (clusterdesigner.engine.core.bounds), and the catalog specs the
evaluation needs (:class:`Context`). The evaluation (clusterdesigner.engine.cost.cost) reads nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterdesigner.engine.core import bounds
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import InputError, UnknownReferenceError
from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.offerings import (
    PRICING_MODELS,
    CloudOfferingSpec,
    Freshness,
    ServerTypeSpec,
    StorageTierSpec,
    SwitchSpec,
    default_offering,
)
from clusterdesigner.engine.cost.cashflow import DEPRECIATION, FINANCING, UPFRONT, wacc
from clusterdesigner.engine.cost.cost_inputs import MISSING, CostInputs
from clusterdesigner.engine.cost.defaults import COST_DEFAULTS as DEFAULTS
from clusterdesigner.engine.cost.defaults import DAYS_PER_MONTH, NODE_POWER_PER_GPU_TDP, Assumption
from clusterdesigner.engine.cost.rent_own import age_text, num, usd
from clusterdesigner.engine.cost.resale import ResaleCurve, covering
from clusterdesigner.engine.cost.site import (
    RackPlan,
    Site,
    cooling_used,
    cost_inputs,
    input_source,
    parse_site,
    rack_plan,
)

# The owning assumptions a request may give (every one is range-checked by bounds.COST).
ON_PREM_FIELDS = tuple(sorted(p.removeprefix("on_prem.") for p in bounds.COST if p.startswith("on_prem.")))

_MISSING = MISSING

TOPOLOGIES = ("fat_tree", "dragonfly_plus", "rail_only")
# The kW colocation bills (tco.OnPremInputs.colo_basis).
COLO_BASES = ("contracted_kw", "drawn_kw", "nameplate_kw")
# Owning's cost lines beyond power, space, maintenance and staff that finance models carry (tco.py).
FINANCE_LINES = (
    "software_usd_per_gpu_year",
    "insurance_fraction_per_year",
    "property_tax_fraction_per_year",
    "spares_fraction",
    "facility_capex_usd_per_mw",
    "facility_ops_usd_per_year",
    "facility_capex_usd",
)


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


def _checked(path: str, value: Any, at: str) -> Any:
    """``value`` of request field ``path`` by the field's rule (bounds.COST); InputError naming ``at``, the
    field's path in what the user sent."""
    bound = bounds.COST.get(path)
    if bound is None:
        return value
    rule = bound.rule
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"must be a number, got {value!r}", field=at)
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
        raise InputError(f"{message}, got {value!r}", field=at)
    most = bound.high
    if value > most:
        shown = f"{most:,.0f}" if most >= 10_000 else f"{most:g}"
        raise InputError(f"must be at most {shown}, got {value:g}", field=at)
    return int(value) if rule in ("int", "count") else value


@dataclass
class Resolver:
    """Collects every value used, with unit and source, while reading the inputs; names a field by its path
    in what the user sent (:meth:`at`)."""

    inputs: CostInputs
    used: dict[str, Assumption] = field(default_factory=dict)

    def at(self, path: str) -> str:
        """The user's path of request field ``path``."""
        return self.inputs.where(path)

    def given(self, path: str) -> bool:
        return self.inputs.find(path) is not _MISSING

    def get(
        self, path: str, default: Any = _MISSING, unit: str = "", source: str = "", as_of: str = ""
    ) -> Any:
        value = self.inputs.find(path)
        if value is not _MISSING:
            value = _checked(path, value, self.at(path))
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
class Context:
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
    site: SitePlacement | None = None


@dataclass(frozen=True)
class SitePlacement:
    """The design's site (request ``site``), the cooling used, and its rack plan."""

    site: Site
    cooling: str
    plan: RackPlan
    node_power_source: str


def number_of(section: Any, key: str) -> float | None:
    value = section.get(key) if isinstance(section, Mapping) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _slug(resolver: Resolver, path: str, catalog: Mapping[str, Any], what: str) -> Any:
    slug = resolver.get(path)
    if not isinstance(slug, str) or slug not in catalog:
        known = ", ".join(sorted(catalog)) or "none"
        raise UnknownReferenceError(f"unknown {what} {slug!r}; known: {known}", field=resolver.at(path))
    return catalog[slug]


def _server_price(
    r: Resolver,
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
        field=r.at(path),
    )


def _resolve_cashflow(r: Resolver, v: dict[str, Any]) -> None:
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
    for name, choices in (
        ("cashflow.financing", FINANCING),
        ("cashflow.reserved_payment", UPFRONT),
        ("cashflow.depreciation_schedule", DEPRECIATION),
    ):
        v[name] = r.get(name)
        if v[name] not in choices:
            raise InputError(f"must be one of {', '.join(choices)}", field=r.at(name))
    if v["cashflow.financing"] == "loan":
        v["cashflow.loan_rate"] = r.get("cashflow.loan_rate")
        v["cashflow.loan_months"] = r.get("cashflow.loan_months")
    if v["cashflow.financing"] == "lease":
        if not r.given("cashflow.lease_usd_per_month"):
            raise InputError(
                "an operating lease needs its monthly payment (USD a month for the whole cluster)",
                field=r.at("cashflow.lease_usd_per_month"),
            )
        v["cashflow.lease_usd_per_month"] = r.get("cashflow.lease_usd_per_month", unit="USD/month")
    _resolve_wacc(r, v)


WACC = ("cashflow.wacc_debt_share", "cashflow.wacc_cost_of_debt", "cashflow.wacc_cost_of_equity")


def _resolve_wacc(r: Resolver, v: dict[str, Any]) -> None:
    """The discount rate from a WACC when the request gives one (all three parts, and no discount rate)."""
    given = [name for name in WACC if r.given(name)]
    if not given:
        return
    missing = [name for name in WACC if not r.given(name)]
    if missing:
        raise InputError(
            "a WACC needs the debt share, the cost of debt and the cost of equity", field=r.at(missing[0])
        )
    if r.given("on_prem.discount_rate"):
        raise InputError(
            "give the discount rate or a WACC (cashflow.wacc_*), not both",
            field=r.at("on_prem.discount_rate"),
        )
    d, rd, re = (float(r.get(name, unit="fraction" if "share" in name else "per year")) for name in WACC)
    t = float(v["cashflow.tax_rate"])
    rate = wacc(debt_share=d, cost_of_debt=rd, cost_of_equity=re, tax_rate=t)
    v["on_prem.discount_rate"] = r.get(
        "on_prem.discount_rate",
        rate,
        "per year",
        f"WACC (1 − {num(d)}) × {num(re)} + {num(d)} × {num(rd)} × (1 − tax {num(t)}): the interest tax"
        " shield in the rate (Brealey, Myers & Allen, ch. 19)",
    )


def _resolve_lead_and_resale(r: Resolver, v: dict[str, Any], resale: Sequence[ResaleCurve]) -> None:
    """The lead time (the default capped below the horizon) and the market resale at the horizon: the
    request's cashflow.resale_fraction, else the catalog series of the accelerator covering the owned age
    (horizon − lead time), else the straight-line book value at that age (a stated fallback; a finding says
    so)."""
    months = max(1, round(float(v["horizon_years"]) * 12))
    if not r.given("cashflow.lead_time_months") and int(v["cashflow.lead_time_months"]) >= months:
        lead = months - 1
        base = DEFAULTS["cashflow.lead_time_months"]
        v["cashflow.lead_time_months"] = r.get(
            "cashflow.lead_time_months",
            lead,
            base.unit,
            f"the default {base.value} months capped to {lead}, below the {months}-month horizon"
            f" ({base.source})",
        )
    age = (months - int(v["cashflow.lead_time_months"])) / 12.0
    v["cashflow.resale_age_years"] = age
    unit = "fraction of capex"
    if r.given("cashflow.resale_fraction"):
        v["cashflow.resale_fraction"] = r.get("cashflow.resale_fraction", unit=unit)
        v["cashflow.resale_basis"] = "request"
        v["cashflow.resale_source"] = "request (cashflow.resale_fraction)"
        return
    curve = covering(resale, age_years=age)
    fraction = None if curve is None else curve.fraction_at(age_years=age)
    if curve is not None and fraction is not None and 0 <= fraction < 1:
        v["cashflow.resale_source"] = curve.describe(age_years=age, at="the horizon")
        v["cashflow.resale_fraction"] = r.get(
            "cashflow.resale_fraction", fraction, unit, v["cashflow.resale_source"]
        )
        v["cashflow.resale_basis"] = "market"
        v["cashflow.resale_as_of"] = curve.as_of
        return
    # The book value at the servers' age when sold, the horizon less the lead time (they are delivered and
    # start depreciating at the lead time, as the tax book of cashflow._depreciate and the capacity plan's
    # cash view count them), not at the horizon: depreciating the lead-time months too would sell below
    # book and book a loss on the sale that never happened.
    life, residual = float(v["on_prem.depreciation_years"]), float(v["on_prem.residual_fraction"])
    book = 1.0 - (1.0 - residual) * min(age, life) / life
    v["cashflow.resale_source"] = (
        f"FALLBACK: no residual-value series in the catalog covers age {age_text(age)}; straight-line book"
        f" value at that age, 1 − (1 − residual {num(residual)}) × {num(min(age, life))} ÷ {num(life)} years"
    )
    v["cashflow.resale_fraction"] = r.get("cashflow.resale_fraction", book, unit, v["cashflow.resale_source"])
    v["cashflow.resale_basis"] = "book_value"


def _staff_fte(r: Resolver, nodes: int) -> float | None:
    """FTEs running the cluster: the request's; else None when staff per MW is given (tco.OnPremInputs.fte
    scales staff with the IT MW drawn); else nodes ÷ nodes per FTE (75 by default). Fractional either way: no
    floor of one person under a small cluster."""
    if r.given("on_prem.staff_fte"):
        return float(r.get("on_prem.staff_fte"))
    if r.given("on_prem.staff_fte_per_mw"):
        return None
    per_fte = float(r.get("on_prem.nodes_per_fte"))
    return float(
        r.get(
            "on_prem.staff_fte", nodes / per_fte, "FTE", f"{num(nodes)} nodes ÷ {num(per_fte)} nodes per FTE"
        )
    )


def _check_on_prem_keys(r: Resolver) -> None:
    """Refuse unknown owning fields and range-check every one given, also those this request does not read."""
    on_prem = r.inputs.value("on_prem")
    if isinstance(on_prem, Mapping):
        unknown = sorted(set(on_prem) - set(ON_PREM_FIELDS))
        if unknown:
            raise InputError(
                f"unknown on_prem field {unknown[0]!r}; known: {', '.join(ON_PREM_FIELDS)}",
                field=r.at(f"on_prem.{unknown[0]}"),
            )
        # Every owning input given is checked, also one this request does not read (a server price per GPU
        # beside a server price): a saved design holds no number out of range.
        for key in sorted(on_prem):
            if on_prem[key] is not None:
                _checked(f"on_prem.{key}", on_prem[key], r.at(f"on_prem.{key}"))


def _resolve_accelerator(
    r: Resolver, catalog: CatalogSpecs
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
                field=r.at("cluster.server_type"),
            )
    else:
        accelerator = _slug(r, "cluster.accelerator", accelerators, "accelerator")
    mixed = [accelerator]
    extra = r.inputs.find("cluster.accelerators")
    if extra is not _MISSING:
        if not isinstance(extra, list):
            raise InputError("must be a list of accelerator slugs", field=r.at("cluster.accelerators"))
        for i, slug in enumerate(extra):
            if slug not in accelerators:
                raise UnknownReferenceError(
                    f"unknown accelerator {slug!r}", field=r.at(f"cluster.accelerators.{i}")
                )
            mixed.append(accelerators[slug])
    return server, accelerator, mixed


def _resolve_cluster(r: Resolver, v: dict[str, Any], server: ServerTypeSpec | None) -> tuple[bool, str]:
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
    if topology not in TOPOLOGIES:
        raise InputError(f"must be one of {', '.join(TOPOLOGIES)}", field=r.at("cluster.topology"))

    return rail, str(topology)


def _resolve_trays(
    r: Resolver, v: dict[str, Any], catalog: CatalogSpecs, accelerator: AcceleratorSpec
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
            f"must divide the {nics} NICs per node, got {v['nics_per_tray']}",
            field=r.at("cluster.nics_per_tray"),
        )


def fallback_switch(switches: Mapping[str, SwitchSpec], fabric: FabricSpec) -> tuple[SwitchSpec, bool]:
    """The switch of a cluster that names none when the catalog lacks the default: the catalog's largest of
    the fabric's kind (True), else a generic 64-port one at the fabric's port rate (False)."""
    match = sorted((s for s in switches.values() if s.fabric_kind == fabric.kind), key=lambda s: -s.ports)
    if match:
        return match[0], True
    return SwitchSpec("generic-64", "generic 64-port switch", 64, fabric.port_gbps), False


def switch_slug(cluster: Mapping[str, Any], switches: Mapping[str, SwitchSpec], fabric: FabricSpec) -> str:
    """The slug of the switch a cluster's network is priced with (_resolve_switch's choice)."""
    named = cluster.get("switch") or DEFAULTS["cluster.switch"].value
    if cluster.get("switch") or named in switches:
        return str(named)
    return fallback_switch(switches, fabric)[0].slug


def _resolve_switch(r: Resolver, switches: Mapping[str, SwitchSpec], fabric: FabricSpec) -> SwitchSpec:
    """The named switch, the default, else the catalog's largest of the fabric's kind, else a generic one."""
    switch: SwitchSpec
    if r.given("cluster.switch") or DEFAULTS["cluster.switch"].value in switches:
        switch = _slug(r, "cluster.switch", switches, "switch")
    else:
        switch, match = fallback_switch(switches, fabric)
        r.get(
            "cluster.switch",
            switch.slug,
            "slug",
            "catalog has no ib-ndr-64; largest catalog switch of the fabric's kind"
            if match
            else "catalog has no switch; generic 64-port switch at the fabric's port rate",
        )

    return switch


def _resolve_tier(r: Resolver, storage_tiers: Mapping[str, StorageTierSpec]) -> StorageTierSpec | None:
    """The named storage tier, the default (lustre), else the catalog's first; None without tiers."""
    tier: StorageTierSpec | None = None
    if r.given("cluster.storage") or DEFAULTS["cluster.storage"].value in storage_tiers:
        if storage_tiers or r.given("cluster.storage"):
            tier = _slug(r, "cluster.storage", storage_tiers, "storage tier")
    elif storage_tiers:
        tier = next(iter(storage_tiers.values()))
        r.get("cluster.storage", tier.slug, "slug", "first catalog storage tier (catalog has no lustre)")

    return tier


def _resolve_resale(r: Resolver, v: dict[str, Any], resale: Sequence[ResaleCurve]) -> None:
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
    r: Resolver,
    v: dict[str, Any],
    catalog: CatalogSpecs,
    server: ServerTypeSpec | None,
    accelerator: AcceleratorSpec,
    switch: SwitchSpec,
) -> str:
    """Staff, horizon, utilization, the owning rates, server price, node power and network prices; returns
    the colocation pricing (space_only | all_in)."""
    v["on_prem.staff_fte"] = _staff_fte(r, int(v["nodes"]))
    if v["on_prem.staff_fte"] is None:
        v["on_prem.staff_fte_per_mw"] = r.get(
            "on_prem.staff_fte_per_mw", unit="FTE per MW of IT drawn at full load"
        )
    colo_pricing = r.get("colocation.pricing")
    if colo_pricing not in ("space_only", "all_in"):
        raise InputError("must be space_only or all_in", field=r.at("colocation.pricing"))
    v["colocation.basis"] = r.get("colocation.basis")
    if v["colocation.basis"] not in COLO_BASES:
        raise InputError(f"must be one of {', '.join(COLO_BASES)}", field=r.at("colocation.basis"))
    if r.given("on_prem.colo_contracted_kw"):
        v["on_prem.colo_contracted_kw"] = r.get("on_prem.colo_contracted_kw", unit="kW")
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
        *FINANCE_LINES,
        "capital_payments_per_year",
    ):
        v[f"on_prem.{name}"] = r.get(f"on_prem.{name}")
    # The facility's own recovery life (a building outlasts its servers); blank: the depreciation life.
    v["on_prem.facility_life_years"] = (
        r.get("on_prem.facility_life_years", unit="years") if r.given("on_prem.facility_life_years") else None
    )

    v["on_prem.server_usd"] = _server_price(r, catalog, server, accelerator, int(v["gpus_per_node"]))
    _resolve_node_power(r, v, server, accelerator)

    for name, attr in (("switch_usd", "price_usd"), ("switch_power_w", "power_w")):
        v[f"network.{name}"] = r.prefer(
            f"network.{name}", getattr(switch, attr), f"switch {switch.slug} (catalog)"
        )
    v["network.cable_usd"] = r.get("network.cable_usd")
    v["network.transceiver_usd"] = r.get("network.transceiver_usd")
    included = r.get("network.included_in_server")
    if not isinstance(included, bool):
        raise InputError("must be true or false", field=r.at("network.included_in_server"))
    v["network.included_in_server"] = included
    if r.given("network.capex_usd"):
        v["network.capex_usd"] = r.get("network.capex_usd", unit="USD (lump sum)")
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


def _resolve_node_optics(r: Resolver, v: dict[str, Any], server: ServerTypeSpec | None) -> None:
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
    r: Resolver, v: dict[str, Any], server: ServerTypeSpec | None, accelerator: AcceleratorSpec
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
            field=r.at("on_prem.node_power_kw"),
        )


def _resolve_offering(
    r: Resolver,
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


def _resolve_spot_rate(r: Resolver, v: dict[str, Any], offering: CloudOfferingSpec | None) -> None:
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
    r: Resolver,
    v: dict[str, Any],
    offerings: Mapping[str, CloudOfferingSpec],
    accelerator: AcceleratorSpec,
    tier: StorageTierSpec | None,
    freshness: Freshness | None,
) -> tuple[CloudOfferingSpec | None, list[str]]:
    """The offering, each priced model's $/node-hour, overheads, cloud storage and the spot rate."""
    gpn = v["gpus_per_node"]
    offering = _resolve_offering(r, v, offerings, accelerator, freshness)
    chosen = _chosen_models(r)
    models: list[str] = []
    for model in PRICING_MODELS:
        if chosen is not None and model not in chosen:
            continue  # not ticked: never priced, so never a verdict's rival, a tornado's or a payback's
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
    for model in models:
        if r.given(f"cloud.capacity_nodes.{model}"):
            v[f"cloud.capacity_nodes.{model}"] = r.get(
                f"cloud.capacity_nodes.{model}", unit="nodes obtainable"
            )
    for name in ("managed_overhead_fraction", "egress_tb", "egress_usd_per_gb"):
        v[f"cloud.{name}"] = r.get(f"cloud.{name}")
    v["cloud.storage_usd_per_tb_month"] = r.prefer(
        "cloud.storage_usd_per_tb_month",
        None if tier is None else tier.usd_per_tb_month,
        f"storage tier {None if tier is None else tier.slug} (catalog)",
    )
    _resolve_spot_rate(r, v, offering)
    if "spot" in models:
        v["cloud.spot_capacity_nodes"] = r.get("cloud.spot_capacity_nodes")
    return offering, models


def _chosen_models(r: Resolver) -> tuple[str, ...] | None:
    """``cloud.pricing_models``: the pricing models the user ticked (None: every model priced). A design
    sends its choice, so the engine compares owning only with what the user chose (issue #31 item 1)."""
    given = r.inputs.find("cloud.pricing_models")
    if given is _MISSING or given is None:
        return None
    if not isinstance(given, (list, tuple)) or not all(isinstance(m, str) for m in given):
        raise InputError("must be a list of pricing models", field=r.at("cloud.pricing_models"))
    unknown = [m for m in given if m not in PRICING_MODELS]
    if unknown:
        raise InputError(
            f"unknown pricing model {unknown[0]!r}; known: {', '.join(PRICING_MODELS)}",
            field=r.at("cloud.pricing_models"),
        )
    return tuple(given)


def _resolve_storage(r: Resolver, v: dict[str, Any]) -> bool:
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
    r: Resolver, v: dict[str, Any], training: Mapping[str, Any] | None
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
    params = number_of(training, "params") or number_of(summary.get("model"), "params")
    if params is not None and not r.given("run.params_b"):
        v["run.params_b"] = r.get(
            "run.params_b", params / 1e9, "billion parameters", "training engine result"
        )
    else:
        v["run.params_b"] = r.get("run.params_b")
    tokens = number_of(summary.get("training"), "tokens")
    if r.given("run.tokens") or tokens is None:
        tokens = r.get("run.tokens", unit="tokens") if r.given("run.tokens") else None
    else:
        r.get("run.tokens", tokens, "tokens", "training engine result")
    tps = number_of(training, "tokens_per_second")
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


def read_inputs(request: Mapping[str, Any] | CostInputs) -> CostInputs:
    """The inputs of a bare cost request, each named by its own path (CostInputs.read, ``at=""``); inputs
    already read, as they are."""
    return request if isinstance(request, CostInputs) else CostInputs.read(request)


def resolve(
    inputs: CostInputs,
    catalog: CatalogSpecs,
    training: Mapping[str, Any] | None,
    freshness: Freshness | None = None,
    resale: Sequence[ResaleCurve] = (),
) -> tuple[dict[str, Any], Context, Resolver]:
    """Every value the evaluation uses, with its unit and source (request, catalog or DEFAULTS), in order;
    errors name each field by its path in what the user sent (the inputs' own)."""
    r = Resolver(inputs)
    _check_on_prem_keys(r)
    v: dict[str, Any] = {}
    server, accelerator, mixed = _resolve_accelerator(r, catalog)
    fabric = _slug(r, "cluster.fabric", catalog.fabrics, "fabric")
    rail, topology = _resolve_cluster(r, v, server)
    _resolve_trays(r, v, catalog, accelerator)
    switch = _resolve_switch(r, catalog.switches, fabric)
    tier = _resolve_tier(r, catalog.storage_tiers)
    colo_pricing = _resolve_owning(r, v, catalog, server, accelerator, switch)
    placement, colo_pricing = _resolve_site(r, v, accelerator, colo_pricing)
    _resolve_resale(r, v, resale)
    offering, models = _resolve_cloud(r, v, catalog.offerings, accelerator, tier, freshness)
    async_ckpt = _resolve_storage(r, v)
    run_source, tokens, tps, interval = _resolve_run(r, v, training)
    v["sensitivity.fraction"] = r.get("sensitivity.fraction")
    _resolve_cashflow(r, v)
    _resolve_lead_and_resale(r, v, resale)
    ctx = Context(
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
        site=placement,
    )
    return v, ctx, r


def _resolve_site(
    r: Resolver, v: dict[str, Any], accelerator: AcceleratorSpec, colo_pricing: str
) -> tuple[SitePlacement | None, str]:
    """With a ``site``: its power price, colocation (price, basis, all-in), the PUE of the cooling used, its
    capex per MW and per rack, each where the request gives none (an explicit value wins), their source the
    site; and the rack plan from the node power. Without one, nothing changes. Returns the placement and the
    colocation pricing."""
    raw = r.inputs.find("site")
    if raw is _MISSING:
        return None, colo_pricing
    site = parse_site(raw, prefix=r.at("site"))
    cooling = cooling_used(site, accelerator.slug)
    source = input_source(site, cooling)
    for path, value, unit in cost_inputs(site, cooling):
        if not r.given(path):
            v[path] = r.get(path, value, unit, input_source(site, cooling, path))
    plan = rack_plan(
        nodes=int(v["nodes"]),
        gpus_per_node=int(v["gpus_per_node"]),
        node_power_kw=float(v["on_prem.node_power_kw"]),
        max_kw_per_rack=site.max_kw_per_rack,
        accelerator=accelerator.slug,
    )
    path = "on_prem.facility_capex_usd"
    if site.capex_usd_per_rack is not None and plan.fits and not r.given(path):
        v[path] = r.get(
            path,
            plan.racks * site.capex_usd_per_rack,
            "USD",
            f"{source}: {plan.racks} racks × {usd(site.capex_usd_per_rack)}/rack",
        )
    node_source = r.used["on_prem.node_power_kw"].source
    # The pricing is the Context's (colo_all_in), not a value the evaluation reads.
    return SitePlacement(site, cooling, plan, node_source), str(v.pop("colocation.pricing", colo_pricing))


def check_request(request: Mapping[str, Any] | CostInputs, catalog: CatalogSpecs) -> None:
    """Raise what :func:`tco` would raise for the request's inputs (slugs, ranges, unknown fields), without
    computing anything: for callers that store a request now and evaluate it later. Errors name their field
    by its path in what the user sent (a bare request's own paths)."""
    resolve(read_inputs(request), catalog, None)


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
    return _checked(path, value, path)
