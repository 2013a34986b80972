"""Predict the measured runs in tests/engine/data/runs_frontier.csv with the current engine: no fitting.

These rows lie outside the calibration set (tests/engine/data/runs.csv): mixture-of-experts, FP8, Blackwell
(B200, GB200 NVL72), long context (≥ 32K tokens) and ≥ 1,024 GPUs. Shared by
tests/engine/test_calibration_frontier.py and bench/calibration_frontier.py (which prints the table). The
baseline is what today's engine says; nothing here is tuned to the rows.

Comparison basis: tokens per second per GPU where the row measured it (it needs no FLOP convention), else
model TFLOP/s per GPU counted as the source counts it. NeMo's "Model TFLOP/sec/GPU" counts model FLOPs with
its own per-model formula (no recompute, full s × s attention, as the engine's ``model_flops_per_token``
does, until NeMo commit 6251117f4c of 2025-08-09 halved the attention term for causal masks: the NeMo rows
compared on TFLOP/s, the 24.03 long-sequence table, predate it). The Megatron-MoE-ModelZoo's TFLOPS are
Megatron-LM's logged throughput, whose num_floating_point_operations counts the causal half of the attention
core since NVIDIA/Megatron-LM 8873b55d6a (2025-03-06); its Qwen3 H100 table gives step time and per-GPU TF
side by side, and 245 TF at 2,048 × 4,096 tokens / 19.7 s / 256 GPUs is 1.473e11 FLOPs per token, the
causal count (1.483e11; the full count is 1.673e11). A row whose ``tflops_basis`` says "causal half" is
compared with ``ModelShape.causal_model_flops_per_token`` × the predicted tokens/s.

Where a row is silent the choice is made once, never per row:
- Accelerators and fabrics from the project's seed catalog (apps/catalog/data/seed_catalog.json), fabric
  InfiniBand NDR 400 Gb/s per GPU (DGX H100, DGX B200 and DGX GB200 use 400 Gb/s ConnectX-7 per GPU).
- GPUs per node: 8 on DGX H100/B200. GB200: 4, one NVL72 compute tray (18 trays × 4 GPUs = 72), which is
  what a scheduler calls a node. The NVLink domain is the accelerator's (72), not the node's, so
  ``gb200_gpus_per_node`` (8, 64: one rack's 16 trays) no longer moves the predictions; 72 drops the rows
  whose GPU count 72 does not divide.
- Recompute unstated → none; micro batch unstated → 1; vpp unstated → 1; FSDP column > 0 → ZeRO-3,
  FSDP 0 → distributed optimizer (ZeRO-1, Megatron-Core's default in NeMo recipes); a sharding column
  starting "zero2" (Llama 3's FSDP, parameters kept between forward and backward) → ZeRO-2.
- AMD rows (MLPerf llama31_8b on 8 × MI355X; llama2_70b_lora on 8 × MI325X/MI355X): the catalog's
  accelerator on one 8-GPU node; the fabric is never crossed.
- LoRA rows (MLPerf llama2_70b_lora): ``lora_rank`` and ``lora_modules`` (";"-separated) go to the engine as
  ``training.lora_rank`` / ``training.lora_modules``; the benchmark's rank 16 on the attention linears.
- ``recompute_num_layers`` N → full recompute of N layers per stage (``training.recompute_num_layers``);
  ``fp8_params`` 1 → ``training.fp8_params`` (weights in FP8); ``activation_offload_modules`` (";"-separated)
  → ``training.activation_offload_modules``; ``activation_func_fp8_input_store`` 1 → the same training
  field (SwiGLU input kept in FP8), as the row's config files or commands set them.
- Gated MLP for Llama, Mixtral, Qwen3 (SwiGLU); none for GPT-3 and Nemotron-4 (GeLU, squared ReLU); no
  dropout (NeMo 2.0 recipes for these models set it to 0); flash attention, sequence parallelism when
  tp > 1, TP-communication overlap on; FP8 rows use the recipe their precision column names
  (``recipe_of``: "current scaling" → fp8_current, MXFP8 → mxfp8, else fp8, delayed scaling).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# One parser and one percentile for both tables, so their figures are computed alike.
from calibration_cases import _float, _int, fit_run_ids
from calibration_cases import _percentile as percentile

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.model import MLA_FIELDS, model_from_dict
from clusterdesigner.engine.training.training import estimate

ROOT = Path(__file__).resolve().parents[2]
FRONTIER_CSV = Path(__file__).parent / "data" / "runs_frontier.csv"
SEED_CATALOG = ROOT / "apps" / "catalog" / "data" / "seed_catalog.json"
REGIMES = ("moe", "fp8", "blackwell", "long_context", "scale_1024", "amd")
# Model features the engine has no input for; a row with one is listed, not predicted. None is left since
# multi-head latent attention, multi-token prediction, head_dim and pipeline layouts became inputs (issue 19
# item 3): the DeepSeek-V3 and Qwen3 rows are predicted. Full recompute of only some of a stage's layers
# (NeMo's activations_checkpoint_method "block" with activations_checkpoint_num_layers 21 of 80: the MLPerf
# llama2_70b_lora MI300X submissions, shape feature ``partial_recompute``) is ``training.
# recompute_num_layers`` (the row's recompute_num_layers column), so those rows are predicted too.
INEXPRESSIBLE_FEATURES: dict[str, str] = {}
# Shape columns passed to the engine as they are when a row gives them (MLA widths, MTP, head_dim).
SHAPE_COLUMNS = ("head_dim", *MLA_FIELDS, "mtp_depth")
# Sources whose stack ran FlashAttention-2, not Transformer Engine's fused attention (the engine's default
# under the Megatron-Core profile, which every other source here ran: NeMo and Megatron-Core with Transformer
# Engine). Meta's Llama 3 405B pre-training (arXiv:2407.21783, July 2024) ran Meta's own PyTorch stack, whose
# flash attention predates FlashAttention-3 (Shah et al., arXiv:2407.08608, July 2024).
FLASH2_SOURCES = ("llama3_paper_t4",)
# Sources whose stack calls a Hopper-native attention kernel (training.attention_kernel flash3, timed at its
# measured rates, timing.KERNEL_RATES_TFLOPS): the Megatron-MoE-ModelZoo's image
# (yanring/Megatron-MoE-ModelZoo dockers/GB200.Dockerfile at c700259d: nvcr.io pytorch 25.09,
# Transformer Engine release_v2.9, cuDNN 9.14; the H100 runs are taken to use the same stack), whose
# Megatron-Core leaves --attention-backend auto, under which Transformer Engine >= 1.4 gives cuDNN's fused
# attention preference on sm90 (transformer_engine/pytorch/attention.py at v1.4, "Select FusedAttention on
# sm90"). NeMo 24.03-25.09 stay on ``fused``, the factor their rows fit.
FLASH3_SOURCES = ("megatron_moe_modelzoo",)
# Memory levers a row's recompute or precision column states that the engine has no input for: the row is
# predicted without them, so a "does not fit" says what is missing, not that the run could not have run.
# Matched on the two columns' text. None is left: per-module recompute (the recompute_modules column,
# Megatron-Core's --recompute-modules, ";"-separated), activation offload of whole layers
# (activation_offload_layers, --cpu-offloading-num-layers) and of single modules (activation_offload_modules,
# --fine-grained-activation-offloading --offload-modules expert_fc1 moe_act, ";"-separated), FP8 weight
# storage (NeMo's fp8_params, the fp8_params column: the MLPerf llama2_70b_lora and llama31_8b runs keep their
# weights in FP8) and Transformer Engine's FP8 store of the SwiGLU input (Megatron-Core
# activation_func_fp8_input_store, NVIDIA's llama2_70b_lora configs FP8_ACT / FP8_ACTIVATION; the
# activation_func_fp8_input_store column) are engine inputs (issue 19 item 3). The AMD llama2_70b_lora rows
# name "fp8_activation_input_store", a key of their ROCm NeMo 1.x config whose effect is not read: they fit
# without it and are left without the lever.
MISSING_MEMORY_LEVERS: tuple[tuple[str, str], ...] = ()
GPU_SLUGS = (
    ("GB200", "gb200"),
    ("B200", "b200"),
    ("H200", "h200"),
    ("H100", "h100-sxm"),
    ("MI355X", "mi355x"),
    ("MI325X", "mi325x"),
    ("MI300X", "mi300x"),
)
FABRIC = "ib-ndr400"
# The tflops_basis words of a row whose TFLOP/s counts the causal half of the attention core.
CAUSAL_BASIS = "causal half"


def load_rows() -> list[dict[str, str]]:
    with FRONTIER_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def catalog_specs() -> dict[str, Any]:
    records = json.loads(SEED_CATALOG.read_text())
    specs = specs_from_records(records)
    return {"accelerators": specs.accelerators, "fabrics": specs.fabrics}


def accelerator_slug(gpu_type: str) -> str | None:
    for prefix, slug in GPU_SLUGS:
        if gpu_type.startswith(prefix):
            return slug
    return None


def run_gpus(row: dict[str, str]) -> int:
    """The GPUs the measured run used: the row's GPU column, but where a row states its data-parallel size
    and the product tp · pp · dp · cp does not cover that column, the product.

    Why: the rows compare figures per GPU, and the published layout with the global batch fixes the run;
    the only such rows are NeMo's B200 long-sequence table (docs/source/performance/
    performance_long_sequence.md at NVIDIA/NeMo a2c4cc8ee6, "LLAMA3-8B (FP8) - B200"), whose "# of GPUs"
    and batch columns repeat the H100 table's (8-1,024 GPUs, 512-4 sequences) while its TP/PP/DP/CP cover a
    quarter of them, with DP 4 on every row. The GPU column cannot be the run's: at 1,024K tokens, 1,024
    GPUs under TP 4 CP 16 would be DP 16, more replicas than the 4 sequences of the batch (512K: DP 16 for
    8); the layout reading is consistent on every row (DP 4 divides each batch, 4 sequences = DP 4 × one
    micro-batch at 1,024K)."""
    n = int(row["num_gpus"])
    degrees = math.prod(_int(row[k]) or 1 for k in ("tp", "pp", "dp", "cp"))
    return degrees if _int(row["dp"]) and degrees < n else n


def not_expressible(row: dict[str, str]) -> str:
    """Why the engine cannot express this row's model or layout, or '' when it can."""
    features = [f for f in row["shape_features"].split(";") if f]
    reasons = [INEXPRESSIBLE_FEATURES[f] for f in features if f in INEXPRESSIBLE_FEATURES]
    n = run_gpus(row)
    degrees = [_int(row[k]) or 1 for k in ("tp", "pp", "dp", "cp")]
    if _int(row["dp"]) and math.prod(degrees) != n:
        reasons.append(f"published layout tp×pp×dp×cp = {math.prod(degrees)} ≠ {n} GPUs")
    return "; ".join(reasons)


