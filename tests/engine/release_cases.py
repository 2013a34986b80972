"""Megatron-Bridge performance-summary rows 25.11-26.08 (data/runs_megatron_bridge.csv) as engine requests.

A row is entered as a reader of the published table would enter it: the model's preset, the printed layout,
batch, sequence length and precision, the system's accelerator, and the Megatron-Core profile's defaults for
what the table does not print (recompute, activation offload, the MoE dispatcher and its overlap). Choices
where the table is silent, each stated:

- dp = GPUs / (tp · pp · cp); "n/a" in VP or EP is 1.
- FSDP 0 or blank: data parallel with the distributed optimizer (Megatron-Bridge's default,
  ``use_distributed_optimizer``), sharding zero1; FSDP 1 or a group size (64): Megatron-FSDP, zero3.
- Precision: FP8-CS and the 26.x tables' "FP8" are per-tensor current scaling (the 25.11 table names FP8-CS
  beside FP8-MX; the 26.x tables drop the suffix: an inference), FP8-MX and MXFP8 the MXFP8 recipe, NVFP4
  the NVFP4 recipe (with its BF16 share, precision.NVFP4_BF16_LAYER_FRACTION), BF16 plain BF16.
- MoE rows: tokens force-balanced over the experts, dropless (each table's note: "we force-balance the
  token distribution among experts and all benchmarks are token-dropless"): ``moe_load_balance`` balanced.
- DeepSeek-V3 "(w/o MTP)" (25.11) runs without the multi-token-prediction layer (mtp_depth 0); the other
  DeepSeek-V3 rows keep the preset's one MTP layer.
- MoE rows with tp > 1: expert tensor parallelism 1 (``training.etp``), as Megatron-Bridge's GPT-OSS and
  Qwen3 MoE recipes set (src/megatron/bridge/recipes/gpt_oss/h100/gpt_oss.py, recipes/qwen/*/qwen3_moe.py
  at 4ab94dfad3: ``expert_tensor_parallel_size = 1``): EP then spans tp × dp.
- DeepSeek-V3 rows: the pipeline layout of Megatron-Bridge's layout map for the row's (pp, vp)
  (recipes/deepseek/h100/deepseek_v3.py ``_get_deepseek_v3_pipeline_layout`` at 4ab94dfad3: 16 decoder
  layers a stage for (4, 1); 8 for (8, 1) and (4, 2); 4 for (16, 1), (8, 2) and (4, 4); the embedding on the
  first stage, MTP and loss on the last). A (pp, vp) outside the map is left without a layout, which the
  engine refuses where pp · vp divides neither 61 nor 63 layers: listed with the engine's reason.
- GB300 and GB200 rows: 4 GPUs a node as the frontier rows' NVL72 trays (frontier_cases), on NVLink inside
  the rack through the accelerator's own scale-up domain.

Not expressible, listed with the reason: Nemotron 3 (hybrid Mamba-2 and attention layers with MoE) and
DeepSeek-V4 Flash (its compressed sparse attention): the engine has no input for either layer type.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from frontier_cases import catalog_specs

from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.training.training import estimate

RELEASES_CSV = Path(__file__).parent / "data" / "runs_megatron_bridge.csv"
SYSTEMS = {
    "DGX-GB300": "gb300",
    "DGX-GB200": "gb200",
    "DGX-B300": "b300",
    "DGX-B200": "b200",
    "DGX-H100": "h100-sxm",
}
RACK_SYSTEMS = ("DGX-GB300", "DGX-GB200")
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {
    "LLAMA3_8B": ("llama3-8b", {}),
    "LLAMA3_70B": ("llama3-70b", {}),
    "LLAMA3.1_405B": ("llama3-405b", {}),
    "DeepSeekV3": ("deepseek-v3", {}),
    "DeepSeekV3 (w/ MTP)": ("deepseek-v3", {}),
    "DeepSeekV3 (w/o MTP)": ("deepseek-v3", {"mtp_depth": 0}),
    "GPT OSS 120B": ("gpt-oss-120b", {}),
    "Qwen3_30B_a3B": ("qwen3-30b-a3b", {}),
    "Qwen3_235B_a22B": ("qwen3-235b-a22b", {}),
    "Kimi_K2": ("kimi-k2", {}),
}
NOT_EXPRESSIBLE = {
    "Nemotron_3": "hybrid Mamba-2 / attention layers with MoE: the engine has no Mamba layer",
    "DeepSeekV4": "DeepSeek-V4's compressed sparse attention: the engine has no input for it",
}
RECIPES = {
    "BF16": "bf16",
    "FP8": "fp8_current",
    "FP8-CS": "fp8_current",
    "FP8-MX": "mxfp8",
    "MXFP8": "mxfp8",
    "NVFP4": "nvfp4",
}
# Megatron-Core layout strings of those layouts (E embedding, t decoder layer, m MTP, L loss, | a stage).
_EIGHT = "t" * 8
DEEPSEEK_V3_LAYOUTS: dict[tuple[int, int], str] = {
    (4, 1): "E" + "t" * 16 + "|" + "t" * 16 + "|" + "t" * 16 + "|" + "t" * 13 + "mL",
    (8, 1): f"E{_EIGHT}|({_EIGHT}|)*6,tttttmL",
    (4, 2): f"E{_EIGHT}|({_EIGHT}|)*6,tttttmL",
    (16, 1): "Etttt|(tttt|)*14,tmL",
    (8, 2): "Etttt|(tttt|)*14,tmL",
    (4, 4): "Etttt|(tttt|)*14,tmL",
}


def load_rows() -> list[dict[str, str]]:
    with RELEASES_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _degree(text: str) -> int:
    return 1 if text.strip() in ("", "n/a") else int(text)


@dataclass
class ReleaseCase:
    row: dict[str, str]
    recipe: str = ""
    moe: bool = False
    skip: str = ""
    predicted: float | None = None
    fits: bool | None = None

    @property
    def measured(self) -> float:
        return float(self.row["tokens_per_s_per_gpu"])

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.measured - 1.0


def request_for(row: dict[str, str]) -> dict[str, Any]:
    """The engine request a reader of the table would send for ``row`` (see the module's choices)."""
    preset, overrides = PRESETS[row["model"]]
    gpus = int(row["num_gpus"])
    tp, pp, cp = _degree(row["tp"]), _degree(row["pp"]), _degree(row["cp"])
    per_node = min(4 if row["system"] in RACK_SYSTEMS else 8, gpus)
    training: dict[str, Any] = {
        "tokens": 1e12,
        "global_batch_seqs": int(row["global_batch_seqs"]),
        "precision": RECIPES[row["precision"]],
        "flash_attention": True,
        "tp_comm_overlap": True,
    }
    if _degree(row["ep"]) > 1:
        training["moe_load_balance"] = "balanced"
        if tp > 1:
            training["etp"] = 1
    layout = DEEPSEEK_V3_LAYOUTS.get((pp, _degree(row["vpp"]))) if preset == "deepseek-v3" else None
    if layout is not None:
        training["pipeline_layout"] = layout if overrides.get("mtp_depth", 1) else layout.replace("mL", "L")
    return {
        "model": {"preset": preset, "seq_len": int(row["seq_len"]), **overrides},
        "training": training,
        "cluster": {
            "accelerator": SYSTEMS[row["system"]],
            "gpus_per_node": per_node,
            "nodes": gpus // per_node,
            "fabric": "ib-ndr400",
        },
        "parallelism": {
            "tp": tp,
            "pp": pp,
            "cp": cp,
            "dp": gpus // (tp * pp * cp),
            "ep": _degree(row["ep"]),
            "vpp": _degree(row["vpp"]),
            "micro_batch": int(row["micro_batch"]),
            "recompute": "none",
            "sharding": "zero1" if row["fsdp"].strip() in ("", "0") else "zero3",
            "sequence_parallel": tp > 1,
        },
    }


def predict(row: dict[str, str], specs: dict[str, Any]) -> ReleaseCase:
    case = ReleaseCase(row=row, recipe=RECIPES.get(row["precision"], row["precision"]))
    for prefix, why in NOT_EXPRESSIBLE.items():
        if row["model"].startswith(prefix):
            case.skip = why
            return case
    request = request_for(row)
    case.moe = not row["model"].startswith("LLAMA")
    try:
        response = estimate(request, **specs)
    except EngineError as exc:
        case.skip = f"engine rejected the row: {exc.field}: {exc.message}"
        return case
    case.predicted = float(response["tokens_per_second"]) / int(row["num_gpus"])
    case.fits = bool(response["fits"])
    return case


def all_cases() -> list[ReleaseCase]:
    specs = catalog_specs()
    return [predict(row, specs) for row in load_rows()]
