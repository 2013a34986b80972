"""Turn the measured runs in tests/engine/data/runs.csv into engine requests and compare predictions.

Shared by tests/engine/test_calibration.py (asserts the targets) and bench/calibration.py (prints the
table). Where a row is silent, the choice is made once per source, never per row:

- Fabric per GPU: Selene (Narayanan 2021) 8 × HDR 200 Gb/s per DGX A100 node → 200 Gb/s IB per GPU;
  llm-foundry A100 "1600 Gbps RoCE node-node" → 200 Gb/s RoCE per GPU; llm-foundry H100 (network not
  stated) → 400 Gb/s per GPU as on DGX/HGX H100 clusters; Megatron-Core README and NeMo (DGX H100, Eos)
  → NDR 400 Gb/s per GPU; Jean Zay (BLOOM) 4 × 100 Gb/s Omni-Path per 8-GPU node → 50 Gb/s per GPU.
- Flash attention: off for Narayanan 2021 and BLOOM (both predate FlashAttention, May 2022), on elsewhere.
- Sequence parallelism: off for Narayanan 2021 and BLOOM (introduced by Korthikanti 2022), on for
  Megatron-Core and NeMo when tp > 1.
- Gradients in fp32: BLOOM final rows (BF16Optimizer, "+4 bytes/param unsharded" per the source); bf16
  elsewhere. DeepSpeed (all BLOOM rows) keeps an fp32 grad for its fp32 optimizer partition (K = 16
  instead of ZeRO's 12) and two ZeRO bucket buffers of 5e8 bf16 elements (+1.9 GiB reserve).
- Unstated micro-batch → 1; unstated recompute → none; unstated cp → 1; unstated vpp → 1, but one layer
  per virtual stage for the Megatron-Core README's pipelined rows (``_readme_vpp``: the README overlaps
  pipeline communication, which r0.8.0 does only under the interleaved schedule); unstated ffn → 4·hidden;
  unstated kv_heads → heads; Megatron-Core "sharding not stated" → zero1 (distributed optimizer).
- Llama models have SwiGLU MLPs; others GeLU. Llama and MPT (llm-foundry) train without dropout; the
  Megatron GPT and BLOOM rows keep dropout masks (Megatron's defaults; the BLOOM prequel does not say).
- Uneven pipeline splits: DeepSpeed's partition_uniform for BLOOM (Megatron-DeepSpeed), Megatron-Core's
  balanced end stages elsewhere.

Rows that cannot be predicted are counted with the reason: no model shape (NeMo GPT3-5B/20B,
Nemotron-8B/22B), no parallel layout (Megatron-Core strong-scaling end points) or no measurement to
compare (BLOOM ZeRO-0/1 rows whose throughput cells were left empty still give memory).
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specs import A100_40GB, A100_80GB, H100_SXM, IB_HDR200, IB_NDR400, OMNIPATH_100, ROCE_200

from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.training.training import estimate

RUNS_CSV = Path(__file__).parent / "data" / "runs.csv"
ACCELERATORS = {a.slug: a for a in (A100_40GB, A100_80GB, H100_SXM)}
FABRICS = {f.slug: f for f in (IB_HDR200, IB_NDR400, ROCE_200, OMNIPATH_100)}


def load_runs() -> list[dict[str, str]]:
    with RUNS_CSV.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _int(value: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


def _float(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


def _cluster(row: dict[str, str]) -> dict[str, Any]:
    gpu = row["gpu_type"]
    source = row["source_id"]
    accelerator = "a100-40gb" if "A100-40GB" in gpu else "a100-80gb" if "A100" in gpu else "h100-sxm"
    n = int(row["num_gpus"])
    cluster: dict[str, Any] = {
        "accelerator": accelerator,
        "gpus_per_node": min(8, n),
        "nodes": max(1, n // 8),
    }
    if source == "narayanan2021":
        cluster.update(fabric="ib-hdr200")
    elif source == "bloom_tr11_prequel":
        cluster.update(fabric="opa-100", scaleout_gbps_per_gpu=50.0)
    elif source == "llmfoundry_bench" and accelerator != "h100-sxm":
        cluster.update(fabric="roce-200g")
    else:
        cluster.update(fabric="ib-ndr400")
    return cluster


def _sharding(text: str) -> str:
    t = text.lower()
    if "shard_grad_op" in t:
        return "zero2"
    if "full_shard" in t or "zero-3" in t:
        return "zero3"
    if "zero stage 0" in t or t.startswith("none") or not t:
        return "none" if t else "zero1"
    return "zero1"


def _readme_vpp(source: str, layers: int, pp: int) -> int:
    """The interleaving depth of a row that does not state it: 1 (no interleaving), but for the
    Megatron-Core README's H100 tables (r0.8.0) with pp > 1, one layer per virtual stage (vpp = layers / pp).

    Why: the README overlaps "pipeline-parallel communication (enabled by default)" with computation, and at
    r0.8.0 that overlap exists only under the interleaved schedule (megatron/training/arguments.py at
    core_r0.8.0: without --num-layers-per-virtual-pipeline-stage, overlap_p2p_comm is set False with the
    warning "non-interleaved schedule does not support overlapping p2p communication"), so the pipelined
    runs interleaved. The depth is not stated; one --num-layers-per-virtual-pipeline-stage for the whole
    table must divide every row's layers per stage (70B 42, 119B 23, 177B 16, 314B 12, 462B 7), and 23 and 7
    are prime: only 1 does. Every row's micro-batch count (global batch / dp) is a multiple of pp, as the
    interleaved schedule requires. A choice for the source, made once, not per row."""
    if source != "megatron_readme_h100" or pp <= 1:
        return 1
    return layers // pp


def _torch_early_stop(row: dict[str, str]) -> bool:
    """Whether the row's full recompute stopped early (``training.checkpoint_early_stop``): llm-foundry's
    amp_bf16 / amp_fp8 tables, not its older bf16 (PURE) ones.

    Why: llm-foundry checkpoints each MPT block with torch's non-reentrant checkpoint (the pretrain yamls'
    fsdp_config activation_checkpointing_reentrant: false), whose early stop exists from torch 2.1 on. The
    amp tables were added by mosaicml/llm-foundry b2a43a147 (2023-10-19; setup.py torch>=1.13.1,<2.1.1, the
    newest allowed 2.1.0 of 2023-10-04) and 5e85bd62d (2024-01-06; setup.py torch>=2.1,<2.1.1); the bf16
    PURE tables date from 5f43bf160 (2023-05, setup.py torch==1.13.1, no early stop)."""
    return row["source_id"] == "llmfoundry_bench" and row["precision"].lower().startswith("amp_")


def request_for(row: dict[str, str]) -> tuple[dict[str, Any] | None, str]:
    """(request, '') or (None, why the row cannot be predicted)."""
    source = row["source_id"]
    shape = {
        k: _int(row[k]) for k in ("layers", "hidden", "ffn_hidden", "heads", "kv_heads", "seq_len", "vocab")
    }
    if not shape["layers"] or not shape["hidden"] or not shape["heads"]:
        return None, "model shape not stated"
    if _int(row["tp"]) is None and _int(row["dp"]) is None:
        return None, "parallel layout not stated"
    old = source in ("narayanan2021", "bloom_tr11_prequel")
    model: dict[str, Any] = {
        "name": row["model_name"],
        "layers": shape["layers"],
        "hidden": shape["hidden"],
        "heads": shape["heads"],
        "kv_heads": shape["kv_heads"] or shape["heads"],
        "ffn_hidden": shape["ffn_hidden"] or 4 * shape["hidden"],
        "seq_len": shape["seq_len"],
        "vocab": shape["vocab"] or 51200,
        "gated_mlp": "llama" in row["model_name"].lower(),
        # Llama and MPT configs set every dropout probability to 0, as Nemotron-4 does ("dropout rate of
        # zero", arXiv:2402.16819 Sec. 2; the 340B model keeps that architecture); Megatron's GPT
        # defaults keep 0.1.
        "dropout": not (
            any(name in row["model_name"].lower() for name in ("llama", "nemotron"))
            or source == "llmfoundry_bench"
        ),
    }
    tp = _int(row["tp"]) or 1
    pp = _int(row["pp"]) or 1
    recompute_text = row["recompute"].lower()
    parallelism = {
        "tp": tp,
        "pp": pp,
        "dp": _int(row["dp"]),
        "cp": _int(row["cp"]) or 1,
        "vpp": _int(row["vpp"]) or _readme_vpp(source, shape["layers"], pp),
        "micro_batch": _int(row["micro_batch"]) or 1,
        "recompute": "full" if recompute_text.startswith("full") else "none",
        "sharding": _sharding(row["sharding"]),
        "sequence_parallel": (not old) and tp > 1,
    }
    precision = "fp8" if "fp8" in row["precision"].lower() else "bf16"
    training = {
        "tokens": 1e12,
        "global_batch_seqs": int(row["global_batch_seqs"]),
        "precision": precision,
        "flash_attention": not old,
        # llm-foundry's benchmark tables ran its Triton flash attention (submit_benchmarks.py --attn_impl
        # default 'triton' at mosaicml/llm-foundry b2a43a147, 2023-10, llm-foundry v0.3.0 under
        # triton-pre-mlir), not Transformer Engine's fused attention; with no published rate for that kernel
        # it is timed as flash2 (FA2's fractions of the achievable matmul rate, the rate these rows fit). The
        # kernel is FlashAttention's Triton kernel for Ampere (setup.py: triton-pre-mlir, branch
        # triton_pre_mlir_sm90; pre-MLIR Triton emits mma.sync, not Hopper's warpgroup MMA), so on H100 it is
        # timed as an Ampere-design kernel: its A100 rate x FA2's measured H100 speedup
        # (timing.AMPERE_KERNEL_SPEEDUP).
        **({"attention_kernel": "flash2"} if source == "llmfoundry_bench" else {}),
        # Megatron-DeepSpeed (BLOOM) partitions layers with DeepSpeed's partition_uniform: the first
        # L mod pp stages hold one layer more.
        "pipeline_split": "uniform" if source == "bloom_tr11_prequel" else "balanced",
        # llm-foundry's MPT takes flash-attn's fused cross-entropy unless the config says otherwise
        # (ComposerMPTCausalLM: loss_fn defaults to 'fused_crossentropy'): bf16 logits, no fp32 copy.
        "cross_entropy": "fused" if source == "llmfoundry_bench" else "fp32",
        # DeepSpeed's ZeRO-3 of 2021 (Narayanan Table 2) all-gathers each parameter tensor on its own
        # (partition_parameters.py launches one all_gather per param): 12 per GPT layer (weight and bias
        # of the two layer norms, QKV, attention output, FC1, FC2), and the layer waits for them.
        **(
            {"fsdp_collectives_per_layer": 12, "fsdp_overlap": False}
            if source == "narayanan2021" and parallelism["sharding"] == "zero3"
            else {}
        ),
        "tp_comm_overlap": not old,
        # Narayanan et al.'s runs (arXiv:2104.04473, April 2021) predate Megatron-LM's asynchronous
        # tensor-parallel all-reduce in the linear layers' backward (NVIDIA/Megatron-LM f3e57f6fee,
        # 2021-09): every TP collective waits.
        **({"tp_backward_async": False} if source == "narayanan2021" else {}),
        **({"checkpoint_early_stop": True} if _torch_early_stop(row) else {}),
        # Composer's FSDP mixed_precision DEFAULT (llm-foundry's amp tables) reduce-scatters in float32
        # under a bf16 param_dtype (composer/trainer/mosaic_fsdp_utils.py get_mixed_precision at mosaicml/
        # composer v0.16.4 and v0.17.2, the releases llm-foundry b2a43a147 and 5e85bd62d pin); PURE in bf16.
        **({"reduce_bytes": 4.0} if "mode default" in row["sharding"].lower() else {}),
        # The BLOOM prequel ran Megatron-DeepSpeed on DeepSpeed's pipeline engine: its profile times the
        # engine's partitioned stage sends, the gradient reduction after the last micro-batch, the tied
        # embedding's all-reduce and the gradient accumulation outside the GEMMs (framework.py).
        **({"framework": "deepspeed-zero-2021"} if source == "bloom_tr11_prequel" else {}),
        "grad_dtype": "fp32" if "bf16optimizer" in row["precision"].lower() else "bf16",
        # DeepSpeed ZeRO-1/2 (BLOOM's Megatron-DeepSpeed) keeps an fp32 grad of its fp32 partition; without
        # ZeRO its FP16_Optimizer makes fp32 gradients only inside step() (see _nvidia_smi_extra_gib).
        "optimizer_bytes_per_param": (
            16.0 if source == "bloom_tr11_prequel" and parallelism["sharding"] != "none" else 12.0
        ),
        # ... and its ZeRO reduce and all-gather buckets, 5e8 elements each in bf16 (DeepSpeed defaults).
        "framework_reserve_gib": 2.5 + (2 * 5e8 * 2 / 2**30 if source == "bloom_tr11_prequel" else 0.0),
    }
    return {"model": model, "training": training, "cluster": _cluster(row), "parallelism": parallelism}, ""


@dataclass
class Case:
    row: dict[str, str]
    skip: str = ""
    basis: str = ""
    measured_tflops: float | None = None
    predicted_tflops: float | None = None
    measured_mem_gib: float | None = None
    measured_oom: bool = False
    predicted_mem_gib: float | None = None
    predicted_fits: bool | None = None

    @property
    def tflops_error(self) -> float | None:
        if self.measured_tflops is None or self.predicted_tflops is None:
            return None
        return self.predicted_tflops / self.measured_tflops - 1.0

    @property
    def memory_error(self) -> float | None:
        if self.measured_mem_gib is None or self.predicted_mem_gib is None:
            return None
        return self.predicted_mem_gib / self.measured_mem_gib - 1.0


def _nvidia_smi_extra_gib(row: dict[str, str], response: dict[str, Any]) -> float:
    """What nvidia-smi shows beyond the engine's allocated-memory peak, for the one mechanism the rows need.

    BLOOM's memory column is read off nvidia-smi: the caching allocator's reserved memory, which keeps the
    activations' blocks after backward. Without ZeRO, DeepSpeed's FP16_Optimizer.step
    (deepspeed/runtime/fp16/fused_optimizer.py) then makes an fp32 copy of every gradient and flattens the
    copies into one fp32 buffer: 8 B per parameter allocated after backward, in blocks of weight-matrix
    size (0.1-1.8 GB for BLOOM at tp 8) or one of 4 B/param, none of which fits the freed activation blocks
    (≤ 134 MB), so nvidia-smi adds them to the backward peak. The engine's total leaves them out: PyTorch
    frees its cache and retries before it would fail, so they do not decide a fit.
    """
    if row["source_id"] == "bloom_tr11_prequel" and _sharding(row["sharding"]) == "none":
        return 4.0 * float(response["memory_per_gpu_gib"]["weights"])  # 8 B/param = 4 × the 2 B/param weights
    return 0.0


def _predicted_in_the_rows_count(
    row: dict[str, str], response: dict[str, Any], engine_tflops: float
) -> float:
    """The predicted TFLOP/s per GPU counted as the row counts its own: where the row also gives tokens/s
    per GPU, the predicted tokens/s × the row's FLOPs per token (its TFLOP/s ÷ its tokens/s), so the
    comparison is the convention-free one of tokens/s; else the engine's own count.

    Why: llm-foundry's MFU counts 6 · n_params per token (scripts/train/benchmarking/README.md, "MFU"), and
    its MPT benchmark models keep a learned position embedding of max_seq_len × d_model (MPT's
    learned_pos_emb default; the table's NumParams grows by exactly (s − 2,048) · d_model with the sequence:
    MPT-7B 6,658,859,008 at 2,048, 6,918,905,856 at 65,536), a lookup the count prices as 6 · s · d_model
    matmul FLOPs per token the engine does not run: 1.1 % of MPT-7B's count at 65K, 3.6 % of MPT-125M's."""
    measured_tokens = _float(row.get("tokens_per_s_per_gpu", ""))
    measured_tflops = _float(row["measured_tflops_per_gpu"])
    if not measured_tokens or not measured_tflops:
        return engine_tflops
    predicted_tokens = float(response["tokens_per_second"]) / int(row["num_gpus"])
    return predicted_tokens * measured_tflops / measured_tokens


def predict(row: dict[str, str]) -> Case:
    request, why = request_for(row)
    case = Case(row=row, skip=why)
    mem_text = row["measured_mem_per_gpu_gb"].strip()
    case.measured_oom = mem_text.upper() == "OOM"
    # The BLOOM author's "GB" is read off nvidia-smi, which reports MiB; taken as GiB.
    case.measured_mem_gib = _float(mem_text)
    case.measured_tflops = _float(row["measured_tflops_per_gpu"])
    if request is None:
        return case
    try:
        response = estimate(request, accelerators=ACCELERATORS, fabrics=FABRICS)
    except EngineError as exc:
        case.skip = f"engine rejected the layout: {exc.field}: {exc.message}"
        return case
    case.basis = "hardware" if row["tflops_basis"].lower().startswith("hardware") else "model"
    key = "hardware_tflops_per_gpu" if case.basis == "hardware" else "model_tflops_per_gpu"
    case.predicted_tflops = _predicted_in_the_rows_count(row, response, float(response[key]))
    case.predicted_mem_gib = float(response["memory_per_gpu_gib"]["total"]) + _nvidia_smi_extra_gib(
        row, response
    )
    case.predicted_fits = bool(response["fits"])
    if case.measured_tflops is None and not case.measured_oom and case.measured_mem_gib is None:
        case.skip = "no measurement to compare"
    return case


def all_cases() -> list[Case]:
    return [predict(row) for row in load_runs()]


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summary(cases: list[Case]) -> dict[str, Any]:
    errors = [abs(e) for c in cases if (e := c.tflops_error) is not None]
    mem_errors = [
        abs(e)
        for c in cases
        if c.row["source_id"] == "bloom_tr11_prequel" and (e := c.memory_error) is not None
    ]
    bloom = [c for c in cases if c.row["source_id"] == "bloom_tr11_prequel" and c.predicted_fits is not None]
    verdicts_wrong = [c.row["run_id"] for c in bloom if c.predicted_fits == c.measured_oom]
    skipped: dict[str, int] = {}
    for c in cases:
        if c.skip:
            skipped[c.skip] = skipped.get(c.skip, 0) + 1
    by_source: dict[str, list[float]] = {}
    for c in cases:
        if (e := c.tflops_error) is not None:
            by_source.setdefault(c.row["source_id"], []).append(e)
    return {
        "rows": len(cases),
        "tflops_compared": len(errors),
        "median_abs_error": statistics.median(errors),
        "p90_abs_error": _percentile(errors, 0.9),
        "bloom_verdicts": len(bloom),
        "bloom_verdicts_wrong": verdicts_wrong,
        "bloom_memory_compared": len(mem_errors),
        "bloom_memory_max_abs_error": max(mem_errors) if mem_errors else float("nan"),
        "skipped": skipped,
        "by_source": {
            s: {
                "n": len(v),
                "median_error": statistics.median(v),
                "median_abs_error": statistics.median(map(abs, v)),
            }
            for s, v in by_source.items()
        },
    }


def fit_run_ids(rows: list[dict[str, str]]) -> set[str]:
    """The declared fit rows of a CSV: within each source_id, in file order, the 1st, 3rd, 5th, … row.

    Declared before any factor was fitted and independent of the errors (issue 19 item 7): a factor is
    fitted on these rows only (bench/calibration_fit.py) and its error reported on the others, the check
    rows."""
    seen: dict[str, int] = {}
    fit: set[str] = set()
    for row in rows:
        i = seen.get(row["source_id"], 0)
        seen[row["source_id"]] = i + 1
        if i % 2 == 0:
            fit.add(row["run_id"])
    return fit