def missing_memory_levers(row: dict[str, str]) -> list[str]:
    """The memory levers the row's recompute or precision column states that the engine cannot express."""
    text = f"{row['recompute']} {row['precision']}".lower()
    return [lever for needle, lever in MISSING_MEMORY_LEVERS if needle in text]


def _sharding(text: str) -> str:
    """FSDP → zero3; "zero2 (…)" (Llama 3's FSDP that keeps parameters between forward and backward) → zero2;
    anything else (distributed optimizer, not stated) → zero1."""
    text = text.lower()
    if text.startswith("fsdp"):
        return "zero3"
    return "zero2" if text.startswith("zero2") else "zero1"


# The recipe a row's precision column names (engine/training/precision.py): the row is estimated in it
# (issue 33: current scaling's amax pass is counted, ``precision.CAST_PASSES_CURRENT``; before, every FP8 row
# was entered as "fp8", delayed scaling). Every FP8 recipe shares the FP8 calibration factor
# (``PrecisionRecipe.calibration_precision``).
RECIPE_WORDS = (("nvfp4", "nvfp4"), ("mxfp8", "mxfp8"), ("fp8_mx", "mxfp8"), ("blockwise", "fp8_blockwise"))


def recipe_of(row: dict[str, str]) -> str:
    """The precision recipe the row's precision column names: nvfp4, mxfp8, fp8_blockwise, fp8_current
    ("current scaling"), fp8 or bf16."""
    text = row["precision"].lower()
    for word, recipe in RECIPE_WORDS:
        if word in text:
            return recipe
    if "fp8" in text:
        return "fp8_current" if "current scaling" in text else "fp8"
    return "bf16"


