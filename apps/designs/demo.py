"""The demo designs `make run` loads: the two published comparisons the home page shows."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from apps.designs.models import Design
from apps.designs.services import design_create

DEMO_USER = "demo"
LLAMA_70B_1T: dict[str, Any] = {
    "model": {"preset": "llama3-70b"},
    "training": {"tokens": 1.0e12, "global_batch_tokens": 4194304, "precision": "bf16"},
}

DEMOS: list[dict[str, Any]] = [
    {
        "name": "70B on 1T tokens: 64 H100 nodes on-demand",
        "description": (
            "Published comparison 1 of 3: Llama-3-70B-shaped model, 1 trillion tokens, 64 × 8 H100 SXM "
            "on AWS p5.48xlarge on-demand."
        ),
        "spec": {
            "workload": LLAMA_70B_1T,
            "cluster": {
                "accelerator": "h100-sxm",
                "gpus_per_node": 8,
                "nodes": 64,
                "fabric": "aws-efa",
                "oversubscription": 1.0,
                "storage": "lustre",
            },
            "parallelism": {
                "tp": 8,
                "pp": 4,
                "dp": 16,
                "cp": 1,
                "vpp": 1,
                "micro_batch": 1,
                "recompute": "selective",
                "sharding": "zero1",
                "sequence_parallel": True,
            },
            "costs": {
                "horizon_years": 1,
                "utilization": 0.7,
                "cloud": [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
            },
        },
    },
    {
        "name": "70B on 1T tokens: 48 B200 nodes on spot",
        "description": (
            "Published comparison 2 of 3: the same model and tokens on 48 × 8 B200 "
            "(AWS p6-b200.48xlarge) at spot prices (the comparison's own spot price, $45.57 a node-hour, "
            "is an input; the catalog's spot sample of 2026-09-19 is $42.09). It states that all 48 nodes "
            "are obtainable on spot (spot_capacity_nodes; the engine assumes 8 unless told)."
        ),
        "spec": {
            "workload": {
                **LLAMA_70B_1T,  # 768 sequences, so the batch splits over dp 24
                "training": {**LLAMA_70B_1T["training"], "global_batch_tokens": 6291456},
            },
            "cluster": {
                "accelerator": "b200",
                "gpus_per_node": 8,
                "nodes": 48,
                "fabric": "aws-efa",
                "oversubscription": 1.0,
                "storage": "lustre",
            },
            "parallelism": {
                "tp": 8,
                "pp": 2,
                "dp": 24,
                "cp": 1,
                "vpp": 1,
                "micro_batch": 1,
                "recompute": "selective",
                "sharding": "zero1",
                "sequence_parallel": True,
            },
            "costs": {
                "horizon_years": 1,
                "utilization": 0.7,
                "cloud": [
                    {
                        "offering": "aws-p6-b200-48xlarge",
                        "pricing_models": ["spot", "on_demand"],
                        "usd_per_node_hour": {"spot": 45.57},
                    }
                ],
                # The comparison runs all 48 nodes on spot: the capacity it assumes, stated.
                "spot_capacity_nodes": 48,
            },
        },
    },
    {
        "name": "70B on 1T tokens: 32 H100 nodes reserved",
        "description": (
            "Published comparison 3 of 3: 32 × 8 H100 SXM on a 1-year reservation "
            "(the reserved price is an input: the catalog has no published p5 1-year rate "
            "after the June 2025 cut)."
        ),
        "spec": {
            "workload": LLAMA_70B_1T,
            "cluster": {
                "accelerator": "h100-sxm",
                "gpus_per_node": 8,
                "nodes": 32,
                "fabric": "aws-efa",
                "oversubscription": 1.0,
                "storage": "lustre",
            },
            "parallelism": {
                "tp": 8,
                "pp": 4,
                "dp": 8,
                "cp": 1,
                "vpp": 1,
                "micro_batch": 1,
                "recompute": "selective",
                "sharding": "zero1",
                "sequence_parallel": True,
            },
            "costs": {
                "horizon_years": 1,
                "utilization": 0.7,
                "cloud": [
                    {
                        "offering": "aws-p5-48xlarge",
                        "pricing_models": ["reserved_1y"],
                        "usd_per_node_hour": {"reserved_1y": 34.0},
                    }
                ],
            },
        },
    },
    {
        "name": "8 × 8 H200 owned for 2 years vs AWS reserved",
        "description": (
            "Published comparison: 8 nodes of 8 H200 bought and run for 2 years "
            "against the same capacity on AWS p5e.48xlarge reserved "
            "(illustrative inputs: $230,000 a server, 10.2 kW a node, $0.08/kWh)."
        ),
        "spec": {
            "workload": {
                "model": {"preset": "llama3-8b"},
                "training": {"tokens": 1.5e12, "global_batch_tokens": 4194304, "precision": "bf16"},
            },
            "cluster": {
                "accelerator": "h200",
                "gpus_per_node": 8,
                "nodes": 8,
                "fabric": "ib-ndr400",
                "oversubscription": 1.0,
                "storage": "lustre",
            },
            "parallelism": {
                "tp": 1,
                "pp": 1,
                "dp": 64,
                "cp": 1,
                "vpp": 1,
                "micro_batch": 2,
                "recompute": "none",
                "sharding": "zero1",
                "sequence_parallel": False,
            },
            "costs": {
                "horizon_years": 2,
                "utilization": 0.6,
                "on_prem": {"server_usd": 230000, "node_power_kw": 10.2, "usd_per_kwh": 0.08},
                "cloud": [
                    {
                        "offering": "aws-p5e-48xlarge",
                        "pricing_models": ["reserved_1y", "on_demand"],
                        "usd_per_node_hour": {"on_demand": 55.04, "reserved_1y": 34.0},
                    }
                ],
            },
        },
    },
]


@transaction.atomic
def demo_load() -> list[Design]:
    """Create (or replace) the demo designs, owned by a 'demo' user and visible to everyone signed in."""
    user, _ = get_user_model().objects.get_or_create(username=DEMO_USER, defaults={"is_active": False})
    Design.objects.filter(owner=user, is_demo=True).delete()
    return [
        design_create(owner=user, visibility=Design.Visibility.ORGANISATION, is_demo=True, **demo)
        for demo in DEMOS
    ]
