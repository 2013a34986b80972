"""The losses of scale in the training timing (issue 33 item 2): the data-parallel gradient all-reduce
bucket by bucket, each timed as NCCL's tuner times ring and tree, the last bucket exposed; the wait for
the slowest of N ranks; and the framework profile's MoE dispatcher defaults (item 1)."""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import numpy as np
import pytest
from specs import ACCELERATORS, FABRICS

from clusterdesigner.engine.training import timing
from clusterdesigner.engine.training.framework import PROFILES
from clusterdesigner.engine.training.training import estimate, parse_problem

SPECS = {"accelerators": ACCELERATORS, "fabrics": FABRICS}
# H100 HGX: NVLink 4 busbw 450 × 0.80 = 360 GB/s; NDR 400 Gb/s / 8 × 0.96 = 48 GB/s per GPU; fabric 5 µs.
NVLINK4_BUSBW = 360e9
NDR400_BUSBW = 48e9


def _problem(nodes: int) -> Any:
    return parse_problem(
        {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_seqs": 4096},
            "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
        },
        **SPECS,
    )


def _all_reduce(nodes: int, nbytes: float, size: int, stride: int) -> float:
    out = timing.nccl_all_reduce_time(
        nbytes=np.array([nbytes]),
        size=np.array([float(size)]),
        stride=np.array([float(stride)]),
        problem=_problem(nodes),
    )
    return float(out[0])


def test_a_small_bucket_over_thousands_of_ranks_takes_the_tree() -> None:
    # 1,024 nodes, one rank per node (stride 8): an 80 MB bucket (40 M parameters in BF16).
    # Bandwidth: 2 × 1023/1024 × 80 MB / 48 GB/s = 3.330 ms (j = 1: nothing inside the node).
    # Ring latency (NCCL tuning.cc): 8.4 + 2 × 1023 × (14 + 5) µs = 38.88 ms;
    # tree: 8.4 + 2 × 10 × 19 = 388.4 µs.
    bandwidth = 2 * 1023 / 1024 * 80e6 / NDR400_BUSBW
    tree = 8.4e-6 + 2 * 10 * 19e-6
    assert bandwidth == pytest.approx(3.330e-3, rel=1e-3)
    assert _all_reduce(1024, 80e6, 1024, 8) == pytest.approx(bandwidth + tree, rel=1e-9)  # 3.72 ms, not 42 ms


def test_inside_one_node_the_ring_wins() -> None:
    # 8 ranks on NVLink: ring 8.4 + 2 × 7 × 3.4 = 56.0 µs; tree 8.4 + 2 × 7 × 4.0 = 64.4 µs. 80 MB: 2 × 7/8 ×
    # 80 MB / 360 GB/s = 388.9 µs.
    expected = 2 * 7 / 8 * 80e6 / NVLINK4_BUSBW + 56.0e-6
    assert _all_reduce(1, 80e6, 8, 1) == pytest.approx(expected, rel=1e-9)


