"""The training engine's public entry point: one JSON request in, one JSON-serialisable response out.

``estimate(request, accelerators=..., fabrics=...)`` validates the request (every error names its dotted
field), evaluates the given layout or searches the omitted parallelism fields, and reports memory per GPU,
step time, throughput and MFU with their parts and the constants used. See docs/training-engine.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from clusterdesigner.engine.core.errors import (
    InfeasibleError,
    InputError,
    UnknownReferenceError,
    under,
)
from clusterdesigner.engine.core.hardware import (
    AcceleratorSpec,
    FabricSpec,
    accelerator_from_dict,
    fabric_from_dict,
)
from clusterdesigner.engine.core.model import (
    RECOMPUTE_FULL,
    RECOMPUTE_MODES,
    RECOMPUTE_SELECTIVE,
    ModelShape,
    model_from_dict,
)
from clusterdesigner.engine.core.presets import PRESET_SOURCES, PRESETS
from clusterdesigner.engine.training.error_band import MEMORY_HEADROOM, band_for_part, regime_key
from clusterdesigner.engine.training.framework import (
    ATTENTION_KERNELS,
    DEFAULT_FRAMEWORK,
    FLEX_DISPATCHERS,
    MOE_DISPATCHERS,
    MOE_LOAD_BALANCES,
    PROFILES,
    FrameworkProfile,
    profile,
    profile_assumptions,
)
from clusterdesigner.engine.training.layout_search import (
    MAX_SEARCH_GPUS,
    SearchResult,
    evaluate,
    search,
    structural_checks,
    structurally_valid,
    usable_gib,
)
from clusterdesigner.engine.training.levers import (
    DEFAULT_RECOMPUTE_MODULES,
    FP8_INPUT_STORE_ASSUMPTION,
    LEVER_ASSUMPTIONS,
    LORA_MODULES,
    OFFLOAD_ASSUMPTION,
    OFFLOAD_MODULES,
    RECOMPUTE_MODULES,
    check_fp8_input_store,
    check_offload_modules,
    check_recompute_modules,
    hardware_flops,
    training_flops_per_token,
)
from clusterdesigner.engine.training.memory import (
    MEMORY_ASSUMPTIONS,
    end_stage_layers,
    layout_recompute_share,
    weight_bytes,
)
from clusterdesigner.engine.training.optimizer import (
    ADAM_STATE_BYTES,
    MUON_ASSUMPTIONS,
    MUON_STATE_BYTES,
    OPTIMIZERS,
)
from clusterdesigner.engine.training.precision import (
    FP8_RECIPES,
    PRECISIONS,
    check_supported,
    recipe_assumptions,
    recipe_for,
)
from clusterdesigner.engine.training.search_settings import searchable_settings, with_settings
from clusterdesigner.engine.training.timing import (
    CPU_ADAM_ASSUMPTION,
    REGIME_EFFICIENCY,
    REGIME_SOURCES,
    TIMING_ASSUMPTIONS,
    attention_kernel_assumption,
    family_efficiency,
    moe_assumptions,
    shape_assumptions,
)
from clusterdesigner.engine.training.training_result import (
    AssumptionUsed,
    ErrorBand,
    Layout,
    LayoutEstimate,
    MemoryPerGpu,
    RunSettings,
    SearchCounts,
    StepTime,
    Summary,
    TrainingEstimate,
)
from clusterdesigner.engine.training.workload import (
    GIB,
    LAYOUT_FIELDS,
    SHARDING_MODES,
    Assumption,
    Cluster,
    IntArray,
    Problem,
    Sections,
    Training,
    layout_row,
    layouts,
    parse_pipeline_layout,
)

PIPELINE_SPLITS = ("balanced", "uniform")
CROSS_ENTROPY_KINDS = ("fp32", "fused", "upcast")
MAX_MOE_DOMAINS_PER_TOKEN = 1024
MAX_FSDP_COLLECTIVES_PER_LAYER = 64
# The widest gradient reduce dtype a sharded-data-parallel stack reduce-scatters in: float32, 4 B.
MAX_REDUCE_BYTES = 4.0
MAX_ETP = 1024
DEFAULT_CANDIDATES = 10
_SINGLE_NODE_FABRIC = FabricSpec(
    slug="none",
    name="none (single node)",
    kind="none",
    port_gbps=1.0,
    latency_us=0.0,
    collective_efficiency=1.0,
)


def model_presets() -> list[dict[str, Any]]:
    """The named models for pickers: slug, name, total params, active params and the shape's source."""
    return [
        {
            "slug": m.slug,
            "name": m.name,
            "params": m.total_params,
            "active_params": m.active_params,
            "source": PRESET_SOURCES[m.slug],
        }
        for m in PRESETS.values()
    ]


# ---- request parsing ------------------------------------------------------------------------------------
def _section(request: Mapping[str, Any], name: str, *, at: str, required: bool = True) -> Mapping[str, Any]:
    """The request's section ``name``, which sits at ``at`` in what the user sent."""
    value = request.get(name)
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise InputError("must be an object", field=at)
    return value


