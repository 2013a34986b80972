"""The cost engine's entry point: a JSON request in, a JSON-ready response out (docs/cost-engine.md).

``tco(request, accelerators=..., fabrics=..., offerings=..., storage_tiers=..., switches=...)`` resolves every
field of the request to a value with its unit and source (the request's own value, a catalog figure, or a
default from :data:`DEFAULTS`), then evaluates owning, renting, break-even, per-run cost, network, storage and
failures from those values alone. The sensitivity tornado re-runs the same evaluation with one value moved,
so every number in the response is a function of the ``assumptions`` list it returns.

Reading the request is clusterdesigner.engine.cost.cost_request's; the defaults are
clusterdesigner.engine.cost.defaults' (``COST_DEFAULTS``, re-exported here as ``DEFAULTS``); this module
evaluates.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.offerings import (
    COMMITMENT_YEARS,
    SAVINGS_PLANS,
    CloudOfferingSpec,
    Freshness,
    ServerTypeSpec,
    StorageTierSpec,
    SwitchSpec,
)
from clusterdesigner.engine.cost.cashflow import (
    HOURS_PER_MONTH,
    CashflowInputs,
    RentOption,
    cash_flows,
    monte_carlo,
    npvs_at,
)
from clusterdesigner.engine.cost.cashflow import break_even_meaning as cashflow_break_even_meaning
from clusterdesigner.engine.cost.cost_inputs import CostInputs
from clusterdesigner.engine.cost.cost_request import (
    FINANCE_LINES,
    ON_PREM_FIELDS,
    Context,
    Resolver,
    check_input,
    check_request,
    field_max,
    field_rule,
    input_names,
    number_of,
    read_inputs,
    resolve,
)
from clusterdesigner.engine.cost.defaults import COST_DEFAULTS as DEFAULTS
from clusterdesigner.engine.cost.defaults import DAYS_PER_MONTH
from clusterdesigner.engine.cost.defaults import cost_assumptions as default_assumptions
from clusterdesigner.engine.cost.design_verdict import BASIS as NPV_BASIS
from clusterdesigner.engine.cost.failures import FailureResult, failure_model
from clusterdesigner.engine.cost.findings import (
    SEVERITIES,
    FindingsInput,
    design_findings,
    placeholder_price_findings,
    placeholder_storage_findings,
    site_findings,
    stale_price_findings,
)
from clusterdesigner.engine.cost.network import (
    NetworkCost,
    Topology,
    dragonfly_plus,
    fat_tree,
    network_cost,
    rail_only,
)
from clusterdesigner.engine.cost.npv_basis import break_even_utilization as npv_break_even
from clusterdesigner.engine.cost.npv_basis import npv_pair
from clusterdesigner.engine.cost.npv_basis import root as npv_root
from clusterdesigner.engine.cost.rent_own import (
    MONTHS_PER_YEAR,
    CloudResult,
    Line,
    LinearCost,
    OnPremInputs,
    OnPremResult,
    age_text,
    break_even_meaning,
    break_even_utilization,
    cloud_cost,
    committed_years,
    num,
    on_prem_cost,
    reservation_break_even,
    usd,
)
from clusterdesigner.engine.cost.resale import ResaleCurve
from clusterdesigner.engine.cost.sensitivity import tornado
from clusterdesigner.engine.cost.site import RACK_SCALE, SiteFit
from clusterdesigner.engine.cost.storage import (
    capacity_for_write_tib,
    checkpoint_gb,
    dataset_read_gbps,
    save_timings,
)
from clusterdesigner.engine.cost.verdict import Flip, RentOrOwn

# The request's checks and the defaults, by the names callers have always imported from here.
__all__ = [
    "DEFAULTS",
    "FINANCE_LINES",
    "MODEL_LABELS",
    "ON_PREM_FIELDS",
    "SENSITIVE",
    "SENSITIVE_LABELS",
    "check_input",
    "check_request",
    "default_assumptions",
    "field_max",
    "field_rule",
    "input_names",
    "tco",
]


# Values the tornado moves. Integers (node counts) and switches of kind stay put.
SENSITIVE = (
    "utilization",
    "on_prem.server_usd",
    "on_prem.discount_rate",
    "on_prem.depreciation_years",
    # The resale the cash flows take (market, quote or book fallback), not on_prem.residual_fraction, the
    # book value's, which moves no pre-tax NPV once the resale is resolved (issue #31 item 3).
    "cashflow.resale_fraction",
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
# What a cost result's break-even utilization is solved on (older results: the annualised closed form).
BREAK_EVEN_BASIS = "NPV of the monthly cash flows, u in (0, 1]"

SENSITIVE_LABELS: Mapping[str, str] = {
    "utilization": "utilization",
    "on_prem.server_usd": "the server price",
    "on_prem.discount_rate": "the discount rate",
    "on_prem.depreciation_years": "the depreciation life",
    "on_prem.residual_fraction": "the book residual value",
    "cashflow.resale_fraction": "the resale value",
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


def _line(x: Line) -> dict[str, Any]:
    return x.as_dict()


def _network(v: Mapping[str, Any], ctx: Context) -> tuple[dict[str, Any], float, float]:
    """The scale-out network (fat_tree or dragonfly_plus, network_cost) and its JSON; returns (network,
    capex USD, power kW)."""
    racks, per_tray = int(v["nodes"]), int(v["nics_per_tray"])
    if racks == 1:
        return (
            {"topology": "none", "capex_usd": 0.0, "power_kw": 0.0, "note": "one node: no scale-out network"},
            0.0,
            0.0,
        )
    # The fabric sees trays: a rack-scale node of 72 NICs is 18 trays of 4 (rails per tray, not per rack).
    nodes, nics = racks * (int(v["nics_per_node"]) // per_tray), per_tray
    tree, dfp = _topologies(v, ctx, nodes, nics)
    rails = _rail_only(v, ctx, nodes, nics) if ctx.topology == "rail_only" else None
    chosen: Topology = tree if tree is not None and dfp is None else dfp  # type: ignore[assignment]
    chosen = rails or chosen
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
        **({} if rails is None else {"rail_only": rails.as_dict()}),
        "capex_parts": _network_capex_parts(v, chosen, cost, nodes, nics),
        "capex_usd": cost.capex_usd,
        "power_kw": cost.power_kw,
        "power_formula": f"{chosen.switches} switches × {num(v['network.switch_power_w'])} W + "
        f"{chosen.node_transceivers} node-side transceivers × {num(v['network.node_transceiver_w'])} W + "
        f"{chosen.switch_transceivers} switch-side × {num(v['network.switch_transceiver_w'])} W",
    }
    capex = _network_capex_override(v, out, cost.capex_usd)
    if tree is None and rails is None:
        out["note"] = "beyond a three-tier fat-tree of this radix: Dragonfly+ used"
    if ctx.topology == "rail_only" and rails is None:
        out["note"] = "one rail outgrows a three-tier fat-tree of this radix: rail-only cannot be built"
    if ctx.switch.port_gbps < ctx.fabric.port_gbps:
        out["warning"] = (
            f"switch {ctx.switch.slug} ports run at {num(ctx.switch.port_gbps)} Gb/s, below the "
            f"{num(ctx.fabric.port_gbps)} Gb/s NICs"
        )
    return out, capex, cost.power_kw


def _network_capex_override(v: Mapping[str, Any], out: dict[str, Any], counted_usd: float) -> float:
    """The network capex owning pays: none when the server quote includes the network
    (network.included_in_server), the quote's lump sum when given (network.capex_usd), else the counted
    switches, cables and transceivers. The counted figure stays in the JSON beside it; power always counts."""
    if v.get("network.included_in_server"):
        out["capex_parts"] = {"included": _line(Line(0.0, "included in the server price (quote)"))}
        out["counted_capex_usd"], out["capex_usd"] = counted_usd, 0.0
        return 0.0
    lump = v.get("network.capex_usd")
    if lump is not None:
        out["capex_parts"] = {
            "quote": _line(Line(float(lump), "network quote, a lump sum (network.capex_usd)"))
        }
        out["counted_capex_usd"], out["capex_usd"] = counted_usd, float(lump)
        return float(lump)
    return counted_usd


def _rail_only(v: Mapping[str, Any], ctx: Context, nodes: int, nics: int) -> Topology | None:
    """The rail-only network (network.rail_only) of ``nodes`` endpoints of ``nics`` NICs."""
    return rail_only(
        nodes=nodes,
        nics_per_node=nics,
        port_gbps=ctx.fabric.port_gbps,
        radix=ctx.switch.ports,
        oversubscription=float(v["oversubscription"]),
        ports_per_transceiver=2 if ctx.fabric.kind == "infiniband" else 1,
        node_ports_per_transceiver=int(v["network.node_ports_per_transceiver"]),
    )


def _topologies(
    v: Mapping[str, Any], ctx: Context, nodes: int, nics: int
) -> tuple[Topology | None, Topology | None]:
    """(fat-tree, Dragonfly+) of ``nodes`` endpoints of ``nics`` NICs: the fat-tree when it fits in three
    tiers; Dragonfly+, the large-cluster alternative, when asked for or when the fat-tree runs out of
    tiers."""
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
    return tree, dfp


def _network_capex_parts(
    v: Mapping[str, Any], chosen: Topology, cost: NetworkCost, nodes: int, nics: int
) -> dict[str, Any]:
    """The network's capex lines: switches, cables and transceivers, each with its formula."""
    node_cage = int(v["network.node_ports_per_transceiver"])
    return {
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
    }


