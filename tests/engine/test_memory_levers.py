"""Memory levers (issue 19 item 3): per-module selective recompute, activation offload, optimizer offload and
LoRA. Golden numbers are hand calculations written next to each test; with every lever off the estimates are
the ones of before (the hash check in the commit)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import FABRICS, H100_SXM

from clusterdesigner.engine.errors import InputError
from clusterdesigner.engine.training import estimate

GIB = 2**30
ACCS = {H100_SXM.slug: H100_SXM}


def _llama_8b(**training: Any) -> dict[str, Any]:
    # Llama 3 8B on one H100 node: tp 1, pp 1, dp 8, micro-batch 1 × 8,192 tokens, bf16, flash attention.
    return {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 64, **training},
        "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 1},
        "parallelism": {
            "tp": 1,
            "pp": 1,
            "dp": 8,
            "micro_batch": 1,
            "recompute": "selective",
            "sharding": "zero1",
        },
    }


def _run(request: dict[str, Any], accelerators: Any = None) -> dict[str, Any]:
    return estimate(request, accelerators=accelerators or ACCS, fabrics=FABRICS)


def test_default_recompute_modules_are_megatrons_core_attn() -> None:
    # Omitted and ["core_attn"] are the same request (Megatron-Core's default --recompute-modules).
    assert _run(_llama_8b()) == _run(_llama_8b(recompute_modules=["core_attn"]))


def test_layernorm_recompute_drops_the_two_norm_outputs() -> None:
    # Llama 3 8B, no SP: the two norm outputs are 2 × 2·t·h = 4 × 8,192 × 4,096 = 134,217,728 B per layer;
    # 32 layers × 1.1 allocator → 4,724,464,025.6 B = 4.4 GiB less activation memory.
    base = _run(_llama_8b())["memory_per_gpu_gib"]["activations"]
    ln = _run(_llama_8b(recompute_modules=["core_attn", "layernorm"]))["memory_per_gpu_gib"]["activations"]
    assert base - ln == pytest.approx(32 * 134_217_728 * 1.1 / GIB, abs=0.002)


def test_mlp_recompute_adds_the_mlp_forward_flops() -> None:
    # mlp recompute repeats the SwiGLU MLP forward: 2 × 3 × h × f × L = 2 × 3 × 4,096 × 14,336 × 32 FLOPs
    # per token on top of core_attn's attention core; memory drops the 6f intermediates of the
    # micro-batch's 8,192 tokens: 6 × 14,336 × 8,192 = 704,643,072 B per layer
    # → 32 × 704,643,072 × 1.1 = 24,803,435,135 B = 23.1 GiB.
    base = _run(_llama_8b())
    mlp = _run(_llama_8b(recompute_modules=["core_attn", "mlp"]))
    drop = base["memory_per_gpu_gib"]["activations"] - mlp["memory_per_gpu_gib"]["activations"]
    assert drop == pytest.approx(32 * 704_643_072 * 1.1 / GIB, abs=0.002)
    per_token = 2 * 3 * 4096 * 14336 * 32
    tps = mlp["tokens_per_second"]
    extra = mlp["hardware_tflops_per_gpu"] - base["hardware_tflops_per_gpu"] * tps / base["tokens_per_second"]
    assert extra == pytest.approx(per_token * tps / 8 / 1e12, rel=1e-9)
    assert mlp["step_time_s"]["recompute"] > base["step_time_s"]["recompute"]


def test_rejects_unknown_recompute_module_and_mla_up_proj_without_mla() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b(recompute_modules=["attention"]))
    assert err.value.field == "training.recompute_modules"
    with pytest.raises(InputError) as err:
        _run(_llama_8b(recompute_modules=["mla_up_proj"]))
    assert err.value.field == "training.recompute_modules"


def test_optimizer_offload_frees_the_optimizer_states_and_costs_host_time() -> None:
    # ZeRO-1 over dp 8: 12 B × P / 8 optimizer states leave the GPU. The step then sends grad_bytes + 2 B
    # per parameter this GPU updates over PCIe Gen5 (64 GB/s) and streams 36 B of Adam traffic at 76.8 GB/s
    # of host memory: P/8 × (4/64e9 + 36/76.8e9) s.
    spec = H100_SXM.__class__(**{**H100_SXM.__dict__, "host_link_gbps": 64.0})
    accs = {spec.slug: spec}
    base = _run(_llama_8b(), accs)
    off = _run(_llama_8b(optimizer_offload=True), accs)
    assert off["memory_per_gpu_gib"]["optimizer"] == 0.0
    assert base["memory_per_gpu_gib"]["optimizer"] > 5.0
    params = base["memory_per_gpu_gib"]["optimizer"] * GIB / 12.0  # P/8, the parameters this GPU updates
    assert off["step_time_s"]["optimizer"] == pytest.approx(params * (4 / 64e9 + 36 / 76.8e9), rel=1e-3)


def test_offload_without_a_host_link_names_the_accelerator() -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b(optimizer_offload=True))
    assert err.value.field == "cluster.accelerator"


def test_activation_offload_refuses_pipeline_parallelism_and_recompute() -> None:
    spec = H100_SXM.__class__(**{**H100_SXM.__dict__, "host_link_gbps": 64.0})
    request = _llama_8b(activation_offload_layers=16)
    with pytest.raises(InputError) as err:
        _run(request, {spec.slug: spec})
    assert err.value.field == "training.activation_offload_layers"  # selective recompute is on
    request["parallelism"]["recompute"] = "none"
    half = _run(request, {spec.slug: spec})
    request["training"].pop("activation_offload_layers")
    full = _run(request, {spec.slug: spec})
    # 16 of 32 layers offloaded: half the activations stay.
    assert half["memory_per_gpu_gib"]["activations"] == pytest.approx(
        full["memory_per_gpu_gib"]["activations"] / 2, abs=0.002
    )


def test_lora_keeps_gradients_and_optimizer_states_of_the_adapters_only() -> None:
    # Rank 16 on linear_qkv (4,096 → 6,144), linear_proj (4,096 → 4,096), linear_fc1 (4,096 → 28,672),
    # linear_fc2 (14,336 → 4,096): 16 × (10,240 + 8,192 + 32,768 + 18,432) = 1,114,112 per layer × 32 =
    # 35,651,584 adapter parameters; bf16 gradients 2 B each, unsharded under ZeRO-1: 71,303,168 B.
    lora = _run(_llama_8b(lora_rank=16))
    assert lora["memory_per_gpu_gib"]["gradients"] == pytest.approx(71_303_168 / GIB, abs=1e-3)
    assert lora["memory_per_gpu_gib"]["optimizer"] == pytest.approx(12 * 35_651_584 / 8 / GIB, abs=1e-3)
    # Backward of the frozen matmuls takes 1× forward (Hu et al. 2021 Sec. 4.2): faster than full training.
    assert lora["tokens_per_second"] > _run(_llama_8b())["tokens_per_second"]
