"""Megatron-Bridge performance-summary rows 25.11-26.08 (data/runs_megatron_bridge.csv) as engine requests.

A row is entered with the model's preset, the printed layout, batch, sequence length and precision, the
system's accelerator, and the engine inputs its Megatron-Bridge performance recipe sets (the CSV's recipe
columns, read from the preset the ``recipe`` column names at the release's summary commit: MoE dispatcher,
expert-parallel and shared-expert overlap, TP communication overlap, FP8 parameter gather, selective
recompute's modules, activation offload, the pipeline layout; where the preset's layout is not the table's,
only its performance flags). What the recipe sets that the engine has no input for is kept in the CSV
(``cuda_graph``, ``fused_grouped_mlp``: the CuTe DSL fused grouped MLP, ``fp8_attention``: FP8 dot-product
attention) and not entered. Choices where both are silent, each stated:

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
- DeepSeek-V3 rows whose recipe gives no layout for the table's split: the pipeline layout of
  Megatron-Bridge's layout map for the row's (pp, vp)
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

import calibration_cases
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


def fit_run_ids(rows: list[dict[str, str]]) -> set[str]:
    """The declared fit rows, as calibration_cases.fit_run_ids declares them for the other CSVs: within each
    release, in file order, the 1st, 3rd, 5th, ... row; the others are check rows. Declared before any
    constant was fitted to these rows (one listing of their errors came before it): a constant these rows
    ever inform is fitted on the fit rows only and reported on the check rows."""
    return calibration_cases.fit_run_ids([{**row, "source_id": row["release"]} for row in rows])


def _degree(text: str) -> int:
    return 1 if text.strip() in ("", "n/a") else int(text)


@dataclass
class ReleaseCase:
    row: dict[str, str]
    fit: bool = False
    recipe: str = ""
    moe: bool = False
    skip: str = ""
    predicted: float | None = None
    fits: bool | None = None
    # The engine's 80 % error band for the estimate (tokens/s per GPU): the row is inside it or not.
    band: tuple[float, float] | None = None

    @property
    def measured(self) -> float:
        return float(self.row["tokens_per_s_per_gpu"])

    @property
    def error(self) -> float | None:
        return None if self.predicted is None else self.predicted / self.measured - 1.0

    @property
    def inside_band(self) -> bool | None:
        return None if self.band is None else self.band[0] <= self.measured <= self.band[1]


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
    layout = row["pipeline_layout"]
    if not layout and preset == "deepseek-v3":
        layout = DEEPSEEK_V3_LAYOUTS.get((pp, _degree(row["vpp"])), "")
        layout = layout if overrides.get("mtp_depth", 1) else layout.replace("mL", "L")
    if layout:
        training["pipeline_layout"] = layout
    training.update(_recipe_settings(row))
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
            "recompute": row["recompute"] or "none",
            "sharding": "zero1" if row["fsdp"].strip() in ("", "0") else "zero3",
            "sequence_parallel": tp > 1,
        },
    }


def _recipe_settings(row: dict[str, str]) -> dict[str, Any]:
    """The engine inputs the row's Megatron-Bridge recipe sets (its ``recipe`` column names the preset and
    line): dispatcher, expert-parallel and shared-expert overlap, TP communication overlap, FP8 parameter
    gather, selective recompute's modules or full recompute's layers, activation offload. Blank columns keep
    the profile's defaults."""
    out: dict[str, Any] = {}
    if row["moe_dispatcher"] and _degree(row["ep"]) > 1:
        out["moe_dispatcher"] = row["moe_dispatcher"]
    for key in ("moe_a2a_overlap", "moe_shared_expert_overlap", "tp_comm_overlap"):
        if row[key] and (key == "tp_comm_overlap" or _degree(row["ep"]) > 1):
            out[key] = row[key] == "1"
    if row["fp8_params"] == "1" and RECIPES[row["precision"]] != "bf16":
        out["fp8_params"] = True
    if row["recompute_modules"]:
        out["recompute_modules"] = row["recompute_modules"].split(";")
    if row["recompute_num_layers"]:
        out["recompute_num_layers"] = int(row["recompute_num_layers"])
    if row["activation_offload_layers"]:
        out["activation_offload_layers"] = int(row["activation_offload_layers"])
    if row["activation_offload_modules"]:
        out["activation_offload_modules"] = row["activation_offload_modules"].split(";")
    return out


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
    gpus = int(row["num_gpus"])
    case.predicted = float(response["tokens_per_second"]) / gpus
    case.fits = bool(response["fits"])
    band = response.get("error_band")
    if band:
        case.band = (band["tokens_per_second_low"] / gpus, band["tokens_per_second_high"] / gpus)
    return case


def all_cases() -> list[ReleaseCase]:
    specs = catalog_specs()
    rows = load_rows()
    fit = fit_run_ids(rows)
    cases = [predict(row, specs) for row in rows]
    for case in cases:
        case.fit = case.row["run_id"] in fit
    return cases
