"""Accelerator and fabric specs for engine tests, built inline from the reference figures they cite
(the seed catalog may not exist yet; tests must not read ../shared)."""

from __future__ import annotations

from typing import Any

from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec

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


# One node of flat demand for 12 months: own it (from month 0) or reserve it for 12 months. Owning: capex
# $300,000 at the start, resold after a year at the book value 300,000 × (1 − 0.8 × 1/5) = $252,000 (5-year
# life, 20 % residual, no series), opex $4,000 a month (a fixed $8,000 a node-month of which $4,000 is the
# capital share: 300,000 × 0.8 / 60, straight-line, what capital recovery is at a zero rate), no energy.
# Reserving: $11.50 a node-hour, 730 h a month, billed at the end of each month. On-demand at $60 serves
# nothing either way.
def own_or_reserve() -> dict[str, Any]:
    """The own-or-reserve plan above, a fresh dict each call."""
    return {
        "horizon_months": 12,
        "gpus_per_node": 8,
        "baseline": [{"name": "flat", "gpus_by_day_hour": [[8.0] * 24] * 7}],
        "supply": {
            "owned": {
                "lead_time_months": 0,
                "capex_usd_per_node": 300_000.0,
                "fixed_usd_per_node_month": 8_000.0,
                "capital_usd_per_node_month": 4_000.0,
                "depreciation_years": 5.0,
                "residual_fraction": 0.2,
                "usd_per_node_hour_used": 0.0,
            },
            "reservations": [{"term_months": 12, "usd_per_node_hour": 11.5}],
            "on_demand": {"usd_per_node_hour": 60.0},
        },
    }


def own_or_reserve_by_hand(rate: float) -> dict[str, float]:
    """The two choices' NPVs by hand (the hand calculation beside the tests through the engine and the API):
    i = (1 + r)^(1/12) − 1, the annuity of 12 month-end payments a_12 = (1 − (1 + r)^−1) / i.
    own     = 300,000 − 252,000 / (1 + r) + 4,000 · a_12
    reserve = 11.5 × 730 · a_12 = 8,395 · a_12
    r = 0:  a_12 = 12:      own 48,000 + 48,000 = $96,000;  reserve $100,740: owning is cheaper by $4,740.
    r = 8 %: i = 0.00643403, a_12 = 0.0740741 / 0.00643403 = 11.512858: own 300,000 − 233,333.33 +
            46,051.43 = $112,718.10; reserve 8,395 × 11.512858 = $96,650.44: reserving is cheaper by
            $16,067.66.
    The capex is paid at once while the resale and every bill come later, so discounting turns the choice."""
    annuity = 12.0 if rate == 0 else (1 - (1 + rate) ** -1) / ((1 + rate) ** (1 / 12) - 1)
    return {
        "own": 300_000 - 252_000 / (1 + rate) + 4_000 * annuity,
        "reserve": 11.5 * 730 * annuity,
    }


def two_runs_tie_break_plan() -> dict[str, Any]:
    """Issue 31, item 12 (tie-breaks): run "a" needs 20,000 node-hours on at most 8 nodes (5,840 node-hours a
    month), so it cannot finish before month 3; run "b" may be split. Owned (lead 1), a 12-month reservation
    and on-demand, at a zero rate (test inputs written here). A fresh dict each call."""
    return {
        "horizon_months": 12,
        "gpus_per_node": 8,
        "training": [
            {"name": "a", "gpu_hours": 160_000, "gpus": 64, "deadline_month": 8},
            {
                "name": "b",
                "gpu_hours": 80_000,
                "gpus": 32,
                "earliest_start_month": 2,
                "deadline_month": 10,
                "splittable": True,
            },
        ],
        "baseline": [{"name": "research", "gpus_by_day_hour": [[8.0] * 24] * 7}],
        "supply": {
            "owned": {
                "lead_time_months": 1,
                "capex_usd_per_node": 300_000,
                "fixed_usd_per_node_month": 9_000,
                "usd_per_node_hour_used": 0.7,
            },
            "reservations": [{"term_months": 12, "usd_per_node_hour": 30.0}],
            "on_demand": {"usd_per_node_hour": 55.04},
        },
    }