def _evaluate_storage(
    v: Mapping[str, Any], ctx: Context
) -> tuple[dict[str, Any], float, float | None, float]:
    """Checkpoint size, capacity, save time and dataset bandwidth; returns (storage, capacity TB, run days,
    blocking write seconds)."""
    nodes = int(v["nodes"])
    ckpt_gb = checkpoint_gb(
        params=float(v["run.params_b"]) * 1e9, bytes_per_param=float(v["storage.checkpoint_bytes_per_param"])
    )
    capacity_tb, capacity_formula = _storage_capacity(v, ctx, ckpt_gb)
    days = _run_days(v)
    read_needed = _dataset_read_gbps(v, ctx, days)
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


def _storage_capacity(v: Mapping[str, Any], ctx: Context, ckpt_gb: float) -> tuple[Any, str]:
    """(capacity TB, its formula): the request's, else the dataset (tokens × bytes per token, or the given
    size) plus the checkpoints kept."""
    if v.get("storage.capacity_tb") is not None:
        return v["storage.capacity_tb"], "request"
    dataset_tb = float(v["storage.dataset_tb"])
    if ctx.tokens is not None:
        dataset_tb = ctx.tokens * float(v["storage.bytes_per_token"]) / 1e12
    capacity_tb = dataset_tb + float(v["storage.checkpoints_kept"]) * ckpt_gb / 1000.0
    formula = (
        f"{num(dataset_tb)} TB dataset + {num(v['storage.checkpoints_kept'])} checkpoints × "
        f"{num(ckpt_gb / 1000.0)} TB"
    )
    return capacity_tb, formula


