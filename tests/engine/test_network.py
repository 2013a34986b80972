"""Fat-tree and Dragonfly+ sizing against hand counts (Al-Fares et al. SIGCOMM 2008; Shpiner et al. 2017)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.cost.network import (
    dragonfly_plus,
    fat_tree,
    leaf_down_ports,
    max_endpoints,
    network_cost,
)


def test_64_port_two_tier_reaches_2048_endpoints_non_blocking() -> None:
    # network.csv: 2-level leaf/spine with 64-port switches = 64 × 64 / 2 = 2,048 endpoints.
    assert max_endpoints(radix=64, oversubscription=1.0, tiers=2) == 2048
    t = fat_tree(nodes=256, nics_per_node=8, port_gbps=400, radix=64, rail_optimized=False)
    assert t is not None and t.name == "leaf-spine"
    # Hand: 2,048 / 32 = 64 leaves, 2,048 uplinks / 64 = 32 spines: 96 = 3k/2 switches.
    assert (t.leaf_switches, t.spine_switches, t.switches) == (64, 32, 96)
    assert t.cables == 2048 + 2048
    # Bisection: 2,048 / 2 × 400 Gb/s = 409,600 Gb/s.
    assert t.bisection_gbps == 409_600


def test_64_port_three_tier_reaches_65536_endpoints() -> None:
    # network.csv: 3-level = 64³ / 4 = 65,536; Al-Fares: 5k²/4 = 5,120 switches for k = 64.
    assert max_endpoints(radix=64, oversubscription=1.0, tiers=3) == 65_536
    t = fat_tree(nodes=8192, nics_per_node=8, port_gbps=400, radix=64)
    assert t is not None and t.name == "fat-tree-3"
    assert (t.leaf_switches, t.spine_switches, t.core_switches) == (2048, 2048, 1024)
    assert t.switches == 5120


def test_one_endpoint_past_two_tiers_needs_a_third() -> None:
    t = fat_tree(nodes=2049, nics_per_node=1, port_gbps=400, radix=64, rail_optimized=False)
    assert t is not None and t.tiers == 3


def test_beyond_three_tiers_there_is_no_fat_tree() -> None:
    assert fat_tree(nodes=65_537, nics_per_node=1, port_gbps=400, radix=64) is None


def test_64_endpoints_fit_one_switch() -> None:
    # 8 nodes × 8 NICs = 64 ports on one QM9700; NDR twin-port cages: 64 NIC optics + 32 switch cages.
    t = fat_tree(nodes=8, nics_per_node=8, port_gbps=400, radix=64, ports_per_transceiver=2)
    assert t is not None
    assert (t.name, t.switches, t.cables, t.transceivers) == ("single-switch", 1, 64, 96)


def test_oversubscription_gives_more_ports_to_endpoints() -> None:
    # 3:1 on 64 ports: ⌊64 × 3/4⌋ = 48 down, 16 up; 2-tier limit 48 × 64 = 3,072.
    assert leaf_down_ports(radix=64, oversubscription=3.0) == 48
    assert max_endpoints(radix=64, oversubscription=3.0, tiers=2) == 3072
    t = fat_tree(
        nodes=384, nics_per_node=8, port_gbps=400, radix=64, oversubscription=3.0, rail_optimized=False
    )
    assert t is not None
    # Hand: 3,072 / 48 = 64 leaves; uplinks 3,072 / 3 = 1,024 → 16 spines; bisection 1,536 × 400 / 3.
    assert (t.leaf_switches, t.spine_switches) == (64, 16)
    assert t.bisection_gbps == pytest.approx(1536 * 400 / 3)


def test_rejects_oversubscription_below_one() -> None:
    with pytest.raises(InputError) as err:
        fat_tree(nodes=16, nics_per_node=8, port_gbps=400, radix=64, oversubscription=0.5)
    assert err.value.field == "cluster.oversubscription"


def test_dragonfly_plus_counts_by_hand() -> None:
    # Radix 64: a group is 32 leaves × 32 endpoints = 1,024 endpoints and 32 spines.
    # 4,096 endpoints → 4 groups, 128 leaves, 128 spines; 1,024 global ports per group shared by 3 peers →
    # 341 links per pair, 6 pairs → 2,046 global links; bisection 2 × 2 × 341 × 400 = 545,600 Gb/s.
    t = dragonfly_plus(nodes=512, nics_per_node=8, port_gbps=400, radix=64)
    assert (t.groups, t.leaf_switches, t.spine_switches) == (4, 128, 128)
    assert t.cables == 4096 + 128 * 32 + 2046
    assert t.bisection_gbps == 545_600
    assert t.max_endpoints == 1024 * 1025


def test_network_cost_adds_switches_cables_and_optics() -> None:
    t = fat_tree(nodes=256, nics_per_node=8, port_gbps=400, radix=64, rail_optimized=False)
    assert t is not None
    c = network_cost(
        topology=t, switch_usd=30_000, cable_usd=150, transceiver_usd=1_000, switch_power_w=1_000
    )
    # 96 × 30,000 + 4,096 × 150 + transceivers × 1,000; 96 kW of switches.
    assert c.capex_usd == 96 * 30_000 + 4096 * 150 + t.transceivers * 1_000
    assert c.power_kw == 96.0


@given(
    nodes=st.integers(min_value=1, max_value=8000),
    extra=st.integers(min_value=1, max_value=200),
    over=st.sampled_from([1.0, 2.0, 3.0]),
    rail=st.booleans(),
)
def test_more_nodes_never_need_fewer_switches_or_cables(
    nodes: int, extra: int, over: float, rail: bool
) -> None:
    small = fat_tree(
        nodes=nodes, nics_per_node=8, port_gbps=400, radix=64, oversubscription=over, rail_optimized=rail
    )
    big = fat_tree(
        nodes=nodes + extra,
        nics_per_node=8,
        port_gbps=400,
        radix=64,
        oversubscription=over,
        rail_optimized=rail,
    )
    if small is None or big is None:
        return
    assert big.switches >= small.switches
    assert big.cables >= small.cables
    assert big.transceivers >= small.transceivers


# --- Node-side transceivers (issue 15 item 9) -------------------------------------------------------------
# DGX H100/H200/B200: "Four OSFP ports serving eight single-port NVIDIA ConnectX-7 VPI" (NVIDIA DGX BasePOD
# reference architecture, Core Components); "The compute fabric ports in the middle use a two-port transceiver
# to access all eight GPUs" (NVIDIA DGX SuperPOD H100 reference architecture, Network Fabrics). A PCIe
# ConnectX-7 takes one single-port OSFP/QSFP112 (NVIDIA MMA4Z00-NS400 product specification).
#
# Hand count at 1,024 GPUs = 128 nodes × 8 NICs, radix 64, 1:1, rail-optimised (the SuperPOD's 4-SU fabric
# has the same 32 leaves and 16 spines, Table 4):
#   leaves 8 × ⌈128 / 32⌉ = 32, uplinks 1,024, spines ⌈1,024 / 64⌉ = 16: 48 switches
#   switch ports 1,024 down + 2 × 1,024 (leaf up, spine down) = 3,072 → ⌈3,072 / 2⌉ = 1,536 twin-port cages
#   node side, DGX: 128 × ⌈8 / 2⌉ = 512 two-port transceivers: 512 more than the switch side alone,
#     1,536 + 512 = 2,048 in all; at $1,200 a piece the 512 are $614,400
#   node side, one per NIC: 128 × 8 = 1,024 (2,560 in all)
#   optics power, DGX: (512 + 1,536) × 15 W = 30,720 W; one per NIC: 1,024 × 8 W + 1,536 × 15 W = 31,232 W


def test_dgx_twin_port_cages_count_512_node_side_transceivers_at_1024_gpus() -> None:
    dgx = fat_tree(
        nodes=128,
        nics_per_node=8,
        port_gbps=400,
        radix=64,
        ports_per_transceiver=2,
        node_ports_per_transceiver=2,
    )
    pcie = fat_tree(nodes=128, nics_per_node=8, port_gbps=400, radix=64, ports_per_transceiver=2)
    assert dgx is not None and pcie is not None
    assert dgx.switches == 48 and dgx.switch_ports_used == 3072
    assert (dgx.node_transceivers, dgx.switch_transceivers, dgx.transceivers) == (512, 1536, 2048)
    assert (pcie.node_transceivers, pcie.switch_transceivers, pcie.transceivers) == (1024, 1536, 2560)
    c = network_cost(
        topology=dgx,
        switch_usd=30_000,
        cable_usd=150,
        transceiver_usd=1_200,
        switch_power_w=1_000,
        node_transceiver_w=15,
        switch_transceiver_w=15,
    )
    assert c.node_transceivers_usd == 614_400
    assert c.power_kw == pytest.approx(48.0 + 30.72)


def test_the_cost_engine_takes_twin_port_node_optics_from_the_dgx_server_type() -> None:
    from test_cost_fixtures import CATALOG

    from clusterdesigner.engine.cost.cost import tco

    request = {
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 128, "fabric": "ib-ndr400"},
        "network": {"switch_usd": 30_000, "switch_power_w": 1_000},
    }
    net = tco(request, **CATALOG)["network"]
    assert (net["chosen"]["node_transceivers"], net["chosen"]["switch_transceivers"]) == (512, 1536)
    # 48 × 30,000 + 2,048 cables × 150 + 2,048 × 1,200 = 1,440,000 + 307,200 + 2,457,600
    assert net["capex_usd"] == pytest.approx(4_204_800.0)
    assert net["power_kw"] == pytest.approx(78.72)  # 48 kW of switches + 2,048 × 15 W
    assert "512 node-side: 128 nodes × ⌈8 NICs ÷ 2⌉" in net["capex_parts"]["transceivers"]["formula"]
    # A server with a port per NIC (given here) counts one single-port transceiver per NIC at 8 W.
    single = tco({**request, "network": {**request["network"], "node_ports_per_transceiver": 1}}, **CATALOG)
    assert single["network"]["chosen"]["node_transceivers"] == 1024
    assert single["network"]["power_kw"] == pytest.approx(48.0 + 31.232)
