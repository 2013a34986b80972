"""DeepSpeed launch files for a design whose stack is DeepSpeed ZeRO as run in 2021
(``training.framework: deepspeed-zero-2021``): Megatron-DeepSpeed's ``pretrain_gpt.py`` with Megatron tensor
and pipeline parallelism and a DeepSpeed ``ds_config.json`` for ZeRO, batch and precision — the stack of BLOOM
and MT-NLG.

ds_config keys follow DeepSpeed's "DeepSpeed Configuration JSON" (docs/_pages/config-json.md):
``train_batch_size`` = ``train_micro_batch_size_per_gpu`` × ``gradient_accumulation_steps`` × data-parallel
ranks; ``zero_optimization.stage`` 0-3; ``bf16.enabled``; ``gradient_clipping``; and the
``activation_checkpointing`` section (deepspeed/runtime/activation_checkpointing/config.py:
``partition_activations``, ``contiguous_memory_optimization``, ``cpu_checkpointing``,
``synchronize_checkpoint_boundary``, ``profile``). Flags follow Megatron-DeepSpeed ``megatron/arguments.py``
and its example scripts: ``--deepspeed --deepspeed_config <json> --zero-stage N``;
``--checkpoint-activations --deepspeed-activation-checkpointing`` for per-layer recompute;
``--no-pipeline-parallel`` when pp is 1 (ZeRO-2/3 run only without DeepSpeed's pipeline engine);
``--num-key-value-heads`` for grouped-query attention; ``--swiglu``. The ``deepspeed`` launcher
(``--num_nodes --num_gpus --hostfile``) starts the ranks of every node from the first over ssh, passing the
variables listed in ``.deepspeed_env``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from clusterdesigner.engine.training.training_result import Layout

DS_CONFIG_FILE = "ds_config.json"
MEGATRON_DEEPSPEED_SCRIPT = "${MEGATRON_DEEPSPEED_DIR:-/workspace/Megatron-DeepSpeed}/pretrain_gpt.py"
ZERO_STAGE = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3}


def _accumulation(layout: Layout, global_batch_seqs: int) -> int:
    """Gradient-accumulation steps = global batch ÷ (micro-batch × dp); ValueError when not whole."""
    per_step = layout.micro_batch * layout.dp
    if global_batch_seqs % per_step:
        raise ValueError(
            f"global batch of {global_batch_seqs} sequences does not divide by micro_batch × dp = "
            f"{layout.micro_batch}×{layout.dp}; DeepSpeed needs train_batch_size = micro-batch × "
            "gradient_accumulation_steps × data-parallel ranks"
        )
    return global_batch_seqs // per_step


def _stage(layout: Layout) -> int:
    if layout.sharding not in ZERO_STAGE:
        raise ValueError(f"DeepSpeed ZeRO has no {layout.sharding!r} sharding (stages: none, zero1-3)")
    return ZERO_STAGE[layout.sharding]


def ds_config(*, layout: Layout, global_batch_seqs: int, precision: str) -> dict[str, Any]:
    """The DeepSpeed config for the layout: ZeRO stage from its sharding, the batch split, BF16 and, with full
    recompute, DeepSpeed's activation checkpointing (per layer, activations neither partitioned nor moved to
    the CPU: the engine's memory model of full recompute). FP8 has no 2021 DeepSpeed recipe: ValueError."""
    if precision != "bf16":
        raise ValueError(
            f"DeepSpeed ZeRO (2021) trains in BF16 or FP16; the estimate assumed {precision}: choose bf16 "
            "for spec.workload.training.precision, or another framework"
        )
    config: dict[str, Any] = {
        "train_batch_size": global_batch_seqs,
        "train_micro_batch_size_per_gpu": layout.micro_batch,
        "gradient_accumulation_steps": _accumulation(layout, global_batch_seqs),
        "zero_optimization": {"stage": _stage(layout)},
        "bf16": {"enabled": True},
        "gradient_clipping": 1.0,
        "steps_per_print": 10,
        "wall_clock_breakdown": False,
    }
    if layout.recompute == "full":
        config["activation_checkpointing"] = {
            "partition_activations": False,
            "contiguous_memory_optimization": False,
            "cpu_checkpointing": False,
            "synchronize_checkpoint_boundary": False,
            "profile": False,
        }
    return config