def request_for(
    row: dict[str, str], *, gb200_gpus_per_node: int = 4, precision: str | None = None
) -> dict[str, Any]:
    name = row["model_name"].lower()
    moe = _int(row["experts"]) or 0
    model: dict[str, Any] = {
        "name": row["model_name"],
        "layers": int(row["layers"]),
        "hidden": int(row["hidden"]),
        "heads": int(row["heads"]),
        "kv_heads": int(row["kv_heads"]),
        "ffn_hidden": int(row["ffn_hidden"]),
        "seq_len": int(row["seq_len"]),
        "vocab": int(row["vocab"]),
        "gated_mlp": any(k in name for k in ("llama", "mixtral", "qwen", "deepseek")),
        "dropout": False,
    }
    mla = bool(_int(row["kv_lora_rank"]))
    # Under MLA a head's width is qk_nope + qk_rope; the row's head_dim column is left to the engine.
    model.update({k: int(row[k]) for k in SHAPE_COLUMNS if row[k] and not (mla and k == "head_dim")})
    if moe:
        model.update(
            experts=moe,
            top_k=int(row["top_k"]),
            expert_ffn_hidden=int(row["expert_ffn_hidden"]),
            shared_experts=_int(row["shared_experts"]) or 0,
            moe_layers=int(row["moe_layers"]),
        )
    n = run_gpus(row)
    accelerator = accelerator_slug(row["gpu_type"])
    per_node = min(gb200_gpus_per_node if accelerator == "gb200" else 8, n)
    tp = _int(row["tp"]) or 1
    parallelism = {
        "tp": tp,
        "pp": _int(row["pp"]) or 1,
        "dp": _int(row["dp"]),
        "cp": _int(row["cp"]) or 1,
        "ep": _int(row["ep"]) or 1,
        "vpp": _int(row["vpp"]) or 1,
        "micro_batch": _int(row["micro_batch"]) or 1,
        "recompute": "full" if row["recompute"].lower().startswith("full") else "none",
        "sharding": _sharding(row["sharding"]),
        "sequence_parallel": tp > 1,
    }
    training = {
        "tokens": 1e12,
        "global_batch_seqs": int(row["global_batch_seqs"]),
        "precision": precision or recipe_of(row),
        "flash_attention": True,
        "tp_comm_overlap": True,
    }
    if row["source_id"] in FLASH2_SOURCES:
        training["attention_kernel"] = "flash2"
    if row["source_id"] in FLASH3_SOURCES:
        training["attention_kernel"] = "flash3"
    if row["recompute_modules"]:
        parallelism["recompute"] = "selective"
        training["recompute_modules"] = row["recompute_modules"].split(";")
    if row["recompute_num_layers"]:
        # NeMo's activations_checkpoint_granularity full + method block + num_layers N (the AMD configs' ACG,
        # ACM, ACL): Megatron-Core's --recompute-method block.
        parallelism["recompute"] = "full"
        training["recompute_num_layers"] = int(row["recompute_num_layers"])
    if row["fp8_params"] == "1":
        training["fp8_params"] = True
    if row["activation_offload_layers"]:
        training["activation_offload_layers"] = int(row["activation_offload_layers"])
    if row["activation_offload_modules"]:
        training["activation_offload_modules"] = row["activation_offload_modules"].split(";")
    if row["activation_func_fp8_input_store"] == "1":
        training["activation_func_fp8_input_store"] = True
    if row["pipeline_layout"]:
        training["pipeline_layout"] = row["pipeline_layout"]
    if row["etp"]:
        training["etp"] = int(row["etp"])
    training.update(moe_exchange(row))
    if _int(row["lora_rank"]):
        training["lora_rank"] = int(row["lora_rank"])
        training["lora_modules"] = row["lora_modules"].split(";")
    cluster = {
        "accelerator": accelerator,
        "gpus_per_node": per_node,
        "nodes": n // per_node,
        "fabric": FABRIC,
    }
    return {"model": model, "training": training, "cluster": cluster, "parallelism": parallelism}


