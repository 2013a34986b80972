"""Design findings: rules that flag what a cluster design gets wrong, each with a severity and a source."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.offerings import Freshness
from clusterdesigner.engine.cost.site import RACK_SCALE, SiteFit

SEVERITIES = ("critical", "warning", "info")

GTC24 = (
    "NVIDIA GTC24 S62129 nccl-tests all-reduce bus bandwidth: 100GbE TCP sockets 10 GB/s vs 400Gb RDMA "
    "48 GB/s per NIC"
)


@dataclass(frozen=True)
class FindingsInput:
    nodes: int
    gpus_per_node: int
    accelerator: AcceleratorSpec
    cluster_accelerators: tuple[AcceleratorSpec, ...]
    fabric: FabricSpec
    oversubscription: float
    storage_kind: str | None
    network_share_of_capex: float | None
    training: Mapping[str, Any] | None
    utilization: float
    reserved_break_even: Mapping[str, float]  # pricing model -> utilization where it matches on-demand
    spot_priced: bool
    checkpoint_interval_minutes: float | None
    spot_optimal_interval_minutes: float | None


def _finding(code: str, severity: str, message: str, source: str) -> dict[str, str]:
    return {"code": code, "severity": severity, "message": message, "source": source}


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _layout_findings(d: FindingsInput) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    training = d.training or {}
    layout = training.get("parallelism") or {}

    if training and training.get("fits") is False:
        out.append(
            _finding(
                "model_does_not_fit",
                "critical",
                "The model fits at no parallel layout on this cluster: "
                "add GPUs or memory per GPU, shard optimizer "
                "state (ZeRO/FSDP), or enable activation recomputation.",
                "training engine memory model (ZeRO, Rajbhandari et al. SC'20; Korthikanti et al. 2022)",
            )
        )
    tp = layout.get("tp")
    tp_limit = max(
        d.gpus_per_node, d.accelerator.scaleup_domain_gpus if d.accelerator.has_scaleup_link else 1
    )
    if isinstance(tp, int) and tp > tp_limit:
        out.append(
            _finding(
                "tp_spans_nodes",
                "critical",
                f"Tensor parallelism {tp} exceeds the {tp_limit}-GPU "
                "scale-up domain, so every layer's all-reduce "
                f"crosses the {d.fabric.name} fabric: keep TP within "
                "a node and use pipeline or data parallelism "
                "across nodes.",
                "Narayanan et al., 'Efficient large-scale language "
                "model training on GPU clusters', SC'21, Sec. 3.3",
            )
        )
    return out


def _network_findings(d: FindingsInput) -> list[dict[str, str]]:
    gpus = d.nodes * d.gpus_per_node
    out: list[dict[str, str]] = []
    if d.fabric.kind == "ethernet" and d.fabric.port_gbps <= 100 and d.nodes > 4:
        out.append(
            _finding(
                "slow_ethernet",
                "critical",
                f"{d.fabric.name} ({d.fabric.port_gbps:g} Gb/s Ethernet) between {d.nodes} nodes will starve "
                "gradient all-reduce: use 400 Gb/s InfiniBand or RoCE with one NIC per GPU.",
                GTC24,
            )
        )
    if d.fabric.kind == "roce" and gpus >= 256:
        out.append(
            _finding(
                "roce_at_scale",
                "warning",
                f"RoCE at {gpus} GPUs: expect all-reduce about 15 % "
                "slower than InfiniBand unless congestion control "
                "and ECMP are tuned (Meta runs RoCE at 16K+ GPUs with deep-buffer spines and E-ECMP).",
                "15 % figure: ClusterDesigner rule of thumb (UNVERIFIED against a "
                "measurement); Llama 3 (arXiv:2407.21783) Sec. 3.3.1",
            )
        )
    if d.oversubscription > 1 and d.nodes > 1:
        out.append(
            _finding(
                "oversubscribed",
                "warning",
                f"The network is oversubscribed {d.oversubscription:g}:1: "
                "data-parallel all-reduce across leaves runs "
                f"at 1/{d.oversubscription:g} of line rate. Build training pods non-blocking (1:1).",
                "Llama 3 (arXiv:2407.21783) Sec. 3.3.1: full bisection "
                "within 3,072-GPU pods, 1:7 only between pods",
            )
        )
    return out


def _storage_and_node_findings(d: FindingsInput) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if d.storage_kind == "nfs":
        out.append(
            _finding(
                "checkpoint_to_nfs",
                "warning",
                "Checkpoints go to NFS, whose single-server write "
                "bandwidth makes large saves block training for "
                "minutes: write to a parallel file system, or asynchronously to local NVMe then upload.",
                "BLOOM-176B saved 2.3 TB in ~40 s on GPFS "
                "(bigscience tr11-176B-ml README); Llama 3 Sec. 3.3.1",
            )
        )
    if not d.accelerator.has_scaleup_link and d.gpus_per_node > 1:
        out.append(
            _finding(
                "no_nvlink",
                "warning",
                f"{d.accelerator.name} has no NVLink: GPUs in a "
                "node talk over PCIe (~24-48 GB/s all-reduce vs "
                "~370 GB/s NVLink4), so tensor parallelism is "
                "slow; prefer data parallelism or an HGX-class GPU.",
                "NVIDIA GTC24 S62129 nccl-tests all-reduce bus "
                "bandwidth: PCIe Gen4 24, Gen5 48, H100 NVLink4 370 GB/s",
            )
        )
    families = {a.family or a.slug for a in d.cluster_accelerators}
    if len(families) > 1:
        out.append(
            _finding(
                "mixed_generations",
                "warning",
                "The cluster mixes accelerator generations "
                f"({', '.join(sorted(families))}): synchronous training "
                "runs at the slowest GPU's pace; keep one generation per training job.",
                "synchronous data parallelism waits for the slowest worker (Narayanan et al. SC'21, Sec. 2)",
            )
        )
    if d.nodes > 1 and not _is_power_of_two(d.nodes):
        out.append(
            _finding(
                "nodes_not_power_of_two",
                "info",
                f"{d.nodes} nodes is not a power of two: tree/ring "
                "collectives and parallel layouts (TP·PP·DP) "
                "divide most evenly over 2^k nodes.",
                "NCCL ring/tree algorithms; Megatron-LM layout constraints (Narayanan et al. SC'21)",
            )
        )
    return out


def _cost_findings(d: FindingsInput) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    if d.network_share_of_capex is not None and d.nodes > 1 and d.network_share_of_capex < 0.10:
        out.append(
            _finding(
                "network_under_budgeted",
                "info",
                f"The network is {d.network_share_of_capex:.1%} of "
                "capex: below 10 % usually means too few NICs or "
                "an oversubscribed fabric for multi-node training; check the NIC count and switch prices.",
                "ClusterDesigner rule of thumb (UNVERIFIED); switch and "
                "optics prices here are placeholders unless given",
            )
        )
    if (
        d.spot_priced
        and d.checkpoint_interval_minutes is not None
        and d.spot_optimal_interval_minutes
        and not 0.5 <= d.checkpoint_interval_minutes / d.spot_optimal_interval_minutes <= 2.0
    ):
        out.append(
            _finding(
                "spot_checkpoint_interval",
                "warning",
                f"On spot, checkpointing every {d.checkpoint_interval_minutes:g} "
                "min is far from the Young/Daly "
                f"optimum of {d.spot_optimal_interval_minutes:.0f} "
                "min for this preemption rate: move toward it.",
                "Young, CACM 17(9) 1974; Daly, FGCS 22(3) 2006: τ = √(2·δ·MTBI)",
            )
        )
    for model, threshold in d.reserved_break_even.items():
        if d.utilization < threshold:
            out.append(
                _finding(
                    "reserved_below_break_even",
                    "warning",
                    f"At {d.utilization:.0%} utilization a {model} "
                    "commitment costs more than on-demand (it breaks "
                    f"even at {threshold:.0%}): buy on-demand, or commit to fewer nodes.",
                    "closed form: billed term years ÷ horizon × reserved $/h ÷ on-demand $/h"
                    " (ClusterDesigner cost engine)",
                )
            )
    return out


# The rules, in the order findings of one severity are listed.
_RULES = (_layout_findings, _network_findings, _storage_and_node_findings, _cost_findings)


def design_findings(d: FindingsInput) -> list[dict[str, str]]:
    """Apply every rule; critical findings first. Each rule's source is in its ``source`` field."""
    out = [finding for rule in _RULES for finding in rule(d)]
    order = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(out, key=lambda f: order[f["severity"]])