def ds_config_json(*, layout: Layout, global_batch_seqs: int, precision: str) -> str:
    """``ds_config`` as the JSON file DeepSpeed reads."""
    return json.dumps(
        ds_config(layout=layout, global_batch_seqs=global_batch_seqs, precision=precision), indent=2
    )


def _model_args(shape: Mapping[str, Any]) -> list[str]:
    if shape["experts"] or shape["kv_lora_rank"] or shape["mtp_depth"]:
        raise ValueError(
            "the DeepSpeed launch covers dense models with multi-head or grouped-query attention: "
            "Megatron-DeepSpeed's MoE, latent-attention and multi-token-prediction flags are not generated"
        )
    args = ["--num-layers", str(shape["layers"]), "--hidden-size", str(shape["hidden"])]
    args += ["--ffn-hidden-size", str(shape["ffn_hidden"]), "--num-attention-heads", str(shape["heads"])]
    if int(shape["kv_heads"]) != int(shape["heads"]):
        args += ["--num-key-value-heads", str(shape["kv_heads"])]
    args += ["--seq-length", str(shape["seq_len"]), "--max-position-embeddings", str(shape["seq_len"])]
    if shape["gated_mlp"]:
        args.append("--swiglu")
    return args


def megatron_deepspeed_args(
    *, layout: Layout, shape: Mapping[str, Any], global_batch_seqs: int, tokens: float
) -> tuple[list[str], list[str]]:
    """(pretrain_gpt.py arguments, comments) for Megatron-DeepSpeed: Megatron TP/PP (no sequence parallelism,
    no interleaving in this stack), the batch, per-layer recompute, and the DeepSpeed flags naming
    ``ds_config.json`` and its ZeRO stage."""
    seq_len = int(shape["seq_len"])
    args = ["--tensor-model-parallel-size", str(layout.tp), "--pipeline-model-parallel-size", str(layout.pp)]
    if layout.pp == 1:
        args.append("--no-pipeline-parallel")
    args += _model_args(shape)
    args += ["--micro-batch-size", str(layout.micro_batch), "--global-batch-size", str(global_batch_seqs)]
    args += ["--train-iters", str(math.ceil(tokens / (global_batch_seqs * seq_len)))]
    if layout.recompute == "full":
        args += ["--checkpoint-activations", "--deepspeed-activation-checkpointing"]
    args += [
        "--bf16",
        "--deepspeed",
        "--deepspeed_config",
        DS_CONFIG_FILE,
        "--zero-stage",
        str(_stage(layout)),
    ]
    args += ["--tokenizer-type", "GPT2BPETokenizer", "--vocab-file", "${VOCAB_FILE:-gpt2-vocab.json}"]
    args += [
        "--merge-file",
        "${MERGE_FILE:-gpt2-merges.txt}",
        "--data-path",
        "${DATA_PATH:-my-gpt2_text_document}",
    ]
    args += ["--lr", "3.0e-4", "--min-lr", "3.0e-5", "--lr-decay-style", "cosine", "--weight-decay", "0.1"]
    args += ["--log-interval", "10", "--save", "${CHECKPOINT_DIR:-/checkpoints}", "--save-interval", "1000"]
    comments = [
        "Megatron-DeepSpeed pretrain_gpt.py with DeepSpeed ZeRO; ds_config.json below carries the batch "
        "split and the ZeRO stage (the two must agree with the flags)",
        f"tokenizer and data are placeholders: the estimate used a vocabulary of {shape['vocab']} tokens; "
        "learning-rate, logging and checkpoint flags are placeholders too",
    ]
    return args, comments


def deepspeed_env_file(env: Mapping[str, str]) -> str:
    """``.deepspeed_env``: NAME=VALUE lines the deepspeed launcher exports on every node it starts."""
    return "".join(f"{name}={value}\n" for name, value in env.items())
