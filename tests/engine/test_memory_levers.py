"""Memory levers (issue 19 item 3): per-module selective recompute, activation offload, optimizer offload and
LoRA. Golden numbers are hand calculations written next to each test; with every lever off the estimates are
the ones of before (the hash check in the commit)."""

from __future__ import annotations

from typing import Any

import pytest
from specs import FABRICS, H100_SXM

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.training.training import estimate

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


def _with_link(gbps: float) -> dict[str, Any]:
    spec = H100_SXM.__class__(**{**H100_SXM.__dict__, "host_link_gbps": gbps})
    return {spec.slug: spec}


def test_fp8_swiglu_input_store_halves_the_activation_input() -> None:
    # Megatron-Core activation_func_fp8_input_store: the SwiGLU input, 2f = 28,672 elements per token, kept
    # in 1 byte instead of 2: 2 × 14,336 × 8,192 = 234,881,024 B less per layer → 32 layers × 1.1 allocator
    # = 8,267,812,044.8 B = 7.7 GiB. The cast is fused into the kernel: no time.
    base = _run(_llama_8b())
    store = _run(_llama_8b(activation_func_fp8_input_store=True))
    drop = base["memory_per_gpu_gib"]["activations"] - store["memory_per_gpu_gib"]["activations"]
    assert drop == pytest.approx(32 * 234_881_024 * 1.1 / GIB, abs=0.002)
    assert store["tokens_per_second"] == base["tokens_per_second"]
    assert any(a["name"] == "activation_func_fp8_input_store_bytes" for a in store["assumptions"])


def test_fp8_swiglu_input_store_saves_nothing_more_once_the_mlp_is_recomputed() -> None:
    # mlp recompute drops the dense MLP's intermediates whatever their bytes: the store is not counted twice.
    mlp = _run(_llama_8b(recompute_modules=["core_attn", "mlp"]))
    both = _run(_llama_8b(recompute_modules=["core_attn", "mlp"], activation_func_fp8_input_store=True))
    assert both["memory_per_gpu_gib"] == mlp["memory_per_gpu_gib"]


def test_fp8_swiglu_input_store_needs_a_gated_mlp() -> None:
    request = _llama_8b(activation_func_fp8_input_store=True)
    request["model"]["gated_mlp"] = False
    with pytest.raises(InputError) as err:
        _run(request)
    assert err.value.field == "training.activation_func_fp8_input_store"


def test_core_attn_and_attn_proj_offload_moves_q_k_v_and_the_attention_output_to_the_host() -> None:
    # --offload-modules core_attn attn_proj on Llama 3 8B (q 4,096, k = v 1,024), 8,192 tokens, bf16:
    # Q, K, V 2 × 8,192 × 6,144 = 100,663,296 B + the attention output 2 × 8,192 × 4,096 = 67,108,864 B
    # = 167,772,160 B per layer; 32 layers in flight, all but one offloaded: 31 × 167,772,160 × 1.1
    # = 5,721,030,656 B = 5.33 GiB less. 167.8 MB per layer at 64 GB/s is 2.6 ms, under a layer's forward.
    accs = _with_link(64.0)
    base = _run(_llama_8b(), accs)
    off = _run(_llama_8b(activation_offload_modules=["core_attn", "attn_proj"]), accs)
    drop = base["memory_per_gpu_gib"]["activations"] - off["memory_per_gpu_gib"]["activations"]
    assert drop == pytest.approx(31 * 167_772_160 * 1.1 / GIB, abs=0.002)
    assert off["step_time_s"]["activation_offload"] == 0.0
    assert off["tokens_per_second"] == base["tokens_per_second"]
    assert any(a["name"] == "activation_offload_modules_kept_layers" for a in off["assumptions"])


def test_module_offload_over_a_slow_host_link_is_exposed() -> None:
    # At 1 GB/s the 167.8 MB per layer take 168 ms, far more than a layer's forward or backward: what the
    # compute does not hide is charged, at most both copies of every layer of every micro-batch.
    base = _run(_llama_8b(), _with_link(1.0))
    off = _run(_llama_8b(activation_offload_modules=["core_attn", "attn_proj"]), _with_link(1.0))
    exposed = off["step_time_s"]["activation_offload"]
    micro_batches = 64 / 8
    assert 0 < exposed < micro_batches * 2 * 32 * 167_772_160 / 1e9
    # The step waits for its slowest rank (timing.STRAGGLER_CV): the exposed copies are scaled with the rest,
    # by 1 + cv·√(2 ln N), the same factor for both runs.
    parts = off["step_time_s"]
    slowest = 1 + parts["straggler"] / (parts["total"] - parts["straggler"])
    assert parts["total"] == pytest.approx(base["step_time_s"]["total"] + exposed * slowest, rel=1e-9)


@pytest.mark.parametrize(
    ("modules", "says"),
    [
        (["attn_proj"], "only together with core_attn"),
        (["expert_fc1"], "the model has none"),
        (["mlp"], "unknown 'mlp'"),
        (["core_attn", "core_attn"], "twice"),
    ],
)
def test_rejects_offload_modules_megatron_refuses(modules: list[str], says: str) -> None:
    with pytest.raises(InputError) as err:
        _run(_llama_8b(activation_offload_modules=modules), _with_link(64.0))
    assert err.value.field == "training.activation_offload_modules" and says in err.value.message


def test_module_offload_refuses_layer_offload_and_needs_a_host_link() -> None:
    request = _llama_8b(activation_offload_modules=["core_attn"], activation_offload_layers=8)
    request["parallelism"]["recompute"] = "none"
    with pytest.raises(InputError) as err:
        _run(request, _with_link(64.0))
    assert err.value.field == "training.activation_offload_modules"
    with pytest.raises(InputError) as err:
        _run(_llama_8b(activation_offload_modules=["core_attn"]))
    assert err.value.field == "cluster.accelerator"


@pytest.mark.parametrize(
    ("lever", "value"),
    [("activation_offload_modules", ["core_attn"]), ("activation_func_fp8_input_store", True)],
)
def test_megatron_core_levers_are_refused_on_other_stacks(lever: str, value: Any) -> None:
    request = _llama_8b(framework="fsdp2", **{lever: value})
    request["parallelism"]["sharding"] = "zero3"
    with pytest.raises(InputError) as err:
        _run(request, _with_link(64.0))
    assert err.value.field == f"training.{lever}" and "Megatron-Core option" in err.value.message