def stale_price_findings(*, prices: Sequence[tuple[str, str]], freshness: Freshness) -> list[dict[str, str]]:
    """A warning for each price, given as (what, as_of), dated before ``freshness.stale_before``: the result
    rests on a figure that may no longer hold. One finding per distinct (what, as_of)."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for what, as_of in prices:
        if not freshness.is_stale(as_of) or (what, as_of) in seen:
            continue
        seen.add((what, as_of))
        out.append(
            _finding(
                "stale_price",
                "warning",
                f"{what} is dated {as_of}, more than {freshness.stale_after_days} days before "
                f"{freshness.today.isoformat()}: check it against a current price list, import a fresh "
                "one, or enter your own.",
                f"catalog price freshness: a price older than {freshness.stale_after_days} days is stale",
            )
        )
    return out


def _placeholder_finding(
    code: str, placeholders: Sequence[tuple[str, float]], lead: str, advice: str, source: str
) -> list[dict[str, str]]:
    """One warning naming each placeholder (request path, value used) a figure rests on; none without any."""
    if not placeholders:
        return []
    named = ", ".join(f"{path} ({value:,.6g})" for path, value in placeholders)
    return [_finding(code, "warning", f"{lead}: {named}. {advice}", source)]


def placeholder_price_findings(*, placeholders: Sequence[tuple[str, float]]) -> list[dict[str, str]]:
    """Network capex resting on placeholder prices, not published figures or quotes."""
    return _placeholder_finding(
        "placeholder_prices",
        placeholders,
        "Network capex rests on placeholder prices, not quotes",
        "Enter your quote's prices (spec.costs.network.switch_usd, cable_usd, transceiver_usd), a lump sum"
        " (network.capex_usd), or network.included_in_server when the server quote includes the network.",
        "ClusterDesigner catalog: these prices are UNVERIFIED placeholders (no published figure found)",
    )


def placeholder_storage_findings(*, placeholders: Sequence[tuple[str, float]]) -> list[dict[str, str]]:
    """Storage sized from placeholders because the request names no model or dataset: the capacity sets cloud
    storage on every rent option and storage capex on owning, so it moves the break-even (issue 31 item 11:
    one node gave 21.8 % through a design, which carries its model, and 18.7 % through manage.py tco, which
    sized 12.9 TB from a 70B placeholder and 10 TB of dataset instead of the 8B model's 4.3 TB)."""
    return _placeholder_finding(
        "placeholder_storage",
        placeholders,
        "Storage is sized from placeholders, not this run",
        "Give run.params_b and run.tokens (a design gives its model's), storage.dataset_tb, or"
        " storage.capacity_tb.",
        "ClusterDesigner cost request defaults: placeholders used when no model or dataset is given",
    )


SITE_SOURCE = "site check (clusterdesigner.engine.cost.site): racks from node kW and the site's kW per rack"


def _rack_findings(fit: SiteFit) -> list[dict[str, str]]:
    site, plan = fit.site, fit.plan
    if plan.fits:
        return []
    if plan.unit_gpus is not None:
        message = (
            f"A {fit.accelerator_name} rack-scale system is one rack of {plan.unit_gpus} GPUs drawing"
            f" {plan.rack_kw:,.1f} kW ({plan.rack_kw / plan.node_power_kw:g} × {plan.node_power_kw:,.1f} kW,"
            f" {fit.node_power_source}); site {site.name} allows {site.max_kw_per_rack:g} kW per rack, so it"
            " cannot be placed there at all: choose a site with racks of at least"
            f" {math.ceil(plan.rack_kw):,} kW."
        )
    else:
        message = (
            f"One node draws {plan.node_power_kw:,.1f} kW ({fit.node_power_source}); site {site.name} allows"
            f" {site.max_kw_per_rack:g} kW per rack, so not one node fits a rack."
        )
    return [_finding("site_rack_power", "critical", message, SITE_SOURCE)]


def _cooling_findings(fit: SiteFit) -> list[dict[str, str]]:
    needed = fit.cooling_required
    if needed is None or needed in fit.site.cooling:
        return []
    offered = ", ".join(c.replace("_", " ") for c in fit.site.cooling)
    return [
        _finding(
            "site_liquid_cooling",
            "critical",
            f"{fit.accelerator_name} needs {needed.replace('_', ' ')} cooling; site {fit.site.name} offers"
            f" {offered} only. Its PUE for {needed.replace('_', ' ')} is unknown, so the engine's default PUE"
            " is used.",
            RACK_SCALE[fit.accelerator].source,
        )
    ]


def _power_findings(fit: SiteFit) -> list[dict[str, str]]:
    site, load = fit.site, fit.it_load_mw
    when = site.planned_date
    available = site.mw_at(when)
    if load <= available:
        return []
    at = f"at the planned date {when}" if when else "now"
    later = site.first_date_with(load)
    advice = f"the site reaches {site.mw_at(later):g} MW from {later}" if later else "no later step covers it"
    return [
        _finding(
            "site_power",
            "critical",
            f"The cluster's IT load at full power is {load:,.3f} MW (servers and network, nameplate); site"
            f" {site.name} has {available:g} MW {at}: {advice}.",
            "site check: nameplate IT kW (clusterdesigner.engine.cost.rent_own) against the site's MW by "
            "date",
        )
    ]


def _placement_finding(fit: SiteFit) -> list[dict[str, str]]:
    plan, site = fit.plan, fit.site
    if not plan.fits:
        return []
    unit = f"{plan.nodes_per_rack} node{'s' * (plan.nodes_per_rack != 1)}"
    return [
        _finding(
            "site_racks",
            "info",
            f"Site {site.name}: {plan.racks} rack{'s' * (plan.racks != 1)} of {unit} at"
            f" {plan.node_power_kw:,.1f} kW each ({plan.rack_kw:,.1f} kW of the {site.max_kw_per_rack:g} kW"
            f" per rack), {fit.cooling.replace('_', ' ')} cooling, IT load {fit.it_load_mw:,.3f} MW of"
            f" {site.mw_at(site.planned_date):g} MW.",
            SITE_SOURCE,
        )
    ]


def site_findings(fit: SiteFit) -> list[dict[str, str]]:
    """The design checked against its site: a rack (or rack-scale system) over the site's kW per rack, liquid
    cooling needed but not offered, IT load over the site's MW (now, or at the planned date); else where the
    racks go. Each names its figures."""
    rules = (_rack_findings, _cooling_findings, _power_findings, _placement_finding)
    return [finding for rule in rules for finding in rule(fit)]
