"""The optimizer a training run steps: mixed-precision Adam, or Muon (``training.optimizer``).

Muon (Jordan et al. 2024, github.com/KellerJordan/Muon ``muon.py``; Liu et al., "Muon is Scalable for LLM
Training", Moonshot AI, arXiv:2502.16982) updates each hidden 2-D weight matrix with the orthogonalised
momentum: M ← μM + G, then O = NS₅(M), five Newton–Schulz steps of the quintic
X ← aX + (bA + cA²)X with A = XXᵀ (a, b, c = 3.4445, −4.7750, 2.0315), run in BF16 on the matrix
transposed so that it has m = min(rows, cols) rows and n = max(rows, cols) columns. The embedding, the
output layer, norms and biases are stepped by AdamW (Keller Jordan: "Muon should only be used for hidden
weight layers"; Megatron-LM's --muon-scalar-optimizer adam, megatron/training/arguments.py at d98e8a64).

- State: one FP32 momentum buffer per matrix parameter next to the FP32 master weight, 8 B per parameter
  (Adam's two moments and master: ZeRO's K = 12); the AdamW-stepped embedding and output layer keep 12 B.
- Compute: per step, A = XXᵀ costs 2m²n FLOPs, A·A 2m³ and (bA + cA²)·X 2m²n, so one Newton–Schulz
  orthogonalisation costs 5 · (4m²n + 2m³) FLOPs (``newton_schulz_flops``). Megatron-Core's Muon with the
  distributed optimizer gives each data-parallel rank whole matrices (Moonshot's Distributed Muon,
  arXiv:2502.16982 Sec. 3 and Algorithm 1: each DP rank orthogonalises the matrices of its 1/DP partition)
  and, in its default --muon-tp-mode duplicated, every tensor-parallel rank orthogonalises the whole matrix
  (arguments.py: "duplicated and distributed both orthogonalize the whole matrix").
- Communication: the full matrix must be on the rank that orthogonalises it: Distributed Muon's "DP
  gather" all-gathers the reduce-scattered gradient shards over the data-parallel group, and duplicated
  TP mode all-gathers the tensor-parallel shards; both are exposed (the step waits for them).
"""

from __future__ import annotations

from typing import Any

from clusterdesigner.engine.core.model import ModelShape
from clusterdesigner.engine.training.workload import Assumption

OPTIMIZERS = ("adam", "muon")
ADAM_STATE_BYTES = 12.0
MUON_STATE_BYTES = 8.0
NEWTON_SCHULZ_STEPS = 5
MUON_SOURCE = (
    "Muon: github.com/KellerJordan/Muon muon.py zeropower_via_newtonschulz5 (5 quintic steps in BF16); "
    "Distributed Muon, arXiv:2502.16982 Sec. 3; Megatron-LM --optimizer muon (arguments.py at d98e8a64)"
)


def newton_schulz_flops(*, rows: float, cols: float, steps: int = NEWTON_SCHULZ_STEPS) -> float:
    """FLOPs of Muon's Newton–Schulz orthogonalisation of one rows × cols matrix.

    With m = min(rows, cols), n = max(rows, cols) (the reference transposes a tall matrix), one step is
    A = XXᵀ (2m²n), A·A (2m³) and (bA + cA²)·X (2m²n): steps · (4m²n + 2m³). Source: KellerJordan/Muon
    muon.py ``zeropower_via_newtonschulz5``; the element-wise terms (aX, bA) are left out (O(mn))."""
    m, n = min(rows, cols), max(rows, cols)
    return steps * (4.0 * m * m * n + 2.0 * m**3)


def _ffn_matrices(hidden: float, ffn: float, gated: bool) -> list[tuple[float, float]]:
    """The MLP's matrices: gate and up (h × f each; up alone without a gate) and down (f × h)."""
    return [(hidden, ffn)] * (2 if gated else 1) + [(ffn, hidden)]


def _attention_matrices(model: ModelShape) -> list[tuple[float, float]]:
    """Q, K and V separately (Megatron-LM splits the fused QKV for Muon: --muon-no-split-qkv is off by
    default) and the output projection; MLA's down and up projections in their place."""
    h = float(model.hidden)
    if model.is_mla:
        q_lora, kv_lora = float(model.q_lora_rank), float(model.kv_lora_rank)
        mats = [(h, q_lora), (q_lora, float(model.q_width))] if q_lora else [(h, float(model.q_width))]
        mats += [
            (h, kv_lora + model.qk_rope_head_dim),
            (kv_lora, float(model.heads * (model.qk_nope_head_dim + model.v_head_dim))),
        ]
    else:
        mats = [(h, float(model.q_width)), (h, float(model.k_width)), (h, float(model.v_width))]
    return [*mats, (float(model.attn_out_width), h)]


def _total(mats: list[tuple[float, float]]) -> float:
    return sum(newton_schulz_flops(rows=r, cols=c) for r, c in mats)


def layer_newton_schulz_flops(model: ModelShape) -> tuple[float, float, float, float]:
    """Newton–Schulz FLOPs of one layer's unsharded matrices, by where they live: (attention, a dense
    layer's MLP, a MoE layer's router and shared experts, one routed expert). The router is h × experts,
    the shared experts one MLP of shared_experts · f_e."""
    h = float(model.hidden)
    attention = _total(_attention_matrices(model))
    dense_mlp = _total(_ffn_matrices(h, float(model.ffn_hidden), model.gated_mlp))
    if not model.is_moe:
        return attention, dense_mlp, 0.0, 0.0
    shared_w = float(model.shared_experts * model.expert_ffn_hidden)
    shared = _total(_ffn_matrices(h, shared_w, model.gated_mlp)) if shared_w else 0.0
    router = newton_schulz_flops(rows=h, cols=float(model.experts))
    one_expert = _total(_ffn_matrices(h, float(model.expert_ffn_hidden), model.gated_mlp))
    return attention, dense_mlp, router + shared, one_expert


def optimizer_state_bytes(*, optimizer: str, matrix_params: Any, edge_params: Any, adam_bytes: float) -> Any:
    """Optimizer-state bytes of ``matrix_params`` hidden-layer parameters and ``edge_params`` embedding and
    output-layer parameters: Adam ``adam_bytes`` (K = 12) for all; Muon MUON_STATE_BYTES (FP32 master +
    one momentum) for the matrices and ``adam_bytes`` for the AdamW-stepped edge."""
    if optimizer == "muon":
        return MUON_STATE_BYTES * matrix_params + adam_bytes * edge_params
    return adam_bytes * (matrix_params + edge_params)


MUON_ASSUMPTIONS = (
    Assumption(
        "optimizer[muon].state_bytes_per_param",
        MUON_STATE_BYTES,
        "B per hidden-matrix parameter (embedding and output layer: Adam's 12)",
        f"FP32 master + one momentum buffer; {MUON_SOURCE}",
    ),
    Assumption(
        "optimizer[muon].newton_schulz_steps",
        float(NEWTON_SCHULZ_STEPS),
        "quintic steps of 4m²n + 2m³ FLOPs per matrix, at the BF16 matmul rate",
        f"whole matrices: every TP rank (--muon-tp-mode duplicated), split over the distributed optimizer's "
        f"ranks, after an all-gather of the gradient shards; {MUON_SOURCE}",
    ),
)