def _number(
    section: Mapping[str, Any],
    key: str,
    path: str,
    *,
    default: float | None = None,
    minimum: float = 0.0,
    strict: bool = True,
    maximum: float = math.inf,
) -> float:
    value = section.get(key, default)
    if value is None:
        raise InputError("is required", field=f"{path}.{key}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"must be a number, got {value!r}", field=f"{path}.{key}")
    if value < minimum or (strict and value == minimum):
        raise InputError(
            f"must be {'greater than' if strict else 'at least'} {minimum:g}, got {value!r}",
            field=f"{path}.{key}",
        )
    if value > maximum:
        raise InputError(f"must be at most {maximum:g}, got {value!r}", field=f"{path}.{key}")
    return float(value)


def _whole(
    section: Mapping[str, Any], key: str, path: str, *, default: int | None = None, maximum: float = math.inf
) -> int:
    value = _number(section, key, path, default=default, minimum=1, strict=False, maximum=maximum)
    if not float(value).is_integer():
        raise InputError(f"must be a whole number, got {section.get(key)!r}", field=f"{path}.{key}")
    return int(value)


def _choice(section: Mapping[str, Any], key: str, path: str, choices: tuple[str, ...], default: str) -> str:
    value = section.get(key, default)
    if value not in choices:
        raise InputError(f"must be one of {', '.join(choices)}, got {value!r}", field=f"{path}.{key}")
    return str(value)


def _flag(section: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = section.get(key, default)
    if not isinstance(value, bool):
        raise InputError("must be true or false", field=f"{path}.{key}")
    return value


def _reference(
    cluster: Mapping[str, Any], key: str, known: Mapping[str, Any], from_dict: Any, at: str, path: str
) -> Any:
    """``cluster.<key>`` as a catalog slug looked up in ``known`` or an inline spec built by ``from_dict``
    (the cluster sitting at ``at``, the field at ``path``)."""
    ref = cluster.get(key)
    if isinstance(ref, str):
        if ref not in known:
            raise UnknownReferenceError(
                f"unknown {key} {ref!r}; known: {', '.join(sorted(known)) or 'none'}", field=path
            )
        return known[ref]
    if isinstance(ref, Mapping):
        try:
            return from_dict({"slug": "custom", **ref})
        except KeyError as exc:
            raise InputError(
                f"an inline {key} needs {exc.args[0]!r}", field=f"{path}.{exc.args[0]}"
            ) from None
        except InputError as exc:
            raise InputError(exc.message, field=under(at, exc.field)) from None
        except (TypeError, ValueError) as exc:
            raise InputError(f"inline {key}: {exc}", field=path) from None
    raise InputError(f"must be a {key} slug or an inline spec object", field=path)


def _fabric(cluster: Mapping[str, Any], fabrics: Mapping[str, FabricSpec], nodes: int, at: str) -> FabricSpec:
    if cluster.get("fabric") is None:
        if nodes > 1:
            raise InputError("is required when the cluster has more than one node", field=under(at, "fabric"))
        return _SINGLE_NODE_FABRIC
    fabric: FabricSpec = _reference(cluster, "fabric", fabrics, fabric_from_dict, at, under(at, "fabric"))
    return fabric


# Upper bounds of the training numbers a request may give: physically meaningful (the design spec's serializer
# states the same for tokens and the batch) and far below where the memory and step-time arithmetic overflows
# (a batch of 1e300 tokens passed, then failed mid-sweep with OverflowError).
MAX_TRAINING: dict[str, float] = {
    "tokens": 1e16,
    "global_batch_tokens": 1e10,
    "global_batch_seqs": 1e8,
    "optimizer_bytes_per_param": 1e3,
    "framework_reserve_gib": 1e4,
    "memory_headroom": 0.5,
}


def _expert_tp(tr: Mapping[str, Any], model: ModelShape, at: str) -> int:
    """``training.etp``, the expert tensor-parallel size (Megatron-Core's --expert-tensor-parallel-size), or
    0 when not given (experts split by tp). It splits each expert's FFN width, so it must divide
    expert_ffn_hidden (Megatron-Core's column/row-parallel expert linears)."""
    if tr.get("etp") is None:
        return 0
    etp = _whole(tr, "etp", at, maximum=MAX_ETP)
    if not model.is_moe:
        raise InputError("etp needs a mixture-of-experts model", field=under(at, "etp"))
    if model.expert_ffn_hidden % etp:
        raise InputError(
            f"etp {etp} does not divide expert_ffn_hidden {model.expert_ffn_hidden}", field=under(at, "etp")
        )
    return etp


def _names(
    section: Mapping[str, Any], key: str, choices: tuple[str, ...], default: tuple[str, ...], at: str
) -> tuple[str, ...]:
    """A list of distinct names from ``choices`` (``training.<key>``, the section sitting at ``at``), in the
    order given."""
    value = section.get(key, list(default))
    field = under(at, key)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InputError(f"must be a list of names from {', '.join(choices)}", field=field)
    unknown = [v for v in value if v not in choices]
    if unknown:
        raise InputError(f"unknown {unknown[0]!r}; use {', '.join(choices)}", field=field)
    if len(set(value)) != len(value):
        raise InputError("names a module twice", field=field)
    return tuple(value)


def _memory_levers(tr: Mapping[str, Any], model: ModelShape, precision: str, at: str) -> dict[str, Any]:
    """``training``'s memory levers (levers.py): recompute_modules, activation_offload_layers,
    activation_offload_modules, optimizer_offload, lora_rank and lora_modules, recompute_num_layers,
    fp8_params and activation_func_fp8_input_store; all off by default."""
    modules = _names(tr, "recompute_modules", RECOMPUTE_MODULES, DEFAULT_RECOMPUTE_MODULES, at)
    check_recompute_modules(model, modules, field=under(at, "recompute_modules"))
    offload = 0
    if tr.get("activation_offload_layers") not in (None, 0):
        # Megatron-Core: 0 < cpu_offloading_num_layers < num_layers (transformer_config.py).
        offload = _whole(tr, "activation_offload_layers", at, maximum=model.layers - 1)
    offload_modules = _names(tr, "activation_offload_modules", OFFLOAD_MODULES, (), at)
    check_offload_modules(
        model, offload_modules, offload_layers=offload, field=under(at, "activation_offload_modules")
    )
    fp8_store = _flag(tr, "activation_func_fp8_input_store", at, False)
    check_fp8_input_store(model, fp8_store, field=under(at, "activation_func_fp8_input_store"))
    stack = _framework(tr, at)
    for key, on in (
        ("activation_offload_modules", offload_modules),
        ("activation_func_fp8_input_store", fp8_store),
    ):
        # Megatron-Core's own options (transformer_config.py); the other stacks keep other tensors too.
        if on and stack.slug != DEFAULT_FRAMEWORK:
            raise InputError(f"is a Megatron-Core option; {stack.name} has none", field=under(at, key))
    lora_rank = 0
    if tr.get("lora_rank") not in (None, 0):
        lora_rank = _whole(tr, "lora_rank", at, maximum=min(model.hidden, 65536))
    lora_modules = _names(tr, "lora_modules", LORA_MODULES, LORA_MODULES, at) if lora_rank else ()
    if lora_rank and not lora_modules:
        raise InputError("LoRA needs at least one target module", field=under(at, "lora_modules"))
    return {
        "recompute_modules": modules,
        "activation_offload_layers": offload,
        "activation_offload_modules": offload_modules,
        "activation_func_fp8_input_store": fp8_store,
        "optimizer_offload": _flag(tr, "optimizer_offload", at, False),
        "lora_rank": lora_rank,
        "lora_modules": lora_modules,
        **_block_recompute_and_fp8_params(tr, model, precision, at),
    }


def _block_recompute_and_fp8_params(
    tr: Mapping[str, Any], model: ModelShape, precision: str, at: str
) -> dict[str, Any]:
    """``training.recompute_num_layers`` (Megatron-Core --recompute-method block --recompute-num-layers N: at
    most the model's layers; the layers per stage are checked against each layout, search._recompute_checks)
    and ``training.fp8_params`` (--fp8-param-gather / Transformer Engine fp8_model_init: FP8 weights, which
    need FP8 training, as Megatron-LM's arguments.py ties --fp8-param-gather to --fp8-format)."""
    layers = 0
    if tr.get("recompute_num_layers") not in (None, 0):
        layers = _whole(tr, "recompute_num_layers", at, maximum=model.layers)
    fp8_params = _flag(tr, "fp8_params", at, False)
    if fp8_params and precision not in FP8_RECIPES:
        raise InputError(
            f"FP8 weights need precision fp8 or another FP8 recipe ({', '.join(FP8_RECIPES[1:])}), "
            f"got {precision}",
            field=under(at, "fp8_params"),
        )
    return {"recompute_num_layers": layers, "fp8_params": fp8_params}


def _batch_seqs(tr: Mapping[str, Any], model: ModelShape, at: str) -> int:
    """``training.global_batch_seqs``, or ``global_batch_tokens`` as a whole number of sequences."""
    if "global_batch_seqs" in tr:
        return _whole(tr, "global_batch_seqs", at, maximum=MAX_TRAINING["global_batch_seqs"])
    if "global_batch_tokens" in tr:
        batch_tokens = _number(tr, "global_batch_tokens", at, maximum=MAX_TRAINING["global_batch_tokens"])
        if batch_tokens % model.seq_len:
            raise InputError(
                f"must be a multiple of seq_len {model.seq_len}", field=under(at, "global_batch_tokens")
            )
        return int(batch_tokens // model.seq_len)
    raise InputError("give global_batch_tokens or global_batch_seqs", field=under(at, "global_batch_tokens"))


def _framework(tr: Mapping[str, Any], at: str) -> FrameworkProfile:
    """``training.framework``: the stack whose defaults and layouts apply (engine/training/framework.py)."""
    return profile(_choice(tr, "framework", at, tuple(PROFILES), DEFAULT_FRAMEWORK))


def _stack_knobs(tr: Mapping[str, Any], stack: FrameworkProfile, at: str) -> dict[str, Any]:
    """The stack-dependent Training fields: the request's value where given, else the profile's."""
    collectives = _whole(tr, "fsdp_collectives_per_layer", at, default=stack.fsdp_collectives_per_layer)
    if collectives > MAX_FSDP_COLLECTIVES_PER_LAYER:
        raise InputError(
            f"must be at most {MAX_FSDP_COLLECTIVES_PER_LAYER}, got {collectives}",
            field=under(at, "fsdp_collectives_per_layer"),
        )
    return {
        "framework": stack.slug,
        "selective_recompute": stack.selective_recompute,
        "pipeline_grad_bytes": stack.pipeline_grad_bytes,
        "reduce_bytes": _number(
            tr, "reduce_bytes", at, default=stack.reduce_bytes, strict=False, maximum=MAX_REDUCE_BYTES
        ),
        "pipeline_p2p_overlap": stack.pipeline_p2p_overlap,
        "pipeline_engine": stack.pipeline_engine,
        "tp_comm_overlap": _flag(tr, "tp_comm_overlap", at, stack.tp_comm_overlap),
        "tp_backward_async": _flag(tr, "tp_backward_async", at, stack.tp_backward_async),
        "fsdp_collectives_per_layer": collectives,
        "fsdp_overlap": _flag(tr, "fsdp_overlap", at, stack.fsdp_overlap),
        "checkpoint_early_stop": _flag(tr, "checkpoint_early_stop", at, stack.checkpoint_early_stop),
        "cross_entropy": _choice(tr, "cross_entropy", at, CROSS_ENTROPY_KINDS, stack.cross_entropy),
        "attention_kernel": _choice(tr, "attention_kernel", at, ATTENTION_KERNELS, stack.attention_kernel),
        "framework_reserve_gib": _number(
            tr,
            "framework_reserve_gib",
            at,
            default=stack.framework_reserve_gib,
            strict=False,
            maximum=MAX_TRAINING["framework_reserve_gib"],
        ),
    }


def _moe_knobs(tr: Mapping[str, Any], precision: str, stack: FrameworkProfile, at: str) -> dict[str, Any]:
    """The mixture-of-experts token-exchange fields of Training; the dispatcher and the all-to-all overlap
    default to the framework profile's published recipe."""
    max_domains = (
        _whole(tr, "moe_max_domains_per_token", at, maximum=MAX_MOE_DOMAINS_PER_TOKEN)
        if isinstance(tr.get("moe_max_domains_per_token", 0), bool) or tr.get("moe_max_domains_per_token", 0)
        else 0
    )
    fp8_dispatch = _flag(tr, "moe_fp8_dispatch", at, False)
    if fp8_dispatch and precision not in FP8_RECIPES:
        # DeepSeek-V3's FP8 dispatch feeds the FP8 up-projection GEMM (arXiv:2412.19437 Sec. 3.3.3), as
        # Megatron-Core's mxfp8 dispatch feeds the FP8 grouped GEMM: it comes with FP8 training.
        raise InputError(
            f"FP8 dispatch needs precision fp8 or another FP8 recipe ({', '.join(FP8_RECIPES[1:])})",
            field=under(at, "moe_fp8_dispatch"),
        )
    return {
        "moe_dispatcher": _choice(tr, "moe_dispatcher", at, MOE_DISPATCHERS, stack.moe_dispatcher),
        "moe_load_balance": _choice(tr, "moe_load_balance", at, MOE_LOAD_BALANCES, "dropless"),
        "moe_max_domains_per_token": max_domains,
        "moe_fp8_dispatch": fp8_dispatch,
        "moe_a2a_overlap": _flag(tr, "moe_a2a_overlap", at, stack.moe_a2a_overlap),
        "moe_shared_expert_overlap": _flag(tr, "moe_shared_expert_overlap", at, False),
    }


def _parse_training(tr: Mapping[str, Any], model: ModelShape, at: str) -> Training:
    """The ``training`` section (sitting at ``at``): tokens, batch, precision, optimizer, headroom and the
    stack's knobs."""
    tokens = _number(tr, "tokens", at, maximum=MAX_TRAINING["tokens"])
    batch = _batch_seqs(tr, model, at)
    stack = _framework(tr, at)
    precision = _choice(tr, "precision", at, PRECISIONS, "bf16")
    grad_dtype = tr.get("grad_dtype", "bf16")
    if grad_dtype not in ("bf16", "fp32"):
        raise InputError(f"must be bf16 or fp32, got {grad_dtype!r}", field=under(at, "grad_dtype"))
    optimizer = _choice(tr, "optimizer", at, OPTIMIZERS, "adam")
    if optimizer == "muon" and _flag(tr, "optimizer_offload", at, False):
        raise InputError(
            "optimizer offload steps Adam on the CPU; Muon's Newton-Schulz iterations run on the GPU",
            field=under(at, "optimizer_offload"),
        )
    optimizer_bytes = _number(
        tr,
        "optimizer_bytes_per_param",
        at,
        default=MUON_STATE_BYTES if optimizer == "muon" else ADAM_STATE_BYTES,
        maximum=MAX_TRAINING["optimizer_bytes_per_param"],
    )
    memory_headroom = _number(
        tr,
        "memory_headroom",
        at,
        default=MEMORY_HEADROOM,
        strict=False,
        maximum=MAX_TRAINING["memory_headroom"],
    )
    knobs = _stack_knobs(tr, stack, at)
    moe = _moe_knobs(tr, precision, stack, at)
    layout = None
    if tr.get("pipeline_layout") is not None:
        layout = parse_pipeline_layout(
            tr["pipeline_layout"],
            layers=model.layers,
            mtp_depth=model.mtp_depth,
            field=under(at, "pipeline_layout"),
        )
    return Training(
        pipeline_layout=layout,
        **moe,
        **knobs,
        etp=_expert_tp(tr, model, at),
        pipeline_split=_choice(tr, "pipeline_split", at, PIPELINE_SPLITS, "balanced"),
        optimizer_bytes=optimizer_bytes,
        optimizer=optimizer,
        tokens=tokens,
        global_batch_seqs=batch,
        precision=precision,
        grad_bytes=4.0 if grad_dtype == "fp32" else 2.0,
        flash_attention=_flag(tr, "flash_attention", at, True),
        memory_headroom=memory_headroom,
        **_memory_levers(tr, model, precision, at),
    )


def parse_problem(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    where: Sections | None = None,
) -> Problem:
    """Model, training and cluster from the request (everything but the parallelism). ``where``: where the
    request's sections sit in what the user sent (default: a request sent as it is); every error names its
    field there, and the problem keeps it for the errors the engine raises later."""
    where = where or Sections()
    if not isinstance(request, Mapping):
        raise InputError("the request must be a JSON object", field="")
    model: ModelShape = model_from_dict(
        _section(request, "model", at=where.model), presets=PRESETS, at=where.model
    )
    training = _parse_training(_section(request, "training", at=where.training), model, where.training)
    precision = training.precision
    cl = _section(request, "cluster", at=where.cluster)
    accelerator: AcceleratorSpec = _reference(
        cl, "accelerator", accelerators, accelerator_from_dict, where.cluster, where.cluster_accelerator
    )
    check_supported(recipe_for(precision), accelerator, field=under(where.training, "precision"))
    offloads = training.activation_offload_layers or training.activation_offload_modules
    if (offloads or training.optimizer_offload) and accelerator.host_link_gbps <= 0:
        raise InputError(
            f"{accelerator.name} has no host-link bandwidth (host_link_gbps), which offloading needs",
            field=where.cluster_accelerator,
        )
    gpus_per_node = _whole(cl, "gpus_per_node", where.cluster, default=8)
    nodes = _whole(cl, "nodes", where.cluster)
    fabric = _fabric(cl, fabrics, nodes, where.cluster)
    oversub = _number(cl, "oversubscription", where.cluster, default=1.0, minimum=1.0, strict=False)
    nic = _number(cl, "scaleout_gbps_per_gpu", where.cluster, default=fabric.port_gbps)
    searched = searchable_settings(
        _section(request, "training", at=where.training),
        training,
        layers=model.layers,
        host_link_gbps=accelerator.host_link_gbps,
    )
    training = replace(training, searched_settings=searched)
    try:
        cluster = Cluster(
            accelerator=accelerator,
            fabric=fabric,
            gpus_per_node=gpus_per_node,
            nodes=nodes,
            oversubscription=oversub,
            scaleout_gbps_per_gpu=nic,
        )
    except InputError as exc:  # the cluster's own check names its field (gpus_per_node)
        raise exc.within(where.cluster) from None
    return Problem(model=model, training=training, cluster=cluster, where=where)


def parse_parallelism(request: Mapping[str, Any], *, at: str = "parallelism") -> dict[str, int]:
    """The fixed layout fields (recompute/sharding as indices); omitted fields are searched. ``at``: where
    the request's ``parallelism`` sits in what the user sent."""
    par = _section(request, "parallelism", at=at, required=False)
    fixed: dict[str, int] = {}
    for key in ("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch"):
        if key in par and par[key] is not None:
            fixed[key] = _whole(par, key, at)
    for key, modes in (("recompute", RECOMPUTE_MODES), ("sharding", SHARDING_MODES)):
        if key in par and par[key] is not None:
            fixed[key] = modes.index(_choice(par, key, at, modes, ""))
    if "sequence_parallel" in par and par["sequence_parallel"] is not None:
        if not isinstance(par["sequence_parallel"], bool):
            raise InputError("must be true or false", field=under(at, "sequence_parallel"))
        fixed["sequence_parallel"] = int(par["sequence_parallel"])
    unknown = set(par) - set(LAYOUT_FIELDS)
    if unknown:
        key = sorted(unknown)[0]
        raise InputError(f"unknown parallelism field {key!r}", field=under(at, key))
    return fixed


def _check_degrees_fit_cluster(fixed: Mapping[str, int], n_gpus: int, at: str) -> None:
    """The given tp, pp, cp and dp must divide the GPU count (and, all four given, use all of it): say which
    one does not, before a search that would find no layout. ``at``: where the layout sits."""
    given: list[str] = []
    product = 1
    for key in ("tp", "pp", "cp", "dp"):
        if key not in fixed:
            continue
        given.append(key)
        product *= fixed[key]
        if n_gpus % product:
            what = f"{key} {fixed[key]}" if len(given) == 1 else f"{' × '.join(given)} = {product}"
            raise InputError(f"{what} does not divide the cluster's {n_gpus} GPUs", field=under(at, key))
    if len(given) == 4 and product != n_gpus:
        raise InputError(
            f"tp × pp × cp × dp = {product} but the cluster has {n_gpus} GPUs", field=under(at, "dp")
        )


# ---- results --------------------------------------------------------------------------------------------
def _rows(problem: Problem, lay: Mapping[str, IntArray]) -> list[LayoutEstimate]:
    """Full result objects for a (small) batch of layouts."""
    mem, times = evaluate(problem, lay)
    model, training, cluster = problem.model, problem.training, problem.cluster
    n_gpus = cluster.num_gpus
    recipe = recipe_for(training.precision)
    peak = cluster.accelerator.peak_tflops(recipe.matmul_precision)
    tokens_per_step = training.global_batch_seqs * model.seq_len
    hw_flops = hardware_flops(
        model, training, lay["recompute"], full_share=layout_recompute_share(problem, lay)
    )
    cap = cluster.accelerator.memory_gib
    band = band_for_part(
        # A measured recipe's runs are among its calibration precision's rows (fp8_current among fp8's).
        regime_key(
            cluster.accelerator.family, recipe.calibration_precision, model.is_moe, n_gpus, model.seq_len
        )
        if recipe.measured
        else regime_key(cluster.accelerator.family, recipe.name, model.is_moe, n_gpus, model.seq_len),
        part=cluster.accelerator.slug,
        measured=recipe.measured,
    )
    rows = []
    for i in range(lay["tp"].size):
        step = float(times["total"][i])
        tps = tokens_per_step / step
        low, high = band.low(tps), band.high(tps)
        model_tflops = training_flops_per_token(model, training) * tps / n_gpus / 1e12
        hw_tflops = float(hw_flops[i]) * tps / n_gpus / 1e12
        total_gib = float(mem["total"][i]) / GIB
        rows.append(
            LayoutEstimate(
                parallelism=Layout.from_json(layout_row(lay, i)),
                fits=total_gib <= cap,
                memory_per_gpu_gib=MemoryPerGpu(**{k: round(float(v[i]) / GIB, 3) for k, v in mem.items()}),
                memory_capacity_gib=cap,
                headroom_gib=round(cap - total_gib, 3),
                step_time_s=StepTime(**{k: float(v[i]) for k, v in times.items()}),
                model_tflops_per_gpu=model_tflops,
                hardware_tflops_per_gpu=hw_tflops,
                mfu=model_tflops / peak,
                hfu=hw_tflops / peak,
                tokens_per_second=tps,
                time_to_train_days=training.tokens / tps / 86400.0,
                error_band=ErrorBand(
                    regime=band.regime,
                    basis=band.basis,
                    rows=band.rows,
                    tokens_per_second_low=low,
                    tokens_per_second_high=high,
                    days_low=training.tokens / high / 86400.0,
                    days_high=training.tokens / low / 86400.0,
                ),
            )
        )
    return rows


def search_rows(problem: Problem, result: SearchResult) -> list[LayoutEstimate]:
    """A search's best layouts as result rows, best first, each evaluated with the run settings the search
    chose for it (``result.best_settings``), which the row states when the problem searched any."""
    rows: list[LayoutEstimate | None] = [None] * result.best["tp"].size
    codes = [tuple(sorted(s.items())) for s in result.best_settings]
    for code in dict.fromkeys(codes):
        idx = np.array([i for i, c in enumerate(codes) if c == code], dtype=np.int64)
        settings = dict(code)
        lay = {k: a[idx] for k, a in result.best.items()}
        for i, row in zip(idx.tolist(), _rows(with_settings(problem, settings), lay), strict=True):
            rows[i] = replace(row, settings=RunSettings(**settings)) if settings else row
    return [row for row in rows if row is not None]


def exotic_features(row: Layout, gpus_per_node: int) -> tuple[str, ...]:
    """The features of a layout that fewer production runs use, each a risk the calibration rows barely
    cover: an interleaved schedule, context or expert parallelism, fully sharded states, TP across nodes."""
    found = []
    if row.vpp > 1:
        found.append("interleaved pipeline")
    if row.cp > 1:
        found.append("context parallelism")
    if row.ep > 1:
        found.append("expert parallelism")
    if row.sharding in ("zero3", "hsdp"):
        found.append(f"{row.sharding} sharding")
    if row.tp > gpus_per_node:
        found.append("tensor parallelism across nodes")
    return tuple(found)


def robustness(candidates: tuple[LayoutEstimate, ...], gpus_per_node: int) -> tuple[int, ...]:
    """The ties of a search, most robust first: the indices of the candidates whose tokens/s reaches the low
    end of the best one's error band (the estimate cannot rank them), ordered by fewer exotic features,
    then more memory headroom, then speed."""
    best = candidates[0]
    if best.error_band is None:
        return (0,)
    low = best.error_band.tokens_per_second_low
    tied = [i for i, c in enumerate(candidates) if c.tokens_per_second >= low]
    return tuple(
        sorted(
            tied,
            key=lambda i: (
                len(exotic_features(candidates[i].parallelism, gpus_per_node)),
                -candidates[i].headroom_gib,
                -candidates[i].tokens_per_second,
            ),
        )
    )


def _tp_backward_assumption(on: bool, stack: FrameworkProfile) -> Assumption:
    """How the TP collectives run without TP communication overlap (timing._tp_comm_layer)."""
    if on:
        source = stack.sources.get("tp_backward_async", "set by training.tp_backward_async")
        text = "the column-parallel linears' backward input-gradient collective runs under their "
        text += f"weight-gradient GEMM; the other TP collectives wait: {source}"
    else:
        text = "every TP collective waits (training.tp_backward_async false, or a stack without it)"
    return Assumption("tp_backward_async", 1.0 if on else 0.0, "flag", text)


def _assumptions(problem: Problem) -> tuple[AssumptionUsed, ...]:
    acc = problem.cluster.accelerator
    items: list[Assumption] = [*MEMORY_ASSUMPTIONS, *TIMING_ASSUMPTIONS, *shape_assumptions(problem)]
    stack = profile(problem.training.framework)
    items.extend(profile_assumptions(stack))
    default = problem.training.attention_kernel == stack.attention_kernel
    items.append(
        attention_kernel_assumption(
            problem,
            profile_source=(
                f"{stack.name} profile default: {stack.sources['attention_kernel']}" if default else None
            ),
        )
    )
    if problem.model.is_moe:
        items.extend(moe_assumptions(problem.training))
    if not problem.training.tp_comm_overlap:
        items.append(_tp_backward_assumption(problem.training.tp_backward_async, stack))
    if problem.training.lora_rank:
        items.extend(LEVER_ASSUMPTIONS)
    if problem.training.optimizer_offload:
        items.append(CPU_ADAM_ASSUMPTION)
    if problem.training.optimizer == "muon":
        items.extend(MUON_ASSUMPTIONS)
    if problem.training.activation_offload_modules:
        items.append(OFFLOAD_ASSUMPTION)
    if problem.training.activation_func_fp8_input_store:
        items.append(FP8_INPUT_STORE_ASSUMPTION)
    recipe = recipe_for(problem.training.precision)
    regime = (acc.family, recipe.calibration_precision)
    if regime in REGIME_EFFICIENCY:
        stand_in = "" if recipe.measured else f"; stands in for {recipe.label}, which has no measured run"
        items.append(
            Assumption(
                f"regime_efficiency[{acc.family}/{recipe.calibration_precision}]",
                family_efficiency(acc, recipe.calibration_precision),
                f"of achievable {recipe.calibration_precision} matmul",
                f"calibration factor of this family and precision, fitted by bench/calibration_fit.py on "
                f"{REGIME_SOURCES[regime]}; checked on the other rows{stand_in}",
            )
        )
    items.extend(recipe_assumptions(recipe, acc.family))
    items.append(
        Assumption(
            f"family_efficiency[{acc.family or 'unknown'}]",
            family_efficiency(acc),
            "of achievable matmul",
            "one calibration factor per accelerator family, fitted to tests/engine/data/runs.csv "
            "(docs/training-engine.md, 'Calibration')",
        )
    )
    return tuple(AssumptionUsed.from_json(a.as_dict()) for a in items)


def _summary(problem: Problem) -> Summary:
    m, t, c = problem.model, problem.training, problem.cluster
    return Summary.from_json(
        {
            "model": {
                "name": m.name,
                "slug": m.slug,
                "params": m.total_params,
                "active_params": m.active_params,
                "layers": m.layers,
                "hidden": m.hidden,
                "ffn_hidden": m.ffn_hidden,
                "heads": m.heads,
                "kv_heads": m.kv_heads,
                "vocab": m.vocab,
                "seq_len": m.seq_len,
                "gated_mlp": m.gated_mlp,
                "dropout": m.dropout,
                "experts": m.experts,
                "top_k": m.top_k,
                "model_flops_per_token": training_flops_per_token(m, t),
            },
            "training": {
                "tokens": t.tokens,
                "global_batch_seqs": t.global_batch_seqs,
                "global_batch_tokens": t.global_batch_seqs * m.seq_len,
                "precision": t.precision,
                "grad_bytes": t.grad_bytes,
                "flash_attention": t.flash_attention,
                "pipeline_split": t.pipeline_split,
                "cross_entropy": t.cross_entropy,
                "fsdp_collectives_per_layer": t.fsdp_collectives_per_layer,
                "fsdp_overlap": t.fsdp_overlap,
                "memory_headroom": t.memory_headroom,
            },
            "cluster": {
                "accelerator": c.accelerator.slug,
                "fabric": c.fabric.slug,
                "gpus": c.num_gpus,
                "gpus_per_node": c.gpus_per_node,
                "nodes": c.nodes,
                "peak_tflops": c.accelerator.peak_tflops(recipe_for(t.precision).matmul_precision),
                "oversubscription": c.oversubscription,
                "scaleout_gbps_per_gpu": c.nic_gbps_per_gpu,
            },
        }
    )


@dataclass(frozen=True)
class TrainingRequest:
    """A training request parsed and checked: the model, training and cluster (``problem``, which keeps
    where each section sits in what the user sent: ``problem.where``), the layout fields given (``fixed``;
    the others are searched) and how many candidates a search keeps. An error raised while estimating it
    names the user's field from ``problem.where``, as the parser named its own."""

    problem: Problem
    fixed: Mapping[str, int]
    candidates: int = DEFAULT_CANDIDATES


def parse_request(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    at: str = "",
    where: Sections | None = None,
) -> TrainingRequest:
    """The request parsed once (:func:`parse_problem`, :func:`parse_parallelism`, the search's candidates),
    as :func:`estimate_problem` takes it. Errors name the user's field: the request sits at ``at`` ("" for
    the training API's own request), or its sections where ``where`` says (a design's: the spec's
    ``spec.workload.model``, ``spec.cluster``...)."""
    where = where or Sections.of_request(at)
    problem = parse_problem(request, accelerators=accelerators, fabrics=fabrics, where=where)
    fixed = parse_parallelism(request, at=where.parallelism)
    candidates = DEFAULT_CANDIDATES
    if "search" in request:
        search_section = _section(request, "search", at=where.search)
        candidates = _whole(search_section, "candidates", where.search, default=candidates)
    return TrainingRequest(problem=problem, fixed=fixed, candidates=candidates)


def estimate(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    at: str = "",
) -> dict[str, Any]:
    """``estimate_result(...).to_json()``: the response as JSON, as the cost engine and stored evaluations
    take it. Errors name their field under ``at``, where the request sits in what the user sent."""
    parsed = parse_request(request, accelerators=accelerators, fabrics=fabrics, at=at)
    return estimate_problem(parsed).to_json()


def check_request(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    where: Sections | None = None,
) -> None:
    """Raise what :func:`estimate` would raise for the request's model, training and cluster (not its
    layout), without searching: for callers that check inputs before queueing work. Errors name their field
    where ``where`` puts the request's sections (default: a request sent as it is)."""
    parse_problem(request, accelerators=accelerators, fabrics=fabrics, where=where)


def _fixed_values(problem: Problem, fixed: Mapping[str, int]) -> dict[str, int]:
    """A given layout with its omitted fields filled: cp, ep 1; vpp from the pipeline layout, else 1; dp from
    the GPU count; sequence parallelism with TP where tp divides the sequence and the stack has it."""
    n = problem.cluster.num_gpus
    values = dict(fixed)
    values.setdefault("cp", 1)
    values.setdefault("ep", 1)
    pipeline_layout = problem.training.pipeline_layout
    if pipeline_layout is not None and values["pp"] and pipeline_layout.stages % values["pp"] == 0:
        values.setdefault("vpp", pipeline_layout.stages // values["pp"])
    values.setdefault("vpp", 1)
    values.setdefault("dp", max(1, n // (values["tp"] * values["pp"] * values["cp"])))
    # Sequence parallelism by default with TP, where tp divides the sequence (an odd seq_len such as 2,049
    # runs TP without it, as Megatron-Core's scatter of the sequence over the TP ranks needs).
    splits = (problem.model.seq_len // values["cp"]) % values["tp"] == 0
    sp_mode = profile(problem.training.framework).sequence_parallel
    values.setdefault("sequence_parallel", int(values["tp"] > 1 and splits and sp_mode != "never"))
    return values


def _evaluate_warnings(problem: Problem, values: Mapping[str, int], row: LayoutEstimate) -> list[str]:
    """What a given layout's result should say: an uneven split, memory over capacity or inside the
    headroom, a selective recompute that saves nothing, MoE settings not taken."""
    warnings = []
    if problem.model.layers % values["pp"] and problem.training.pipeline_layout is None:
        first, last = end_stage_layers(
            problem.model.layers, values["pp"], split=problem.training.pipeline_split
        )
        warnings.append(
            f"{problem.model.layers} layers do not split evenly over pp {values['pp']}; "
            f"the heaviest stage holds {math.ceil(problem.model.layers / values['pp'])}, "
            f"the first {int(first)} and the last {int(last)} ({problem.training.pipeline_split} split)"
        )
    if not row.fits:
        have = problem.cluster.accelerator.memory_gib
        warnings.append(f"needs {row.memory_per_gpu_gib.total:.1f} GiB, has {have:g} GiB")
    elif row.memory_per_gpu_gib.total > usable_gib(problem):
        have = problem.cluster.accelerator.memory_gib
        warnings.append(
            f"needs {row.memory_per_gpu_gib.total:.1f} GiB of {have:g} GiB, inside the "
            f"{problem.training.memory_headroom:.1%} memory headroom: the engine's memory estimate runs "
            "low on measured runs, so this layout may run out of memory"
        )
    if (
        values["recompute"] == RECOMPUTE_SELECTIVE
        and problem.training.flash_attention
        and problem.training.selective_recompute == "attention"
        and set(problem.training.recompute_modules) <= {"core_attn"}
    ):
        warnings.append(
            "selective recompute saves no memory under flash attention (it drops the attention scores, "
            "which flash attention never stores) and still recomputes the attention core: choose none"
        )
    warnings.extend(_moe_warnings(problem, values))
    return warnings


def estimate_result(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
) -> TrainingEstimate:
    """Evaluate one layout, or search the parallelism fields the request leaves out.

    Response: ``mode`` ("evaluate" or "search"), the best (or given) layout's ``fits``,
    ``memory_per_gpu_gib`` (total and parts), ``step_time_s`` (total and parts), ``model_tflops_per_gpu``,
    ``mfu``, ``hfu``, ``tokens_per_second``, ``time_to_train_days``, ``parallelism``; for a search also
    ``candidates`` (best first), ``layouts_evaluated``, ``rejected`` {reason: count}; and ``assumptions``.
    Raises InputError / UnknownReferenceError naming the field, or InfeasibleError when nothing fits.
    """
    return estimate_problem(parse_request(request, accelerators=accelerators, fabrics=fabrics))


def estimate_problem(request: TrainingRequest) -> TrainingEstimate:
    """:func:`estimate_result` of a request already parsed (:func:`parse_request`; a design's, by
    clusterdesigner.engine.design.spec.parse_design_spec): nothing is parsed again. Errors name the user's
    field, where the parser was told each section sits (``problem.where``)."""
    return _estimate_parsed(request.problem, request.fixed, request.candidates)


def _estimate_parsed(problem: Problem, fixed: Mapping[str, int], n_candidates: int) -> TrainingEstimate:
    _check_block_recompute(problem, fixed)
    summary, assumptions = _summary(problem), _assumptions(problem)
    _check_degrees_fit_cluster(fixed, problem.cluster.num_gpus, problem.where.parallelism)

    # _check_degrees_fit_cluster has made sure tp × pp × cp divides the GPUs, so dp can be derived.
    if all(k in fixed for k in ("tp", "pp", "micro_batch", "recompute", "sharding")):
        return _evaluate_fixed(problem, fixed, summary=summary, assumptions=assumptions)
    return _search_result(problem, fixed, top=n_candidates, summary=summary, assumptions=assumptions)


def _evaluate_fixed(
    problem: Problem, fixed: Mapping[str, int], *, summary: Summary, assumptions: tuple[AssumptionUsed, ...]
) -> TrainingEstimate:
    """The estimate of a given layout (``estimate_result``'s evaluate mode)."""
    values = _fixed_values(problem, fixed)
    lay = layouts(**values)
    for fld, failed, reason in structural_checks(problem, lay):
        if failed[0]:
            # An explicit layout may split layers unevenly over stages (Megatron-DeepSpeed, Llama 3);
            # the heaviest stage gets ceil(L/pp) layers.
            if fld == "parallelism.pp" and problem.model.layers >= values["pp"]:
                continue
            raise InputError(reason(0), field=problem.where.path(fld))
    row = _rows(problem, lay)[0]
    warnings = _evaluate_warnings(problem, values, row)
    return TrainingEstimate(
        mode="evaluate", chosen=row, warnings=tuple(warnings), summary=summary, assumptions=assumptions
    )


def _search_result(
    problem: Problem,
    fixed: Mapping[str, int],
    *,
    top: int,
    summary: Summary,
    assumptions: tuple[AssumptionUsed, ...],
) -> TrainingEstimate:
    """The best layouts of a search over the fields ``fixed`` leaves out (``estimate_result``'s search
    mode); InfeasibleError when none fits."""
    result = search(problem, fixed=fixed, top=top)
    rejected = dict(sorted(result.rejected.items(), key=lambda kv: -kv[1]))
    if result.best["tp"].size == 0:
        raise _no_layout_error(problem, fixed, result, rejected)
    candidates = search_rows(problem, result)
    return TrainingEstimate(
        mode="search",
        chosen=candidates[0],
        warnings=(),
        summary=summary,
        assumptions=assumptions,
        candidates=tuple(candidates),
        ties=robustness(tuple(candidates), problem.cluster.gpus_per_node),
        search=SearchCounts(
            layouts_evaluated=result.evaluated,
            layouts_valid=result.valid,
            layouts_feasible=result.feasible,
            rejected=rejected,
        ),
    )


def _moe_warnings(problem: Problem, values: Mapping[str, int]) -> list[str]:
    """MoE settings a fixed layout does not take (timing._moe_comm_layer applies the same rules)."""
    training = problem.training
    if not problem.model.is_moe:
        return []
    out = []
    if training.moe_a2a_overlap and (
        values["ep"] == 1
        or values["recompute"] == RECOMPUTE_FULL
        or (values["pp"] > 1 and values["vpp"] == 1)
    ):
        out.append(
            "moe_a2a_overlap is not taken: Megatron-Core overlaps the expert all-to-all only with ep > 1, "
            "without full recompute and, when pp > 1, with vpp > 1"
        )
    if training.moe_max_domains_per_token and training.moe_dispatcher not in FLEX_DISPATCHERS:
        out.append(
            f"moe_max_domains_per_token changes no traffic with the {training.moe_dispatcher} dispatcher, "
            "which sends one copy per routed expert (alltoall) or every token (allgather); DeepEP and "
            "HybridEP (moe_dispatcher deepep or hybridep) send one per node"
        )
    return out


def describe_layout(row: Mapping[str, Any]) -> str:
    """A ``parallelism`` object in words: "tp 8, pp 1, dp 1, micro-batch 1, full recompute, zero3"
    (cp, ep and vpp only when above 1)."""
    parts = [f"tp {row['tp']}", f"pp {row['pp']}", f"dp {row['dp']}"]
    parts += [f"{key} {row[key]}" for key in ("cp", "ep", "vpp") if row[key] > 1]
    parts.append(f"micro-batch {row['micro_batch']}")
    parts.append("no recompute" if row["recompute"] == "none" else f"{row['recompute']} recompute")
    parts.append("no sharding" if row["sharding"] == "none" else str(row["sharding"]))
    if row["sequence_parallel"]:
        parts.append("sequence parallel")
    return ", ".join(parts)


def _gib_above(need_gib: float, have_gib: float) -> str:
    """``need_gib`` to one decimal, or more (up to 3) if one would print it as ≤ ``have_gib``."""
    digits = 1
    while digits < 3 and round(need_gib, digits) <= have_gib:
        digits += 1
    return f"{need_gib:.{digits}f}"


def _no_layout_error(
    problem: Problem, fixed: Mapping[str, int], result: SearchResult, rejected: Mapping[str, int]
) -> InfeasibleError:
    """Why a search found nothing, naming the binding constraint.

    When some layouts pass the structural rules, memory is what binds (whatever rule rejected the most
    layouts): the error gives the least memory any valid layout needs against the capacity. It is on
    ``cluster.nodes`` (more GPUs is the remedy) unless the given parallelism fields are to blame, i.e. an
    unconstrained search of the same cluster finds a layout that fits; then it is on ``parallelism`` and
    names that layout. When no layout passes the structural rules, the commonest structural reason is
    reported, on the given field it concerns (tp for "tp 16 does not divide 8 kv heads"), otherwise on the
    layout as a whole, or the cluster's size when nothing was given."""
    if result.valid and result.min_need_gib is not None and result.min_need_layout is not None:
        need, have = result.min_need_gib, problem.cluster.accelerator.memory_gib
        which = "the only valid layout" if result.valid == 1 else f"the best of {result.valid} valid layouts"
        usable, headroom = usable_gib(problem), problem.training.memory_headroom
        message = (
            f"no parallel layout fits in memory: {which} needs {_gib_above(need, usable)} GiB of "
            f"{have:g} GiB per GPU ({describe_layout(result.min_need_layout)})"
        )
        if headroom > 0:
            message += (
                f", where {usable:.1f} GiB are usable ({headroom:.1%} kept free: training.memory_headroom)"
            )
        field = under(problem.where.cluster, "nodes")
        # The unconstrained search may be far larger than the constrained one: only when it is allowed.
        if fixed:
            free = search(problem, fixed={}, top=1)
            if free.feasible:
                row = search_rows(problem, free)[0]
                field = problem.where.parallelism
                message += (
                    "; with the parallelism left to the search, "
                    f"{describe_layout(row.parallelism.to_json())} "
                    f"fits in {row.memory_per_gpu_gib.total:.1f} GiB"
                )
        return InfeasibleError(
            message, field=field, need_gib=need, have_gib=have, layout=dict(result.min_need_layout)
        )
    top_reason = next(iter(rejected), "no layout")
    reason_field = result.reason_fields.get(top_reason, "")
    given = reason_field.removeprefix("parallelism.") in fixed
    where = problem.where
    return InfeasibleError(
        f"no parallel layout fits: evaluated {result.evaluated} layouts; most often: {top_reason}",
        field=where.path(reason_field)
        if given
        else where.parallelism
        if fixed
        else under(where.cluster, "nodes"),
    )


# ---- sizing: how many nodes ------------------------------------------------------------------------------
MAX_SIZING_NODES = 4096
MAX_SIZING_SEARCHES = 8
_MAX_VALIDITY_SCAN = 64


def _sizing_problem(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
) -> tuple[Problem, dict[str, int]]:
    """The request's problem and its fixed parallelism without ``dp``, which the node count decides."""
    problem = parse_problem(request, accelerators=accelerators, fabrics=fabrics)
    fixed = parse_parallelism(request)
    _check_block_recompute(problem, fixed)
    fixed.pop("dp", None)
    return problem, fixed


def _check_block_recompute(problem: Problem, fixed: Mapping[str, int]) -> None:
    """``training.recompute_num_layers`` recomputes whole layers, so a given recompute must be full (Megatron-
    Core runs --recompute-method block under --recompute-granularity full only: transformer_config.py)."""
    layers = problem.training.recompute_num_layers
    if layers and "recompute" in fixed and fixed["recompute"] != RECOMPUTE_FULL:
        raise InputError(
            f"recompute_num_layers {layers} needs parallelism.recompute full, got "
            f"{RECOMPUTE_MODES[fixed['recompute']]}",
            field=under(problem.where.training, "recompute_num_layers"),
        )


def _at_nodes(problem: Problem, nodes: int) -> Problem:
    if nodes < 1:
        raise InputError(
            f"node counts must be at least 1, got {nodes}", field=under(problem.where.cluster, "nodes")
        )
    if nodes > 1 and problem.cluster.fabric is _SINGLE_NODE_FABRIC:
        raise InputError(
            "is required to size the cluster beyond one node", field=under(problem.where.cluster, "fabric")
        )
    return replace(problem, cluster=replace(problem.cluster, nodes=nodes))


def _best_at(problem: Problem, fixed: Mapping[str, int], nodes: int) -> LayoutEstimate | None:
    """The fastest layout that fits on ``nodes`` nodes as a result row, or None (no valid layout, or none
    that fits). Counts that no layout can use are refused by the cheap structural check, not a search."""
    at = _at_nodes(problem, nodes)
    if not structurally_valid(at, fixed=fixed):
        return None
    result = search(at, fixed=fixed, top=1)
    return search_rows(at, result)[0] if result.feasible else None


def _states_floor_nodes(problem: Problem) -> float:
    """Nodes below which the model states alone, fully sharded over every GPU, overflow memory:
    P · (weight bytes + grad_bytes + optimizer_bytes) / (gpus_per_node · (capacity − reserve)). A first
    probe for the sizing search, not a bound: the heaviest stage ``memory_parts`` charges may hold a
    little less than the average (a middle stage holds no embedding), so a layout may be reported to fit
    just below."""
    t, c = problem.training, problem.cluster
    room_gib = c.accelerator.memory_gib - t.framework_reserve_gib
    if room_gib <= 0:
        return math.inf
    state_bytes = problem.model.total_params * (weight_bytes(t) + t.grad_bytes + t.optimizer_bytes)
    return state_bytes / GIB / room_gib / c.gpus_per_node


def _valid_near(problem: Problem, fixed: Mapping[str, int], target: int, lo: int, hi: int) -> int | None:
    """The node count in [lo, hi] nearest ``target`` (ties upward) that some layout can use, scanning at
    most _MAX_VALIDITY_SCAN counts."""
    scanned = 0
    for step in range(hi - lo + 1):
        for n in (target + step, target - step) if step else (target,):
            if lo <= n <= hi:
                if structurally_valid(_at_nodes(problem, n), fixed=fixed):
                    return n
                scanned += 1
        if scanned >= _MAX_VALIDITY_SCAN:
            return None
    return None


def min_nodes_to_fit(
    request: Mapping[str, Any],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
    max_nodes: int = MAX_SIZING_NODES,
    max_searches: int = MAX_SIZING_SEARCHES,
) -> int | None:
    """The smallest node count, from the request's ``cluster.nodes`` up to ``max_nodes`` (gpus_per_node
    and everything else kept), at which the layout search finds a layout that fits in memory; None when
    none fits up to ``max_nodes``.

    Method: search the request's count; if nothing fits, probe upward from the model-states floor
    (``_states_floor_nodes``: the states of P parameters at 2 + grad_bytes + optimizer_bytes bytes each,
    spread over every GPU) and double until a layout fits, then bisect between the largest count tried
    that failed and the smallest that fits. Only counts some layout can use are searched
    (``search.structurally_valid``: tp × pp × cp × dp must use every GPU with dp dividing the global batch,
    tp dividing the heads, pp at most the layers, ...), so a bisection step lands on the valid count
    nearest the midpoint. Assumes that fitting is monotone in the node count (more GPUs shard the states
    further or split the layers finer); the returned count is verified by a search and the count tried
    just below it failed. Cost: one search per doubling (at most log2(max_nodes / nodes)), bisection
    until ``max_searches`` searches in all; if the budget runs out first, the smallest fitting count found
    is returned. A fixed ``parallelism.dp`` is dropped (the node count decides it); other fixed fields hold.
    ``max_nodes`` is lowered to what a search may cover (search.MAX_SEARCH_GPUS).
    Raises InputError on ``cluster.fabric`` when more than one node is needed and the request has none, and
    on ``cluster.nodes`` when a count it must search is too large a search (search.check_search_size).
    """
    problem, fixed = _sizing_problem(request, accelerators=accelerators, fabrics=fabrics)
    # Past MAX_SEARCH_GPUS no search runs (search.check_search_size): probe no further.
    max_nodes = min(max_nodes, max(1, MAX_SEARCH_GPUS // problem.cluster.gpus_per_node))
    start = problem.cluster.nodes
    if _best_at(problem, fixed, start) is not None:
        return start
    searches = 1
    lo, hi = start, None
    probe = max(start + 1, math.ceil(min(_states_floor_nodes(problem), float(max_nodes))))
    while probe <= max_nodes:
        n = _valid_near(problem, fixed, probe, probe, min(2 * probe - 1, max_nodes))
        if n is not None:
            searches += 1
            if _best_at(problem, fixed, n) is not None:
                hi = n
                break
            lo = n
        if probe == max_nodes:
            break
        probe = min(2 * probe, max_nodes)
    if hi is None:
        return None
    while hi - lo > 1 and searches < max_searches:
        n = _valid_near(problem, fixed, (lo + hi) // 2, lo + 1, hi - 1)
        if n is None:
            break
        searches += 1
        if _best_at(problem, fixed, n) is not None:
            hi = n
        else:
            lo = n
    return hi


def days_at_nodes(
    request: Mapping[str, Any],
    nodes_list: Iterable[int],
    *,
    accelerators: Mapping[str, AcceleratorSpec],
    fabrics: Mapping[str, FabricSpec],
) -> dict[int, float | None]:
    """Days to train at each node count: {nodes: time_to_train_days of the fastest layout that fits, or
    None when none fits (or no layout can use that many nodes)}.

    time_to_train_days = training.tokens / tokens_per_second / 86,400, with tokens_per_second =
    global_batch_seqs · seq_len / step_time of the best layout the search finds at that count, as
    ``estimate`` reports it. Everything but ``cluster.nodes`` is the request's (a fixed
    ``parallelism.dp`` is dropped: the node count decides it). One search per distinct count.
    """
    problem, fixed = _sizing_problem(request, accelerators=accelerators, fabrics=fabrics)
    days: dict[int, float | None] = {}
    for nodes in nodes_list:
        if nodes not in days:
            row = _best_at(problem, fixed, nodes)
            days[nodes] = None if row is None else float(row.time_to_train_days)
    return days


__all__ = [
    "days_at_nodes",
    "describe_layout",
    "estimate",
    "estimate_result",
    "min_nodes_to_fit",
    "model_presets",
    "parse_problem",
    "parse_parallelism",
    "np",
]
