"""Scale-out network sizing: leaf-spine / three-tier fat-tree (folded Clos), Dragonfly+ and rail-only.

Switch counts follow the folded-Clos arithmetic with radix R switches: a leaf gives d = ⌊R·o/(1+o)⌋ ports
to endpoints and R − d upward at oversubscription o (down:up), so a two-tier network reaches d·R endpoints
(2,048 with R = 64, o = 1) and a three-tier one d·R·R/2 (65,536): Leiserson, "Fat-trees", IEEE TC 1985;
Al-Fares, Loukissas & Vahdat, "A scalable, commodity data center network architecture", SIGCOMM 2008,
Sec. 3 (k-ary fat-tree: k³/4 hosts, 5k²/4 switches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from clusterdesigner.engine.core.errors import InputError


@dataclass(frozen=True)
class Topology:
    """One sized network. Counts are whole switches, cables and transceivers; bandwidth in Gb/s."""

    name: str  # single-switch, leaf-spine, fat-tree-3, dragonfly-plus
    tiers: int
    endpoints: int
    leaf_switches: int
    spine_switches: int
    core_switches: int
    switches: int
    switch_ports_used: int
    cables: int
    transceivers: int
    bisection_gbps: float
    max_endpoints: int
    groups: int = 0  # Dragonfly+ only
    node_transceivers: int = 0  # in the nodes' NIC cages
    switch_transceivers: int = 0  # in the switches' cages

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def leaf_down_ports(*, radix: int, oversubscription: float) -> int:
    """Endpoint-facing ports per leaf: ⌊R · o / (1 + o)⌋ (32 of 64 at 1:1, 48 of 64 at 3:1)."""
    if oversubscription < 1:
        raise InputError("must be 1 (non-blocking) or more", field="cluster.oversubscription")
    return max(1, min(radix - 1, math.floor(radix * oversubscription / (1.0 + oversubscription) + 1e-9)))


def max_endpoints(*, radix: int, oversubscription: float, tiers: int) -> int:
    """Largest network of ``tiers`` levels: R (one switch), d·R (two), d·R·R/2 (three)."""
    d = leaf_down_ports(radix=radix, oversubscription=oversubscription)
    return {1: radix, 2: d * radix, 3: d * radix * (radix // 2)}[tiers]


def fat_tree(
    *,
    nodes: int,
    nics_per_node: int,
    port_gbps: float,
    radix: int,
    oversubscription: float = 1.0,
    rail_optimized: bool = True,
    ports_per_transceiver: int = 1,
    node_ports_per_transceiver: int = 1,
) -> Topology | None:
    """Smallest folded Clos (1, 2 or 3 tiers) for nodes · NICs endpoints; None beyond three tiers.

    Leaves L = ⌈E / d⌉ (rail-optimised: one set of leaves per NIC rail, k · ⌈nodes / d⌉); uplinks U = ⌈E / o⌉;
    two tiers: spines ⌈U / R⌉; three tiers: aggregation ⌈U / (R/2)⌉ (non-blocking above the edge),
    core ⌈U / R⌉. Cables = E + U (+ U). Bisection = E/2 · port Gb/s / o. Transceivers: see ``_build``.
    """
    if nodes < 1:
        raise InputError("must be at least 1", field="cluster.nodes")
    if nics_per_node < 1:
        raise InputError("must be at least 1", field="cluster.nics_per_node")
    e = nodes * nics_per_node
    cages = (ports_per_transceiver, nodes * math.ceil(nics_per_node / node_ports_per_transceiver))
    d = leaf_down_ports(radix=radix, oversubscription=oversubscription)
    if e <= radix:
        return _build("single-switch", 1, e, (1, 0, 0), e, e, e / 2.0 * port_gbps, radix, cages)
    leaves = nics_per_node * math.ceil(nodes / d) if rail_optimized else math.ceil(e / d)
    uplinks = math.ceil(e / oversubscription - 1e-9)
    bis = e / 2.0 * port_gbps / oversubscription
    two = max_endpoints(radix=radix, oversubscription=oversubscription, tiers=2)
    if e <= two:
        counts = (leaves, math.ceil(uplinks / radix), 0)
        return _build("leaf-spine", 2, e, counts, e + 2 * uplinks, e + uplinks, bis, two, cages)
    three = max_endpoints(radix=radix, oversubscription=oversubscription, tiers=3)
    if e <= three:
        counts = (leaves, math.ceil(uplinks / (radix // 2)), math.ceil(uplinks / radix))
        return _build("fat-tree-3", 3, e, counts, e + 4 * uplinks, e + 2 * uplinks, bis, three, cages)
    return None


def _build(
    name: str,
    tiers: int,
    e: int,
    counts: tuple[int, int, int],
    ports: int,
    cables: int,
    bisection_gbps: float,
    largest: int,
    cages: tuple[int, int],
    groups: int = 0,
) -> Topology:
    """``cages``: (switch ports per transceiver, node-side transceivers). Switch side: a twin-port NDR OSFP
    cage serves two ports, ⌈ports / 2⌉ transceivers. Node side: nodes · ⌈NICs / NIC ports per transceiver⌉,
    one single-port OSFP/QSFP112 per PCIe ConnectX-7 (8 at 8 NICs), or on DGX H100/H200/B200, whose "four
    OSFP ports serv[e] eight single-port NVIDIA ConnectX-7", one two-port transceiver per cage (4 at 8 NICs).
    """
    per_switch_cage, node_side = cages
    switch_side = math.ceil(ports / per_switch_cage)
    return Topology(
        name,
        tiers,
        e,
        counts[0],
        counts[1],
        counts[2],
        sum(counts),
        ports,
        cables,
        node_side + switch_side,
        bisection_gbps,
        largest,
        groups,
        node_side,
        switch_side,
    )


def dragonfly_plus(
    *,
    nodes: int,
    nics_per_node: int,
    port_gbps: float,
    radix: int,
    ports_per_transceiver: int = 1,
    node_ports_per_transceiver: int = 1,
) -> Topology:
    """Dragonfly+ (Shpiner et al., "Dragonfly+: Low cost topology for scaling datacenters", HiPINEB 2017).

    Each group is a non-blocking leaf-spine: R/2 leaves with R/2 endpoints each and R/2 spines, each spine
    with R/2 global ports, so a group holds R²/4 endpoints and has R²/4 global links; up to R²/4 + 1 groups
    are wired all-to-all. Bisection: the global links across a cut of the groups in half, ⌊G/2⌋·⌈G/2⌉ group
    pairs · ⌊(R²/4)/(G − 1)⌋ links each (within one group, E/2 · port rate).
    """
    e = nodes * nics_per_node
    half = radix // 2
    per_group = half * half
    groups = math.ceil(e / per_group)
    if groups > per_group + 1:
        raise InputError(
            f"{e:,} endpoints exceed a radix-{radix} Dragonfly+ ({per_group * (per_group + 1):,})",
            field="cluster.nodes",
        )
    leaves = math.ceil(e / half)
    spines = groups * half
    intra = leaves * half
    if groups > 1:
        links_per_pair = per_group // (groups - 1)
        global_links = groups * (groups - 1) // 2 * links_per_pair
        bis = (groups // 2) * (groups - groups // 2) * links_per_pair * port_gbps
    else:
        global_links = 0
        bis = e / 2.0 * port_gbps
    ports = e + 2 * intra + 2 * global_links
    return _build(
        "dragonfly-plus",
        2,
        e,
        (leaves, spines, 0),
        ports,
        e + intra + global_links,
        min(bis, e / 2.0 * port_gbps),
        per_group * (per_group + 1),
        (ports_per_transceiver, nodes * math.ceil(nics_per_node / node_ports_per_transceiver)),
        groups,
    )


def rail_only(
    *,
    nodes: int,
    nics_per_node: int,
    port_gbps: float,
    radix: int,
    oversubscription: float = 1.0,
    ports_per_transceiver: int = 1,
    node_ports_per_transceiver: int = 1,
) -> Topology | None:
    """Rail-only (Wang et al., "Rail-only: A Low-Cost High-Performance Network for Training LLMs with Trillion
    Parameters", arXiv:2307.12169, Sec. 4): NIC k of every node joins rail k, and the rails are never joined
    above; traffic between rails crosses the node's NVLink (the high-bandwidth domain) instead.

    Each of the k = NICs-per-node rails is its own network of ``nodes`` endpoints: one switch when nodes ≤ R
    (the paper's "one switch per rail"), else the smallest folded Clos of :func:`fat_tree` over those
    endpoints. Switches, cables and switch-side transceivers are k × one rail's; node-side transceivers
    nodes · ⌈k / NIC ports per transceiver⌉ as in a fat-tree. Bisection k × one rail's (E/2 · port Gb/s / o):
    full only for traffic that stays on its rail. None when one rail outgrows three tiers.
    """
    if nics_per_node < 1:  # fat_tree checks the node count
        raise InputError("must be at least 1", field="cluster.nics_per_node")
    rail = fat_tree(
        nodes=nodes,
        nics_per_node=1,
        port_gbps=port_gbps,
        radix=radix,
        oversubscription=oversubscription,
        rail_optimized=False,
        ports_per_transceiver=ports_per_transceiver,
    )
    if rail is None:
        return None
    k = nics_per_node
    node_side = nodes * math.ceil(k / node_ports_per_transceiver)
    switch_side = k * rail.switch_transceivers
    return Topology(
        "rail-only",
        rail.tiers,
        nodes * k,
        k * rail.leaf_switches,
        k * rail.spine_switches,
        k * rail.core_switches,
        k * rail.switches,
        k * rail.switch_ports_used,
        k * rail.cables,
        node_side + switch_side,
        k * rail.bisection_gbps,
        k * rail.max_endpoints,
        0,
        node_side,
        switch_side,
    )


@dataclass(frozen=True)
class NetworkCost:
    switches_usd: float
    cables_usd: float
    transceivers_usd: float
    capex_usd: float
    power_kw: float
    node_transceivers_usd: float = 0.0  # the part of transceivers_usd in the nodes


def network_cost(
    *,
    topology: Topology,
    switch_usd: float,
    cable_usd: float,
    transceiver_usd: float,
    switch_power_w: float,
    node_transceiver_w: float = 0.0,
    switch_transceiver_w: float = 0.0,
) -> NetworkCost:
    """capex = switches · $ + cables · $ + (node-side + switch-side transceivers) · $; power = switches · W +
    optics, where optics = node-side transceivers · node-side W + switch-side transceivers · switch-side W
    (counts in ``_build``)."""
    s = topology.switches * switch_usd
    c = topology.cables * cable_usd
    t = topology.transceivers * transceiver_usd
    optics_w = topology.node_transceivers * node_transceiver_w
    optics_w += topology.switch_transceivers * switch_transceiver_w
    power_kw = (topology.switches * switch_power_w + optics_w) / 1000.0
    return NetworkCost(s, c, t, s + c + t, power_kw, topology.node_transceivers * transceiver_usd)
