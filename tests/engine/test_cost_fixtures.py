"""Inline catalog for the cost-engine tests (the project must not read ../shared; figures cited here).

Imported by the other cost-engine test modules; its own tests check the catalog parsing it relies on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from specs import A100_80GB, H100_SXM, IB_NDR400

from clusterdesigner.engine.core.hardware import AcceleratorSpec, FabricSpec
from clusterdesigner.engine.core.offerings import (
    CloudOfferingSpec,
    StorageTierSpec,
    cloud_offering_from_dict,
    server_type_from_dict,
    storage_tier_from_dict,
    switch_from_dict,
)

# H100 and A100 as the training-engine tests build them (tests/engine/specs.py, gpus.csv); H200 is an H100
# with 141 GB of HBM3e at 4.8 TB/s (NVIDIA H200 datasheet), the same dense peaks and NVLink 4.
H100, A100 = H100_SXM, A100_80GB
H200 = replace(H100_SXM, slug="h200", name="H200 141GB", memory_gib=141, hbm_bandwidth_tbps=4.8)
# RTX 4090: 24 GB GDDR6X, no NVLink (PCIe only), 450 W (NVIDIA spec page).
RTX4090 = AcceleratorSpec(
    slug="rtx-4090",
    name="GeForce RTX 4090",
    vendor="nvidia",
    family="ada",
    memory_gib=24,
    hbm_bandwidth_tbps=1.008,
    dense_tflops={"bf16": 165.2},
    scaleup_link="none (PCIe only)",
    scaleup_bandwidth_gbps=0,
    scaleup_domain_gpus=1,
    tdp_w=450,
)
ACCELERATORS = {a.slug: a for a in (H100, H200, A100, RTX4090)}

FABRICS = {
    f.slug: f
    for f in (
        IB_NDR400,
        FabricSpec("roce-400g", "RoCE 400G", "roce", 400, 8.0, 0.9),
        FabricSpec("eth-25g", "25 GbE", "ethernet", 25, 20.0, 0.8),
    )
}

# Seed-schema records: the p5 on-demand price fell from $98.32 to $55.04 in June 2025 (prices.csv, AWS bulk
# price list); the parser must keep the later one.
P5_RECORD: dict[str, Any] = {
    "slug": "aws-p5-48xlarge",
    "provider": "aws",
    "instance_type": "p5.48xlarge",
    "region": "us-east-1",
    "accelerator": "h100-sxm",
    "gpu_count": 8,
    "network_gbps": 3200,
    "spot_preemptions_per_day": None,
    "prices": [
        {
            "pricing_model": "on_demand",
            "usd_per_hour": 55.04,
            "as_of": "2026-09-01",
            "source": "AWS price list",
        },
        {"pricing_model": "on_demand", "usd_per_hour": 98.32, "as_of": "2025-05-31", "source": "AWS 2023"},
        {"pricing_model": "reserved_1y", "usd_per_hour": 19.50, "as_of": "2026-01-01", "source": "guide"},
    ],
}
P5 = cloud_offering_from_dict(P5_RECORD)
P5E = CloudOfferingSpec(
    "aws-p5e-48xlarge",
    "aws",
    "p5e.48xlarge",
    "us-east-1",
    "h200",
    8,
    {"on_demand": 55.04, "reserved_1y": 34.0, "spot": 20.0},
    spot_preemptions_per_day=0.1,
)
OFFERINGS = {o.slug: o for o in (P5, P5E)}

STORAGE: dict[str, StorageTierSpec] = {
    t.slug: t
    for t in (
        storage_tier_from_dict(
            {
                "slug": "local-nvme",
                "name": "Local NVMe",
                "kind": "local_nvme",
                "read_gbps": 25,
                "write_gbps": 12,
                "scope": "per_node",
                "usd_per_tb_month": 0,
            }
        ),
        StorageTierSpec("lustre", "FSx for Lustre", "parallel_fs", 12.5, 12.5, "aggregate", 145.0),
        StorageTierSpec("nfs", "EFS", "nfs", 10.0, 3.0, "aggregate", 300.0),
    )
}
# QM9700: 64 × NDR 400 (QM97X0 user manual 'Interfaces'); price not public, so None as in the seed catalog.
SWITCHES = {
    "ib-ndr-64": switch_from_dict(
        {
            "slug": "ib-ndr-64",
            "name": "QM9700",
            "ports": 64,
            "port_gbps": 400,
            "price_usd": None,
            "power_w": None,
            "fabric_kind": "infiniband",
        }
    )
}
# DGX H100 at $322,500: the seed catalog's estimate, the midpoint of three secondary quotes $270,000-$375,000
# (SemiAnalysis 2023-05-29, deltacomputer 2024-03-20, viperatech 2025-03-03, via Epoch AI's Hardware prices).
DGX_H100 = server_type_from_dict(
    {
        "slug": "dgx-h100",
        "accelerator": "h100-sxm",
        "gpus_per_node": 8,
        "nics_per_node": 8,
        "node_power_kw": 10.2,
        "price_usd": 322500,
        "as_of": "2025-03-03",
    }
)
SERVER_TYPES = {DGX_H100.slug: DGX_H100}
CATALOG: dict[str, Any] = {
    "accelerators": ACCELERATORS,
    "fabrics": FABRICS,
    "offerings": OFFERINGS,
    "storage_tiers": STORAGE,
    "switches": SWITCHES,
    "server_types": SERVER_TYPES,
}

# The example request, verbatim.
EXAMPLE: dict[str, Any] = {
    "cluster": {
        "accelerator": "h200",
        "gpus_per_node": 8,
        "nodes": 8,
        "fabric": "ib-ndr400",
        "oversubscription": 1.0,
        "storage": "lustre",
    },
    "horizon_years": 2,
    "utilization": 0.6,
    "on_prem": {
        "server_usd": 230000,
        "depreciation_years": 5,
        "discount_rate": 0.08,
        "residual_fraction": 0.2,
        "node_power_kw": 10.2,
        "pue": 1.3,
        "usd_per_kwh": 0.08,
        "colo_usd_per_kw_month": 150,
        "maintenance_fraction_per_year": 0.05,
        "staff_fte": 1,
        "staff_usd_per_fte_year": 180000,
    },
    "cloud": {
        "offering": "aws-p5e-48xlarge",
        "usd_per_node_hour": {"on_demand": 55.04, "reserved_1y": 34.0, "spot": 20.0},
        "egress_tb": 0,
        "managed_overhead_fraction": 0,
    },
    "run": {"gpu_hours": 500000},
}


def test_offering_keeps_the_latest_price_per_pricing_model() -> None:
    assert P5.usd_per_hour["on_demand"] == 55.04  # 2026-09-01 beats 2025-05-31
    assert P5.price_as_of["on_demand"] == "2026-09-01"
    assert P5.usd_per_hour["reserved_1y"] == 19.50
    assert "spot" not in P5.usd_per_hour


def test_per_node_storage_scales_with_nodes_and_aggregate_does_not() -> None:
    assert STORAGE["local-nvme"].bandwidth_gbps(nodes=8, write=True) == 96.0  # 8 × 12 GB/s
    assert STORAGE["lustre"].bandwidth_gbps(nodes=8, write=True) == 12.5


def test_switch_record_without_price_keeps_none() -> None:
    assert SWITCHES["ib-ndr-64"].ports == 64
    assert SWITCHES["ib-ndr-64"].price_usd is None