def moe_exchange(row: dict[str, str]) -> dict[str, Any]:
    """The token-exchange settings a MoE row's recipe ran, as engine inputs; none where the row is silent.

    ``moe_dispatcher``: alltoall, or deepep for DeepEP and for HybridEP (Megatron-Core's flex dispatcher with
    the hybridep backend, the ModelZoo's GB200 runs: one copy per scale-up domain as DeepEP, inside an NVL72
    rack all copies on NVLink). ``moe_a2a_overlap`` / ``moe_shared_expert_overlap``: 1 or 0. Sources (the
    CSV's columns): NeMo 25.09, Megatron-Bridge fa0315ae2 scripts/performance/run_script.py (DeepSeek-V3:
    DeepEP, force-balanced, overlap_moe_expert_parallel_comm on H100; token drop and alltoall with
    moe_shared_expert_overlap on B200/GB200; Qwen3: apply_moe_token_drop, the provider's alltoall,
    overlap_moe_expert_parallel_comm unset); Megatron-MoE-ModelZoo best_practice/qwen3/readme.md (the
    Dispatcher column, '+1f1b overlap', DISPATCHER=hybridep and A2A_OVERLAP in the GB200 commands). The
    ``moe_routing`` column (token drop at capacity factor 1.0 padded to capacity, or forced load balance:
    both give every expert the mean load) is ``moe_load_balance`` balanced; a row silent on it keeps the
    engine's default, dropless. ``hybridep`` is the ModelZoo GB200 commands' DISPATCHER=hybridep."""
    out: dict[str, Any] = {}
    if row["moe_dispatcher"]:
        out["moe_dispatcher"] = row["moe_dispatcher"]
    if row["moe_routing"].startswith(("tokendrop", "forced")):
        out["moe_load_balance"] = "balanced"
    for key in ("moe_a2a_overlap", "moe_shared_expert_overlap"):
        if row[key]:
            out[key] = row[key] == "1"
    return out


