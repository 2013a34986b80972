"""A realistic design evaluation (the dict apps.designs.services builds), for the export and launch tests.

Llama-3-70B shape, 1T tokens, 64 nodes × 8 H100 SXM on InfiniBand NDR400, layout TP8 PP4 DP16 with selective
recompute and ZeRO-1. The training figures are a hand calculation, not an engine run:
model FLOPs/token ≈ 6 × 70.55e9 + 12 × 80 × 8192 × 8192 (attention) = 4.877e11; at MFU 0.42 on
512 × 989.4 TFLOP/s that is 512 × 989.4e12 × 0.42 / 4.877e11 = 436,270 tokens/s, so a 4,194,304-token
step takes 9.614 s and 1e12 tokens take 1e12 / 436,270 / 86,400 = 26.53 days.
"""

from __future__ import annotations

import copy
from typing import Any

_EVALUATION: dict[str, Any] = {
    "design": {"id": 12, "name": "70B on 64 H100 nodes", "version": 3},
    "spec": {
        "workload": {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1.0e12, "global_batch_tokens": 4194304, "precision": "bf16"},
        },
        "cluster": {
            "accelerator": "h100-sxm",
            "gpus_per_node": 8,
            "nodes": 64,
            "fabric": "ib-ndr400",
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
            "horizon_years": 2,
            "utilization": 0.6,
            "on_prem": {"server_usd": 300000, "node_power_kw": 10.2, "usd_per_kwh": 0.08},
            "cloud": [
                {"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_1y", "spot"]}
            ],
        },
    },
    "training": {
        "mode": "evaluate",
        "fits": True,
        "parallelism": {
            "tp": 8,
            "pp": 4,
            "dp": 16,
            "cp": 1,
            "ep": 1,
            "vpp": 1,
            "micro_batch": 1,
            "recompute": "selective",
            "sharding": "zero1",
            "sequence_parallel": True,
        },
        "memory_per_gpu_gib": {
            "total": 61.412,
            "weights": 16.43,
            "gradients": 16.43,
            "optimizer": 6.16,
            "activations": 20.5,
            "overhead": 1.89,
        },
        "memory_capacity_gib": 80.0,
        "headroom_gib": 18.588,
        "step_time_s": {
            "total": 9.614,
            "compute": 7.92,
            "tp_comm": 0.61,
            "pp_bubble": 0.74,
            "dp_comm": 0.344,
        },
        "model_tflops_per_gpu": 415.548,
        "hardware_tflops_per_gpu": 441.2,
        "mfu": 0.42,
        "hfu": 0.4459,
        "tokens_per_second": 436270.0,
        "time_to_train_days": 26.53,
        "warnings": [],
        "summary": {
            "model": {
                "name": "Llama 3 70B",
                "slug": "llama3-70b",
                "params": 70553706496,
                "active_params": 70553706496,
                "layers": 80,
                "hidden": 8192,
                "ffn_hidden": 28672,
                "heads": 64,
                "kv_heads": 8,
                "vocab": 128256,
                "seq_len": 8192,
                "gated_mlp": True,
                "dropout": False,
                "experts": 0,
                "top_k": 0,
                "model_flops_per_token": 4.877e11,
            },
            "training": {
                "tokens": 1.0e12,
                "global_batch_seqs": 512,
                "global_batch_tokens": 4194304,
                "precision": "bf16",
                "grad_bytes": 2.0,
                "flash_attention": True,
                "pipeline_split": "balanced",
                "cross_entropy": "fp32",
                "fsdp_collectives_per_layer": 1,
                "fsdp_overlap": True,
            },
            "cluster": {
                "accelerator": "h100-sxm",
                "fabric": "ib-ndr400",
                "gpus": 512,
                "gpus_per_node": 8,
                "nodes": 64,
                "peak_tflops": 989.4,
                "oversubscription": 1.0,
                "scaleout_gbps_per_gpu": 400.0,
            },
        },
        "assumptions": [
            {"name": "flash_attention", "value": True, "unit": "", "source": "Dao et al. 2022"},
        ],
    },
    "options": [
        {
            "key": "own",
            "label": "Own (on-prem)",
            "kind": "own",
            "offering": None,
            "pricing_model": None,
            "total_usd": 41234567.89,
            "usd_per_gpu_hour": 2.2977,
            "run_cost_usd": 748512.25,
            "days": 26.53,
            "break_even_utilization": None,
        },
        {
            "key": "aws-p5-48xlarge:spot",
            "label": "AWS p5.48xlarge spot",
            "kind": "cloud",
            "offering": "aws-p5-48xlarge",
            "pricing_model": "spot",
            "total_usd": 27800000.0,
            "usd_per_gpu_hour": 3.1,
            "run_cost_usd": 1062604.8,
            "days": 31.84,
            "break_even_utilization": None,
        },
        {
            "key": "aws-p5-48xlarge:reserved_1y",
            "label": "AWS p5.48xlarge reserved 1 year",
            "kind": "cloud",
            "offering": "aws-p5-48xlarge",
            "pricing_model": "reserved_1y",
            "total_usd": 38560000.0,
            "usd_per_gpu_hour": 4.3,
            "run_cost_usd": 1401666.56,
            "days": 26.53,
            "break_even_utilization": 0.64,
        },
        {
            "key": "aws-p5-48xlarge:on_demand",
            "label": "AWS p5.48xlarge on-demand",
            "kind": "cloud",
            "offering": "aws-p5-48xlarge",
            "pricing_model": "on_demand",
            "total_usd": 61699000.0,
            "usd_per_gpu_hour": 6.88,
            "run_cost_usd": 2242666.5,
            "days": 26.53,
            "break_even_utilization": 0.41,
        },
    ],
    # The whole-horizon ranking services._horizon_ranking builds from the options' total_usd above:
    # spot 27.8M < reserved 38.56M < own 41.23M < on-demand 61.70M (per run, owning is cheapest instead).
    "ranking": {
        "frame": "whole horizon",
        "options": [
            {"key": "aws-p5-48xlarge:spot", "total_usd": 27800000.0},
            {"key": "aws-p5-48xlarge:reserved_1y", "total_usd": 38560000.0},
            {"key": "own", "total_usd": 41234567.89},
            {"key": "aws-p5-48xlarge:on_demand", "total_usd": 61699000.0},
        ],
    },
    "assumptions": [
        {
            "name": "pue",
            "value": 1.3,
            "unit": "ratio",
            "source": "Uptime Institute 2024 survey",
            "as_of": "2024-07-01",
        },
        {
            "name": "usd_per_kwh",
            "value": 0.08,
            "unit": "USD/kWh",
            "source": "EIA industrial average",
            "as_of": "2025-12-31",
        },
        {"name": "server_usd", "value": 300000, "unit": "USD", "source": "request", "as_of": ""},
        {"name": "utilization", "value": 0.6, "unit": "fraction", "source": "request", "as_of": ""},
        {
            "name": "catalog.h100-sxm.bf16_dense_tflops",
            "value": 989.4,
            "unit": "TFLOP/s",
            "source": "NVIDIA H100 datasheet (dense, no sparsity)",
            "as_of": "2023-03-21",
        },
        {"name": "cluster.fabric", "value": "ib-ndr400", "unit": "slug", "source": "request", "as_of": ""},
        {
            "name": "training.flash_attention",
            "value": True,
            "unit": "",
            "source": "Dao et al. 2022",
            "as_of": "",
        },
        {
            "name": "spot_interruptions_per_day",
            "value": 0.37,
            "unit": "1/day",
            "source": '=HYPERLINK("http://evil.example")',
            "as_of": "2026-01-01",
        },
        {
            "name": "-risk premium",
            "value": -12.5,
            "unit": "%",
            "source": "+analyst estimate",
            "as_of": "2026-01",
        },
    ],
    "findings": [
        {
            "severity": "warning",
            "code": "spot_long_run",
            "message": "a 27-day run on spot restarts often",
            "source": "cost engine",
        }
    ],
    "computed_at": "2026-12-02T15:40:00Z",
}