def _run_days(v: Mapping[str, Any]) -> float | None:
    """The run's failure-free days: given (or the training estimate's), else GPU-hours ÷ GPUs ÷ 24."""
    if "run.days" in v:
        return float(v["run.days"])
    if "run.gpu_hours" in v:
        return float(v["run.gpu_hours"]) / (int(v["nodes"]) * int(v["gpus_per_node"])) / 24.0
    return None


def _dataset_read_gbps(v: Mapping[str, Any], ctx: Context, days: float | None) -> float | None:
    """The dataset read bandwidth the run needs (tokens/s × bytes per token), None without a token rate."""
    tps = ctx.tokens_per_second
    if tps is None and ctx.tokens is not None and days is not None:
        tps = ctx.tokens / (days * 86_400.0)
    if tps is None:
        return None
    return dataset_read_gbps(tokens_per_s=tps, bytes_per_token=float(v["storage.bytes_per_token"]))


def _capacity_for_target(
    v: Mapping[str, Any], ctx: Context, tiers: Mapping[str, StorageTierSpec], ckpt_gb: float
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
    v: Mapping[str, Any], ctx: Context, write_s: float, days: float | None
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
    cap = v.get("cloud.spot_capacity_nodes")
    if "spot" in ctx.pricing_models and cap is not None and nodes > int(cap):
        unavailable["spot"] = (
            f"spot cannot supply {nodes} nodes: {int(cap)} obtainable (cloud.spot_capacity_nodes); give the"
            " spot capacity your provider shows, or rent fewer nodes on spot"
        )
    for model in ctx.pricing_models:
        quota = v.get(f"cloud.capacity_nodes.{model}")
        if quota is not None and nodes > int(quota):
            unavailable[model] = over_quota(model, nodes, int(quota))
    priced_models = tuple(m for m in ctx.pricing_models if m not in unavailable)
    failures = {
        "on_prem_and_reserved": _failure_dict(base),
        "spot": _failure_dict(spot),
        "spot_hours_factor": spot_factor,
        "model": "goodput = 1 − δ/τ − (τ/2 + restart)/MTBI; τ* = √(2·δ·MTBI) (Young 1974)",
    }

    return base, spot, failures, unavailable, priced_models


OVER_QUOTA = "Over quota: "


def over_quota(model: str, nodes: int, quota: int) -> str:
    """Why a pricing model whose quota (cloud.capacity_nodes.<model>) is below the design's nodes is not an
    option: it cannot supply the cluster, so it is left out of the comparison (not priced as if it could)."""
    supply = "is effectively unavailable (quota 0)" if quota == 0 else f"supplies {quota} nodes at most"
    return (
        f"{OVER_QUOTA}{model} {supply} and the design needs {nodes} (cloud.capacity_nodes.{model}): not"
        " feasible; raise the quota with the provider or plan fewer nodes on this option"
    )


def _evaluate_owning(
    v: Mapping[str, Any],
    ctx: Context,
    network: dict[str, Any],
    network_capex: float,
    network_kw: float,
    storage: dict[str, Any],
    capacity_tb: float,
) -> tuple[OnPremResult, dict[str, Any]]:
    """Owning over the horizon (tco.on_prem_cost) and its JSON; adds network and storage capex shares."""
    storage_capex = capacity_tb * float(v["on_prem.storage_usd_per_tb"])
    inputs = _on_prem_inputs(v, ctx, network_capex, network_kw, storage_capex)
    own = on_prem_cost(
        inputs=inputs, utilization=float(v["utilization"]), horizon_years=float(v["horizon_years"])
    )
    network["share_of_capex"] = network_capex / own.capex_usd if own.capex_usd else 0.0
    storage["on_prem_capex"] = _line(
        Line(storage_capex, f"{num(capacity_tb)} TB × {usd(v['on_prem.storage_usd_per_tb'])}/TB")
    )
    return own, _on_prem_json(own)


def _on_prem_inputs(
    v: Mapping[str, Any], ctx: Context, network_capex: float, network_kw: float, storage_capex: float
) -> OnPremInputs:
    """tco.on_prem_cost's inputs from the resolved values and the network and storage capex."""
    return OnPremInputs(
        nodes=int(v["nodes"]),
        gpus_per_node=int(v["gpus_per_node"]),
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
        staff_fte=None if v["on_prem.staff_fte"] is None else float(v["on_prem.staff_fte"]),
        staff_usd_per_fte_year=float(v["on_prem.staff_usd_per_fte_year"]),
        depreciation_years=float(v["on_prem.depreciation_years"]),
        discount_rate=float(v["on_prem.discount_rate"]),
        residual_fraction=float(v["on_prem.residual_fraction"]),
        load_power_fraction=float(v["on_prem.load_power_fraction"]),
        colo_all_in=ctx.colo_all_in,
        colo_basis=str(v["colocation.basis"]),
        colo_contracted_kw=v.get("on_prem.colo_contracted_kw"),
        staff_fte_per_mw=float(v.get("on_prem.staff_fte_per_mw", 0.0)),
        **{name: float(v[f"on_prem.{name}"]) for name in FINANCE_LINES},
        capital_payments_per_year=int(v["on_prem.capital_payments_per_year"]),
        facility_life_years=(
            None if v.get("on_prem.facility_life_years") is None else float(v["on_prem.facility_life_years"])
        ),
    )


def _on_prem_json(own: OnPremResult) -> dict[str, Any]:
    return {
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


def _evaluate_renting(
    v: Mapping[str, Any],
    ctx: Context,
    models: tuple[str, ...],
    own: OnPremResult,
    storage: dict[str, Any],
    capacity_tb: float,
    spot_factor: float | None,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, LinearCost]]:
    """Each pricing model's bill over the horizon, its break-even with owning, the cost curves and each
    model's cost line in utilization."""
    storage_usd, egress_usd = _cloud_storage_and_egress(v, storage, capacity_tb)
    cloud: dict[str, Any] = {}
    break_even: dict[str, Any] = {}
    rent_lines: dict[str, LinearCost] = {}
    for model in models:
        price = float(v[f"cloud.usd_per_node_hour.{model}"])
        res = cloud_cost(
            pricing_model=model,
            usd_per_node_hour=price,
            nodes=int(v["nodes"]),
            gpus_per_node=int(v["gpus_per_node"]),
            utilization=float(v["utilization"]),
            horizon_years=float(v["horizon_years"]),
            managed_overhead_fraction=float(v["cloud.managed_overhead_fraction"]),
            storage_usd=storage_usd,
            egress_usd=egress_usd,
            spot_hours_factor=spot_factor if model == "spot" and spot_factor is not None else 1.0,
        )
        rent_lines[model] = res.linear
        cloud[model] = _rent_json(v, ctx, model, price, res)
        break_even[model] = _break_even(own.linear, res.linear)
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


def _cloud_storage_and_egress(
    v: Mapping[str, Any], storage: dict[str, Any], capacity_tb: float
) -> tuple[float, float]:
    """(cloud storage USD over the horizon, egress USD); adds the storage line to ``storage``."""
    months = float(v["horizon_years"]) * MONTHS_PER_YEAR
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
    return storage_usd, egress_usd


def _rent_json(
    v: Mapping[str, Any], ctx: Context, model: str, price: float, res: CloudResult
) -> dict[str, Any]:
    """One pricing model's bill as JSON, with a savings plan's commitment and a commitment's break-even with
    on-demand."""
    out: dict[str, Any] = {
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
        out["commitment_usd_per_hour"] = nodes * price
        out["commitment_formula"] = (
            f"{nodes} nodes × {usd(price)}/node-h, committed for every hour of each "
            f"{num(COMMITMENT_YEARS[model])}-year term"
        )
    if model in COMMITMENT_YEARS and "on_demand" in ctx.pricing_models:
        horizon = float(v["horizon_years"])
        od = float(v["cloud.usd_per_node_hour.on_demand"])
        billed_years = committed_years(pricing_model=model, horizon_years=horizon) or horizon
        out["break_even_vs_on_demand_utilization"] = reservation_break_even(
            reserved_usd_per_hour=price,
            on_demand_usd_per_hour=od,
            billed_years=billed_years,
            horizon_years=horizon,
        )
        out["break_even_vs_on_demand_formula"] = (
            f"{num(billed_years)} billed years ÷ {num(horizon)}-year horizon × "
            f"{usd(price)} {'committed' if model in SAVINGS_PLANS else 'reserved'} ÷ {usd(od)} on-demand"
        )
    return out


def _break_even(own: LinearCost, rent: LinearCost) -> dict[str, Any]:
    """The utilization at which owning and renting cost the same, what it means, and its formula."""
    u_star = break_even_utilization(own=own, rent=rent)
    slope = rent.per_utilization_usd - own.per_utilization_usd
    return {
        "utilization": u_star,
        "meaning": break_even_meaning(own=own, rent=rent, u_star=u_star),
        "formula": f"(own fixed {usd(own.fixed_usd)} − rent fixed {usd(rent.fixed_usd)}) ÷ "
        f"(rent per-utilization {usd(rent.per_utilization_usd)} − own per-utilization "
        f"{usd(own.per_utilization_usd)})"
        if abs(slope) > 0
        else "parallel cost lines",
    }


def _evaluate_per_run(
    v: Mapping[str, Any],
    ctx: Context,
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


def _band_ratios(ctx: Context) -> tuple[float, float] | None:
    """(low, high) of the training estimate's error band as fractions of its days
    (engine/training/error_band.py), when the run's days are the training estimate's and it carries a band."""
    training = ctx.training or {}
    band, days = training.get("error_band"), number_of(training, "time_to_train_days")
    if ctx.run_source != "training" or not isinstance(band, Mapping) or not days:
        return None
    return float(band["days_low"]) / days, float(band["days_high"]) / days


def _per_run_band(per_run: dict[str, Any], ctx: Context) -> None:
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


def _evaluate(v: Mapping[str, Any], ctx: Context) -> dict[str, Any]:
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
    ctx: Context,
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
            # Owned capacity starts after its procurement lead time (cashflow.lead_time_months × 365/12).
            "start_delay_days": int(v["cashflow.lead_time_months"]) * DAYS_PER_MONTH,
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
            term = int(round(COMMITMENT_YEARS[model] * 12))
            # What signing implies: one term's dollars, every hour of it on every node (month-1 prices).
            row["commitment_term_months"] = term
            row["commitment_per_term_usd"] = nodes * HOURS_PER_MONTH * term * price * over
            row["formula"] += (
                f"; the commitment is {usd(row['commitment_usd'])} ({num(billed)} node-hours billed),"
                f" of which this run uses {row['share_of_commitment']:.1%}; signing commits"
                f" {usd(row['commitment_per_term_usd'])} for {term} months ({nodes} nodes × 730 h × {term}"
                f" months × {usd(price)}/node-h × {num(over)})"
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
        # Every yearly line but capital and energy: colocation, maintenance, staff and the finance lines.
        other_opex_usd_per_month=sum(p["usd"] for k, p in annual.items() if k not in ("capital", "energy"))
        / 12.0,
        # Market resale at the horizon (cost_request._resolve_lead_and_resale); book value only for tax.
        resale_fraction=float(v["cashflow.resale_fraction"]),
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
        depreciation_schedule=str(v["cashflow.depreciation_schedule"]),
        depreciation_years=float(v["on_prem.depreciation_years"]),
        # A facility with its own life is depreciated for tax over that life (cashflow module docstring).
        **_facility_tax_life(v, own),
    )


def _facility_tax_life(v: Mapping[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """The cash flows' facility fields: its capex and life when on_prem.facility_life_years is given and a
    facility is charged; none otherwise (the facility then depreciates with the servers)."""
    life = v.get("on_prem.facility_life_years")
    facility = own.get("capex_parts", {}).get("facility")
    if life is None or facility is None:
        return {}
    return {"facility_capex_usd": float(facility["usd"]), "facility_life_years": float(life)}


def _cashflow(v: Mapping[str, Any], core: Mapping[str, Any], uncertainty: bool = True) -> dict[str, Any]:
    """Monthly cash flows, NPV, payback, IRR and the Monte Carlo; a note in words when there is no rent
    option to compare owning with."""
    if not core["cloud"]:
        return {"note": "no cloud price to compare owning with: cash flows of owning only are not compared"}
    inputs = _cashflow_inputs(v, core)
    result = cash_flows(inputs=inputs)
    spread = (
        monte_carlo(
            inputs=inputs,
            spread=float(v["uncertainty.spread"]),
            samples=int(v["uncertainty.samples"]),
            seed=int(v["uncertainty.seed"]),
            option=result.reference,
        )
        if uncertainty
        else None
    )
    out = result.to_json()
    out["resale"] = _resale_json(v, inputs)
    for row in out["rent"]:
        row["label"] = MODEL_LABELS.get(row["name"], row["name"])
    for row in out["commitments"]:
        row["label"] = MODEL_LABELS.get(row["model"], row["model"])
    return {
        **out,
        "inputs": inputs.to_json(),
        **({} if spread is None else {"uncertainty": spread.to_json()}),
        "convention": "monthly, end of month, discounted at (1 + r)^(1/12) − 1; rent − own (> 0: owning"
        " costs less); see docs/cost-engine.md",
    }


def _npv_break_evens(cashflow: Mapping[str, Any]) -> dict[str, Any]:
    """Each priced model's break-even utilization with owning on the verdict's basis: the u in (0, 1] where
    the NPVs of the monthly cash flows are equal, from the cash-flow result (the one solver), with what it
    means in words. Never a crossing outside (0, 1] (issue #31: a reservation's annualised cost line crossed
    owning's at 3,151 % utilization)."""
    inputs = CashflowInputs.from_json(cashflow["inputs"])
    out: dict[str, Any] = {}
    for model, u_star in cashflow["break_even_utilization"].items():
        out[model] = {
            "utilization": u_star,
            "meaning": cashflow_break_even_meaning(inputs=inputs, option=model, utilization=u_star),
            "formula": f"NPV(own) = NPV({MODEL_LABELS.get(model, model)}) of the monthly cash flows, solved"
            " for the utilization u in (0, 1]; none when one side is cheaper throughout",
            "basis": BREAK_EVEN_BASIS,
        }
    return out


def _npv_curves(cashflow: Mapping[str, Any], grid: Sequence[float]) -> dict[str, Any]:
    """The cost-against-utilization curves on the verdict's basis: owning's NPV and each priced model's NPV
    of the monthly cash flows at each utilization of ``grid`` (both affine in u, so the lines cross exactly
    at the stated break-even utilization)."""
    inputs = CashflowInputs.from_json(cashflow["inputs"])
    own: list[float] = []
    rent: dict[str, list[float]] = {o.model: [] for o in inputs.rent}
    for u in grid:
        own_npv, rent_npv = npvs_at(inputs=inputs, utilization=float(u))
        own.append(own_npv)
        for model, npv in rent_npv.items():
            rent[model].append(npv)
    return {
        "utilization": list(grid),
        "on_prem_usd": own,
        **{f"{m}_usd": ys for m, ys in rent.items()},
        "basis": NPV_BASIS,
    }


def _resale_json(v: Mapping[str, Any], inputs: CashflowInputs) -> dict[str, Any]:
    """The horizon's resale: market value (the catalog series at the owned age), the request's, or the book
    value fallback; with its source, the series' date and the dollars received."""
    return {
        "fraction": inputs.resale_fraction,
        "usd": inputs.resale_fraction * inputs.capex_usd if inputs.financing != "lease" else 0.0,
        "basis": str(v["cashflow.resale_basis"]),
        "age_years": float(v["cashflow.resale_age_years"]),
        "as_of": v.get("cashflow.resale_as_of"),
        "source": str(v["cashflow.resale_source"]),
    }


def _ranking(core: Mapping[str, Any], cashflow: Mapping[str, Any]) -> dict[str, Any]:
    """Options cheapest first in one frame: the NPV of each option's monthly cash flows, the verdict's basis
    (issue #31: the ranking, the verdict and the break-even on one basis), ``total_usd`` holding that NPV;
    owning only (no rent option priced, no cash flows): its annualised total over the whole horizon. Never
    per-run and horizon figures mixed in one ranking."""
    if "own" in cashflow:
        totals = {"on_prem": float(cashflow["own"]["npv_usd"])}
        totals.update({r["name"]: float(r["npv_usd"]) for r in cashflow["rent"]})
        frame = NPV_BASIS
    else:
        totals = {"on_prem": float(core["on_prem"]["total_usd"])}
        totals.update({m: float(c["total_usd"]) for m, c in core["cloud"].items()})
        frame = "whole horizon"
    order = sorted(totals, key=lambda k: (totals[k], k))
    return {"frame": frame, "options": [{"option": k, "total_usd": totals[k]} for k in order]}


def _verdict(
    v: Mapping[str, Any],
    ctx: Context,
    core: Mapping[str, Any],
    cashflow: Mapping[str, Any],
    sensitivity: Mapping[str, Any],
    *,
    flips: bool = True,
) -> dict[str, Any] | None:
    """The rent-or-own answer composed from the cash flows, the closed-form break-even and the tornado (with
    the inputs' flip thresholds unless ``flips`` is False)."""
    if "reference" not in cashflow:
        return None
    reference = str(cashflow["reference"])
    # The cash-flow result's break-evens: the one solver (cashflow.break_even_utilization), in (0, 1] or None.
    by_option = {m: cashflow["break_even_utilization"].get(m) for m in core["cloud"]}
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
        cheapest_rent=MODEL_LABELS.get(reference, reference),
        payback_month=cashflow["payback_month"],
        break_even_utilization=by_option[reference],
        break_even_option=MODEL_LABELS.get(reference, reference),
        movers=tuple(SENSITIVE_LABELS.get(row["name"], row["name"]) for row in top),
        break_even_by_option=by_option,
        flips=_flips(v, ctx, reference) if flips else (),
        tax_rate=float(v["cashflow.tax_rate"]),
    )
    return answer.to_json()


# The inputs whose flip threshold the verdict states (issue #31: utilization, the server price, the rival's
# rate, the power price, resale), each with the range searched for the crossing (× the base value, or
# absolute for fractions).
FLIP_INPUTS: tuple[tuple[str, str, tuple[float, float], bool], ...] = (
    # (resolved name, unit, (low, high), relative to the base value?)
    ("utilization", "fraction", (1e-9, 1.0), False),
    # Prices from a millionth of today's (a price of 0 is not a price the engine takes) to × 20 or × 50.
    ("on_prem.server_usd", "USD/node", (1e-6, 20.0), True),
    ("cloud.usd_per_node_hour.{reference}", "USD/node-hour", (1e-6, 20.0), True),
    ("on_prem.usd_per_kwh", "USD/kWh", (1e-6, 50.0), True),
    # The resale the cash flows take at the horizon (the market series' value, a quote, or the book-value
    # fallback, resolved before this): on_prem.residual_fraction is the book value's, which moves only tax
    # and the fallback already resolved, so moving it flipped nothing and the verdict said "no flip".
    ("cashflow.resale_fraction", "fraction of capex", (0.0, 0.999), False),
)


def _flips(v: Mapping[str, Any], ctx: Context, reference: str) -> tuple[Flip, ...]:
    """For each of FLIP_INPUTS the value at which NPV(own) = NPV(reference), everything else kept: the whole
    evaluation re-run at each trial value (npv_basis.root, Brent's method); None when owning or renting wins
    over the whole range searched."""
    out: list[Flip] = []
    for template, unit, (low, high), relative in FLIP_INPUTS:
        name = template.format(reference=reference)
        if name not in v:
            continue
        base = float(v[name])
        scale = base if relative else 1.0

        def gap(x: float, name: str = name) -> float:
            inputs = _npv_inputs({**v, name: x}, ctx, reference)
            return math.nan if inputs is None else npv_pair(inputs=inputs, option=reference).gap_usd

        try:
            threshold = npv_root(gap=gap, low=low * scale, high=high * scale)
        except (EngineError, ValueError, ArithmeticError):
            threshold = None  # an input moved this far is refused by the engine: no threshold stated
        out.append(
            Flip(
                name=name,
                label=SENSITIVE_LABELS.get(name, name),
                unit=unit,
                base=base,
                threshold=threshold,
                searched=(low * scale, high * scale),
            )
        )
    return tuple(out)


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


def tco(
    request: Mapping[str, Any] | CostInputs,
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
    uncertainty: bool = True,
    what_ifs: bool = True,
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
    ``request`` is a JSON request (its fields named by their own paths) or inputs already read
    (cost_inputs.CostInputs: a design's, built from its spec, whose fields are named by the spec's paths).
    Raises UnknownReferenceError for unknown slugs and InputError for bad numbers, naming the field by its
    path in what the user sent.
    ``uncertainty=False`` leaves out the Monte Carlo (``cashflow.uncertainty``), for callers that read only
    other figures (a sweep's rows, a deadline's larger clusters): its draws are most of a result's time.
    ``what_ifs=False`` leaves out what re-runs the evaluation with one input moved, the sensitivity tornado
    (no rows) and the verdict's flips (none), for callers that read only the run's days, cost and NPVs (a
    deadline's larger clusters): they were most of the rest.
    """
    catalog = CatalogSpecs(accelerators, fabrics, offerings, storage_tiers, switches, server_types or {})
    inputs = read_inputs(request)
    v, ctx, resolver = resolve(inputs, catalog, training, freshness, resale)
    try:
        return _tco(inputs, v, ctx, resolver, freshness, uncertainty, what_ifs)
    except EngineError as exc:
        raise _at_inputs(exc, inputs) from exc


def _at_inputs(exc: EngineError, inputs: CostInputs) -> EngineError:
    """An error of the evaluation's formulas, which know only the resolved values (keyed by request path),
    naming its field where the inputs hold it (CostInputs.where; a bare request's path is its own): a copy,
    keeping its kind and what a subclass carries."""
    named = copy.copy(exc)
    named.field = inputs.where(exc.field)
    return named


def _tco(
    inputs: CostInputs,
    v: dict[str, Any],
    ctx: Context,
    resolver: Resolver,
    freshness: Freshness | None,
    uncertainty: bool = True,
    what_ifs: bool = True,
) -> dict[str, Any]:
    core = _evaluate(v, ctx)
    _record_staff(v, ctx, resolver, core)
    findings = _findings(v, ctx, core) + _site_findings(ctx, core)
    if freshness is not None:
        findings += stale_price_findings(prices=_dated_prices(resolver, ctx), freshness=freshness)
    findings += placeholder_price_findings(placeholders=_placeholder_prices(v, resolver, core))
    findings += placeholder_storage_findings(placeholders=_placeholder_storage(v, resolver, ctx))
    findings.sort(key=lambda f: SEVERITIES.index(f["severity"]))  # stable: critical first, as listed
    core.pop("_own_linear")
    core.pop("_rent_linear")
    if not core["cloud"] and (inputs.value("cloud") or {}).get("pricing_models") == []:
        core["cloud_note"] = "no cloud option chosen: owning is not compared with renting"
    elif not core["cloud"]:
        core["cloud_note"] = (
            f"no cloud prices: the catalog has no offering for {ctx.accelerator.slug}; "
            "give cloud.offering or cloud.usd_per_node_hour"
        )
    cashflow = _cashflow(v, core, uncertainty)
    if "inputs" in cashflow:
        core["break_even_utilization"] = _npv_break_evens(cashflow)
        core["curves"] = _npv_curves(cashflow, core["curves"]["utilization"])
    sensitivity = _sensitivity(v, ctx, cashflow.get("reference") if what_ifs else None)
    return {
        **core,
        "offering": _offering(ctx),
        "ranking": _ranking(core, cashflow),
        "cashflow": cashflow,
        "verdict": _verdict(v, ctx, core, cashflow, sensitivity, flips=what_ifs),
        "sensitivity": sensitivity,
        "findings": findings,
        "assumptions": [a.as_dict() for a in resolver.used.values()],
    }


def _record_staff(v: Mapping[str, Any], ctx: Context, resolver: Resolver, core: Mapping[str, Any]) -> None:
    """Staff scaled from the fleet is known only once the network's power is: record the FTE count used
    (tco.OnPremInputs.fte), with its arithmetic, beside the ratio, so the assumptions say how many people
    owning pays for."""
    if v["on_prem.staff_fte"] is not None:
        return
    inputs = _on_prem_inputs(v, ctx, 0.0, float(core["network"]["power_kw"]), 0.0)
    mw = inputs.load_kw / 1000.0
    source = f"{num(mw)} MW IT drawn at full load × {num(inputs.staff_fte_per_mw)} FTE per MW"
    resolver.get("on_prem.staff_fte", inputs.fte, "FTE", source)


NETWORK_PRICES = ("network.switch_usd", "network.cable_usd", "network.transceiver_usd")


def _placeholder_prices(
    v: Mapping[str, Any], resolver: Resolver, core: Mapping[str, Any]
) -> list[tuple[str, float]]:
    """The network prices the capex was counted at that are placeholders (their source says so), with the
    value used: none when the network costs nothing counted (one node, included in the server, a lump sum)."""
    if not core["network"].get("capex_parts") or "counted_capex_usd" in core["network"]:
        return []
    used = resolver.used
    return [
        (path, float(v[path]))
        for path in NETWORK_PRICES
        if path in used
        and used[path].source != "request"
        and "placeholder" in used[path].source.lower()
        and float(v[path]) > 0
    ]


def _placeholder_storage(v: Mapping[str, Any], resolver: Resolver, ctx: Context) -> list[tuple[str, float]]:
    """The defaults that sized storage when the request gives no capacity: the parameter count (checkpoint
    size) when no model gave it, the dataset size when no token count did."""
    if v.get("storage.capacity_tb") is not None:
        return []
    used = resolver.used
    out = []
    if used["run.params_b"].source == DEFAULTS["run.params_b"].source:
        out.append(("run.params_b", float(v["run.params_b"])))
    if ctx.tokens is None and used["storage.dataset_tb"].source == DEFAULTS["storage.dataset_tb"].source:
        out.append(("storage.dataset_tb", float(v["storage.dataset_tb"])))
    return out


def _npv_inputs(values: Mapping[str, Any], ctx: Context, reference: str) -> CashflowInputs | None:
    """The cash-flow inputs with every value re-evaluated at ``values`` (owning's capex, maintenance, energy
    and resale all follow a moved input), None when the reference option cannot finish the run there."""
    again = _evaluate(values, ctx)
    if reference not in again["cloud"]:
        return None  # moved this far, the reference option cannot finish the run
    return _cashflow_inputs(values, again)


def _sensitivity(v: Mapping[str, Any], ctx: Context, reference: str | None) -> dict[str, Any]:
    """The tornado on the verdict's basis: own − rent in NPV of the monthly cash flows against the cash
    flows' reference (the cheapest chosen option by NPV), and the NPV break-even utilization against it,
    with each sensitive input moved ± sensitivity.fraction and the whole evaluation run again at each end."""
    fraction = float(v["sensitivity.fraction"])

    def outcome(values: Mapping[str, Any]) -> tuple[float, float | None] | None:
        assert reference is not None
        inputs = _npv_inputs(values, ctx, reference)
        if inputs is None:
            return None
        pair = npv_pair(inputs=inputs, option=reference)
        return -pair.gap_usd, npv_break_even(inputs=inputs, option=reference)

    sensitivity: dict[str, Any] = {
        "pricing_model": reference,
        "fraction": fraction,
        "basis": "NPV of the monthly cash flows, own − rent",
        "rows": [],
    }
    if reference is not None:
        # Only inputs of what is compared: the spot interruption rate moves nothing when spot is not ticked.
        unpriced = () if "spot" in ctx.pricing_models else ("cloud.spot_preemptions_per_day",)
        names = [n for n in SENSITIVE if n in v and n not in unpriced]
        sensitivity.update(
            tornado(
                values=v,
                names=names,
                fraction=fraction,
                outcome=outcome,
                bounds={
                    "utilization": (1e-6, 1.0),
                    "cashflow.resale_fraction": (0.0, 0.999),
                    "on_prem.load_power_fraction": (1e-6, 1.0),
                    "on_prem.depreciation_years": (1e-6, math.inf),
                },
            )
        )
    return sensitivity


def _findings(v: Mapping[str, Any], ctx: Context, core: Mapping[str, Any]) -> list[dict[str, str]]:
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
    if v["cashflow.resale_basis"] == "book_value":
        findings.append(
            {
                "code": "resale_book_value_fallback",
                "severity": "warning",
                "message": f"No residual-value series of {ctx.accelerator.slug} in the catalog covers age"
                f" {age_text(v['cashflow.resale_age_years'])}: the horizon's resale is taken at the"
                " straight-line book value, not a market price; give cashflow.resale_fraction from a quote",
                "source": str(v["cashflow.resale_source"]),
            }
        )
    findings += [
        {
            "code": "option_over_quota",
            "severity": "warning",
            "message": why,
            "source": "the quota given for the option (cloud.capacity_nodes)",
        }
        if why.startswith(OVER_QUOTA)
        else {
            "code": "option_cannot_finish",
            "severity": "warning",
            "message": why,
            "source": core["failures"]["model"],
        }
        for why in core["cloud_unavailable"].values()
    ]
    order = ("critical", "warning", "info")
    return sorted(
        findings, key=lambda f: order.index(f["severity"]) if f["severity"] in order else len(order)
    )


def _site_findings(ctx: Context, core: Mapping[str, Any]) -> list[dict[str, str]]:
    """The design checked against its site (findings.site_findings); none without a site."""
    placed = ctx.site
    if placed is None:
        return []
    part = RACK_SCALE.get(ctx.accelerator.slug)
    fit = SiteFit(
        site=placed.site,
        accelerator=ctx.accelerator.slug,
        accelerator_name=ctx.accelerator.name,
        cooling=placed.cooling,
        cooling_required=None if part is None else part.cooling,
        plan=placed.plan,
        it_load_mw=float(core["on_prem"]["it_power_kw"]) / 1000.0,
        node_power_source=placed.node_power_source,
    )
    return site_findings(fit)


def _offering(ctx: Context) -> dict[str, Any] | None:
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


def _dated_prices(resolver: Resolver, ctx: Context) -> list[tuple[str, str]]:
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
