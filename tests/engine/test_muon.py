"""training.optimizer muon (engine/training/optimizer.py): its state bytes, its Newton-Schulz FLOPs and the
gathers it adds to the step, by hand on Llama 2 7B."""

from __future__ import annotations

from typing import Any

import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.training.optimizer import layer_newton_schulz_flops, newton_schulz_flops
from clusterdesigner.engine.training.training import estimate

GIB = 2**30
# Llama 2 7B: 6,738,415,616 parameters (Touvron et al. 2023; Hugging Face's count), of which the embedding
# and the untied output layer are 2 x 32,000 x 4,096 = 262,144,000.
P = 6_738_415_616
EDGE = 2 * 32_000 * 4_096


def _estimate(optimizer: str, training: dict[str, Any] | None = None, **parallelism: Any) -> dict[str, Any]:
    layout = {"tp": 1, "pp": 1, "cp": 1, "dp": 8, "micro_batch": 1, "recompute": "full", "sharding": "zero1"}
    return estimate(
        {
            "model": {"preset": "llama2-7b"},
            "training": {
                "tokens": 1e12,
                "global_batch_seqs": 256,
                "optimizer": optimizer,
                **(training or {}),
            },
            "cluster": {"accelerator": "h100-sxm", "nodes": 1, "fabric": "ib-ndr400"},
            "parallelism": {**layout, **parallelism},
        },
        accelerators=ACCELERATORS,
        fabrics=FABRICS,
    )


def test_newton_schulz_flops_of_one_matrix_by_hand() -> None:
    # A 4,096 x 11,008 MLP matrix: m = 4,096, n = 11,008. One step: A = X X^T 2m^2n, A.A 2m^3, B.X 2m^2n:
    # 4 x 4,096^2 x 11,008 = 738,734,374,912 and 2 x 4,096^3 = 137,438,953,472, 876,173,328,384 per step,
    # x 5 steps = 4,380,866,641,920. The tall transpose costs the same.
    assert newton_schulz_flops(rows=4096, cols=11008) == 4_380_866_641_920
    assert newton_schulz_flops(rows=11008, cols=4096) == 4_380_866_641_920


def test_newton_schulz_flops_of_one_llama2_7b_layer_by_hand() -> None:
    # Q, K, V and O are 4,096 x 4,096: 5 x (4 + 2) x 4,096^3 = 2,061,584,302,080 each, 8,246,337,208,320 for
    # four; gate, up and down 3 x 4,380,866,641,920 = 13,142,599,925,760.
    attention, mlp, moe, expert = layer_newton_schulz_flops(PRESETS["llama2-7b"])
    assert attention == 8_246_337_208_320
    assert mlp == 13_142_599_925_760
    assert (moe, expert) == (0.0, 0.0)


def test_muon_keeps_one_moment_where_adam_keeps_two() -> None:
    # ZeRO-1 over 8 GPUs. Adam: 12 B x P / 8 = 10,107,623,424 B = 9.413 GiB. Muon: 8 B (FP32 master +
    # momentum) on the 6,476,271,616 matrix and norm parameters, 12 B on the AdamW-stepped embedding and
    # output layer: (8 x P + 4 x 262,144,000) / 8 = 6,869,487,616 B = 6.398 GiB.
    adam = _estimate("adam")["memory_per_gpu_gib"]["optimizer"]
    muon = _estimate("muon")["memory_per_gpu_gib"]["optimizer"]
    assert adam == pytest.approx(12 * P / 8 / GIB, abs=1e-3)
    assert muon == pytest.approx((8 * P + 4 * EDGE) / 8 / GIB, abs=1e-3)
    assert muon == pytest.approx(6.398, abs=1e-3)


def test_muon_step_adds_newton_schulz_and_the_gradient_gather() -> None:
    # The update's element-wise traffic is 28 of Adam's 36 B per parameter. Newton-Schulz: 32 layers x
    # (8,246,337,208,320 + 13,142,599,925,760) / 8 ranks (ZeRO-1: each rank orthogonalises its share) =
    # 85,555,748,536,320 FLOPs at H100's BF16 rate, 794.5 TFLOP/s measured x 0.79 (Hopper, refitted 0.75 ->
    # 0.81 once flash2 runs at its measured H100 rate, 0.81 -> 0.79 in engine version 23's joint refit) =
    # 627.655 TFLOP/s: 0.136310 s (0.132944 s at 0.81). The DP gather of the
    # 32 layers' bf16 gradients over 8 NVLink ranks: 7/8 x 2 B x 6,476,267,520 / (450 GB/s x 0.80) + 7 x
    # 15 us ring steps = 0.031593 s.
    adam = _estimate("adam")["step_time_s"]["optimizer"]
    muon = _estimate("muon")["step_time_s"]["optimizer"]
    newton_schulz = 32 * (8_246_337_208_320 + 13_142_599_925_760) / 8 / (794.5 * 0.79 * 1e12)
    assert newton_schulz == pytest.approx(0.136310, abs=1e-6)
    dense = 32 * (4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096)
    gather = 7 / 8 * 2 * dense / (450e9 * 0.80) + 7 * 15e-6
    assert muon - adam * 28 / 36 == pytest.approx(newton_schulz + gather, rel=1e-9)


def test_muon_without_a_sharded_optimizer_orthogonalises_everything_on_every_rank() -> None:
    # Without ZeRO every rank orthogonalises all 32 layers: 8 x 0.136310 s = 1.090481 s of Newton-Schulz
    # (Hopper factor 0.79 since engine version 23's joint refit; 1.063556 s at 0.81, 1.148640 s at 0.75), no
    # DP gather (the all-reduce left whole gradients everywhere).
    replicated = _estimate("muon", sharding="none")["step_time_s"]["optimizer"]
    adam = _estimate("adam", sharding="none")["step_time_s"]["optimizer"]
    assert replicated - adam * 28 / 36 == pytest.approx(8 * 0.136310, abs=1e-5)


def test_refuses_muon_with_optimizer_offload() -> None:
    with pytest.raises(InputError) as err:
        _estimate("muon", {"optimizer_offload": True})
    assert err.value.field == "training.optimizer_offload"


def test_refuses_an_unknown_optimizer_naming_the_field() -> None:
    with pytest.raises(InputError) as err:
        _estimate("lion")
    assert err.value.field == "training.optimizer"


def test_muon_under_lora_steps_only_the_adapters() -> None:
    # LoRA's frozen base is never orthogonalised: Muon adds nothing but its element-wise update (28 of
    # Adam's 36 B per adapter parameter).
    adam = _estimate("adam", {"lora_rank": 16})["step_time_s"]["optimizer"]
    muon = _estimate("muon", {"lora_rank": 16})["step_time_s"]["optimizer"]
    assert muon == pytest.approx(adam * 28 / 36, rel=1e-12)


def test_a_muon_estimate_states_its_assumptions() -> None:
    names = {a["name"]: a for a in _estimate("muon")["assumptions"]}
    assert names["optimizer[muon].state_bytes_per_param"]["value"] == 8.0
    assert names["optimizer[muon].newton_schulz_steps"]["value"] == 5.0
    assert "KellerJordan/Muon" in names["optimizer[muon].newton_schulz_steps"]["source"]
    assert not [n for n in _estimate("adam")["assumptions"] if n["name"].startswith("optimizer[muon]")]