def _field(response: Any, key: str) -> Any:
    # The engine's result is a mapping today; typed results (issue 14) expose the same names as attributes.
    return response[key] if isinstance(response, Mapping) else getattr(response, key)


def relative_error(predicted: float, measured: float) -> float:
    """Signed error of a prediction: predicted / measured − 1 (+0.10 = 10 % optimistic)."""
    return predicted / measured - 1.0


@dataclass
class FrontierCase:
    row: dict[str, str]
    skip: str = ""
    metric: str = ""  # "tokens/s/GPU" or "model TFLOP/s/GPU"
    measured: float | None = None
    predicted: float | None = None
    predicted_mfu: float | None = None
    fits: bool | None = None

    @property
    def regimes(self) -> list[str]:
        return [r for r in self.row["regime"].split(";") if r]

    @property
    def error(self) -> float | None:
        if self.measured is None or self.predicted is None:
            return None
        return relative_error(self.predicted, self.measured)


def predict(
    row: dict[str, str], specs: dict[str, Any], *, gb200_gpus_per_node: int = 4, precision: str | None = None
) -> FrontierCase:
    case = FrontierCase(row=row)
    tokens = _float(row["tokens_per_s_per_gpu"])
    tflops = _float(row["measured_tflops_per_gpu"])
    if tokens is not None:
        case.metric, case.measured = "tokens/s/GPU", tokens
    elif tflops is not None:
        case.metric, case.measured = "model TFLOP/s/GPU", tflops
    if why := not_expressible(row):
        case.skip = f"not expressible: {why}"
        return case
    if accelerator_slug(row["gpu_type"]) is None:
        case.skip = f"no catalog accelerator for {row['gpu_type']}"
        return case
    try:
        response = estimate(
            request_for(row, gb200_gpus_per_node=gb200_gpus_per_node, precision=precision), **specs
        )
    except EngineError as exc:
        case.skip = f"engine rejected the layout: {exc.field}: {exc.message}"
        return case
    n = run_gpus(row)
    if case.metric == "tokens/s/GPU":
        case.predicted = float(_field(response, "tokens_per_second")) / n
    elif CAUSAL_BASIS in row["tflops_basis"]:
        model = model_from_dict(request_for(row, precision=precision)["model"], presets={})
        tokens_per_gpu = float(_field(response, "tokens_per_second")) / n
        case.predicted = tokens_per_gpu * model.causal_model_flops_per_token / 1e12
    else:
        case.predicted = float(_field(response, "model_tflops_per_gpu"))
    case.predicted_mfu = float(_field(response, "mfu"))
    case.fits = bool(_field(response, "fits"))
    return case


