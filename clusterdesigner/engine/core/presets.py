"""Named model shapes (the model picker's list), each with the source of its numbers.

Models whose released configs set every dropout probability to 0 (Llama 2 and 3, MPT, BLOOM, Mixtral and
DeepSeek-V3 config.json files) have ``dropout=False``; GPT-3 and the Megatron models keep dropout on.

Norm and RoPE base (``rms_norm``, ``rope_theta``, read by the launch exports) are from each model's released
config.json: Llama 2 10,000, Llama 3 500,000, Mixtral and Qwen3 1,000,000, DeepSeek-V3 10,000, all RMSNorm.

Parameter counts are computed from the shape (``ModelShape.total_params``), never typed in, so a preset
whose count is far from its name is a wrong shape; ``tests/engine/test_model.py`` checks each one.
"""

from __future__ import annotations

from types import MappingProxyType

from clusterdesigner.engine.core.model import ModelShape

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
_GPT_OSS = (
    "OpenAI 2025, gpt-oss-120b & gpt-oss-20b Model Card (arXiv:2508.10925) Table 1 (116.83B / 20.91B total, "
    "5.13B / 3.61B active) and the released config.json (huggingface.co/openai/gpt-oss-120b and "
    "openai/gpt-oss-20b, main; read through copies: EchoCog/gpt-oss-20b docs/gpt-oss-20b-architecture.md, "
    "Hugging Face transformers GptOssConfig defaults): hidden 2880, 64 query heads and 8 KV heads of 64, "
    "experts of 2880 (SwiGLU), top-4, every layer MoE, layer_types alternating sliding_attention / "
    "full_attention with sliding_window 128, learned attention sinks, RMSNorm, rope_theta 150000 (YaRN x32 "
    "to 131,072), initial_context_length 4096, vocab 201088, untied"
)
_LLAMA4 = (
    "Meta 2025, Llama 4 Scout / Maverick model cards (109B / 400B total, 17B active) and the released "
    "config.json text_config (huggingface.co/meta-llama/Llama-4-Scout-17B-16E and Llama-4-Maverick-17B-128E, "
    "main; read through copies: Shameerisb/llama-4-scout_Implementation_Pytorch configs/text_config.py): "
    "hidden 5120, 40 heads and 8 KV heads of 128, experts of 8192 plus one shared expert, top-1, dense MLP "
    "16384 (intermediate_size_mlp), interleave_moe_layer_step 1 (Scout) / 2 (Maverick), attention_chunk_size "
    "8192 on three of four layers (no_rope_layer_interval 4: every fourth layer global, NoPE), RMSNorm, "
    "rope_theta 500000, vocab 202048, untied. The published totals include the vision encoder, which the "
    "text shape does not"
)
_KIMI_K2 = (
    "Moonshot AI 2025, Kimi K2 (arXiv:2507.20534) Sec. 2 and the model card (1.04T total, 32.6B active; "
    "'1T / 32B' on the card) and the released config.json (huggingface.co/moonshotai/Kimi-K2-Instruct, main; "
    "read through the hf-model-inspector report of Kimi-K2-Instruct-0905): the DeepSeek-V3 architecture with "
    "hidden 7168, 61 layers of which 1 dense (18432), 384 routed + 1 shared experts of 2048, top-8, 64 MLA "
    "heads (q_lora_rank 1536, kv_lora_rank 512, qk_nope/qk_rope/v 128/64/128), no MTP module, RMSNorm, "
    "rope_theta 50000, vocab 163840, untied"
)


def _gpt_oss(slug: str, name: str, *, layers: int, experts: int) -> ModelShape:
    """A GPT-OSS model: every layer MoE (top-4 of ``experts``), alternating sliding-window (128) and full
    attention layers with attention sinks, 64 query / 8 KV heads of 64."""
    return ModelShape(
        slug=slug,
        name=name,
        layers=layers,
        hidden=2880,
        ffn_hidden=2880,
        heads=64,
        kv_heads=8,
        head_dim=64,
        vocab=201088,
        seq_len=4096,
        dropout=False,
        gated_mlp=True,
        experts=experts,
        top_k=4,
        expert_ffn_hidden=2880,
        moe_layers=layers,
        sliding_window=128,
        local_layers=layers // 2,
        attention_sinks=True,
        rms_norm=True,
        rope_theta=150000,
    )