def test_the_last_gradient_bucket_is_exposed_and_every_bucket_pays_its_latency() -> None:
    # Llama 3 70B on 4,096 H100, tp 8 pp 8 dp 64, ZeRO-1, micro-batch 4, 4,096 sequences (m = 16).
    request = {
        "model": {"preset": "llama3-70b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 4096},
        "cluster": {"accelerator": "h100-sxm", "nodes": 512, "fabric": "ib-ndr400"},
        "parallelism": {
            "tp": 8,
            "pp": 8,
            "dp": 64,
            "cp": 1,
            "vpp": 1,
            "micro_batch": 4,
            "recompute": "none",
            "sharding": "zero1",
            "sequence_parallel": True,
        },
    }
    parts = estimate(request, **SPECS)["step_time_s"]
    problem = parse_problem(request, **SPECS)
    # Bucket: max(40 M, 1 M × 64) = 64 M parameters; n = ⌈P / 64 M⌉ all-reduces over 64 ranks, one per node
    # (stride tp = 8), tree latency 8.4 + 2 × 6 × 19 = 236.4 µs each (ring: 8.4 + 2 × 63 × 19 = 2,402 µs).
    from clusterdesigner.engine.training.memory import params_per_gpu
    from clusterdesigner.engine.training.workload import layouts

    lay = layouts(
        tp=8, pp=8, dp=64, cp=1, ep=1, vpp=1, micro_batch=4, recompute=0, sharding=1, sequence_parallel=1
    )
    dense, _, edge = params_per_gpu(problem.model, lay, None, etp=np.array([8.0]))
    params = float((dense + edge)[0])
    n = math.ceil(params / 64e6)
    one = 2 * 63 / 64 * params / n * 2 / NDR400_BUSBW + 8.4e-6 + 2 * 6 * 19e-6
    assert n == 19, params  # 1.185 B parameters on the last stage (10 layers + the output layer, tp 8)
    # Everything but the last bucket overlaps the last micro-batch's backward (far longer), at the 20 %
    # overlap penalty; the last bucket is exposed whole. Its 18 × 5.2 ms = 94 ms lie under one micro-batch's
    # backward of 10 layers on 4 × 8,192 tokens.
    assert parts["compute"] / 16 / 3 * 2 > (n - 1) * one
    assert parts["dp_comm_exposed"] == pytest.approx(0.2 * (n - 1) * one + one, rel=1e-6)


def test_the_step_waits_for_the_slowest_of_its_ranks() -> None:
    # straggler = (every other part) × cv × E[max of N standard normals], Blom's Φ⁻¹((N − 0.375)/(N + 0.25)):
    # 8 ranks Φ⁻¹(7.625 / 8.25) = 1.434; 4,096 ranks 3.611 (by hand with statistics.NormalDist).
    assert timing.STRAGGLER_CV == pytest.approx(0.004)  # 0.002 until engine version 23's joint refit
    for nodes in (1, 512):
        request = {
            "model": {"preset": "llama3-8b"},
            "training": {"tokens": 1e12, "global_batch_seqs": 8 * nodes},
            "cluster": {"accelerator": "h100-sxm", "nodes": nodes, "fabric": "ib-ndr400"},
            "parallelism": {"tp": 1, "pp": 1, "dp": 8 * nodes, "cp": 1, "vpp": 1, "micro_batch": 1},
        }
        parts = estimate(request, **SPECS)["step_time_s"]
        synchronous = parts["total"] - parts["straggler"]
        n = 8 * nodes
        z = NormalDist().inv_cdf((n - 0.375) / (n + 0.25))
        assert parts["straggler"] == pytest.approx(synchronous * 0.004 * z, rel=1e-9)
    assert NormalDist().inv_cdf(7.625 / 8.25) == pytest.approx(1.434, abs=1e-3)
    assert NormalDist().inv_cdf(4095.625 / 4096.25) == pytest.approx(3.611, abs=1e-3)


def test_the_expected_slowest_of_n_ranks_matches_the_exact_order_statistic() -> None:
    # Exact E[max of n standard normals] (Harter 1961, Biometrika 48, Table 1; reproduced by quadrature of
    # ∫ x·n·φ(x)·Φ(x)^(n−1) dx): n = 10 1.53875, 100 2.50759, 1,000 3.24144. Blom's approximation is within
    # 1 %; the Gumbel limit √(2 ln n) it replaced overstates them by 39 %, 21 % and 15 %.
    exact = {10: 1.53875, 100: 2.50759, 1000: 3.24144}
    got = timing.expected_max_normal(np.array([float(n) for n in exact]))
    for (n, mean), value in zip(exact.items(), got, strict=True):
        assert value == pytest.approx(mean, rel=0.01), n
        assert math.sqrt(2 * math.log(n)) > 1.14 * mean
    assert float(timing.expected_max_normal(1.0)) == 0.0


def test_profiles_default_the_dispatcher_to_their_published_recipe() -> None:
    # Megatron-Core's MoE README recommends alltoall for EP (its config default, allgather, is for ep 1);
    # torchtitan exchanges tokens with all_to_all_single. Neither overlaps the all-to-all by default.
    for slug in ("megatron-core", "fsdp2"):
        assert (PROFILES[slug].moe_dispatcher, PROFILES[slug].moe_a2a_overlap) == ("alltoall", False)
        assert "moe_dispatcher" in PROFILES[slug].sources
    request = {
        "model": {"preset": "mixtral-8x7b"},
        "training": {"tokens": 1e12, "global_batch_seqs": 1024},
        "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
    }
    training = parse_problem(request, **SPECS).training
    assert (training.moe_dispatcher, training.moe_a2a_overlap, training.moe_load_balance) == (
        "alltoall",
        False,
        "dropless",
    )


def test_interleaving_with_fewer_micro_batches_than_stages_idles_more_than_p_minus_1_over_v() -> None:
    # p = 8 stages, v = 4 chunks: with m ≥ 8 micro-batches per rank, (8 − 1)/4 = 1.75 micro-batch times
    # (Narayanan et al. 2021 Sec. 2.2.2). With m = 2 a micro-batch still crosses all 32 chunk stages, one
    # chunk time each, while a rank has 2 × 4 = 8 chunks: (32 + 2 − 1 − 8)/4 = 6.25 = (8 − 2) + (2 − 1)/4.
    # Without interleaving (v = 1) it is p − 1 = 7 whatever m.
    slots = timing.pipeline_bubble_slots(
        pp=np.array([8.0, 8.0, 8.0, 8.0]), v=np.array([4.0, 4.0, 1.0, 1.0]), m=np.array([16, 2, 16, 2])
    )
    assert slots.tolist() == pytest.approx([1.75, 6.25, 7.0, 7.0])


def test_interleaved_pipeline_sends_run_under_the_next_chunk_and_1f1b_waits_for_them() -> None:
    # Llama 3 70B (h 8,192, 8,192 tokens) on 64 HGX H100 nodes, tp 8 pp 8 dp 8 with SP, micro-batch 1, 4,096
    # sequences: m = 512 micro-batches per rank. tp × dp = 64 ranks fill the node, so the next stage is on
    # another node: one send of 2 B × 8,192 × 8,192 / 8 (SP) = 16.78 MB at 48 GB/s + 5 µs = 0.3545 ms, 2·v
    # of them per micro-batch. Megatron-Core's interleaved schedule overlaps them with the chunk passes
    # (--overlap-p2p-communication, arguments.py at core_r0.8.0), far longer than 1.4 ms, so only the 20 %
    # overlap penalty stays; without interleaving (v = 1), or a stack without the overlap, 1F1B waits for
    # each send whole.
    import dataclasses

    from clusterdesigner.engine.training.workload import layouts

    problem = parse_problem(
        {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_seqs": 4096},
            "cluster": {"accelerator": "h100-sxm", "nodes": 64, "fabric": "ib-ndr400"},
        },
        **SPECS,
    )
    send = 2 * 8192 * 8192 / 8 / NDR400_BUSBW + 5e-6
    assert send == pytest.approx(0.3545e-3, rel=1e-3)
    blocking = dataclasses.replace(
        problem, training=dataclasses.replace(problem.training, pipeline_p2p_overlap=False)
    )
    for v in (1, 2):
        lay = layouts(
            tp=8, pp=8, dp=8, cp=1, ep=1, vpp=v, micro_batch=1, recompute=0, sharding=1, sequence_parallel=1
        )
        raw = 512 * 2 * v * send
        waited = float(timing.step_time_parts(blocking, lay)["pp_p2p"][0])
        overlapped = float(timing.step_time_parts(problem, lay)["pp_p2p"][0])
        assert waited == pytest.approx(raw, rel=1e-9)
        assert overlapped == pytest.approx(raw if v == 1 else 0.2 * raw, rel=1e-9)
    assert PROFILES["megatron-core"].pipeline_p2p_overlap
    assert not PROFILES["megatron-lm-2022"].pipeline_p2p_overlap
