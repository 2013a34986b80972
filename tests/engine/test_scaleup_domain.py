"""The scale-up (NVLink) domain is the system's, not the node's: TP/EP/CP groups run at the scale-up link's
rate inside it (8 GPUs on HGX, 72 on a GB200 NVL72 rack of 18 four-GPU compute trays) and at the scale-out
fabric's rate beyond it; a node larger than a switched domain is refused naming cluster.gpus_per_node."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from specs import ACCELERATORS, FABRICS, H100_SXM, IB_NDR400

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.timing import _group_bandwidth, step_time_parts
from clusterdesigner.engine.training.training import estimate, parse_problem
from clusterdesigner.engine.training.workload import Cluster, layouts

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}

# Hand calculation: NVLink busbw = 900 GB/s × SCALEUP_BUSBW_EFFICIENCY 0.80 = 720 GB/s (GB200);
# 450 × 0.80 = 360 GB/s (H100); NIC busbw = 400 Gb/s / 8 × 0.96 collective efficiency = 48 GB/s (NDR 400).
NVLINK5_BUSBW = 720e9
NVLINK4_BUSBW = 360e9
NDR400_BUSBW = 48e9


def _request(accelerator: str, gpus_per_node: int, nodes: int, **parallelism: object) -> dict[str, object]:
    return {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 512, "precision": "bf16"},
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "fabric": "ib-ndr400",
        },
        **({"parallelism": parallelism} if parallelism else {}),
    }


def _bandwidth(accelerator: str, gpus_per_node: int, nodes: int, size: int, stride: int = 1) -> float:
    problem = parse_problem(_request(accelerator, gpus_per_node, nodes), **SPECS)
    return float(_group_bandwidth(problem, np.array([float(size)]), np.array([float(stride)]))[0])


@pytest.mark.parametrize(
    ("size", "stride", "expected"),
    [
        (8, 1, NVLINK5_BUSBW),  # TP 8: two trays, one rack
        (64, 1, NVLINK5_BUSBW),  # EP 64: 16 trays, still one NVLink domain
        (8, 8, NVLINK5_BUSBW),  # EP 8 over TP 8: span 64 ≤ 72
        (16, 8, NDR400_BUSBW),  # span 128 > 72: crosses racks on the scale-out fabric
        (128, 1, NDR400_BUSBW),
    ],
)
def test_nvl72_groups_use_nvlink_inside_the_rack_and_the_fabric_beyond_it(
    size: int, stride: int, expected: float
) -> None:
    # 64 trays of 4 GPUs = 256 GPUs, four NVL72 racks' worth of trays.
    assert _bandwidth("gb200", 4, 64, size, stride) == pytest.approx(expected)


@pytest.mark.parametrize("gpus_per_node", [4, 8, 72])
def test_the_nvl72_domain_does_not_depend_on_what_is_called_a_node(gpus_per_node: int) -> None:
    # Before, the domain was min(gpus_per_node, 72): TP 8 on 4-GPU trays ran at 48 GB/s, not 720.
    assert _bandwidth("gb200", gpus_per_node, 288 // gpus_per_node, 8) == pytest.approx(NVLINK5_BUSBW)


def test_tp_beyond_an_hgx_node_crosses_the_scale_out_fabric() -> None:
    assert _bandwidth("h100-sxm", 8, 4, 8) == pytest.approx(NVLINK4_BUSBW)
    assert _bandwidth("h100-sxm", 8, 4, 16) == pytest.approx(NDR400_BUSBW)


def test_tp_communication_time_on_nvl72_is_the_same_for_trays_and_racks() -> None:
    lay = layouts(
        tp=8, pp=1, dp=36, cp=1, ep=1, vpp=1, micro_batch=1, recompute=0, sharding=1, sequence_parallel=1
    )
    parts = [
        step_time_parts(parse_problem(_request("gb200", g, 288 // g), **SPECS), lay)["tp_comm"][0]
        for g in (4, 72)
    ]
    assert parts[0] > 0
    assert parts[0] == pytest.approx(parts[1])


def test_a_node_larger_than_an_hgx_domain_is_refused_naming_gpus_per_node() -> None:
    with pytest.raises(InputError) as error:
        estimate(_request("h100-sxm", 16, 4, tp=8, pp=1, micro_batch=1), **SPECS)
    assert error.value.field == "cluster.gpus_per_node"
    assert "at most 8 GPUs in one NVLink 4 domain" in str(error.value)


def test_bridged_pairs_may_share_a_node() -> None:
    # H100 PCIe with NVLink bridges: 2-GPU domains, 8 cards per server (NVIDIA H100 PCIe product brief).
    pcie = replace(H100_SXM, slug="h100-pcie", scaleup_bandwidth_gbps=300, scaleup_domain_gpus=2)
    cluster = Cluster(accelerator=pcie, fabric=IB_NDR400, gpus_per_node=8, nodes=2)
    assert cluster.scaleup_domain_gpus == 2
    assert cluster.ring_unit_gpus == 8