def _llama4(slug: str, name: str, *, experts: int, moe_layers: int) -> ModelShape:
    """A Llama 4 text model: 48 layers, top-1 of ``experts`` plus a shared expert in ``moe_layers`` of them,
    chunked attention (8,192) on 36 layers (three of four) and global attention on the other 12."""
    return ModelShape(
        slug=slug,
        name=name,
        layers=48,
        hidden=5120,
        ffn_hidden=16384,
        heads=40,
        kv_heads=8,
        vocab=202048,
        seq_len=8192,
        dropout=False,
        gated_mlp=True,
        experts=experts,
        top_k=1,
        expert_ffn_hidden=8192,
        shared_experts=1,
        moe_layers=moe_layers,
        attention_chunk=8192,
        local_layers=36,
        rms_norm=True,
        rope_theta=500000,
    )


def _qwen3(
    slug: str, name: str, *, layers: int, hidden: int, heads: int, ffn: int, expert: int
) -> ModelShape:
    """A Qwen3 MoE model: 4 KV heads of 128, 128 experts, top-8, every layer MoE, untied, no dropout,
    RMSNorm, rope_theta 1,000,000."""
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
        rms_norm=True,
        rope_theta=1000000,
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
            rms_norm=True,
            rope_theta=10000,
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
            rms_norm=True,
            rope_theta=10000,
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
            rms_norm=True,
            rope_theta=10000,
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
            rms_norm=True,
            rope_theta=500000,
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
            rms_norm=True,
            rope_theta=500000,
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
            rms_norm=True,
            rope_theta=500000,
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
            rms_norm=True,
            rope_theta=1000000,
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
            rms_norm=True,
            rope_theta=10000,
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
    (_gpt_oss("gpt-oss-120b", "GPT-OSS 120B", layers=36, experts=128), _GPT_OSS),
    (_gpt_oss("gpt-oss-20b", "GPT-OSS 20B", layers=24, experts=32), _GPT_OSS),
    (_llama4("llama4-scout", "Llama 4 Scout 17B-16E", experts=16, moe_layers=48), _LLAMA4),
    (_llama4("llama4-maverick", "Llama 4 Maverick 17B-128E", experts=128, moe_layers=24), _LLAMA4),
    (
        ModelShape(
            slug="kimi-k2",
            name="Kimi K2 1T",
            layers=61,
            hidden=7168,
            ffn_hidden=18432,
            heads=64,
            kv_heads=64,
            vocab=163840,
            seq_len=4096,
            dropout=False,
            gated_mlp=True,
            experts=384,
            top_k=8,
            expert_ffn_hidden=2048,
            shared_experts=1,
            moe_layers=60,
            q_lora_rank=1536,
            kv_lora_rank=512,
            qk_nope_head_dim=128,
            qk_rope_head_dim=64,
            v_head_dim=128,
            rms_norm=True,
            rope_theta=50000,
        ),
        _KIMI_K2,
    ),
)

PRESETS: MappingProxyType[str, ModelShape] = MappingProxyType({m.slug: m for m, _ in _PRESETS})
PRESET_SOURCES: MappingProxyType[str, str] = MappingProxyType({m.slug: src for m, src in _PRESETS})

# Hugging Face repositories of the presets with public weights (their model cards), for launch exports that
# load weights (the serving planner's vLLM command and Kubernetes manifest); the others have none.
PRESET_WEIGHTS: MappingProxyType[str, str] = MappingProxyType(
    {
        "llama2-7b": "meta-llama/Llama-2-7b-chat-hf",
        "llama2-13b": "meta-llama/Llama-2-13b-chat-hf",
        "llama2-70b": "meta-llama/Llama-2-70b-chat-hf",
        "llama3-8b": "meta-llama/Meta-Llama-3-8B-Instruct",
        "llama3-70b": "meta-llama/Meta-Llama-3-70B-Instruct",
        "llama3-405b": "meta-llama/Llama-3.1-405B-Instruct",
        "mixtral-8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "deepseek-v3": "deepseek-ai/DeepSeek-V3",
        "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
        "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
        "mpt-7b": "mosaicml/mpt-7b",
        "mpt-30b": "mosaicml/mpt-30b",
        "bloom-176b": "bigscience/bloom",
        "gpt-oss-120b": "openai/gpt-oss-120b",
        "gpt-oss-20b": "openai/gpt-oss-20b",
        "llama4-scout": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
        "llama4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        "kimi-k2": "moonshotai/Kimi-K2-Instruct",
    }
)
