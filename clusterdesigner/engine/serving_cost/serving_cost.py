"""Serving's costs: $ per million tokens owning and per cloud offering, the serving engine's answer priced
through the cost engine (issue 34: serving never imports cost; this part imports both).

The serving engine (engine.serving) sizes a request: layouts, replicas, throughput, latency
(``serving.sizing``). :func:`estimate` adds the costs to that answer: the owning option is the cost engine's
owning total for the whole nodes that hold the replicas (``cost.tco`` → ``on_prem``, :func:`owning_cost`),
each cloud offering's the cost engine's renting bill per pricing model (``rent_own.cloud_cost``), both turned
into $ per million input, output and all tokens on what the option bills (:func:`serving_costs`). Formulas
and sources: docs/serving-engine.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError, under
from clusterdesigner.engine.core.offerings import PRICING_MODELS, CloudOfferingSpec
from clusterdesigner.engine.core.units import HOURS_PER_YEAR
from clusterdesigner.engine.cost.cost import tco
from clusterdesigner.engine.cost.rent_own import cloud_cost
from clusterdesigner.engine.serving.serving import (
    OWNING_SECTIONS,
    SECONDS_PER_HOUR,
    CostOption,
    LayoutResult,
    ServingInput,
    ServingResult,
    Sizing,
    prefill_s,
    sizing,
)


@dataclass(frozen=True)
class BilledCost:
    """What one way to pay bills over the horizon: its $ per GPU-hour used (the cost engine's figure, shown),
    its total, the GPUs it bills (whole nodes or the offering's instances) and the GPU-hours it bills."""

    usd_per_gpu_hour: float
    total_usd: float
    billed_gpus: int
    billed_gpu_hours: float
    formula: str


def _cost_option(
    *,
    option: str,
    pricing_model: str,
    offering: str,
    billed: BilledCost,
    best: LayoutResult,
    inp: ServingInput,
    prefill: float,
    horizon_years: float,
) -> CostOption:
    """$ per million tokens on what is billed: the option's total over the horizon ÷ the tokens served.

    tokens = R_mean · (n_in + n_out) · horizon h · 3,600; $/M all = total / tokens × 10⁶. The total splits
    by phase as one request's replica GPU time does: prefill t_p (input) and decode 1/R − t_p (output),
    R the replica's requests/s, so $/M input = total · (t_p · R) / (R_mean · n_in · horizon s) × 10⁶ and
    the same for output with (1 − t_p · R). Idle share = 1 − busy GPU-hours / billed GPU-hours, busy =
    R_mean · horizon s · (tp·pp) / R / 3,600. Example (tests/serving/test_api.py): Llama 3 8B at 2 req/s on
    H100 is one 1-GPU replica on an 8-GPU node, so at most 1/8 of the billed GPU-hours are busy."""
    hours = HOURS_PER_YEAR * horizon_years
    seconds = hours * SECONDS_PER_HOUR
    per_request_s = 1.0 / best.requests_per_s_per_replica
    prefill_share = min(prefill / per_request_s, 1.0)
    requests = inp.requests_per_s * seconds
    n_in, n_out = inp.mean_input_tokens, inp.mean_output_tokens
    tokens = requests * (n_in + n_out)
    busy = requests * per_request_s * best.gpus_per_replica / SECONDS_PER_HOUR
    return CostOption(
        option=option,
        pricing_model=pricing_model,
        offering=offering,
        usd_per_gpu_hour=billed.usd_per_gpu_hour,
        usd_per_m_input_tokens=billed.total_usd * prefill_share / (requests * n_in) * 1e6,
        usd_per_m_output_tokens=billed.total_usd * (1.0 - prefill_share) / (requests * n_out) * 1e6,
        usd_per_m_tokens=billed.total_usd / tokens * 1e6,
        formula=billed.formula,
        usd_per_m_output_tokens_all_gpu_time=billed.total_usd / (requests * n_out) * 1e6,
        idle_fraction=max(0.0, 1.0 - busy / billed.billed_gpu_hours) if billed.billed_gpu_hours > 0 else 0.0,
        billed_gpus=billed.billed_gpus,
        billed_gpu_hours=billed.billed_gpu_hours,
        busy_gpu_hours=busy,
        total_usd=billed.total_usd,
        tokens_served=tokens,
    )


def serving_costs(
    inp: ServingInput,
    best: LayoutResult,
    *,
    utilization: float,
    own: BilledCost | None,
    offerings: Mapping[str, CloudOfferingSpec],
    managed_overhead_fraction: float = 0.0,
    horizon_years: float = 3.0,
) -> tuple[CostOption, ...]:
    """$ per million input, output and all tokens, owning and per cloud offering × pricing model, each on
    what the option bills over the horizon (:func:`_cost_option`).

    Owning: the cost engine's owning total for the whole nodes that hold the replicas (``cost.tco``, passed
    in by :func:`estimate`), held every hour. Renting: ``tco.cloud_cost`` for the whole instances of each
    offering that hold them (a 1-GPU instance bills one GPU), at its catalog price (on-demand pays the hours
    used, reserved every hour of whole terms, spot the hours used: a lost request is retried, so no
    checkpoint goodput applies). Offerings of other accelerators are skipped.
    """
    prefill = float(prefill_s(inp, tp=best.tp, pp=best.pp))
    out: list[CostOption] = []

    def option(name: str, pricing_model: str, offering: str, billed: BilledCost) -> CostOption:
        return _cost_option(
            option=name,
            pricing_model=pricing_model,
            offering=offering,
            billed=billed,
            best=best,
            inp=inp,
            prefill=prefill,
            horizon_years=horizon_years,
        )

    if own is not None:
        out.append(option("own", "own", "", own))
    for slug in sorted(offerings):
        if offerings[slug].accelerator == inp.accelerator.slug:
            rent = _rent_billed(
                offerings[slug],
                gpus=best.gpus,
                utilization=utilization,
                horizon_years=horizon_years,
                managed_overhead_fraction=managed_overhead_fraction,
            )
            out.extend(option(f"{slug} {model}", model, slug, billed) for model, billed in rent.items())
    return tuple(out)


def _rent_billed(
    offer: CloudOfferingSpec,
    *,
    gpus: int,
    utilization: float,
    horizon_years: float,
    managed_overhead_fraction: float,
) -> dict[str, BilledCost]:
    """Per pricing model the offering has a price for (in PRICING_MODELS order): ``tco.cloud_cost`` for the
    whole instances that hold ``gpus`` (⌈gpus / GPUs an instance⌉): its $ per GPU-hour used, total and
    billed GPU-hours (node-hours billed × GPUs an instance)."""
    nodes = max(1, math.ceil(gpus / offer.gpu_count))
    out: dict[str, BilledCost] = {}
    for model in (m for m in PRICING_MODELS if m in offer.usd_per_hour):
        rent = cloud_cost(
            pricing_model=model,
            usd_per_node_hour=offer.usd_per_hour[model],
            nodes=nodes,
            gpus_per_node=offer.gpu_count,
            utilization=utilization,
            horizon_years=horizon_years,
            managed_overhead_fraction=managed_overhead_fraction,
            storage_usd=0.0,
            egress_usd=0.0,
        )
        out[model] = BilledCost(
            usd_per_gpu_hour=rent.usd_per_gpu_hour.usd,
            total_usd=rent.total.usd,
            billed_gpus=nodes * offer.gpu_count,
            billed_gpu_hours=rent.billed_node_hours * offer.gpu_count,
            formula=f"{nodes} × {offer.gpu_count}-GPU instance(s): {rent.usd_per_gpu_hour.formula}",
        )
    return out


def owning_cost(
    *,
    catalog: CatalogSpecs,
    accelerator: str,
    nodes: int,
    gpus_per_node: int,
    utilization: float,
    on_prem: Mapping[str, Any],
    horizon_years: float,
    site: Mapping[str, Any] | None = None,
    sections: Mapping[str, Any] | None = None,
    at: str = "",
    given_at: str | None = None,
) -> BilledCost:
    """The cost engine's owning cost of the serving cluster's whole nodes (``cost.tco`` → ``on_prem``): its
    total over the horizon, its $ per GPU-hour used at the implied utilization, and the GPU-hours it holds
    (nodes × GPUs a node × 8,760 h × years: an owner pays for every hour). Every owning default and catalog
    price is the cost engine's own (docs/cost-engine.md); at a ``site`` (engine.cost.site's object: the
    request's ``cost.site``) its power price, PUE and colocation, as the cost engine prices a design placed
    there. Its errors keep their field under the serving request's ``cost.`` (the request sitting at ``at``;
    ``given_at``, where the caller's accelerator sits, as serving.parse_request names them)."""
    request = {
        "cluster": {"accelerator": accelerator, "nodes": nodes, "gpus_per_node": gpus_per_node},
        "utilization": utilization,
        "horizon_years": horizon_years,
        "on_prem": dict(on_prem),
        **({"site": dict(site)} if site else {}),
        **{k: v for k, v in (sections or {}).items() if k in OWNING_SECTIONS},
    }
    try:
        # Only the owning figures are read: no Monte Carlo and no what-ifs (the tornado's ~30 re-runs of the
        # evaluation), which are ~90 % of a full result's time (27 ms of 29 on the example request) and move
        # none of them (tests/engine/test_serving.py: the same on_prem as the full result's).
        result = tco(request, **catalog.cost_kwargs(), uncertainty=False, what_ifs=False)
    except EngineError as exc:
        if exc.field.startswith(("on_prem", "site", *OWNING_SECTIONS)) or exc.field == "horizon_years":
            where = under(at, f"cost.{exc.field}")
        elif exc.field.startswith("cluster.nodes"):
            where = under(
                at, "demand.requests_per_s"
            )  # the demand sized a cluster the cost engine cannot price
        else:
            where = under(at, "accelerator") if given_at is None else given_at
        raise type(exc)(exc.message, field=where) from exc
    own = result["on_prem"]
    gpus = nodes * gpus_per_node
    return BilledCost(
        usd_per_gpu_hour=float(own["usd_per_gpu_hour"]),
        total_usd=float(own["total_usd"]),
        billed_gpus=gpus,
        billed_gpu_hours=gpus * HOURS_PER_YEAR * horizon_years,
        formula=f"{nodes} × {gpus_per_node}-GPU node(s) owned: ${float(own['usd_per_gpu_hour']):.3f}/GPU-hour"
        f" used at {utilization:.1%} utilization",
    )


def estimate(
    request: Mapping[str, Any],
    *,
    catalog: CatalogSpecs,
    at: str = "",
    given_at: str | None = None,
    price_owning: bool = True,
) -> ServingResult:
    """A serving estimate for one request (docs/serving-engine.md): the serving engine's answer
    (``serving.sizing``: the fewest-GPU layout meeting the targets at the peak demand, every layout searched,
    TTFT/TPOT against batch, the disaggregated option) with $ per million tokens owning (:func:`owning_cost`)
    and per cloud offering (:func:`serving_costs`). ``price_owning=False`` leaves the owning option out (a
    caller that only sizes the GPUs, such as a capacity plan, needs no owning price: the layout and GPU count
    do not depend on any cost). Raises InputError/UnknownReferenceError naming the user's field (the request
    sitting at ``at``, a model and accelerator the caller gives at ``given_at``: serving.parse_request),
    InfeasibleError when no layout fits or meets the targets."""
    sized = sizing(request, accelerators=catalog.accelerators, at=at, given_at=given_at)
    return _priced(sized, catalog=catalog, price_owning=price_owning)


def _priced(sized: Sizing, *, catalog: CatalogSpecs, price_owning: bool = True) -> ServingResult:
    """``sized``'s answer with its cost rows and the note on what was not priced."""
    inp, best, cost = sized.inp, sized.result.best, sized.cost
    own = (
        owning_cost(
            catalog=catalog,
            accelerator=inp.accelerator.slug,
            nodes=max(1, math.ceil(best.gpus / inp.gpus_per_node)),
            gpus_per_node=inp.gpus_per_node,
            utilization=sized.result.utilization,
            on_prem=cost.on_prem,
            horizon_years=cost.horizon_years,
            site=cost.site,
            sections=cost.sections,
            at=inp.at,
            given_at=inp.given_at,
        )
        if price_owning
        else None
    )
    costs = serving_costs(
        inp,
        best,
        utilization=sized.result.utilization,
        own=own,
        offerings=catalog.offerings if cost.include_cloud else {},
        managed_overhead_fraction=cost.managed_overhead_fraction,
        horizon_years=cost.horizon_years,
    )
    note = (
        ""
        if any(c.offering for c in costs)
        else f"no cloud offering in the catalog rents {inp.accelerator.slug}"
        if cost.include_cloud
        else "cloud offerings not priced (cost.include_cloud false)"
    )
    if not price_owning:
        note = "; ".join(filter(None, [note, "owning not priced (sizing only)"]))
    return replace(sized.result, costs=costs, cost_note=note)
