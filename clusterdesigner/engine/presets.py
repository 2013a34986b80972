"""Named model shapes (the model picker's list), each with the source of its numbers.

Models whose released configs set every dropout probability to 0 (Llama 2 and 3, MPT, BLOOM, Mixtral and
DeepSeek-V3 config.json files) have ``dropout=False``; GPT-3 and the Megatron models keep dropout on.

Parameter counts are computed from the shape (``ModelShape.total_params``), never typed in, so a preset
whose count is far from its name is a wrong shape; ``tests/engine/test_model.py`` checks each one.
"""

from __future__ import annotations

from types import MappingProxyType

from clusterdesigner.engine.model import ModelShape

_GPT3 = "Brown et al. 2020, Language Models are Few-Shot Learners (arXiv:2005.14165) Table 2.1"
_LLAMA2 = "Touvron et al. 2023, Llama 2 (arXiv:2307.09288) Table 1 and the released config.json files"
_LLAMA3 = "Llama Team 2024, The Llama 3 Herd of Models (arXiv:2407.21783) Table 3"
_MEGATRON = (
    "Narayanan et al. 2021 (arXiv:2104.04473) Table 1; Korthikanti et al. 2022 (arXiv:2205.05198) Table 3"
)
_BLOOM = "BigScience 2022, BLOOM (arXiv:2211.05100) Table 3; bigscience tr11-176B-ml config"
_MPT = "MosaicML 2023, MPT-7B / MPT-30B model cards and llm-foundry yamls (d_model, n_heads, n_layers)"
_MIXTRAL = "Jiang et al. 2024, Mixtral of Experts (arXiv:2401.04088) Table 1"
_DEEPSEEK = (
    "DeepSeek-AI 2024, DeepSeek-V3 Technical Report (arXiv:2412.19437) Sec. 2 and 4.2, and the released "
    "config.json (hidden 7168, 61 layers of which 3 dense, 256 routed + 1 shared experts of 2048, top-8, "
    "MLA q_lora_rank 1536, kv_lora_rank 512, qk_nope/qk_rope/v_head_dim 128/64/128, one MTP module): "
    "671.03B main-model parameters, 37.55B active"
)
_QWEN3 = (
    "Qwen Team 2025, Qwen3 Technical Report (arXiv:2505.09388) Table 2 and the released Qwen/Qwen3-30B-A3B "
    "and Qwen/Qwen3-235B-A22B config.json files (head_dim 128, untied embeddings, every layer MoE)"
)


def _qwen3(
    slug: str, name: str, *, layers: int, hidden: int, heads: int, ffn: int, expert: int
) -> ModelShape:
    """A Qwen3 MoE model: 4 KV heads of 128, 128 experts, top-8, every layer MoE, untied, no dropout."""
    return ModelShape(
        slug=slug,
        name=name,
        layers=layers,
        hidden=hidden,
        ffn_hidden=ffn,
        heads=heads,
        kv_heads=4,
        head_dim=128,
        vocab=151936,
        seq_len=4096,
        dropout=False,
        gated_mlp=True,
        experts=128,
        top_k=8,
        expert_ffn_hidden=expert,
        moe_layers=layers,
    )