_COSTS: dict[str, Any] = {}


def _engine_costs() -> dict[str, Any]:
    """The cost engine's whole result for the fixture's spec on the seed catalog (computed once), as
    every stored evaluation holds it: readers parse it (engine.cost.cost_result), so a fragment will not
    do."""
    if not _COSTS:
        import json
        from pathlib import Path

        seed = Path(__file__).resolve().parents[2] / "apps/catalog/data/seed_catalog.json"
        records = json.loads(seed.read_text())
        _COSTS.update(evaluated_json(spec=copy.deepcopy(_EVALUATION["spec"]), records=records)["costs"])
    return copy.deepcopy(_COSTS)


def evaluation_fixture() -> dict[str, Any]:
    """A fresh deep copy of the 70B / 64 × H100 / InfiniBand evaluation (its options hand-made, its costs the
    engine's)."""
    return {**copy.deepcopy(_EVALUATION), "costs": _engine_costs()}


def with_layout(evaluation: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The evaluation with training.parallelism fields replaced (and the spec's layout kept in step)."""
    out = copy.deepcopy(evaluation)
    out["training"]["parallelism"].update(fields)
    if isinstance(out["spec"].get("parallelism"), dict):
        out["spec"]["parallelism"].update(
            {k: v for k, v in fields.items() if k in out["spec"]["parallelism"]}
        )
    return out


def with_cluster(evaluation: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The evaluation on another cluster: ``fields`` in the spec's cluster, and in training.summary.cluster as
    the engine reports it (nodes, GPUs per node, their product, accelerator, fabric)."""
    out = copy.deepcopy(evaluation)
    out["spec"]["cluster"].update(fields)
    summary = out["training"]["summary"]["cluster"]
    summary.update({k: v for k, v in fields.items() if k in summary})
    summary["gpus"] = summary["nodes"] * summary["gpus_per_node"]
    return out


def with_model(evaluation: dict[str, Any], preset: str, **shape: Any) -> dict[str, Any]:
    """The evaluation of the engine preset ``preset`` (in the spec, and in training.summary.model as the
    engine reports it), with ``shape`` fields overriding the preset's."""
    from dataclasses import fields, replace

    from clusterdesigner.engine.core.presets import PRESETS
    from clusterdesigner.engine.training.training_result import ModelSummary

    model = replace(PRESETS[preset], **shape)
    out = copy.deepcopy(evaluation)
    out["spec"]["workload"]["model"] = {"preset": preset, **shape}
    # The summary's fields are the shape's, but for params, which the shape calls total_params.
    summary = {f.name: getattr(model, f.name) for f in fields(ModelSummary) if f.name != "params"}
    out["training"]["summary"]["model"] = {**summary, "params": model.total_params}
    return out


def evaluated_json(
    *,
    spec: dict[str, Any],
    records: dict[str, Any],
    freshness: Any = None,
    calibration: Any = None,
) -> dict[str, Any]:
    """The engine's evaluation of ``spec`` (parsed) on the catalog ``records``, as JSON: what the design
    service composes before it stores (clusterdesigner.engine.design.design.evaluate_design_json)."""
    from clusterdesigner.engine.core.catalog import specs_from_records
    from clusterdesigner.engine.design.design import evaluate_design_json
    from clusterdesigner.engine.design.spec import parse_design_spec

    return evaluate_design_json(
        spec=parse_design_spec(spec),
        catalog=specs_from_records(records),
        records=records,
        freshness=freshness,
        calibration=calibration,
    )
