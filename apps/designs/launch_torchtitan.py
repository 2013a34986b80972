"""torchtitan arguments for a design whose training stack is PyTorch FSDP2 (``training.framework: fsdp2``).

torchtitan reads a TOML job config whose every field may be overridden on the command line as
``--section.field value`` (torchtitan ``torchtitan/config/manager.py``, ``docs/`` and the ``run_train.sh``
launcher: ``torchrun ... -m torchtitan.train --job.config_file <toml>``). Field names follow torchtitan's
``JobConfig`` (``parallelism.tensor_parallel_degree``, ``pipeline_parallel_degree``,
``context_parallel_degree``, ``expert_parallel_degree``, ``data_parallel_shard_degree``,
``data_parallel_replicate_degree``, ``fsdp_reshard_after_forward``, ``pipeline_parallel_schedule``,
``pipeline_parallel_microbatch_size``; ``activation_checkpoint.mode`` / ``selective_ac_option``;
``training.local_batch_size``, ``seq_len``, ``steps``; ``model.converters float8``). Names move between
torchtitan releases: the export says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from clusterdesigner.engine.training.training_result import Layout

TORCHTITAN_MODULE = "torchtitan.train"
TORCHTITAN_CONFIG = "${TORCHTITAN_CONFIG:-./torchtitan/models/llama3/train_configs/llama3_8b.toml}"


def dp_degrees(layout: Layout, gpus_per_node: int) -> tuple[int, int]:
    """(shard, replicate) data-parallel degrees: FSDP shards over all dp·… ranks (ZeRO-2/3), HSDP shards
    inside a node and replicates across, DDP only replicates."""
    if layout.sharding == "hsdp":
        shard = max(1, min(layout.dp, gpus_per_node // max(1, layout.tp * layout.cp)))
        while layout.dp % shard:
            shard -= 1
        return shard, layout.dp // shard
    if layout.sharding == "none":
        return 1, layout.dp
    return layout.dp, 1


def torchtitan_args(
    *, layout: Layout, gpus_per_node: int, global_batch_seqs: int, seq_len: int, tokens: float, precision: str
) -> tuple[list[str], list[str]]:
    """(arguments after ``-m torchtitan.train``, comments) for the layout. ZeRO-2 is FSDP2 with
    ``fsdp_reshard_after_forward never``; selective recompute is op-level selective activation
    checkpointing, the engine's fsdp2 meaning of it."""
    if global_batch_seqs % layout.dp:
        raise ValueError(
            f"global batch of {global_batch_seqs} sequences does not divide by dp {layout.dp}; torchtitan "
            "needs a whole local batch per data-parallel rank"
        )
    shard, replicate = dp_degrees(layout, gpus_per_node)
    args: list[str] = ["--job.config_file", TORCHTITAN_CONFIG]
    pairs: list[tuple[str, Any]] = [
        ("parallelism.tensor_parallel_degree", layout.tp),
        ("parallelism.pipeline_parallel_degree", layout.pp),
        ("parallelism.context_parallel_degree", layout.cp),
        ("parallelism.data_parallel_shard_degree", shard),
        ("parallelism.data_parallel_replicate_degree", replicate),
        ("training.local_batch_size", global_batch_seqs // layout.dp),
        ("training.seq_len", seq_len),
        ("training.steps", math.ceil(tokens / (global_batch_seqs * seq_len))),
    ]
    if layout.ep > 1:
        pairs.append(("parallelism.expert_parallel_degree", layout.ep))
    if layout.sharding == "zero2":
        pairs.append(("parallelism.fsdp_reshard_after_forward", "never"))
    if layout.pp > 1:
        pairs.append(
            ("parallelism.pipeline_parallel_schedule", "Interleaved1F1B" if layout.vpp > 1 else "1F1B")
        )
        pairs.append(("parallelism.pipeline_parallel_microbatch_size", layout.micro_batch))
    pairs.append(("activation_checkpoint.mode", layout.recompute))
    if layout.recompute == "selective":
        pairs.append(("activation_checkpoint.selective_ac_option", "op"))
    if precision == "fp8":
        pairs.append(("model.converters", "float8"))
    for key, value in pairs:
        args += [f"--{key}", str(value)]
    comments = [
        "torchtitan job: set TORCHTITAN_CONFIG to your model's train config; the flags override it "
        "(field names of torchtitan's JobConfig, which move between releases)",
    ]
    if layout.pp > 1 and layout.vpp > 1:
        comments.append(
            f"interleaved pipeline: {layout.vpp} stages per rank (split the model with "
            "parallelism.pipeline_parallel_layers_per_stage or pipeline_parallel_split_points)"
        )
    if precision not in ("bf16", "fp8"):
        comments.append(
            f"the estimate assumed the {precision} recipe (Transformer Engine's); torchtitan's float8/mx "
            "converters are set in its config, not written here"
        )
    if layout.pp == 1 and layout.micro_batch != global_batch_seqs // layout.dp:
        comments.append(
            f"micro-batch {layout.micro_batch}: set training.global_batch_size for gradient accumulation"
        )
    return args, comments


def stack_env() -> Mapping[str, str]:
    """torchtitan's run_train.sh exports expandable segments for the caching allocator."""
    return {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
