"""The engines' output version: a stored evaluation is keyed by it, so a result computed before an engine
change is recomputed on its next view instead of being shown without the figures the new engine adds.

Bump ``ENGINE_VERSION`` in the commit that changes what any engine returns (a new key, a changed figure or a
changed convention), and say in the commit message what changed. Its history:

    1  before the rent-or-own work (no ``cashflow``, ``verdict`` or ``ranking`` in the cost result)
    2  cash flows, NPV, payback, IRR, financing, uncertainty, the verdict and the whole-horizon ranking
    3  the design result's ``ranking``: every option cheapest first over the horizon
    4  resale at the horizon's end from the catalog's residual-value series of the accelerator
    5  the scale-up (NVLink) domain of the system, not of the node, in the training timing; the capacity
       plan's cash view (capex at delivery, opex, resale) and its NPV; plans are keyed by this version too
    6  MoE under ZeRO-3/HSDP: the expert weights' all-gathers and reduce-scatters over the expert-data-
       parallel group are timed; the MoE all-to-all is split between the scale-up link and the fabric, with
       the DeepEP dispatcher, node-limited routing, FP8 dispatch and 1F1B all-to-all overlap as options
    7  sweeps and ``manage.py tco`` read resale from the catalog's residual-value series as the design
       evaluation does (not the 0.2 placeholder); analyses are keyed by this version too; node-side
       transceivers per NIC port cage (a DGX H100/H200/B200's twin-port OSFP: 4 a node, 15 W); savings plans
       (savings_1y, savings_3y) as pricing models
    8  serving: the ``vllm-rocm`` stack's constants refitted with its collective latency (64 µs), and the
       ``vllm-rocm-2025`` stack (AMD's 2025 rocm/vllm images); ``tensorrt-llm`` results are unchanged
    9  training: a memory headroom searched layouts leave free (``training.memory_headroom``, 0.141 by
       default), selective recompute not searched under flash attention, full recompute capped at the
       no-recompute activations, an ``error_band`` on every result and ``ties`` on a search, per-run day and
       dollar ranges in the cost result; model shapes (head_dim, multi-head latent attention, multi-token
       prediction, explicit pipeline layouts); fitted FP8 matmul factors for Hopper (0.96) and Blackwell
       (0.72); error bands from runs.csv and runs_frontier.csv by family/precision/kind/context/scale;
       serving: request-length mixes, an hourly demand profile, tokens per day, KV bytes per token, and the
       multi-head latent attention KV cache (the latent, not per-head K and V)
   10  training: framework profiles (``training.framework``: Megatron-Core, Megatron-LM 2022, DeepSpeed ZeRO
       2021, PyTorch FSDP2, NeMo AutoModel) with op-level selective checkpointing and the FSDP2 upcast
       cross-entropy; expert tensor parallelism (``training.etp``) and the experts' routed FC1 inputs in MoE
       activation memory; the memory-bound passes over each token's routed copies (``moe_routed_passes``);
       memory levers (``recompute_modules``, ``recompute_num_layers``, ``activation_offload_layers``,
       ``optimizer_offload``, ``fp8_params``, LoRA); the FSDP2 profile's unsharded pipeline gradients; and
       the accelerator's host link in the catalog; FP8 factors refitted with the MLPerf rows (Hopper 0.96,
       Blackwell 0.74) and fitted for AMD (CDNA3 0.82, CDNA4 1.07); error bands regenerated (363 rows)
   11  training: the attention kernel (``training.attention_kernel``: ``fused``, the Megatron-Core profile's
       default, at 1.5x FlashAttention-2 on Hopper and 1.7x on Blackwell; ``flash2`` for the other
       profiles); Hopper FP8 0.86, Blackwell FP8 0.69 and ``moe_routed_passes`` 26 refitted with it; error
       bands regenerated; per-module activation offload (``activation_offload_modules``) and the FP8 SwiGLU
       input store (``activation_func_fp8_input_store``) as memory levers
   12  rent or own (issue #31): the cost engine prices only the ticked ``cloud.pricing_models``; one design-
       level verdict over every offering (``design_verdict``, with its commitments); verdict, ranking, tornado
       and break-even on the NPV of the monthly cash flows, and ``flips`` solved on it; market resale from the
       residual-value series (book value as a stated fallback); tax on both sides (MACRS 5-year or straight-
       line, tax on the sale's gain over book), WACC; commitment schedules; a Monte Carlo that fixes the rent
       option before the draws, with standard errors; a sourced 4-month procurement lead time bridged by
       ``cashflow.bridge_option`` and counted in the deadline check; staff per fleet (nodes ÷ 75), finance
       cost lines, network in the server quote or as a lump sum, rail-only topology, colocation billing basis,
       spot capped at 8 nodes by default; the capacity plan's unsplittable runs, lexicographic tie-break,
       ``supply.from_design`` and market resale in its cash view. Training (issue #32): GB300, B300, MI350X
       and an announced Vera Rubin; precision recipes (fp8_current, fp8_blockwise, mxfp8, nvfp4) and the Muon
       optimizer; sliding-window/chunked attention and sinks; widest-of-family bands for unmeasured parts and
       recipes (bf16/fp8 Adam estimates on existing parts unchanged). Serving (issue #37): $/M tokens on the
       billed total, TTFT/TPOT percentiles with queueing, prefix caching, speculative decoding, Pareto
       frontier; capacity plans: owned nodes wait the design's or the sourced lead time, tokens-per-day
       inference sized without an owning price
   13  training (issue #33): MoE dispatchers (alltoall, allgather, DeepEP, HybridEP; traffic per destination
       GPU), expert all-to-all overlap and routing balance from the framework profile's recipe; the data-
       parallel all-reduce in DDP buckets on NCCL's ring/tree latencies; stragglers (1 + cv·sqrt(2 ln N));
       the interleaved bubble with the real micro-batch count; refitted on fit rows; error bands from held-out
       rows per regime, widened by the sources behind them; the search enumerates every interleaving depth
       and micro-batch with no layout cap. Cost (issue #31): one NPV break-even solver for every option
       (none outside (0, 1]), the cost result's ranking on NPV, goals on the verdict's option and a horizon
       budget on NPV, a facility depreciated over its own life, monthly capital payments. Plans: the solver's
       work limit and status
   14  plans (issue #31): the MILP chooses on the NPV of its monthly cash flows (``npv_usd``; ``total_usd``
       the same flows undiscounted); the resale flip and tornado move ``cashflow.resale_fraction`` (the
       resale the cash flows take). Sites (issue #35): a design's ``spec.site`` sets power, PUE, colocation
       and facility capex and adds the rack, cooling and MW findings. RL post-training (issue #39): the
       optional ``rl`` answer. The search (issue #33) states the run settings it chose (overlaps; offloads
       when ``training.search_offload``)
   15  cost (issue #31): the offering's verdict sentence says when its NPVs are after tax. Serving (issue
       #37): host time per running sequence per step (``host_sequence_us``) where the stack does not hide
       it; attention-DP + wide-EP layouts for MoE models (``layout.attention_dp``, searched) and a fitted
       share of compute for the expert GEMMs. RL (issue #39): mixed fleets (a rollout pool of its own part,
       ``rl.rollout``; ``rl_fleet``). Price book (issue #35): quotas (an option above its obtainable nodes
       is left out of the verdict), network and storage quotes, committed rates and capacity blocks;
       ``cap_nodes`` on on-demand and reservations in the capacity plan. Calibration (issue #40): whose it is
       (``scope``, ``holder``)
   16  training (issue #33): the slowest of N ranks is Blom's expected maximum, not sqrt(2 ln N) (straggler
       term and dropless-MoE busiest rank; STRAGGLER_CV 0.2 %, MOE_ROUTED_PASSES 26; every estimate moves
       0.2-0.5 %). Serving (issue #37): MoE decode pads routed experts' rows to the grouped GEMM's 128-row
       tile, waits for the busiest expert-parallel rank and pays a fixed work per tile on short reductions
       (``moe_tile_overhead_k``; ``moe_compute_scale`` 0.40). Capacity plans (issue #39): several node
       types in one plan (``node_types``); one-type plans unchanged
   17  training (issue #33): the ``flash3`` attention kernel (cuDNN's measured H100 rates on the causal half
       of the attention FLOPs; Blackwell as ``fused``); the MoE rows' recipe recompute corrected from their
       sources and the constants refitted jointly on the fit rows (``moe_routed_passes`` 25 -> 11, Blackwell
       FP8 0.69 -> 0.70, the Blackwell fused-attention speedup 1.7 -> 1.6): every MoE and Blackwell
       estimate moves; error bands regenerated; the RL framework factor refitted with them (2.11 -> 2.03).
       Serving's costs come from engine/serving_cost (same figures)
   18  training (issue #33): the alltoall dispatcher's re-sort by local expert and back (4 passes over the
       routed copies, counted from Megatron-Core); FP8 current scaling's amax read, FP8 parameter gather
       (1 B a weight in ZeRO-3 and the distributed optimizer's all-gather), Blackwell's per-tensor FP8 casts
       writing no transpose copy; the joint refit on the fit rows (Blackwell fused attention 1.6 -> 1.9,
       Blackwell FP8 0.70 -> 0.67, ``moe_routed_passes`` 11 -> 13; RL framework factor 2.03 -> 2.02); error
       bands are the random-effects prediction interval of an unseen source (wider where sources disagree)
   19  training (issue #33): on Hopper an Ampere-design attention kernel (``flash2``) runs at its A100 rate x
       FA2's measured H100 speedup; Megatron-Core's interleaved pipeline sends overlap the next chunk
       (``pipeline_p2p_overlap``); full recompute repeats the MoE all-to-alls; the ``deepspeed-zero-2021``
       profile times DeepSpeed's pipeline engine (split stage sends, unoverlapped gradient all-reduce, tied
       embedding all-reduce, gradient accumulation); the joint refit on the fit rows (Hopper family 0.75 ->
       0.81, default 0.855, Hopper FP8 0.85 -> 0.80, CDNA 3/4 FP8 0.79/1.03, Blackwell FP8 0.67 -> 0.68,
       Blackwell fused attention 1.9 -> 1.6, ``moe_routed_passes`` 13 -> 16; RL framework factor 2.02 ->
       2.14); error bands regenerated
   20  training (issue #33): ZeRO-2 (and FSDP's SHARD_GRAD_OP) reduce-scatters every micro-batch's gradients,
       overlapped with that micro-batch's backward but its last layer's; an FSDP2 pipeline stage pays the
       FP32 upcast of its whole gradients per micro-batch and reduce-scatters in FP32; FP8 recipes quantize
       every routed copy of the experts' inputs (Transformer Engine's GroupedLinear split_quantize);
       ``training.checkpoint_early_stop`` (non-reentrant torch checkpoint stops recomputing before a dense
       MLP's output projection; the ``fsdp2`` profile's default) and a per-request ``training.reduce_bytes``;
       error bands regenerated (NeMo's B200 long-sequence rows now estimated on their published layout's GPUs)
   21  training (issue #33): without TP communication overlap, the Megatron-Core and Megatron-LM 2022 profiles
       run the column-parallel linears' backward input-gradient collective under their weight-gradient GEMM
       (Transformer Engine's and Megatron-LM's async_op backward; ``training.tp_backward_async``); the
       calibration rows are unchanged (Narayanan et al.'s 2021 runs keep every TP collective waiting); every
       training estimate states the newest release its constants were fitted on (NeMo 25.09) and its error
       on Megatron-Bridge 25.11-26.08's check rows (``newest_calibration_release``); cost: the resale
       fallback states an age of whole months as months ("20 months (1.67 years)", was "1.66667 years")
   22  cost: without a residual-value series the resale is the straight-line book value at the servers' age
       (the horizon less the lead time), not at the horizon, so a sale at book carries no tax (owning's NPV
       falls; the demo designs' savings and break-evens move); training: FlashAttention-2 (``flash2``) runs
       at the head dimension it pads to (multiples of 32 up to 128, of 64 above: 112 -> 128), the catalog's
       B300 at its measured matmul rates (catalog data, not this number)
   23  training (issue #33): FlashAttention-2 (``flash2``) runs at its published rates (228 / 197 TFLOP/s on
       A100, 370 / 322 on H100), no longer derated by the family's end-to-end factor, as the measured
       ``flash3`` rates already were; the joint refit on the fit rows (Ampere 0.90 -> 0.88, Hopper 0.81 ->
       0.79, default 0.835, Hopper FP8 0.80 -> 0.81, Blackwell FP8 0.68 -> 0.67, CDNA 3/4 FP8 0.82/1.07,
       Blackwell fused attention 1.6 -> 1.8, ``moe_routed_passes`` 16 -> 14, straggler spread 0.2 -> 0.4 %);
       error bands regenerated
"""

from __future__ import annotations

ENGINE_VERSION: int = 23
