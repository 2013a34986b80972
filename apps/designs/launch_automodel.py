"""A NeMo AutoModel recipe for a design on NeMo AutoModel (``training.framework: nemo-automodel``).

AutoModel reads one YAML recipe. Key names follow NVIDIA-NeMo/Automodel: the ``distributed`` section as its
recipe parser reads it (``parse_distributed_section``: ``strategy`` fsdp2 | megatron_fsdp | ddp, ``tp_size``,
``pp_size``, ``cp_size``, ``ep_size``, ``dp_size`` with tp·pp·cp·dp_size = world size,
``dp_replicate_size`` for HSDP, which must divide dp_size and be smaller, ``activation_checkpointing``,
``sequence_parallel``, a ``pipeline`` sub-section with ``pp_schedule`` / ``pp_microbatch_size`` /
``layers_per_stage``); the docs'
"Use Gradient (Activation) Checkpointing" (``activation_checkpointing: true | full | selective``, selective =
PyTorch op-level selective checkpointing); ``step_scheduler`` (``global_batch_size``, ``local_batch_size``,
``max_steps``; grad_acc_steps = global ÷ (local × dp)); the example recipes ``examples/llm_pretrain/*.yaml``
(model, mock dataset, loss, optimizer). The launch is ``torchrun … examples/llm_pretrain/pretrain.py --config
<recipe>``, as that script's docstring gives it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from apps.designs.launch_torchtitan import dp_degrees
from clusterdesigner.engine.training.training_result import Layout

RECIPE_FILE = "automodel_recipe.yaml"
AUTOMODEL_SCRIPT = "${AUTOMODEL_DIR:-/opt/Automodel}/examples/llm_pretrain/pretrain.py"
_CHECKPOINTING = {"none": False, "selective": "selective", "full": True}


def _y(value: Any) -> str:
    """A YAML scalar: JSON strings, numbers, booleans and null are valid YAML flow scalars."""
    return json.dumps(value)


def _distributed(layout: Layout, gpus_per_node: int, layers: int) -> list[str]:
    """The ``distributed`` section: FSDP2 (ZeRO-3), HSDP (sharded inside a node, replicated across) or DDP."""
    strategy = "ddp" if layout.sharding == "none" else "fsdp2"
    lines = ["distributed:", f"  strategy: {strategy}", f"  dp_size: {layout.dp}"]
    if layout.sharding == "hsdp":
        shard, replicas = dp_degrees(layout, gpus_per_node)
        if shard in (1, layout.dp):
            raise ValueError(
                f"HSDP over dp {layout.dp} with {gpus_per_node} GPUs per node leaves no shard and replica "
                "groups both above 1; AutoModel needs dp_replicate_size to divide dp_size and be smaller"
            )
        lines.append(f"  dp_replicate_size: {replicas}")
    lines += [f"  tp_size: {layout.tp}", f"  cp_size: {layout.cp}", f"  pp_size: {layout.pp}"]
    if layout.ep > 1:
        lines.append(f"  ep_size: {layout.ep}")
    lines.append(f"  sequence_parallel: {_y(bool(layout.sequence_parallel and layout.tp > 1))}")
    lines.append(f"  activation_checkpointing: {_y(_CHECKPOINTING[layout.recompute])}")
    if layout.pp > 1:
        lines += ["  pipeline:", f"    pp_microbatch_size: {layout.micro_batch}"]
        if layout.vpp > 1:
            if layers % (layout.pp * layout.vpp):
                raise ValueError(
                    f"{layers} layers do not split into pp × vpp = {layout.pp}×{layout.vpp} equal stages "
                    "(AutoModel's layers_per_stage)"
                )
            lines += [
                "    pp_schedule: interleaved1f1b",
                f"    layers_per_stage: {layers // (layout.pp * layout.vpp)}",
            ]
        else:
            lines.append("    pp_schedule: 1f1b")
    return lines


def automodel_recipe(
    *,
    layout: Layout,
    gpus_per_node: int,
    global_batch_seqs: int,
    shape: dict[str, Any],
    tokens: float,
    precision: str,
) -> str:
    """The recipe YAML for the layout. With a pipeline the local batch is the rank's whole share of the step
    (split into pp_microbatch_size micro-batches); without one it is the micro-batch, and AutoModel
    accumulates global ÷ (micro-batch × dp) of them."""
    dp, mb, seq_len = layout.dp, layout.micro_batch, int(shape["seq_len"])
    if global_batch_seqs % (mb * dp):
        raise ValueError(
            f"global batch of {global_batch_seqs} sequences does not divide by micro_batch × dp = {mb}×{dp}; "
            "AutoModel needs a whole number of local batches per data-parallel rank"
        )
    local = global_batch_seqs // dp if layout.pp > 1 else mb
    steps = math.ceil(tokens / (global_batch_seqs * seq_len))
    lines = [
        "# NeMo AutoModel pretraining recipe from ClusterDesigner: the estimate's layout, batch and length.",
        "# Model id, data, optimizer and checkpointing are placeholders, not part of the design.",
        "step_scheduler:",
        f"  global_batch_size: {global_batch_seqs}",
        f"  local_batch_size: {local}",
        f"  max_steps: {steps}",
        "  ckpt_every_steps: 1000",
        "model:",
        "  _target_: nemo_automodel.NeMoAutoModelForCausalLM.from_pretrained",
        '  pretrained_model_name_or_path: "REPLACE-with-the-Hugging-Face-model-id"',
        "  torch_dtype: bf16",
        "dataset:  # mock tokens measure throughput; replace with your dataset",
        "  _target_: nemo_automodel.components.datasets.llm.mock_iterable_dataset.MockIterableDataset",
        f"  vocab_size: {shape['vocab']}",
        f"  seq_len: {seq_len}",
        f"  num_samples: {steps * global_batch_seqs}",
        f"  batch_size: {local}  # must match step_scheduler.local_batch_size",
        "dataloader:",
        "  _target_: torch.utils.data.DataLoader",
        "  batch_size: null",
        "loss_fn:",
        "  _target_: nemo_automodel.components.loss.masked_ce.MaskedCrossEntropy",
        "optimizer:",
        "  _target_: torch.optim.AdamW",
        "  lr: 3.0e-4",
        "  betas: [0.9, 0.95]",
        "  weight_decay: 0.1",
        "checkpoint:",
        "  enabled: false",
        *_distributed(layout, gpus_per_node, int(shape["layers"])),
    ]
    if precision != "bf16":
        lines.append(
            f"# The estimate assumed {precision} matmuls: enable your AutoModel release's matching "
            "Transformer Engine recipe; it is not written here"
        )
    return "\n".join(lines) + "\n"