_PRESETS: tuple[tuple[ModelShape, str], ...] = (
    (
        ModelShape(
            slug="gpt3-175b",
            name="GPT-3 175B",
            layers=96,
            hidden=12288,
            ffn_hidden=49152,
            heads=96,
            kv_heads=96,
            vocab=50257,
            seq_len=2048,
        ),
        _GPT3,
    ),
    (
        ModelShape(
            slug="llama2-7b",
            name="Llama 2 7B",
            layers=32,
            hidden=4096,
            ffn_hidden=11008,
            heads=32,
            kv_heads=32,
            vocab=32000,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA2,
    ),
    (
        ModelShape(
            slug="llama2-13b",
            name="Llama 2 13B",
            layers=40,
            hidden=5120,
            ffn_hidden=13824,
            heads=40,
            kv_heads=40,
            vocab=32000,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA2,
    ),
    (
        ModelShape(
            slug="llama2-70b",
            name="Llama 2 70B",
            layers=80,
            hidden=8192,
            ffn_hidden=28672,
            heads=64,
            kv_heads=8,
            vocab=32000,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA2,
    ),
    (
        ModelShape(
            slug="llama3-8b",
            name="Llama 3 8B",
            layers=32,
            hidden=4096,
            ffn_hidden=14336,
            heads=32,
            kv_heads=8,
            vocab=128256,
            seq_len=8192,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA3,
    ),
    (
        ModelShape(
            slug="llama3-70b",
            name="Llama 3 70B",
            layers=80,
            hidden=8192,
            ffn_hidden=28672,
            heads=64,
            kv_heads=8,
            vocab=128256,
            seq_len=8192,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA3,
    ),
    (
        ModelShape(
            slug="llama3-405b",
            name="Llama 3 405B",
            layers=126,
            hidden=16384,
            ffn_hidden=53248,
            heads=128,
            kv_heads=8,
            vocab=128256,
            seq_len=8192,
            dropout=False,
            gated_mlp=True,
        ),
        _LLAMA3,
    ),
    (
        ModelShape(
            slug="megatron-22b",
            name="Megatron 22B",
            layers=48,
            hidden=6144,
            ffn_hidden=24576,
            heads=64,
            kv_heads=64,
            vocab=51200,
            seq_len=2048,
        ),
        _MEGATRON,
    ),
    (
        ModelShape(
            slug="megatron-530b",
            name="Megatron 530B",
            layers=105,
            hidden=20480,
            ffn_hidden=81920,
            heads=128,
            kv_heads=128,
            vocab=51200,
            seq_len=2048,
        ),
        _MEGATRON,
    ),
    (
        ModelShape(
            slug="megatron-1t",
            name="Megatron 1T",
            layers=128,
            hidden=25600,
            ffn_hidden=102400,
            heads=160,
            kv_heads=160,
            vocab=51200,
            seq_len=2048,
        ),
        _MEGATRON,
    ),
    (
        ModelShape(
            slug="bloom-176b",
            name="BLOOM 176B",
            layers=70,
            hidden=14336,
            ffn_hidden=57344,
            heads=112,
            kv_heads=112,
            vocab=250880,
            seq_len=2048,
            dropout=False,
            tied_embeddings=True,
        ),
        _BLOOM,
    ),
    (
        ModelShape(
            slug="mpt-7b",
            name="MPT 7B",
            layers=32,
            hidden=4096,
            ffn_hidden=16384,
            heads=32,
            kv_heads=32,
            vocab=50432,
            seq_len=2048,
            dropout=False,
            tied_embeddings=True,
        ),
        _MPT,
    ),
    (
        ModelShape(
            slug="mpt-30b",
            name="MPT 30B",
            layers=48,
            hidden=7168,
            ffn_hidden=28672,
            heads=64,
            kv_heads=64,
            vocab=50432,
            seq_len=8192,
            dropout=False,
            tied_embeddings=True,
        ),
        _MPT,
    ),
    (
        ModelShape(
            slug="mixtral-8x7b",
            name="Mixtral 8x7B",
            layers=32,
            hidden=4096,
            ffn_hidden=14336,
            heads=32,
            kv_heads=8,
            vocab=32000,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
            experts=8,
            top_k=2,
            expert_ffn_hidden=14336,
            moe_layers=32,
        ),
        _MIXTRAL,
    ),
    (
        ModelShape(
            slug="deepseek-v3",
            name="DeepSeek-V3 671B",
            layers=61,
            hidden=7168,
            ffn_hidden=18432,
            heads=128,
            kv_heads=128,
            vocab=129280,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
            experts=256,
            top_k=8,
            expert_ffn_hidden=2048,
            shared_experts=1,
            moe_layers=58,
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_nope_head_dim=128,
            qk_rope_head_dim=64,
            v_head_dim=128,
            mtp_depth=1,
        ),
        _DEEPSEEK,
    ),
    (
        _qwen3("qwen3-30b-a3b", "Qwen3 30B-A3B", layers=48, hidden=2048, heads=32, ffn=6144, expert=768),
        _QWEN3,
    ),
    (
        _qwen3(
            "qwen3-235b-a22b", "Qwen3 235B-A22B", layers=94, hidden=4096, heads=64, ffn=12288, expert=1536
        ),
        _QWEN3,
    ),
)

PRESETS: MappingProxyType[str, ModelShape] = MappingProxyType({m.slug: m for m, _ in _PRESETS})
PRESET_SOURCES: MappingProxyType[str, str] = MappingProxyType({m.slug: src for m, src in _PRESETS})