def all_cases(*, gb200_gpus_per_node: int = 4) -> list[FrontierCase]:
    specs = catalog_specs()
    return [predict(r, specs, gb200_gpus_per_node=gb200_gpus_per_node) for r in load_rows()]


def _stats(errors: list[float]) -> dict[str, float | int]:
    if not errors:
        return {"n": 0}
    return {
        "n": len(errors),
        "median_error": statistics.median(errors),
        "median_abs_error": statistics.median(abs(e) for e in errors),
        "p90_abs_error": percentile([abs(e) for e in errors], 0.9),
    }


def summary(cases: list[FrontierCase]) -> dict[str, Any]:
    compared = [c for c in cases if c.error is not None]
    by_regime = {
        r: _stats([c.error for c in compared if r in c.regimes and c.error is not None]) for r in REGIMES
    }
    return {
        "rows": len(cases),
        "compared": len(compared),
        "overall": _stats([c.error for c in compared if c.error is not None]),
        "by_regime": by_regime,
        "by_source": {
            src: _stats([c.error for c in compared if c.row["source_id"] == src and c.error is not None])
            for src in sorted({c.row["source_id"] for c in compared})
        },
        "skipped": [(c.row["run_id"], c.skip) for c in cases if c.skip],
        "by_regime_split": by_regime_split(compared),
    }


def by_regime_split(compared: list[FrontierCase]) -> dict[str, dict[str, dict[str, float | int]]]:
    """Per regime (and ``overall``), the stats of the declared fit rows and of the check rows
    (calibration_cases.fit_run_ids: every other row of a source in file order). A regime factor
    (timing.REGIME_EFFICIENCY) is fitted on fit rows only, so the check column is the honest figure."""
    fit = fit_run_ids(load_rows())
    out: dict[str, dict[str, dict[str, float | int]]] = {}
    for regime in ("overall", *REGIMES):
        rows = [c for c in compared if regime == "overall" or regime in c.regimes]
        out[regime] = {
            part: _stats(
                [c.error for c in rows if (c.row["run_id"] in fit) == is_fit and c.error is not None]
            )
            for part, is_fit in (("fit", True), ("check", False))
        }
    return out
