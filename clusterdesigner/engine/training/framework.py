"""Framework profiles: the defaults a run on one training stack has, and the layouts that stack runs.

``training.framework`` names a profile (default ``megatron-core``). A profile sets the defaults of the
request's stack-dependent knobs — TP-communication overlap, the FSDP/ZeRO-3 gathers per layer and whether
they are prefetched, what ``recompute: selective`` keeps, the cross-entropy's logit bytes, the framework
reserve — which a request may still override one by one; and it restricts the layouts (sharding modes,
recompute modes, context/expert parallelism, interleaving, sequence parallelism, ZeRO stage under a
pipeline) to what that stack runs: the search enumerates only those, and a given layout outside them is
refused on the ``parallelism`` field it breaks.

The ``megatron-core`` profile is the engine's behaviour before profiles existed (its defaults are the
calibration's), so a request without ``training.framework`` estimates exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from clusterdesigner.engine.core.model import RECOMPUTE_MODES
from clusterdesigner.engine.training.memory import DEFAULT_FRAMEWORK_RESERVE_GIB
from clusterdesigner.engine.training.workload import SHARDING_MODES, Assumption, IntArray, PipelineEngine

SELECTIVE_ATTENTION = "attention"
SELECTIVE_OP = "op"
DEFAULT_FRAMEWORK = "megatron-core"
# training.attention_kernel: Transformer Engine's cuDNN fused attention (timed at its factor over FA2's rates,
# as the 2024 NeMo stacks ran it), FlashAttention-2, or a Hopper-native kernel at its measured rates
# (FlashAttention-3, or cuDNN >= 9.1's fused attention: timing.KERNEL_RATES_TFLOPS).
ATTENTION_KERNELS = ("fused", "flash2", "flash3")
# training.moe_dispatcher: Megatron-Core's --moe-token-dispatcher-type alltoall or allgather, or its flex
# dispatcher with the deepep or hybridep backend (timing._moe_comm_layer).
MOE_DISPATCHERS = ("alltoall", "allgather", "deepep", "hybridep")
# The flex dispatcher's backends: one copy per destination GPU.
FLEX_DISPATCHERS = ("deepep", "hybridep")
# training.moe_load_balance (timing._moe_load_imbalance): dropless routing leaves the busiest
# expert-parallel rank above the mean; token drop padded to capacity or forced balance does not.
MOE_LOAD_BALANCES = ("dropless", "balanced")


@dataclass(frozen=True, kw_only=True)
class FrameworkProfile:
    """One training stack. Knobs (request defaults): ``tp_comm_overlap``, ``fsdp_collectives_per_layer``,
    ``fsdp_overlap``, ``selective_recompute`` (``attention``: Megatron's selective recompute of the
    attention core, Korthikanti et al. 2022 Sec. 5; ``op``: PyTorch op-level selective activation
    checkpointing, which keeps every other matmul's output and the attention output and recomputes the
    rest: memory.activation_bytes_per_layer), ``cross_entropy`` and ``framework_reserve_gib``.
    Restrictions: the ``sharding`` and ``recompute`` modes it has, ``pipeline_sharding`` (the sharding
    modes it runs with pp > 1), whether it has context parallelism (``cp``), expert parallelism (``ep``),
    an interleaved pipeline schedule (``interleaving``), and ``sequence_parallel``: ``optional``,
    ``always`` (with TP) or ``never``. ``pipeline_grad_bytes`` > 0: under a pipeline (pp > 1) the stack
    keeps every stage's parameters and gradients unsharded across the step's micro-batches, the gradients
    accumulated at that many bytes per parameter (memory._states); 0: the sharding mode decides.
    ``pipeline_p2p_overlap``: under the interleaved schedule (vpp > 1) the stack sends and receives each
    chunk's activations asynchronously while the next chunk computes (timing._pp_p2p_exposed).
    ``attention_kernel`` is the flash-attention kernel the stack calls (``fused``: Transformer Engine's cuDNN
    fused attention; ``flash2``: FlashAttention-2, flash-attn's or PyTorch SDPA's flash backend):
    timing._attention. ``launch`` names the launch export's format; ``sources`` gives the source of each
    knob and restriction (reported in ``assumptions``). ``pipeline_engine`` is how the stack's pipeline
    engine runs a step (workload.PipelineEngine; profile-only, Megatron-Core's by default)."""

    slug: str
    name: str
    tp_comm_overlap: bool
    fsdp_collectives_per_layer: int
    fsdp_overlap: bool
    selective_recompute: str
    cross_entropy: str
    framework_reserve_gib: float
    sharding: tuple[str, ...]
    recompute: tuple[str, ...]
    pipeline_sharding: tuple[str, ...]
    cp: bool
    ep: bool
    interleaving: bool
    sequence_parallel: str
    launch: str
    sources: Mapping[str, str]
    attention_kernel: str = "fused"
    pipeline_grad_bytes: float = 0.0
    # Bytes per parameter the stack's sharded-data-parallel reduce-scatters move (FSDP2's MixedPrecisionPolicy
    # reduce_dtype; Training.reduce_bytes): 0 keeps the gradients' own grad_bytes.
    reduce_bytes: float = 0.0
    # Full recompute is torch.utils.checkpoint's non-reentrant checkpoint with its early stop
    # (Training.checkpoint_early_stop, timing._early_stop_skipped); Megatron-Core's own recompute is not.
    checkpoint_early_stop: bool = False
    pipeline_p2p_overlap: bool = False
    # Without TP communication overlap (tp_comm_overlap off), the stack still starts each column-parallel
    # linear's input-gradient all-reduce (reduce-scatter under sequence parallelism) asynchronously and
    # runs the weight-gradient GEMM under it (timing._tp_comm_layer; default of training.tp_backward_async).
    tp_backward_async: bool = False
    # The MoE token dispatcher and expert-parallel all-to-all overlap the stack's published recipes run
    # (request defaults of training.moe_dispatcher / training.moe_a2a_overlap; sources["moe_dispatcher"]).
    moe_dispatcher: str = "alltoall"
    moe_a2a_overlap: bool = False
    pipeline_engine: PipelineEngine = PipelineEngine()

    @property
    def unrestricted(self) -> bool:
        """Runs every layout the engine models (then no check or pruning applies)."""
        return (
            set(self.sharding) == set(SHARDING_MODES)
            and set(self.pipeline_sharding) == set(SHARDING_MODES)
            and set(self.recompute) == set(RECOMPUTE_MODES)
            and self.cp
            and self.ep
            and self.interleaving
            and self.sequence_parallel == "optional"
        )


_ALL_SHARDING = SHARDING_MODES
_ALL_RECOMPUTE = RECOMPUTE_MODES

PROFILES: dict[str, FrameworkProfile] = {
    p.slug: p
    for p in (
        FrameworkProfile(
            slug="megatron-core",
            name="Megatron-Core (current)",
            tp_comm_overlap=True,
            fsdp_collectives_per_layer=1,
            fsdp_overlap=True,
            selective_recompute=SELECTIVE_ATTENTION,
            cross_entropy="fp32",
            framework_reserve_gib=DEFAULT_FRAMEWORK_RESERVE_GIB,
            sharding=_ALL_SHARDING,
            recompute=_ALL_RECOMPUTE,
            pipeline_sharding=_ALL_SHARDING,
            cp=True,
            ep=True,
            interleaving=True,
            sequence_parallel="optional",
            launch="megatron",
            pipeline_p2p_overlap=True,
            tp_backward_async=True,
            sources={
                "tp_comm_overlap": "Megatron-Core --tp-comm-overlap (Transformer Engine userbuffers), on in "
                "NeMo's performance recipes, which the calibration rows ran",
                "fsdp": "Megatron-FSDP / PyTorch FSDP: one flat-parameter all-gather per layer, prefetched",
                "selective_recompute": "--recompute-granularity selective recomputes the attention core "
                "(Korthikanti et al. 2022, arXiv:2205.05198, Sec. 5)",
                "cross_entropy": "vocab-parallel cross-entropy in fp32 (--cross-entropy-loss-fusion off by "
                "default)",
                "layouts": "TP, SP, PP with interleaving, CP, EP, distributed optimizer, Megatron-FSDP",
                "pipeline_p2p_overlap": "--overlap-p2p-communication is on by default and only with the "
                "interleaved schedule (megatron/training/arguments.py at core_r0.8.0 and d98e8a64: without "
                "--num-layers-per-virtual-pipeline-stage it is set False; schedules.py "
                "forward_backward_pipelining_with_interleaving posts each chunk's send/receive before the "
                "next chunk's compute and waits after it)",
                "attention_kernel": "Transformer Engine DotProductAttention, cuDNN fused attention backend "
                "(NVTE_FUSED_ATTN, preferred on Hopper and Blackwell; Megatron-Core --attention-backend "
                "auto)",
                "tp_backward_async": "with --tp-comm-overlap off, Transformer Engine's Linear backward "
                "starts a column-parallel layer's dgrad reduce-scatter (all-reduce without sequence "
                "parallelism) with async_op=True and runs the wgrad GEMM before waiting on it "
                "(transformer_engine/pytorch/module/linear.py at d0067d0d, lines 1122-1132 and 1350)",
                "moe_dispatcher": "alltoall without overlap: Megatron-Core's MoE README recommends "
                "--moe-token-dispatcher-type alltoall for expert parallelism (the config's own default, "
                "allgather, is meant for ep 1), and Megatron-Bridge's model providers set alltoall; "
                "--overlap-moe-expert-parallel-comm is off unless a recipe sets it (NVIDIA/Megatron-LM "
                "d98e8a64 transformer_config.py, megatron/core/transformer/moe/README.md)",
            },
        ),
        FrameworkProfile(
            slug="megatron-lm-2022",
            name="Megatron-LM (2022)",
            tp_comm_overlap=False,
            fsdp_collectives_per_layer=1,
            fsdp_overlap=True,
            selective_recompute=SELECTIVE_ATTENTION,
            cross_entropy="fp32",
            framework_reserve_gib=DEFAULT_FRAMEWORK_RESERVE_GIB,
            sharding=("none", "zero1"),
            recompute=_ALL_RECOMPUTE,
            pipeline_sharding=("none", "zero1"),
            cp=False,
            ep=False,
            interleaving=True,
            sequence_parallel="optional",
            launch="megatron",
            sources={
                "tp_comm_overlap": "Korthikanti et al. 2022 (arXiv:2205.05198): TP all-gathers and "
                "reduce-scatters run between the GEMMs; the GEMM overlap came with Transformer Engine's "
                "userbuffers (Megatron-LM --tp-comm-overlap, 2023)",
                "selective_recompute": "Korthikanti et al. 2022 Sec. 5: the attention core is recomputed",
                "layouts": "TP + SP + PP with the interleaved schedule (Narayanan et al. 2021) and the "
                "distributed optimizer (ZeRO-1 style); no context parallelism, expert parallelism or "
                "parameter sharding (added to Megatron-Core from 2023)",
                "attention_kernel": "--use-flash-attn calls flash-attn's FlashAttention (Dao et al.); "
                "Transformer Engine's cuDNN fused attention came in 2023",
                "tp_backward_async": "LinearWithGradAccumulationAndAsyncCommunication.backward starts the "
                "input gradient's all-reduce (reduce-scatter under sequence parallelism) with "
                "async_op=True before the weight-gradient GEMM (NVIDIA/Megatron-LM megatron/mpu/layers.py "
                "at 269f28f721, 2022-03; the asynchronous all-reduce since f3e57f6fee, 2021-09)",
            },
            attention_kernel="flash2",
            tp_backward_async=True,
        ),
        FrameworkProfile(
            slug="deepspeed-zero-2021",
            name="DeepSpeed ZeRO (2021, Megatron-DeepSpeed)",
            tp_comm_overlap=False,
            fsdp_collectives_per_layer=12,
            fsdp_overlap=False,
            selective_recompute=SELECTIVE_ATTENTION,
            cross_entropy="fp32",
            framework_reserve_gib=DEFAULT_FRAMEWORK_RESERVE_GIB,
            sharding=("none", "zero1", "zero2", "zero3"),
            recompute=("none", "full"),
            pipeline_sharding=("none", "zero1"),
            cp=False,
            ep=False,
            interleaving=False,
            sequence_parallel="never",
            launch="deepspeed",
            sources={
                "fsdp": "ZeRO-3 of 2021 all-gathers each parameter tensor with its own collective "
                "(deepspeed/runtime/zero/partition_parameters.py): 12 for a GPT layer with biases; that "
                "they were waited for is the engine's assumption for Narayanan et al. 2021's ZeRO-3 rows "
                "(docs/training-engine.md, Calibration), not a cited fact",
                "pipeline_sharding": "deepspeed/runtime/pipe/engine.py asserts 'ZeRO-2 and ZeRO-3 are "
                "incompatible with pipeline parallelism'",
                "layouts": "Megatron-DeepSpeed 2021: Megatron TP without sequence parallelism, DeepSpeed's "
                "non-interleaved 1F1B pipeline (TrainSchedule), per-layer activation checkpointing (no "
                "selective), ZeRO stages 1-3; no context or expert parallelism, no HSDP (ZeRO++ hpZ, 2023)",
                "attention_kernel": "Megatron-DeepSpeed's --use-flash-attn: flash-attn's kernels (no "
                "Transformer Engine)",
                "pipeline_engine": "DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py and "
                "schedule.py at microsoft/DeepSpeed 2151c787a, 2022-02-18, what the BLOOM prequel ran): "
                "is_pipe_partitioned = is_grad_partitioned = is_model_parallel, so with tp > 1 each stage "
                "sends a PartitionedTensor of 1/tp of the activation (and gradient) and the receiver "
                "all-gathers it over the TP group (part.full()); TrainSchedule issues ReduceTiedGrads, "
                "ReduceGrads and OptimizerStep after the last micro-batch's BackwardPass, so the "
                "data-parallel reduction is not overlapped (enable_backward_allreduce = False) and the tied "
                "embedding's gradient is all-reduced between the first and last stage "
                "(allreduce_tied_weight_gradients)",
                "grad_accumulation": "no gradient-accumulation fusion: autograd adds each micro-batch's "
                "16-bit gradient into param.grad (read two, write one); under the BF16Optimizer (fp32 "
                "gradients) update_hp_grads casts every micro-batch's bf16 gradient to fp32 and adds it to "
                "the fp32 gradient (deepspeed/runtime/bf16_optimizer.py and pipe/engine.py "
                "_exec_backward_pass at microsoft/DeepSpeed af58f63dd, the bigscience bf16 work merged as "
                "#1801)",
                "zero1_fp32_allreduce": "BF16Optimizer: _bf16_reduce_grads all-reduces the fp32 gradients "
                "(buffered_allreduce_fallback), then step() all-gathers the updated bf16 partitions "
                "(all_gather_dp_groups)",
            },
            attention_kernel="flash2",
            pipeline_engine=PipelineEngine(
                tp_split=True,
                dp_overlap_backward=False,
                tied_embedding_allreduce=True,
                grad_accumulation="autograd",
                zero1_fp32_allreduce=True,
            ),
        ),
        FrameworkProfile(
            slug="fsdp2",
            name="PyTorch FSDP2 (torchtitan)",
            tp_comm_overlap=False,
            fsdp_collectives_per_layer=1,
            fsdp_overlap=True,
            selective_recompute=SELECTIVE_OP,
            cross_entropy="upcast",
            framework_reserve_gib=DEFAULT_FRAMEWORK_RESERVE_GIB,
            sharding=("none", "zero2", "zero3", "hsdp"),
            recompute=_ALL_RECOMPUTE,
            pipeline_sharding=("none", "zero2", "zero3", "hsdp"),
            cp=True,
            ep=True,
            interleaving=True,
            sequence_parallel="always",
            launch="torchtitan",
            sources={
                "tp_comm_overlap": "torchtitan parallelism.enable_async_tensor_parallel defaults to false",
                "fsdp": "torchtitan applies fully_shard to each TransformerBlock: one all-gather per layer, "
                "the next layer's prefetched (FSDP2 implicit prefetching)",
                "selective_recompute": "torchtitan activation_checkpoint mode 'selective', "
                "selective_ac_option 'op' (the llama3 8B train config): saves the outputs of matmuls "
                "except every second one, of SDPA and of reduce-scatters; recomputes the rest",
                "cross_entropy": "torchtitan's loss_fn (train.py at 9dec370), F.cross_entropy(pred.float()), "
                "not compiled: its backward holds the fp32 log-probabilities, nll_loss's dense fp32 gradient "
                "and log_softmax's fp32 gradient at once (12 B per logit)",
                "layouts": "FSDP2 (reshard_after_forward 'never' = ZeRO-2, full shard = ZeRO-3), HSDP "
                "(dp_replicate x dp_shard), DDP; TP plan with SequenceParallel norms (SP always with TP); "
                "PP with interleaved schedules, CP, EP; no optimizer-only (ZeRO-1) sharding",
                "pipeline_grads": "torch.distributed.pipelining PipelineStage.backward_maybe_with_nosync "
                "(torch 2.6) sets an FSDP2 stage's set_reshard_after_backward(False) and "
                "set_requires_gradient_sync(False) for every micro-batch but the last: the parameters stay "
                "unsharded and FSDP2's post_backward keeps each gradient unsharded, upcast to the reduce "
                "dtype (FSDPParam.to_accumulated_grad_if_needed), until the last micro-batch's "
                "reduce-scatter; torchtitan's mixed_precision_reduce is float32 (config_manager.py at "
                "9dec370): 4 B per parameter of the stage",
                "reduce_bytes": "torchtitan's mixed_precision_reduce float32 is FSDP2's "
                "MixedPrecisionPolicy reduce_dtype (config_manager.py at 9dec370): every FSDP2 "
                "reduce-scatter (ZeRO-2/3, HSDP, and the pipeline's last micro-batch) moves 4 B gradients",
                "attention_kernel": "torchtitan's attention is F.scaled_dot_product_attention, whose flash "
                "backend is FlashAttention-2 (PyTorch sdpa_flash_attention)",
                "moe_dispatcher": "torchtitan's expert parallelism exchanges tokens with "
                "all_to_all_single (one copy per routed expert), not overlapped with compute",
                "checkpoint_early_stop": "torchtitan's activation_checkpoint mode 'full' wraps each "
                "TransformerBlock in ptd_checkpoint_wrapper(module, preserve_rng_state=False), torch's "
                "non-reentrant checkpoint, whose early stop (torch >= 2.1 default) ends the recomputed "
                "block before its feed-forward's w2 matmul",
            },
            pipeline_grad_bytes=4.0,
            reduce_bytes=4.0,
            checkpoint_early_stop=True,
            attention_kernel="flash2",
        ),
        FrameworkProfile(
            slug="nemo-automodel",
            name="NeMo AutoModel (FSDP2)",
            tp_comm_overlap=False,
            fsdp_collectives_per_layer=1,
            fsdp_overlap=True,
            selective_recompute=SELECTIVE_OP,
            cross_entropy="fp32",
            framework_reserve_gib=DEFAULT_FRAMEWORK_RESERVE_GIB,
            sharding=("none", "zero3", "hsdp"),
            recompute=_ALL_RECOMPUTE,
            pipeline_sharding=("none", "zero3", "hsdp"),
            cp=True,
            ep=True,
            interleaving=True,
            sequence_parallel="optional",
            launch="automodel",
            sources={
                "selective_recompute": "NeMo AutoModel docs, 'Use Gradient (Activation) Checkpointing': "
                "activation_checkpointing 'selective' is PyTorch selective activation checkpointing "
                "(saves attention, collectives and part of the matmuls); 'true'/'full' checkpoints layers",
                "cross_entropy": "default MaskedCrossEntropy taken as an fp32 upcast (assumption); the "
                "FusedLinearCrossEntropy option is not modelled",
                "layouts": "distributed.strategy fsdp2 / ddp with tp_size, pp_size (interleaved1f1b), "
                "cp_size, ep_size and an optional sequence_parallel flag (NeMo AutoModel distributed docs)",
                "attention_kernel": "Hugging Face models on PyTorch SDPA (attn_implementation 'sdpa'), whose "
                "flash backend is FlashAttention-2 (assumption; a TE attention backend would be fused)",
            },
            attention_kernel="flash2",
        ),
    )
}


def profile(slug: str) -> FrameworkProfile:
    """The profile named ``slug`` (KeyError if unknown: the request parser names the field first)."""
    return PROFILES[slug]


def profile_assumptions(p: FrameworkProfile) -> tuple[Assumption, ...]:
    """The profile and each knob's source, for a result's ``assumptions``; none for the default profile,
    whose constants are the engine's own (so results without ``training.framework`` are unchanged)."""
    if p.slug == DEFAULT_FRAMEWORK:
        return ()
    return tuple(
        Assumption(f"framework[{p.slug}].{knob}", 1.0, p.name, source) for knob, source in p.sources.items()
    )


def structure_pins(p: FrameworkProfile) -> dict[str, int]:
    """Layout fields the stack holds at 1 (no CP, EP or interleaving): the search does not enumerate them."""
    pins = {}
    if not p.cp:
        pins["cp"] = 1
    if not p.ep:
        pins["ep"] = 1
    if not p.interleaving:
        pins["vpp"] = 1
    return pins


def grid_choices(p: FrameworkProfile) -> tuple[list[int], list[int], list[int]]:
    """(recompute modes, sharding modes, sequence-parallel values) as indices the search expands with."""
    rcs = [RECOMPUTE_MODES.index(m) for m in p.recompute]
    shs = [SHARDING_MODES.index(m) for m in p.sharding]
    sps = [0] if p.sequence_parallel == "never" else [0, 1]
    return rcs, shs, sps


def framework_checks(p: FrameworkProfile, lay: Mapping[str, IntArray]) -> list[tuple[str, Any, Any]]:
    """[(field, failed mask, reason(i))] for the layouts the stack does not run (search.structural_checks
    appends them); empty for an unrestricted profile."""
    if p.unrestricted:
        return []
    tp, sp, sh, rc = lay["tp"], lay["sequence_parallel"], lay["sharding"], lay["recompute"]
    sh_ok = np.isin(sh, [SHARDING_MODES.index(m) for m in p.sharding])
    pipe_ok = np.isin(sh, [SHARDING_MODES.index(m) for m in p.pipeline_sharding])
    rc_ok = np.isin(rc, [RECOMPUTE_MODES.index(m) for m in p.recompute])
    name = p.name
    checks: list[tuple[str, Any, Any]] = [
        (
            "parallelism.sharding",
            ~sh_ok,
            lambda i: (
                f"{name} has no {SHARDING_MODES[int(sh[i])]} sharding (it runs {', '.join(p.sharding)})"
            ),
        ),
        (
            "parallelism.sharding",
            (lay["pp"] > 1) & ~pipe_ok,
            lambda i: f"{name} runs {SHARDING_MODES[int(sh[i])]} without a pipeline only (pp 1)",
        ),
        (
            "parallelism.recompute",
            ~rc_ok,
            lambda i: f"{name} has no {RECOMPUTE_MODES[int(rc[i])]} recompute",
        ),
    ]
    for key, has in (("cp", p.cp), ("ep", p.ep), ("vpp", p.interleaving)):
        if not has:
            what = {"cp": "context parallelism", "ep": "expert parallelism", "vpp": "interleaved pipeline"}
            checks.append((f"parallelism.{key}", lay[key] > 1, lambda i, w=what[key]: f"{name} has no {w}"))
    if p.sequence_parallel == "never":
        checks.append(
            (
                "parallelism.sequence_parallel",
                (sp > 0) & (tp > 1),
                lambda i: f"{name} has no sequence parallelism",
            )
        )
    elif p.sequence_parallel == "always":
        checks.append(
            (
                "parallelism.sequence_parallel",
                (sp == 0) & (tp > 1),
                lambda i: f"{name} always shards the sequence over the TP ranks (sequence parallelism)",
            )
        )
    return checks
