"""Accelerator and fabric specs for engine tests, built inline from the reference figures they cite
(the seed catalog may not exist yet; tests must not read ../shared)."""

from __future__ import annotations

from clusterdesigner.engine.hardware import AcceleratorSpec, FabricSpec

# gpus.csv (stas00/ml-engineering @744d01e1 TFLOPS and MAMF tables; NVIDIA datasheets).
A100_80GB = AcceleratorSpec(
    slug="a100-80gb",
    name="A100 80GB SXM4",
    vendor="nvidia",
    family="ampere",
    memory_gib=80,
    hbm_bandwidth_tbps=2.039,
    dense_tflops={"tf32": 156, "bf16": 312},
    achievable_matmul_tflops={"bf16": 271.2},
    scaleup_link="NVLink 3",
    scaleup_bandwidth_gbps=300,
    scaleup_domain_gpus=8,
    tdp_w=400,
)
# A100 40GB SXM4: same compute as the 80GB part, 1.555 TB/s HBM2 (NVIDIA A100 datasheet).
A100_40GB = AcceleratorSpec(
    slug="a100-40gb",
    name="A100 40GB SXM4",
    vendor="nvidia",
    family="ampere",
    memory_gib=40,
    hbm_bandwidth_tbps=1.555,
    dense_tflops={"tf32": 156, "bf16": 312},
    achievable_matmul_tflops={"bf16": 271.2},
    scaleup_link="NVLink 3",
    scaleup_bandwidth_gbps=300,
    scaleup_domain_gpus=8,
    tdp_w=400,
)
H100_SXM = AcceleratorSpec(
    slug="h100-sxm",
    name="H100 SXM5 80GB",
    vendor="nvidia",
    family="hopper",
    memory_gib=80,
    hbm_bandwidth_tbps=3.35,
    dense_tflops={"tf32": 494.7, "bf16": 989.4, "fp8": 1978.9},
    achievable_matmul_tflops={"bf16": 794.5, "fp8": 1402.6},
    scaleup_link="NVLink 4",
    scaleup_bandwidth_gbps=450,
    scaleup_domain_gpus=8,
    tdp_w=700,
)

# GB200 per Blackwell GPU: 186 GB HBM3e at 8 TB/s, 2,500 / 5,000 TFLOP/s dense BF16 / FP8, 1,822 / 3,615.6
# measured matmul, NVLink 5 at 900 GB/s per direction in one 72-GPU NVL72 domain (stas00/ml-engineering
# @744d01e18b79 accelerator and network tables; nvidia.com/en-us/data-center/gb200-nvl72/: "72 Blackwell
# GPUs ... in a single NVLink domain"; 18 compute trays of 2 superchips = 4 GPUs each).
GB200 = AcceleratorSpec(
    slug="gb200",
    name="GB200",
    vendor="nvidia",
    family="blackwell",
    memory_gib=186,
    hbm_bandwidth_tbps=8.0,
    dense_tflops={"tf32": 1250.0, "bf16": 2500.0, "fp8": 5000.0},
    achievable_matmul_tflops={"bf16": 1822.0, "fp8": 3615.6},
    scaleup_link="NVLink 5 (NVL72)",
    scaleup_bandwidth_gbps=900,
    scaleup_domain_gpus=72,
    tdp_w=1200,
)

# Fabrics: line rate per port; collective efficiency = nccl-tests busbw / line rate, 200Gb RDMA 24 of
# 25 GB/s and 400Gb RDMA 48 of 50 GB/s (NVIDIA GTC24 S62129, comms_reliability.csv).
IB_HDR200 = FabricSpec(
    slug="ib-hdr200",
    name="InfiniBand HDR 200G",
    kind="infiniband",
    port_gbps=200,
    latency_us=5.0,
    collective_efficiency=0.96,
)
IB_NDR400 = FabricSpec(
    slug="ib-ndr400",
    name="InfiniBand NDR 400G",
    kind="infiniband",
    port_gbps=400,
    latency_us=5.0,
    collective_efficiency=0.96,
)
ROCE_200 = FabricSpec(
    slug="roce-200g", name="RoCE 200G", kind="roce", port_gbps=200, latency_us=8.0, collective_efficiency=0.96
)
# Jean Zay (BLOOM): 4 × 100 Gb/s Omni-Path per 8-GPU node (BLOOM paper Sec. 3.4.1; network.csv).
OMNIPATH_100 = FabricSpec(
    slug="opa-100",
    name="Omni-Path 100G",
    kind="omnipath",
    port_gbps=100,
    latency_us=5.0,
    collective_efficiency=0.9,
)

ACCELERATORS = {a.slug: a for a in (A100_80GB, A100_40GB, H100_SXM, GB200)}
FABRICS = {f.slug: f for f in (IB_HDR200, IB_NDR400, ROCE_200, OMNIPATH_100)}

# GPT-3 175B on 1,024 A100 80GB, batch 1,536 sequences (bench/search.py case (a), issue 19 item 8).
GPT3_1024_A100: dict[str, dict[str, object]] = {
    "model": {"preset": "gpt3-175b"},
    "training": {"tokens": 300e9, "global_batch_seqs": 1536},
    "cluster": {"accelerator": "a100-80gb", "nodes": 128, "fabric": "ib-hdr200"},
}


def unsplit_run_on_capped_spot() -> dict[str, object]:
    """Issue 31, item 12: a capacity plan whose 4-node run (32 GPUs, 8,000 GPU-hours = 1,000 node-hours in
    month 0) may not be split, with on-demand at $55.04 and spot at $20.784 capped at 2 nodes, goodput 0.9
    (test inputs written here, priced like AWS p5). A fresh dict each call: tests change it."""
    return {
        "horizon_months": 1,
        "gpus_per_node": 8,
        "training": [{"name": "run", "gpu_hours": 8_000, "gpus": 32, "deadline_month": 0}],
        "supply": {
            "on_demand": {"usd_per_node_hour": 55.04},
            "spot": {"usd_per_node_hour": 20.784, "cap_nodes": 2, "goodput": 0.9},
        },
    }
