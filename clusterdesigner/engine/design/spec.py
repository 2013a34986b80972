"""A design's inputs, defined once: the field rules of each spec section the engine owns (workload, cluster,
parallelism, goals), one parser that checks types, known keys and ranges, and frozen dataclasses the engines'
requests are built from (issue 14, "one design spec").

Paths are the paths users see: an error names ``spec.cluster.nodes`` or ``spec.workload.model.layers``, never
an engine request's path, so nothing maps them back. Messages are the ones the API has always given (the
wording of Django REST framework's fields, which the API used before, so clients and tests see no change).
Catalog-dependent checks (is the accelerator known, does the model fit) stay with the engines, whose parsers
are told where the sections of the requests built here sit in the spec (:func:`training_sections`, the
serving request's ``at``: :data:`SERVING_AT`), so their errors name the spec's path natively, later ones too
(a layout that does not divide the GPUs, memory); the cost engine's inputs (:func:`cost_inputs`) carry each
part's spec path themselves. Given the catalog, :func:`parse_design_spec` also parses the training engine's
request, once (``DesignSpec.training_problem``), and the design's composition estimates that parsed request
as it is (training.estimate_problem).

What is still checked elsewhere: ``costs`` (its cloud choices and the cost engine's input sections, by
apps/designs/specs.py with clusterdesigner.engine.cost.cost.check_input) and ``serving`` (by the serving
engine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clusterdesigner.engine.core import bounds
from clusterdesigner.engine.core.catalog import CatalogSpecs
from clusterdesigner.engine.core.errors import EngineError, UnknownReferenceError
from clusterdesigner.engine.core.offerings import PRICING_MODELS
from clusterdesigner.engine.core.spec_rules import NON_FIELD, Errors, check_value, parse_object

# Imported from here by the engines, apps and tests since before the rules had their own module.
from clusterdesigner.engine.core.spec_rules import Rule as Rule
from clusterdesigner.engine.core.spec_rules import SpecError as SpecError
from clusterdesigner.engine.cost import cost_request as cost
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.cost.cost_inputs import CostInputs, Section
from clusterdesigner.engine.cost.site import parse_site_json
from clusterdesigner.engine.rl.rl_request import parse_rl
from clusterdesigner.engine.training.framework import ATTENTION_KERNELS, MOE_DISPATCHERS, MOE_LOAD_BALANCES
from clusterdesigner.engine.training.framework import PROFILES as FRAMEWORK_PROFILES
from clusterdesigner.engine.training.optimizer import OPTIMIZERS
from clusterdesigner.engine.training.precision import PRECISIONS
from clusterdesigner.engine.training.training import TrainingRequest, parse_request
from clusterdesigner.engine.training.workload import MAX_LAYOUT_TEXT, MAX_PIPELINE_STAGES, Sections


def _int(low: float, high: float, **kw: Any) -> Rule:
    return Rule("int", low, high, **kw)


def _bounded(kind: str, path: str, low: float | None = None, **kw: Any) -> Rule:
    """The rule of a spec field the cost engine reads as ``path``: its bounds are the engine's
    (clusterdesigner.engine.core.bounds), so a value the spec accepts is never refused there; ``low``, a floor
    of the spec's own above the engine's."""
    bound = bounds.COST[path]
    return Rule(kind, bound.floor if low is None else low, bound.high, **kw)


MODEL: Mapping[str, Rule] = {
    "preset": Rule("text", max_length=60),
    "layers": _int(1, 100_000),
    "hidden": _int(1, 10_000_000),
    "ffn_hidden": _int(1, 100_000_000),
    "heads": _int(1, 100_000),
    "kv_heads": _int(1, 100_000),
    "vocab": _int(1, 100_000_000),
    "seq_len": _int(1, 100_000_000),
    "gated_mlp": Rule("bool"),
    "dropout": Rule("bool"),
    "experts": _int(1, 100_000),
    "top_k": _int(1, 1_000),
    "expert_ffn_hidden": _int(1, 100_000_000),
    "shared_experts": _int(0, 1_000),
    "moe_layers": _int(0, 100_000),
    "tied_embeddings": Rule("bool"),
    # Width of one attention head when it is not hidden / heads (Qwen3, GPT-OSS).
    "head_dim": _int(1, 100_000),
    # Multi-head latent attention (DeepSeek-V2/V3): the latents' ranks and the per-head widths.
    "q_lora_rank": _int(0, 10_000_000),
    "kv_lora_rank": _int(1, 10_000_000),
    "qk_nope_head_dim": _int(1, 100_000),
    "qk_rope_head_dim": _int(1, 100_000),
    "v_head_dim": _int(1, 100_000),
    # Multi-token prediction modules (DeepSeek-V3: 1).
    "mtp_depth": _int(0, 1_000),
    # Local attention (GPT-OSS sliding window, Llama 4 chunks) on local_layers of the layers; sinks; the
    # norm and RoPE base the launch exports carry.
    "sliding_window": _int(0, 100_000_000),
    "attention_chunk": _int(0, 100_000_000),
    "local_layers": _int(0, 100_000),
    "attention_sinks": Rule("bool"),
    "rms_norm": Rule("bool"),
    "rope_theta": _int(0, 10**12),
    "name": Rule("text", max_length=200),
}
# A model without a preset gives its shape.
MODEL_SHAPE = ("layers", "hidden", "heads", "vocab", "seq_len")
TRAINING: Mapping[str, Rule] = {
    "tokens": Rule("float", 1e3, 1e16, required=True),
    "global_batch_tokens": _int(1, 10**10),
    "global_batch_seqs": _int(1, 10**8),
    # The precision recipe (engine/training/precision.py): fp8 is per-tensor delayed scaling.
    "precision": Rule("choice", choices=PRECISIONS, default=defaults.PRECISION.value),
    # adam (mixed-precision Adam) or muon (engine/training/optimizer.py); absent: adam.
    "optimizer": Rule("choice", choices=OPTIMIZERS),
    # Megatron-Core's --pipeline-model-parallel-layout ("Et*3|(tt|)*29,m|L") or a list of layers per
    # virtual stage; checked against the model by the training engine (workload.parse_pipeline_layout).
    "pipeline_layout": Rule("any"),
    # Fraction of HBM a searched layout leaves free; the engine's default is error_band.MEMORY_HEADROOM.
    "memory_headroom": Rule("float", 0, 0.5),
    # The training stack (engine/training/framework.py); the engine's default is Megatron-Core.
    "framework": Rule("choice", choices=tuple(FRAMEWORK_PROFILES)),
    # The flash-attention kernel (engine/training/timing.py, FUSED_ATTENTION_SPEEDUP); absent: the
    # framework's.
    "attention_kernel": Rule("choice", choices=ATTENTION_KERNELS),
    # Expert tensor-parallel size (Megatron-Core's --expert-tensor-parallel-size); absent: tp.
    "etp": _int(1, 1024),
    # MoE token exchange (engine/training/timing.py _moe_comm_layer); absent: the framework profile's recipe.
    "moe_dispatcher": Rule("choice", choices=MOE_DISPATCHERS),
    "moe_a2a_overlap": Rule("bool"),
    "moe_shared_expert_overlap": Rule("bool"),
    "moe_fp8_dispatch": Rule("bool"),
    "moe_max_domains_per_token": _int(0, 1024),
    # dropless (the busiest expert-parallel rank sets the pace) or balanced; absent: dropless.
    "moe_load_balance": Rule("choice", choices=MOE_LOAD_BALANCES),
    # Memory levers (engine/training/levers.py); names and ranges are checked by the training engine.
    "recompute_modules": Rule("list", items="text"),
    "activation_offload_layers": _int(0, 100_000),
    "activation_offload_modules": Rule("list", items="text"),
    "activation_func_fp8_input_store": Rule("bool"),
    # Full recompute as torch.utils.checkpoint's non-reentrant early stop (engine/training/timing.py).
    "checkpoint_early_stop": Rule("bool"),
    # Bytes a parameter of the FSDP / ZeRO gradient reduce-scatter (the stack's reduce dtype); absent: the
    # framework profile's.
    "reduce_bytes": Rule("float", 0, 4),
    "optimizer_offload": Rule("bool"),
    # Let the layout search choose optimizer and activation offload (engine/training/search_settings.py); off
    # by default: host memory is not modelled, so an offload the search proposes is never checked against it.
    "search_offload": Rule("bool"),
    "lora_rank": _int(0, 65_536),
    "lora_modules": Rule("list", items="text"),
    "recompute_num_layers": _int(0, 100_000),
    "fp8_params": Rule("bool"),
}
CLUSTER: Mapping[str, Rule] = {
    "accelerator": Rule("slug", required=True),
    "gpus_per_node": _bounded("int", "cluster.gpus_per_node", default=defaults.GPUS_PER_NODE.value),
    "nodes": _bounded("int", "cluster.nodes", required=True),
    "fabric": Rule("slug", required=True),
    "oversubscription": _bounded(
        "float", "cluster.oversubscription", 1.0, default=defaults.OVERSUBSCRIPTION.value
    ),
    "storage": Rule("slug"),
}
LAYOUT: Mapping[str, Rule] = {
    "tp": _int(1, 1024),
    "pp": _int(1, 1024),
    "dp": _int(1, 1_000_000),
    "cp": _int(1, 1024),
    "ep": _int(1, 1024),
    "vpp": _int(1, 128),
    "micro_batch": _int(1, 4096),
    "recompute": Rule("choice", choices=("none", "selective", "full")),
    "sharding": Rule("choice", choices=("none", "zero1", "zero2", "zero3", "hsdp")),
    "sequence_parallel": Rule("bool"),
}
GOALS: Mapping[str, Rule] = {
    # The run must finish within this many days (expected, failures and restarts included).
    "deadline_days": Rule("float", 0.001, 1e5),
    # The most one training run may cost, in USD (against the cost per run of the option the rent-or-own
    # verdict picks by NPV).
    "budget_usd": Rule("float", 0.01, 1e13),
    # The most the whole horizon may cost, in USD of NPV (against the NPV of that option's cash out).
    "budget_npv_usd": Rule("float", 0.01, 1e13),
}
MAX_NODES = int(CLUSTER["nodes"].high or 0)
# Negotiated USD per node-hour, by pricing model: only the models the cost engine prices. The cost engine's
# rule is "more than zero", an open end the spec's rules cannot state: _negotiated adds its check for 0.
NEGOTIATED: Mapping[str, Rule] = {
    model: Rule("float", 0, bounds.COST[f"cloud.usd_per_node_hour.{model}"].high) for model in PRICING_MODELS
}
# Nodes obtainable per pricing model (a quota; 0: effectively unavailable): above it the model is not offered.
CAPACITY: Mapping[str, Rule] = {
    model: Rule("int", 0, bounds.COST[f"cloud.capacity_nodes.{model}"].high) for model in PRICING_MODELS
}
MAX_CLOUD_OFFERINGS = 6
# Cost-engine input sections a spec passes through by the engine's own names (cost.input_names), each number
# range-checked by cost.check_input: money over time, Monte Carlo, colocation pricing, training storage.
ENGINE_SECTIONS = ("cashflow", "uncertainty", "colocation", "storage", "network")
COSTS: Mapping[str, Rule] = {
    # A design's own floors (the serving engine prices far lower utilizations, which its demand implies).
    "horizon_years": _bounded("float", "horizon_years", 0.1, default=defaults.HORIZON_YEARS.value),
    "utilization": _bounded("float", "utilization", 0.01, default=defaults.UTILIZATION.value),
    "on_prem": Rule("object", default={}),
    "cloud": Rule("list", default=[]),
    "egress_tb": _bounded("float", "cloud.egress_tb"),
    "managed_overhead_fraction": _bounded("float", "cloud.managed_overhead_fraction"),
    # Spot nodes obtainable (every offering's spot option): above it spot is not offered.
    "spot_capacity_nodes": _bounded("int", "cloud.spot_capacity_nodes"),
    **{section: Rule("object") for section in ENGINE_SECTIONS},
}
# The spec's sections, in the order their errors are reported.
TOP: tuple[str, ...] = ("workload", "cluster", "parallelism", "costs", "goals", "serving", "site", "rl")
# What a serving section may not give: the design's own.
SERVING_FROM_DESIGN = ("model", "accelerator", "gpus_per_node")


def _model(data: Any) -> dict[str, Any]:
    clean = parse_object(data, MODEL)
    if "preset" not in clean:
        missing = [f for f in MODEL_SHAPE if f not in clean]
        if missing:
            raise SpecError({f: ["required when no preset is given"] for f in missing}, prefix="")
    return clean


def _pipeline_layout(value: Any) -> str | list[int]:
    """A layout string or a list of whole numbers of layers (the engine checks it against the model)."""
    if isinstance(value, str):
        if not value.strip() or len(value) > MAX_LAYOUT_TEXT:
            raise SpecError(
                {NON_FIELD: [f"must be a layout of 1 to {MAX_LAYOUT_TEXT:,} characters"]}, prefix=""
            )
        return value
    if isinstance(value, list) and 0 < len(value) <= MAX_PIPELINE_STAGES:
        bad = {str(i): ["must be a whole number ≥ 0"] for i, v in enumerate(value) if not _layers(v)}
        if bad:
            raise SpecError(bad, prefix="")
        return list(value)
    raise SpecError(
        {
            NON_FIELD: [
                f'a layout string such as "Et*3|(tt|)*29,m|L" or a list of 1 to {MAX_PIPELINE_STAGES} '
                "layer counts"
            ]
        },
        prefix="",
    )


def _layers(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 100_000


def _training(data: Any) -> dict[str, Any]:
    clean = parse_object(data, TRAINING, {"pipeline_layout": _pipeline_layout})
    if "global_batch_tokens" not in clean and "global_batch_seqs" not in clean:
        raise SpecError({"global_batch_tokens": ["give global_batch_tokens or global_batch_seqs"]}, prefix="")
    return clean


def parse_workload(data: Any) -> dict[str, Any]:
    rules = {"model": Rule("object", required=True), "training": Rule("object", required=True)}
    return parse_object(data, rules, {"model": _model, "training": _training})


def parse_cluster(data: Any) -> dict[str, Any]:
    return parse_object(data, CLUSTER)


def parse_parallelism(data: Any) -> str | dict[str, Any]:
    """``"search"`` (or null), or a fixed layout."""
    if data in (defaults.PARALLELISM.value, None):
        return str(defaults.PARALLELISM.value)
    if not isinstance(data, Mapping):
        raise SpecError({NON_FIELD: ['a layout object or "search"']}, prefix="")
    return parse_object(data, LAYOUT)


def parse_goals(data: Any) -> dict[str, Any]:
    return parse_object(data, GOALS)


def _pricing_models(value: list[Any]) -> list[str]:
    rule = Rule("choice", choices=PRICING_MODELS)
    errors = {str(i): msgs for i, item in enumerate(value) for msgs in [check_value(rule, item)[1]] if msgs}
    if errors:
        raise SpecError(errors, prefix="")
    if not value:
        raise SpecError({NON_FIELD: ["Ensure this field has at least 1 elements."]}, prefix="")
    if len(value) > len(PRICING_MODELS):
        most = len(PRICING_MODELS)
        raise SpecError({NON_FIELD: [f"Ensure this field has no more than {most} elements."]}, prefix="")
    return list(value)


CLOUD_CHOICE: Mapping[str, Rule] = {
    "offering": Rule("slug", required=True),
    # Pricing models to compare; omitted: every model the offering has a price for (the catalog's or a
    # negotiated one). A model ticked without a price is refused.
    "pricing_models": Rule("list", items="choice"),
    # Negotiated prices per pricing model in USD per node-hour, overriding the catalog's.
    "usd_per_node_hour": Rule("object"),
    # Nodes obtainable per pricing model (the provider's quota for this offering and region).
    "capacity_nodes": Rule("object"),
}


def _cloud_choice(item: Any) -> dict[str, Any]:
    if not isinstance(item, Mapping):
        got = type(item).__name__
        raise SpecError({NON_FIELD: [f"Invalid data. Expected a dictionary, but got {got}."]}, prefix="")
    return parse_object(
        item,
        CLOUD_CHOICE,
        {
            "pricing_models": _pricing_models,
            "usd_per_node_hour": _negotiated,
            "capacity_nodes": lambda value: parse_object(value, CAPACITY),
        },
    )


def _negotiated(value: Any) -> dict[str, Any]:
    clean = parse_object(value, NEGOTIATED)
    errors: Errors = {}
    for model in clean:
        try:
            cost.check_input(f"cloud.usd_per_node_hour.{model}", value[model])  # as sent: "got 0", not 0.0
        except EngineError as exc:
            errors[model] = [exc.message]
    if errors:
        raise SpecError(errors, prefix="")
    return clean


def _cloud(value: list[Any]) -> list[dict[str, Any]]:
    clean, errors = [], {}
    for index, item in enumerate(value):
        try:
            clean.append(_cloud_choice(item))
        except SpecError as exc:
            errors[str(index)] = exc.errors
    if errors:
        raise SpecError(errors, prefix="")
    if len(clean) > MAX_CLOUD_OFFERINGS:
        raise SpecError({NON_FIELD: [f"compare at most {MAX_CLOUD_OFFERINGS} cloud offerings"]}, prefix="")
    return clean


def _engine_section(section: str) -> Callable[[Any], Any]:
    known = cost.input_names(section)

    def parse(value: Mapping[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - set(known))
        if unknown:
            reason = f"unknown field; known: {', '.join(known)}"
            raise SpecError({key: [reason] for key in unknown}, prefix="")
        # Every number given is range-checked, also one this design does not read (a loan rate with cash).
        for key, item in value.items():
            try:
                cost.check_input(f"{section}.{key}", item)
            except EngineError as exc:
                raise SpecError({key: [exc.message]}, prefix="") from exc
        return dict(value)

    return parse


def parse_costs(data: Any) -> dict[str, Any]:
    nested = {"cloud": _cloud, **{section: _engine_section(section) for section in ENGINE_SECTIONS}}
    return parse_object(data, COSTS, nested)


def parse_serving(data: Any) -> dict[str, Any]:
    """A serving request without what the design gives (checked by the serving engine when evaluated)."""
    taken = [key for key in SERVING_FROM_DESIGN if key in data]
    if taken:
        message = f"{', '.join(sorted(taken))} come from the design; leave them out"
        raise SpecError({NON_FIELD: [message]}, prefix="")
    return dict(data)


def parse_rl_section(data: Any) -> dict[str, Any]:
    """An RL post-training workload (engine/rl/rl_request.py): checked here, so a refused field names
    ``spec.rl.<field>``; the clean section holds every field with its default."""
    try:
        # Parsed where it sits (path ""): its errors name the section's own fields, as SpecError wants them.
        clean = parse_rl(data, path="").to_json()
    except EngineError as exc:
        raise SpecError({exc.field or NON_FIELD: [exc.message]}, prefix="") from exc
    pool = clean.get("rollout")
    if pool is not None and "cloud" in pool:
        # The rollout pool's cloud choices are read by the costs section's rules (offering, pricing models,
        # negotiated prices); its owning numbers by the cost engine (check_request), as the design's are.
        try:
            pool["cloud"] = _cloud(pool["cloud"])
        except SpecError as exc:
            raise SpecError({"rollout": {"cloud": exc.errors}}, prefix="") from exc
    return clean


_PLACEHOLDER = {"tokens": 1e3, "global_batch_seqs": 1}


def _with_rl_training(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """A spec with an ``rl`` section trains the policy on the RL run's batches: ``workload.training``'s
    tokens and batch are the run's (steps × prompts × group × (prompt + mean response) tokens, prompts ×
    group sequences), replacing any given, and the section may be left out (precision then the default).
    An ``rl`` section the parser refuses leaves the spec as it is (its errors are the rl section's)."""
    workload = spec.get("workload")
    if not isinstance(workload, Mapping) or not isinstance(spec.get("rl"), Mapping):
        return spec
    given = workload.get("training", {})
    if not isinstance(given, Mapping):
        return spec
    try:
        run = parse_rl(spec["rl"])
    except EngineError:
        # Only the rl section's errors are reported: a missing training section is not one of them.
        return (
            spec if "training" in workload else {**spec, "workload": {**workload, "training": _PLACEHOLDER}}
        )
    keep = {k: v for k, v in given.items() if k not in ("tokens", "global_batch_tokens", "global_batch_seqs")}
    batch = {
        "tokens": float(run.steps * run.train_tokens_per_step),
        "global_batch_seqs": run.samples_per_step,
    }
    return {**spec, "workload": {**workload, "training": {**keep, **batch}}}


# The sections this module parses, by spec key.
SECTIONS: Mapping[str, Callable[[Any], Any]] = {
    "workload": parse_workload,
    "cluster": parse_cluster,
    "parallelism": parse_parallelism,
    "costs": parse_costs,
    "goals": parse_goals,
    "serving": parse_serving,
    "site": parse_site_json,
    "rl": parse_rl_section,
}
SPEC: Mapping[str, Rule] = {
    "workload": Rule("object", required=True),
    "cluster": Rule("object", required=True),
    "parallelism": Rule("any", default=defaults.PARALLELISM.value),
    "costs": Rule("object"),
    "goals": Rule("object"),
    "serving": Rule("object"),
    # The site the owned cluster is placed in (engine/cost/site.py); its prices replace the cost defaults.
    "site": Rule("object"),
    "rl": Rule("object"),
}


@dataclass(frozen=True)
class Training:
    tokens: float
    precision: str
    global_batch_tokens: int | None = None
    global_batch_seqs: int | None = None
    pipeline_layout: str | list[int] | None = None  # Megatron-Core's layout string or layers per stage
    memory_headroom: float | None = None
    framework: str | None = None  # engine/training/framework.py PROFILES; None: Megatron-Core
    attention_kernel: str | None = None  # "fused" or "flash2"; None: the framework profile's
    etp: int | None = None  # expert tensor-parallel size; None: tp (Megatron-Core's default)
    moe_dispatcher: str | None = None  # alltoall, allgather, deepep, hybridep; None: the framework's
    moe_a2a_overlap: bool | None = None  # --overlap-moe-expert-parallel-comm; None: the framework's
    moe_shared_expert_overlap: bool | None = None  # --moe-shared-expert-overlap
    moe_fp8_dispatch: bool | None = None  # FP8 dispatch (DeepEP / moe_dispatch_fwd_dtype mxfp8)
    moe_max_domains_per_token: int | None = None  # node-limited routing (--moe-router-group-topk)
    moe_load_balance: str | None = None  # dropless or balanced (token drop padded / forced)
    recompute_modules: list[str] | None = None  # Megatron-Core's --recompute-modules
    activation_offload_layers: int | None = None  # --cpu-offloading-num-layers
    activation_offload_modules: list[str] | None = None  # --offload-modules (fine-grained offloading)
    activation_func_fp8_input_store: bool | None = None  # --activation-func-fp8-input-store
    optimizer_offload: bool | None = None  # --optimizer-cpu-offload
    search_offload: bool | None = None  # the search may choose the two offloads (asked for only)
    lora_rank: int | None = None
    lora_modules: list[str] | None = None
    recompute_num_layers: int | None = None  # --recompute-method block --recompute-num-layers
    checkpoint_early_stop: bool | None = None  # torch.utils.checkpoint's early stop; None: the framework's
    reduce_bytes: float | None = None  # FSDP reduce dtype's bytes (4: float32); None: the framework's
    fp8_params: bool | None = None  # --fp8-param-gather
    optimizer: str | None = None  # "adam" or "muon"; None: adam


@dataclass(frozen=True)
class Cluster:
    accelerator: str
    gpus_per_node: int
    nodes: int
    fabric: str
    oversubscription: float
    storage: str | None = None


@dataclass(frozen=True)
class CloudChoice:
    offering: str
    pricing_models: tuple[str, ...] | None = None  # None: every model the offering has a price for
    usd_per_node_hour: Mapping[str, float] | None = None
    capacity_nodes: Mapping[str, int] | None = None  # quota per pricing model


@dataclass(frozen=True)
class Costs:
    horizon_years: float
    utilization: float
    on_prem: Mapping[str, Any]
    cloud: tuple[CloudChoice, ...]
    egress_tb: float | None = None
    managed_overhead_fraction: float | None = None
    sections: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # ENGINE_SECTIONS given


@dataclass(frozen=True)
class Goals:
    deadline_days: float | None = None
    budget_usd: float | None = None  # per run
    budget_npv_usd: float | None = None  # over the horizon, NPV of cash out


@dataclass(frozen=True)
class DesignSpec:
    """A parsed design spec: every section typed, and ``json``, the clean spec as stored (defaults filled in,
    numbers as the engines read them)."""

    model: Mapping[str, Any]
    training: Training
    cluster: Cluster
    layout: Mapping[str, Any] | None  # None: search for the best layout
    costs: Costs
    goals: Goals | None
    serving: Mapping[str, Any] | None
    json: Mapping[str, Any]
    site: Mapping[str, Any] | None = None
    rl: Mapping[str, Any] | None = None
    # The training engine's request, parsed against the catalog (parse_design_spec given one), as
    # training.estimate_problem takes it; None when parsed without a catalog.
    training_problem: TrainingRequest | None = None
    # The cost engine's inputs, one per cloud offering compared (cost_inputs), and a rollout pool's of its
    # own (rollout_cost_inputs), each part with its spec path, as cost.tco takes them.
    cost_inputs: tuple[CostInputs, ...] = ()
    rollout_cost_inputs: tuple[CostInputs, ...] = ()

    def training_request(self) -> dict[str, Any]:
        return training_request(self.json)

    def cost_requests(self) -> list[dict[str, Any]]:
        return cost_requests(self.json)

    def serving_request(self) -> dict[str, Any] | None:
        return serving_request(self.json)


def parse_design_spec(spec: Mapping[str, Any], *, catalog: CatalogSpecs | None = None) -> DesignSpec:
    """A whole spec (its top-level sections filled from the defaults: :func:`with_defaults`) as a
    DesignSpec. SpecError names every refused field by its spec path (``spec.costs.cloud.0.offering``).

    Given the ``catalog``, the catalog rows the spec names are checked usable (:func:`check_usable`) and the
    training engine's request is parsed once (``training_problem``, EngineError naming the spec's path), so
    that evaluating the design parses nothing again. The cost engine's inputs are read once, each part with
    its spec path (``cost_inputs``, ``rollout_cost_inputs``); the cost engine checks their values against the
    catalog and its defaults as it resolves them (cost.check_request, cost.tco), naming those paths."""
    try:
        clean = parse_object(_with_rl_training(spec), SPEC, SECTIONS)
    except SpecError as exc:
        raise SpecError(exc.errors) from exc
    if "costs" not in clean:
        clean["costs"] = parse_costs({})
    layout = clean["parallelism"]
    goals = clean.get("goals")
    problem = None
    if catalog is not None:
        check_usable(clean, catalog)
        problem = parse_request(
            training_request(clean), where=training_sections(), **catalog.training_kwargs()
        )
    return DesignSpec(
        model=clean["workload"]["model"],
        training=Training(**clean["workload"]["training"]),
        cluster=Cluster(**clean["cluster"]),
        layout=layout if isinstance(layout, dict) else None,
        costs=_costs(clean["costs"]),
        goals=Goals(**goals) if goals is not None else None,
        serving=clean.get("serving"),
        json=clean,
        site=clean.get("site"),
        rl=clean.get("rl"),
        training_problem=problem,
        cost_inputs=cost_inputs(clean),
        rollout_cost_inputs=rollout_cost_inputs(clean),
    )


def _costs(costs: Mapping[str, Any]) -> Costs:
    return Costs(
        horizon_years=costs["horizon_years"],
        utilization=costs["utilization"],
        on_prem=costs["on_prem"],
        cloud=tuple(
            CloudChoice(
                offering=c["offering"],
                pricing_models=tuple(c["pricing_models"]) if "pricing_models" in c else None,
                usd_per_node_hour=c.get("usd_per_node_hour"),
                capacity_nodes=c.get("capacity_nodes"),
            )
            for c in costs["cloud"]
        ),
        egress_tb=costs.get("egress_tb"),
        managed_overhead_fraction=costs.get("managed_overhead_fraction"),
        sections={k: costs[k] for k in ENGINE_SECTIONS if k in costs},
    )


def check_usable(spec: Mapping[str, Any], catalog: CatalogSpecs) -> None:
    """A catalog row the design names that exists but cannot be used (a staff edit left it malformed) is
    named as such, with why, rather than as unknown. Rows the design does not name do not matter."""
    cluster = spec["cluster"]
    named = [
        ("spec.cluster.accelerator", "accelerators", "accelerator", cluster["accelerator"]),
        ("spec.cluster.fabric", "fabrics", "fabric", cluster["fabric"]),
        ("spec.cluster.storage", "storage_tiers", "storage tier", cluster.get("storage")),
    ]
    for index, choice in enumerate((spec.get("costs") or {}).get("cloud") or []):
        offering = choice["offering"]
        named.append((f"spec.costs.cloud.{index}.offering", "cloud_offerings", "cloud offering", offering))
    for field_path, section, what, slug in named:
        why = slug and catalog.why_unusable(section, slug)
        if why:
            raise UnknownReferenceError(
                f"the catalog's {what} {slug!r} cannot be used ({why}); ask the catalog's staff to correct "
                "it or choose another",
                field=field_path,
            )


def with_defaults(spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """Fill the sections a user left out from the design defaults (top-level sections only; fields inside
    are the user's, and the parser fills their defaults)."""
    merged = defaults.design_spec()
    merged.update(spec or {})
    return merged


# --- the engines' requests, from a clean spec (a stored one too: these read JSON, not a DesignSpec)


def training_request(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The training engine's request (docs/training-engine.md). With an ``rl`` section the policy trains on
    the run's sequences: the model's seq_len is the prompt plus the mean response (engine/rl/rl.py)."""
    cluster = spec["cluster"]
    model = spec["workload"]["model"]
    run = spec.get("rl")
    if isinstance(run, Mapping) and "prompt_tokens" in run and "response_tokens_mean" in run:
        model = {**model, "seq_len": int(run["prompt_tokens"]) + int(run["response_tokens_mean"])}
    request: dict[str, Any] = {
        "model": model,
        "training": spec["workload"]["training"],
        "cluster": {
            k: cluster[k]
            for k in ("accelerator", "gpus_per_node", "nodes", "fabric", "oversubscription")
            if k in cluster
        },
    }
    if isinstance(spec.get("parallelism"), dict):
        request["parallelism"] = spec["parallelism"]
    return request


def serving_request(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The serving request of a spec with a ``serving`` section: its fields with the design's model,
    accelerator, node size and owning inputs (unless the section gives its own ``cost``); None without one."""
    if "serving" not in spec:
        return None
    costs = spec.get("costs") or {}
    request: dict[str, Any] = {
        **spec["serving"],
        "model": spec["workload"]["model"],
        "accelerator": spec["cluster"]["accelerator"],
        "gpus_per_node": spec["cluster"].get("gpus_per_node", defaults.GPUS_PER_NODE.value),
    }
    if "cost" not in request:
        request["cost"] = {k: costs[k] for k in ("on_prem", "horizon_years") if k in costs}
    return request


def rl_request(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The RL engine's request (engine/rl/rl.py) of a spec with an ``rl`` section: the design's model,
    training settings and cluster with the section; None without one."""
    if "rl" not in spec:
        return None
    request = training_request(spec)
    request.pop("parallelism", None)  # each pool's layout is searched
    return {**request, "rl": spec["rl"]}


# Owning inputs that price one part's servers: a rollout pool of its own never takes the trainers' (its
# server price and node power are its part's: the catalog's, or rl.rollout.on_prem's).
PART_ON_PREM = ("server_usd", "server_usd_per_gpu", "node_power_kw")


def rollout_pool_spec(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The spec a rollout pool of its own (``rl.rollout``) is priced with: the design's spec with the pool's
    cluster (its part, node size and nodes on the design's fabric; its server type), its owning inputs (the
    design's shared ones, without the trainers' server price and node power, and the pool's own given), and
    its cloud choices (the pool's; absent, the design's when the part is the trainers', else none); no
    storage (the rollout engines write no checkpoints). None without a rollout pool."""
    run = spec.get("rl")
    pool = run.get("rollout") if isinstance(run, Mapping) else None
    if not isinstance(pool, Mapping):
        return None
    trainer = spec["cluster"]
    part = pool.get("accelerator") or trainer["accelerator"]
    cluster = {
        "accelerator": part,
        "gpus_per_node": pool.get("gpus_per_node")
        or trainer.get("gpus_per_node", defaults.GPUS_PER_NODE.value),
        "nodes": pool["nodes"],
        "fabric": trainer["fabric"],
        **{k: trainer[k] for k in ("oversubscription",) if k in trainer},
        **({"server_type": pool["server_type"]} if pool.get("server_type") else {}),
    }
    costs = dict(spec.get("costs") or {})
    shared = {k: v for k, v in (costs.get("on_prem") or {}).items() if k not in PART_ON_PREM}
    costs["on_prem"] = {**shared, **(pool.get("on_prem") or {})}
    if "cloud" in pool:
        costs["cloud"] = list(pool["cloud"])
    elif part != trainer["accelerator"]:
        costs["cloud"] = []
    return {**spec, "cluster": cluster, "costs": costs}


# The shared cloud settings a design gives once under ``costs`` and every cloud choice's request carries.
SHARED_CLOUD = ("egress_tb", "managed_overhead_fraction", "spot_capacity_nodes")


def cost_inputs(spec: Mapping[str, Any]) -> tuple[CostInputs, ...]:
    """The cost engine's inputs (engine.cost.cost_inputs), one per cloud offering compared, each part placed
    with its spec path: the cluster ``spec.cluster``, the owning inputs ``spec.costs.<section>``, the site
    ``spec.site``, the cloud choice ``spec.costs.cloud.<i>`` with the shared cloud settings at
    ``spec.costs.<key>``. When none is chosen, one that prices no cloud option (``cloud.pricing_models``
    empty, at ``spec.costs.cloud``), so that owning is never compared with an offering the user did not
    choose (issue #31 item 1: the engine would otherwise pick a default offering and price all of it)."""
    costs = spec.get("costs") or {}
    base = {"cluster": Section(dict(spec["cluster"]), "spec.cluster")}
    for key in ("horizon_years", "utilization", "on_prem", *ENGINE_SECTIONS):
        base[key] = Section(costs.get(key), f"spec.costs.{key}")  # None: not given, named there all the same
    if spec.get("site"):
        base["site"] = Section(spec["site"], "spec.site")
    return tuple(
        CostInputs({**base, "cloud": cloud}, at="spec")
        for cloud in _cloud_sections(costs, costs.get("cloud") or [], "spec.costs.cloud")
    )


def _cloud_sections(costs: Mapping[str, Any], choices: list[Mapping[str, Any]], at: str) -> list[Section]:
    """The cloud part of each cost request: the choice ``<at>.<i>`` (its offering, the models ticked, the
    negotiated prices and quotas) with the design's shared cloud settings (``spec.costs.<key>``); without a
    choice, none priced (at ``at``)."""
    if not choices:
        return [Section({"pricing_models": []}, at)]
    shared = {key: f"spec.costs.{key}" for key in SHARED_CLOUD if costs.get(key) is not None}
    sections = []
    for index, choice in enumerate(choices):
        # The cost engine prices only the models ticked (all the offering has when the choice names none).
        cloud: dict[str, Any] = {"offering": choice["offering"]}
        if choice.get("pricing_models"):
            cloud["pricing_models"] = list(choice["pricing_models"])  # only the ticked ones are compared
        cloud.update({key: costs[key] for key in shared})
        for key in ("usd_per_node_hour", "capacity_nodes"):
            if choice.get(key):
                cloud[key] = choice[key]
        sections.append(Section(cloud, f"{at}.{index}", fields=shared))
    return sections


def rollout_cost_inputs(spec: Mapping[str, Any]) -> tuple[CostInputs, ...]:
    """The cost inputs of a rollout pool of its own (:func:`rollout_pool_spec`), one per cloud choice of the
    pool's: its node count, part, node size and server type at ``spec.rl.rollout.<field>`` (the rest of its
    cluster the design's, ``spec.cluster``), its owning inputs at ``spec.rl.rollout.on_prem`` (the design's
    shared ones there too; they are checked as the design's first), its cloud choices at
    ``spec.rl.rollout.cloud.<i>`` (the design's, when the pool takes them, at the same path). Empty
    without a rollout pool."""
    pool_spec = rollout_pool_spec(spec)
    if pool_spec is None:
        return ()
    pool_fields = {
        k: f"spec.rl.rollout.{k}" for k in ("accelerator", "gpus_per_node", "nodes", "server_type")
    }
    return tuple(
        inputs.with_section("on_prem", inputs.value("on_prem"), at="spec.rl.rollout.on_prem")
        for inputs in (
            replace(
                inputs,
                sections={
                    **inputs.sections,
                    "cluster": Section(inputs.value("cluster"), "spec.cluster", fields=pool_fields),
                    "cloud": replace(inputs.sections["cloud"], at=_rollout_at(inputs.sections["cloud"].at)),
                },
            )
            for inputs in cost_inputs(pool_spec)
        )
    )


def _rollout_at(at: str) -> str:
    """The pool's path of a cloud part built at ``spec.costs.cloud[.<i>]``."""
    return "spec.rl.rollout.cloud" + at.removeprefix("spec.costs.cloud")


def cost_requests(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The JSON cost requests of :func:`cost_inputs` (as the cost API takes them: a design's request shown
    or sent to ``/api/v1/tco/``)."""
    return [inputs.request() for inputs in cost_inputs(spec)]


def training_sections(at: str = "spec") -> Sections:
    """Where the sections of :func:`training_request` (and of :func:`rl_request`, whose ``rl`` is the
    spec's) sit in a spec that sits at ``at``: its model and training are the workload's, its cluster and
    layout the spec's own. The training engine's parser is given it (training.parse_request ``where``) and
    names every error there as it raises; the parsed request keeps it for the engine's later errors."""
    return Sections(
        model=f"{at}.workload.model",
        training=f"{at}.workload.training",
        cluster=f"{at}.cluster",
        parallelism=f"{at}.parallelism",
        search=f"{at}.search",
    )


# Where the serving request (serving_request) sits: the spec's serving section. Its model, accelerator and
# node size are the design's, so an error about them names the serving section as a whole (serving.sizing's
# ``given_at``).
SERVING_AT = "spec.serving"
