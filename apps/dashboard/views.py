"""Dashboard pages: home, design editor, design page, compare, sweep and the signed-out share view.

Pages are server-rendered; the editor and the sweep form call the REST API with fetch (static/js/*.js).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.contrib.messages import get_messages
from django.core.cache import cache
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from apps.analysis.models import Analysis
from apps.catalog.models import Accelerator, CloudOffering, CloudPrice, Fabric, StorageTier
from apps.catalog.selectors import engine_catalog, price_freshness
from apps.dashboard import charts
from apps.dashboard.compare import ComparePageRow, compare_row, compare_table
from apps.dashboard.page_inputs import EditorSpec, PageQuery, Prefill
from apps.dashboard.templatetags.dashboard import num
from apps.designs import drafts, selectors, services, share_links
from apps.designs import prices as design_prices
from apps.designs.export_files import export_response
from apps.designs.models import Evaluation
from apps.designs.specs import PRICING_MODELS, spec_with_defaults
from apps.sites import selectors as site_selectors
from apps.teams import access
from apps.teams import selectors as team_selectors
from clusterdesigner import fastpath, memo
from clusterdesigner.charts import page_chart, pricing_label
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.offerings import cloud_offering_from_dict, default_offering
from clusterdesigner.engine.cost import cost, defaults
from clusterdesigner.engine.design import spec as design_spec
from clusterdesigner.engine.design import tradeoffs
from clusterdesigner.engine.design.analysis_result import AnalysisSnapshot, SweepRow
from clusterdesigner.engine.design.evaluation import DesignEvaluation, EvaluationFinding
from clusterdesigner.engine.design.spec import MODEL as MODEL_RULES
from clusterdesigner.engine.rl import rl_request
from clusterdesigner.engine.serving.serving import SERVING_PRECISIONS
from clusterdesigner.engine.training.framework import DEFAULT_FRAMEWORK
from clusterdesigner.engine.training.framework import PROFILES as FRAMEWORK_PROFILES
from clusterdesigner.engine.training.precision import RECIPES as PRECISION_RECIPES
from clusterdesigner.engine.training.training import exotic_features, model_presets
from clusterdesigner.engine.training.training_result import TrainingEstimate
from clusterdesigner.errors import InvalidInput
from clusterdesigner.views import or_404

logger = logging.getLogger(__name__)
PRICING_NAMES = dict(CloudPrice.PricingModel.choices)


def _pricing_name(model: str) -> str:
    """A pricing model's name as the catalog shows it ("On-demand"); the slug itself for one it lacks."""
    return PRICING_NAMES.get(model, model)


def _charts_for(evaluation: Evaluation, typed: DesignEvaluation) -> list[dict[str, str]]:
    """The design charts of a stored evaluation (``typed``: its result as read), ready for the page, cached
    by its input hash: the result is a pure function of the snapshot the hash covers. (Not by primary key: the
    cache is Redis, which outlives a re-created database, and a new row with an old id would be drawn with
    another design's charts.)"""
    # v4: user and catalog text escaped for Plotly (a v3 entry may hold live markup). v5: the cash-flow chart.
    # v6: the design verdict's rival offering first; the tornado on NPV.
    # v7: an RL design's step timeline and split charts.
    key = f"dashboard:charts:v7:{evaluation.input_hash}"
    page_charts: list[dict[str, str]] | None = cache.get(key)
    if page_charts is None:
        page_charts = [page_chart(c["id"], c["figure"]) for c in charts.design_charts(typed)]
        cache.set(key, page_charts, 24 * 3600)
    return page_charts


# What reading a stored result that lacks a figure raises (a null where a number was expected, a missing key).
UNREADABLE_RESULT = (TypeError, KeyError, ValueError, AttributeError, ArithmeticError)


def _results_context(evaluation: Evaluation, frame: str | None = None) -> dict[str, Any]:
    """The results part of a page for a stored evaluation or, when the stored result cannot be drawn (one
    stored before its inputs were bounded, with nulls where its figures overflowed), that as the page's
    ``evaluation_error``: a page shows why instead of answering 500."""
    try:
        return _results_parts(evaluation, frame)
    except UNREADABLE_RESULT:
        logger.warning("evaluation %s cannot be drawn", evaluation.pk, exc_info=True)
        message = (
            "The stored result of this evaluation is incomplete (some figures were out of range when it was "
            "computed), so it cannot be shown. Edit the design's inputs to evaluate it again."
        )
        return {
            "evaluation": evaluation,
            "evaluation_error": {"message": message, "field": "", "min_nodes": None},
        }


def _results_parts(evaluation: Evaluation, frame: str | None = None) -> dict[str, Any]:
    result = selectors.evaluation_read(result=evaluation.result)
    # Options are ranked and badged in the frame the reader picked: the whole horizon unless ?frame=run.
    frame = frame if frame in selectors.RANKING_FRAMES else "horizon"
    training = result.training
    break_even = [
        (o.label, o.break_even_utilization) for o in result.options if o.break_even_utilization is not None
    ]
    findings: dict[str, list[EvaluationFinding]] = {}
    for finding in result.findings:
        findings.setdefault(finding.severity, []).append(finding)
    return {
        "evaluation": evaluation,
        "result": result,
        "costs": result.costs,
        "design_verdict": result.design_verdict,
        "rival_cost": result.rival_cost,
        "training": training.chosen if training else None,
        "best_option": result.options[0] if result.options else None,
        "frame": frame,
        "frame_label": selectors.RANKING_FRAMES[frame],
        "ranked_options": result.ranked_options(frame),
        "break_even": break_even,
        "findings_by_severity": findings,
        "candidates": training.candidates[:10] if training else (),
        **_layout_ties(training),
        "expected_days": result.expected_days,
        "charts": _charts_for(evaluation, result),
        "framework": _framework_assumed(result),
    }


def _framework_assumed(result: DesignEvaluation) -> dict[str, Any] | None:
    """The training stack the estimate assumed (spec.workload.training.framework, else the engine's default
    profile), so a reviewer sees it beside the layout; None without a training estimate or when the stored
    spec no longer parses (then which profile it ran under is not known here)."""
    spec = result.design_spec
    if result.training is None or spec is None:
        return None
    slug = spec.training.framework or DEFAULT_FRAMEWORK
    return {"slug": slug, "name": FRAMEWORK_PROFILES[slug].name, "default": spec.training.framework is None}


def _layout_ties(training: TrainingEstimate | None) -> dict[str, Any]:
    """The best-layouts table's rows and tie sentence (issue 19): each of the ten best candidates, and any
    candidate tied with the chosen one beyond them, with its position in the search's ``ties`` (most robust
    first; None when outside the error band) and its exotic features. ``most_robust`` is the tied layout the
    engine would trust most when two or more tie; None when the chosen one stands alone (or the result
    predates ties)."""
    if training is None:
        return {"layout_rows": (), "most_robust": None, "tie_count": 0}
    robust_rank = {index: rank for rank, index in enumerate(training.ties, start=1)}
    gpus_per_node = training.summary.cluster.gpus_per_node
    shown = [i for i in range(len(training.candidates)) if i < 10 or i in robust_rank]
    rows = [
        {
            "number": i + 1,
            "candidate": training.candidates[i],
            "robust_rank": robust_rank.get(i),
            "exotic": exotic_features(training.candidates[i].parallelism, gpus_per_node),
        }
        for i in shown
    ]
    most_robust = None
    if len(training.ties) > 1:
        best = next(r for r in rows if r["robust_rank"] == 1)
        chosen = next(r for r in rows if r["number"] == 1)
        most_robust = {**best, "chosen": chosen}
    return {"layout_rows": rows, "most_robust": most_robust, "tie_count": len(training.ties)}


def _evaluated_context(version: Any, frame: str | None = None) -> dict[str, Any]:
    """The results context of a design version, or, when the engines cannot evaluate it (a layout that fits
    nowhere, a catalog row it needs gone), the reason as ``evaluation_error``: the page shows why and how to
    fix it, and stays editable, instead of answering 500."""
    evaluation, problem = services.design_evaluate_or_problem(version=version)
    if evaluation is None:
        return {"evaluation_error": problem}
    return _results_context(evaluation, frame)


def home(request: HttpRequest) -> HttpResponse:
    designs = selectors.design_list(user=request.user)
    return render(
        request,
        "dashboard/home.html",
        {
            "recent": designs.filter(is_demo=False)[:12],
            "demos": designs.filter(is_demo=True).order_by("id"),
        },
    )


MAX_CLOUD_OFFERINGS = design_spec.MAX_CLOUD_OFFERINGS


def _catalog_prices() -> dict[str, dict[str, Any]]:
    """Per offering, its GPU count and the catalog price per pricing model (USD per instance-hour) that the
    cost engine would use: the editor shows them, scaled to the design's node, as each negotiated-price
    input's placeholder."""
    offerings = engine_catalog().offerings
    return {
        slug: {"gpu_count": o.gpu_count, "usd_per_hour": dict(o.usd_per_hour)}
        for slug, o in offerings.items()
    }


def _spec_slugs(spec: Any) -> list[str]:
    """Every string value in a spec: enough to keep the catalog rows it names in its pickers."""
    if isinstance(spec, dict):
        return [slug for value in spec.values() for slug in _spec_slugs(value)]
    if isinstance(spec, list):
        return [slug for value in spec for slug in _spec_slugs(value)]
    return [spec] if isinstance(spec, str) else []


def _picker_context(spec: Any = None) -> dict[str, Any]:
    # Retired rows are hidden from pickers, except those the design being edited already uses (dropping its
    # own choice from the list would change it on save).
    kept = Q(retired=False) | Q(slug__in=_spec_slugs(spec))
    return {
        "accelerators": Accelerator.objects.filter(kept).order_by("name").only("slug", "name", "memory_gib"),
        "fabrics": Fabric.objects.filter(kept).order_by("name").only("slug", "name"),
        "storage_tiers": StorageTier.objects.filter(kept).order_by("name").only("slug", "name"),
        "offerings": CloudOffering.objects.filter(kept)
        .select_related("accelerator")
        .order_by("provider", "instance_type"),
        "presets": model_presets(),
        "pricing_models": PRICING_MODELS,
        "pricing_choices": [(m, _pricing_name(m)) for m in PRICING_MODELS],
        "max_cloud": MAX_CLOUD_OFFERINGS,
        "recompute_choices": ["none", "selective", "full"],
        # The training stacks (engine/training/framework.py), the engine's default first as the profiles list
        # it.
        "framework_choices": [(slug, p.name) for slug, p in FRAMEWORK_PROFILES.items()],
        "default_framework": DEFAULT_FRAMEWORK,
        # training.attention_kernel: blank keeps the framework profile's kernel.
        "attention_kernel_choices": [
            ("", "The framework's default"),
            ("fused", "Transformer Engine fused attention (cuDNN)"),
            ("flash2", "FlashAttention-2 (flash-attn, PyTorch SDPA)"),
            ("flash3", "Hopper-native (FlashAttention-3, cuDNN 9.1+)"),
        ],
        # training.moe_dispatcher / moe_load_balance (MoE models): blank keeps the framework's dispatcher and
        # dropless routing (no key stored).
        "moe_dispatcher_choices": [
            ("", "The framework's default"),
            ("alltoall", "All-to-all (NCCL)"),
            ("allgather", "All-gather"),
            ("deepep", "DeepEP (flex)"),
            ("hybridep", "HybridEP (flex)"),
        ],
        "moe_load_balance_choices": [
            ("", "Dropless (the busiest rank sets the pace)"),
            ("balanced", "Balanced (token drop padded to capacity, or forced)"),
        ],
        "sharding_choices": ["none", "zero1", "zero2", "zero3", "hsdp"],
        # training.precision: the recipes (engine/training/precision.py); training.optimizer: blank keeps
        # Adam.
        "precision_choices": [(name, recipe.label) for name, recipe in PRECISION_RECIPES.items()],
        "optimizer_choices": [
            ("", "Adam (mixed precision)"),
            ("muon", "Muon (Newton-Schulz; AdamW on embedding and output)"),
        ],
    }


# The owning assumptions the editor offers under "Owning assumptions", in the order shown: label (with units),
# whether the value is a fraction (entered as 0.08, shown as 8 %) and when it applies. Defaults, units and
# sources come from the cost engine's DEFAULTS. Server price, node power and electricity have their own
# inputs above the section.
OWNING_FIELDS: dict[str, tuple[str, bool, str]] = {
    "pue": ("PUE (facility power ÷ IT power)", False, ""),
    "depreciation_years": ("Depreciation (years)", False, ""),
    "discount_rate": ("Discount rate (fraction per year)", True, ""),
    "residual_fraction": ("Residual value (fraction of capex)", True, ""),
    "colo_usd_per_kw_month": ("Colocation (USD per kW-month)", False, ""),
    "maintenance_fraction_per_year": ("Maintenance (fraction of capex per year)", True, ""),
    "staff_fte": ("Staff (FTE)", False, "blank = nodes ÷ nodes per staff FTE below"),
    "nodes_per_fte": ("Nodes per staff FTE", False, "Used when Staff (FTE) and staff per MW are blank."),
    "staff_fte_per_mw": (
        "Staff per MW of IT power (FTE)",
        False,
        "blank = by nodes; given, FTE = IT MW × this",
    ),
    "staff_usd_per_fte_year": ("Staff cost (USD per FTE-year)", False, ""),
    "colo_contracted_kw": (
        "Colocation contracted (kW)",
        False,
        "blank = the IT draw at full load",
    ),
    "software_usd_per_gpu_year": ("Software licences (USD per GPU-year)", False, ""),
    "insurance_fraction_per_year": ("Insurance (fraction of capex per year)", True, ""),
    "property_tax_fraction_per_year": ("Property tax (fraction of capex per year)", True, ""),
    "spares_fraction": ("Spares pool (fraction of server capex)", True, ""),
    "facility_capex_usd_per_mw": ("Facility capex (USD per MW of IT power)", False, ""),
    "facility_ops_usd_per_year": ("Facility and ops (USD per year, lump sum)", False, ""),
    "facility_capex_usd": ("Facility capex (USD, lump sum)", False, ""),
    "facility_life_years": (
        "Facility life (years)",
        False,
        "blank = the depreciation life; given, the facility capex is recovered over it",
    ),
    "capital_payments_per_year": ("Capital payments a year (1 = yearly, 12 = monthly)", False, ""),
    "idle_power_fraction": ("Idle power (fraction of full IT power)", True, ""),
    "load_power_fraction": ("Power at full load (fraction of nameplate)", True, ""),
    "installation_fraction": ("Installation (fraction of hardware capex)", True, ""),
    "storage_usd_per_tb": ("Storage (USD per TB, capex)", False, ""),
    "server_price_to_gpu_list": (
        "Server price ÷ (GPU list price × GPUs)",
        False,
        "Used when the server price and price per GPU are blank and the catalog lists the GPU price.",
    ),
    "server_usd_per_gpu": (
        "Server price per GPU (USD)",
        False,
        "Used when the server price is blank and the catalog has no priced server of this accelerator.",
    ),
}
_RULE_MIN = {"pos": "0", "nonneg": "0", "frac": "0", "util": "0", "ge1": "1", "int": "1"}


def _lowest(path: str) -> str:
    """The lowest value the cost engine accepts for input ``path`` ("" when its rule sets none)."""
    return _RULE_MIN.get(cost.field_rule(path) or "", "")


def _default_caption(path: str, *, fraction: bool = False) -> dict[str, str]:
    """The default of a cost-engine input (``on_prem.pue``) as its placeholder ("0.08") and its caption
    ("Default 0.08 = 8 % per year · <source>"), from the cost engine's DEFAULTS."""
    default = cost.DEFAULTS[path]
    value = float(default.value)
    shown = f"{value:g} = {value * 100:g} %" if fraction else num(value)
    caption = f"Default {shown} {default.unit}"
    return {"placeholder": f"{value:g}", "caption": caption, "source": default.source}


def _owning_fields(spec: EditorSpec) -> list[dict[str, Any]]:
    """One input per owning assumption: its spec key, label, the spec's value (blank = the default), the
    default as placeholder and caption with its source, and the lowest value the engine accepts."""
    fields = []
    for key, (label, fraction, note) in OWNING_FIELDS.items():
        fields.append(
            {
                "key": key,
                "id": "f-" + key.replace("_", "-"),
                "label": label,
                "value": spec.cost_value(f"on_prem.{key}"),
                "min": _lowest(f"on_prem.{key}"),
                # An input without a default (a count of staff, a contracted kW) says what blank means.
                **(
                    {"note": note, **_default_caption(f"on_prem.{key}", fraction=fraction)}
                    if f"on_prem.{key}" in cost.DEFAULTS
                    else {"note": "", "placeholder": "", "caption": "No default", "source": note}
                ),
            }
        )
    return fields


# The cost engine's money-over-time inputs the editor offers under "Money over time", as spec.costs.<path>:
# label (with units), whether a fraction, the choices of a choice input, and a note for an input without a
# default. Defaults, units and sources come from the cost engine's DEFAULTS.
LEASE_NOTE = "No default: needed when financing is lease"
TIER_NOTE = "No default: blank = the storage tier's own throughput from the catalog"
RESERVED_PAYMENTS = ("no_upfront", "partial_upfront", "all_upfront")
RESALE_NOTE = "No default: blank = the catalog's market series at the hardware's age (else book value)"
WACC_NOTE = "No default: give all three (and no discount rate) to discount at the WACC"
MONEY_FIELDS: dict[str, tuple[str, bool, tuple[str, ...], str]] = {
    "colocation.pricing": ("Colocation pricing", False, ("space_only", "all_in"), ""),
    "colocation.basis": (
        "Colocation billed on",
        False,
        ("contracted_kw", "drawn_kw", "nameplate_kw"),
        "",
    ),
    "cashflow.financing": ("Financing of the owned capex", False, ("cash", "loan", "lease"), ""),
    "cashflow.loan_rate": ("Loan rate (fraction per year)", True, (), ""),
    "cashflow.loan_months": ("Loan term (months)", False, (), ""),
    "cashflow.lease_usd_per_month": ("Lease payment (USD per month)", False, (), LEASE_NOTE),
    "cashflow.tax_rate": ("Tax rate (0 = pre-tax; rent, opex and depreciation all taxed)", True, (), ""),
    "cashflow.depreciation_schedule": ("Tax depreciation", False, ("macrs_5", "straight_line"), ""),
    "cashflow.resale_fraction": ("Resale at the horizon (fraction of capex)", True, (), RESALE_NOTE),
    "cashflow.wacc_debt_share": ("WACC: debt share (fraction)", True, (), WACC_NOTE),
    "cashflow.wacc_cost_of_debt": ("WACC: cost of debt (fraction per year)", True, (), WACC_NOTE),
    "cashflow.wacc_cost_of_equity": ("WACC: cost of equity (fraction per year)", True, (), WACC_NOTE),
    "cashflow.cloud_price_change_per_year": ("Cloud price change (fraction per year)", True, (), ""),
    "cashflow.power_escalation_per_year": ("Power price change (fraction per year)", True, (), ""),
    "cashflow.lead_time_months": ("Lead time before owned capacity is usable (months)", False, (), ""),
    "cashflow.reserved_payment": ("Reservation payment", False, RESERVED_PAYMENTS, ""),
    "uncertainty.spread": ("Uncertainty spread (± fraction)", True, (), ""),
    "uncertainty.samples": ("Monte Carlo draws", False, (), ""),
    "storage.mb_s_per_tib": ("Storage throughput (MB/s per provisioned TiB)", False, (), TIER_NOTE),
    "network.switch_usd": ("Network switch price (USD each)", False, (), ""),
    "network.cable_usd": ("Network cable price (USD each)", False, (), ""),
    "network.transceiver_usd": ("Network transceiver price (USD each)", False, (), ""),
    "network.capex_usd": (
        "Network quote, a lump sum (USD)",
        False,
        (),
        "No default: blank = switches, cables and transceivers counted at the prices above",
    ),
}


def _money_fields(spec: EditorSpec) -> list[dict[str, Any]]:
    """One input per money-over-time assumption: its spec path, label, the spec's value (blank = the
    default), its choices, the default as placeholder and caption with its source."""
    fields = []
    for path, (label, fraction, choices, note) in MONEY_FIELDS.items():
        default = cost.DEFAULTS.get(path)
        if default is None:
            caption = {"placeholder": "", "caption": note, "source": ""}
        elif choices:
            caption = {"placeholder": "", "caption": f"Default {default.value}", "source": default.source}
        else:
            caption = _default_caption(path, fraction=fraction)
        fields.append(
            {
                "path": path,
                "id": "f-" + path.replace(".", "-").replace("_", "-"),
                "label": label,
                "value": spec.cost_value(path),
                "choices": choices,
                "default": default.value if default is not None else None,
                "min": _lowest(path),
                **caption,
            }
        )
    return fields


# The layout fields the editor shows, in its order.
_LAYOUT_SHOWN = ("tp", "pp", "dp", "cp", "vpp", "micro_batch", "recompute", "sharding", "sequence_parallel")


def _model_kept(model: Mapping[str, Any]) -> str:
    """The model's fields the editor has no input for, as "seq_len 16384, head_dim 128" ("" if none): the
    editor keeps them on save while the preset stays the same, and says so beside the preset."""
    order = {k: i for i, k in enumerate(MODEL_RULES)}  # the spec's order (layers, hidden, …), not JSONB's
    kept = sorted((k for k in model if k != "preset"), key=lambda k: (order.get(k, len(order)), k))
    return ", ".join(f"{k} {json.dumps(model[k])}" for k in kept)


def _editor_context(raw: dict[str, Any]) -> dict[str, Any]:
    spec = EditorSpec.of(raw)
    owning = _owning_fields(spec)
    money = _money_fields(spec)
    layout = spec.layout
    return {
        # A fixed layout's fields it leaves to the search: the editor keeps them searched unless changed.
        "layout_searched": [k for k in _LAYOUT_SHOWN if k not in layout] if isinstance(layout, dict) else [],
        # A batch given in sequences only: the tokens field stays blank and says so (the editor keeps it).
        "batch_seqs": spec.batch_seqs,
        "model_preset": spec.preset,
        "model_kept": _model_kept(spec.model),
        "owning_fields": owning,
        "owning_given": any(f["value"] is not None for f in owning),
        "money_fields": money,
        "money_given": any(f["value"] is not None for f in money),
        "kwh_default": _default_caption("on_prem.usd_per_kwh"),
        "serving_precisions": SERVING_PRECISIONS,
        "rl_algorithms": rl_request.ALGORITHMS,
        "rl_modes": rl_request.MODES,
        "rl_placements": rl_request.PLACEMENTS,
        "defaults": {key.rpartition(".")[2]: d.value for key, d in defaults.DESIGN_DEFAULTS.items()},
    }


def _prefill(query: Prefill) -> dict[str, Any]:
    """A new design's spec from the query string (the sweep page links here with its point's parameters),
    the rest from the design defaults."""
    spec = spec_with_defaults(None)
    cluster = spec["cluster"]
    if query.accelerator:
        cluster["accelerator"] = query.accelerator
    if query.nodes is not None:
        cluster["nodes"] = query.nodes
    if query.gpus_per_node is not None:
        cluster["gpus_per_node"] = query.gpus_per_node
    if query.preset:
        spec["workload"]["model"] = {"preset": query.preset}
    if query.tokens is not None:
        spec["workload"]["training"]["tokens"] = query.tokens
    if query.layout is not None:
        spec["parallelism"] = dict(query.layout)
    if query.offering:
        models = list(query.pricing) or list(defaults.CLOUD_PRICING.value)
        spec["costs"]["cloud"] = [{"offering": query.offering, "pricing_models": models}]
    spec["costs"]["cloud"] = _cloud_of_accelerator(spec["costs"]["cloud"], cluster)
    return spec


def _cloud_of_accelerator(cloud: list[dict[str, Any]], cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The cloud choices, unless one rents another accelerator: never price one accelerator at another's
    rates; start from the default offering of the chosen accelerator instead (none if it has none)."""
    offerings = engine_catalog().offerings
    chosen = [c for c in cloud if c["offering"] in offerings]
    if all(offerings[c["offering"]].accelerator == cluster["accelerator"] for c in chosen):
        return cloud
    slug = default_offering(
        offerings,
        accelerator=cluster["accelerator"],
        gpus_per_node=cluster["gpus_per_node"],
        freshness=price_freshness(),
    )
    return [{"offering": slug, "pricing_models": list(defaults.CLOUD_PRICING.value)}] if slug else []


@login_required
def design_new(request: HttpRequest) -> HttpResponse:
    query = Prefill.parse(request.GET)
    name = query.name or "New design"
    spec = _prefill(query)
    return render(
        request,
        "dashboard/editor.html",
        {
            **_picker_context(),
            "design": None,
            "catalog_prices": _catalog_prices(),
            "spec": spec,
            "name": name,
            "visibility": "private",
            "sites": site_selectors.site_list(user=request.user),
            **_editor_context(spec),
        },
    )


@login_required
def design_edit(request: HttpRequest, design_id: int) -> HttpResponse:
    """The editor: the user's unsaved draft when they left one (shown as such, with its base version and a
    discard button), else the current version. Changes write the draft; "Save version" makes a version."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    draft = drafts.draft_get(design=design, user=request.user)
    version = drafts.draft_version(draft=draft) if draft else design.current
    context = {
        **_picker_context(version.spec),
        "design": design,
        "draft": draft,
        "base_number": draft.base_number if draft else design.version,
        "catalog_prices": _catalog_prices(),
        "spec": spec_with_defaults(version.spec),
        "name": version.name,
        "visibility": draft.visibility if draft else design.visibility,
        "description": version.description,
        "sites": site_selectors.site_list(user=request.user),
    }
    context.update(_editor_context(context["spec"]))
    context.update(_draft_evaluated_context(draft) if draft else _evaluated_context(version))
    return render(request, "dashboard/editor.html", context)


def _draft_evaluated_context(draft: Any, frame: str | None = None) -> dict[str, Any]:
    """_evaluated_context for a draft: evaluated as its version would be, stored nowhere."""
    evaluation, problem = drafts.draft_evaluate_or_problem(draft=draft)
    if evaluation is None:
        return {"evaluation_error": problem}
    return _results_context(evaluation, frame)


@login_required
def design_detail(request: HttpRequest, design_id: int) -> HttpResponse:
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    query = PageQuery.parse(request.GET)
    version = or_404(selectors.design_version_get(design=design, number=query.version))
    can_edit = access.can_edit(request.user, design)
    # the teams this user may move the design into (they must own or edit the team too)
    move_teams = team_selectors.team_list_editable(user=request.user)
    if design.team_id is not None:
        move_teams = move_teams.exclude(pk=design.team_id)
    context = {
        "design": design,
        "version": version,
        "can_edit": can_edit,
        "draft": drafts.draft_get(design=design, user=request.user) if can_edit else None,
        "versions": selectors.design_version_list(design=design)[:10],
        "share_links": selectors.share_link_list(design=design)[:20] if can_edit else [],
        "move_teams": move_teams if can_edit else [],
        **_evaluated_context(version, query.frame),
    }
    if context.get("evaluation") is not None and version.pk == design.current.pk:
        # Stale prices: each figure resolved now against the one last seen or accepted, the verdict before
        # and after (apps/designs/prices.py).
        status = design_prices.design_price_status(design=design, evaluation=context["evaluation"])
        context["price_status"] = status
    return render(request, "dashboard/design.html", context)


@login_required
@require_GET
def design_draft_results(request: HttpRequest, design_id: int) -> HttpResponse:
    """The results part of the editor for the user's draft (404 without one, or for a design they may not
    edit): the editor swaps it in after each change it writes to the draft."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    draft = or_404(drafts.draft_get(design=design, user=request.user))
    context = _draft_evaluated_context(draft, PageQuery.parse(request.GET).frame)
    response = render(request, "includes/_design_results.html", {"design": design, **context})
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_GET
def design_results(request: HttpRequest, design_id: int) -> HttpResponse:
    """The results part of the design page alone: the editor swaps it in after each save."""
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    return render(
        request,
        "includes/_design_results.html",
        {"design": design, **_evaluated_context(design.current, PageQuery.parse(request.GET).frame)},
    )


def _verdict_npv(row: Any) -> dict[str, float]:
    """Option key → the NPV of its monthly cash flows, from the design's rent-or-own verdict (owning and every
    chosen rent option; empty without a verdict)."""
    verdict = row.design_verdict
    if verdict is None:
        return {}
    return {o.key: o.npv_usd for o in (verdict.own, *verdict.options)}


def _compare_rows(user: Any, query: PageQuery) -> tuple[list[ComparePageRow], list[str]]:
    """The compare page's columns, one per design or design version asked for (in order), and the problems
    that kept a column out (unknown or hidden design, no such version, not evaluable)."""
    found = {d.pk: d for d in selectors.design_list(user=user).filter(pk__in=query.ids)}
    missing = [f"Design {i} does not exist or is not shared with you." for i in query.ids if i not in found]
    rows, unevaluated = [], []
    for ref in (r for r in query.refs if r.design_id in found):
        design = found[ref.design_id]
        version = (
            design.current if ref.version is None else design.versions.filter(number=ref.version).first()
        )
        if version is None:
            unevaluated.append(f"{design.name} has no version {ref.version}.")
            continue
        try:
            evaluation = services.design_evaluate(version=version)
        except EngineError as exc:
            unevaluated.append(f"{design.name} cannot be evaluated: {exc.message}")
            continue
        asked = None if ref.version is None else version.number
        rows.append(compare_row(design, evaluation, query.option_for(ref.key), key=ref.key, version=asked))
    return rows, missing + unevaluated


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    visible = selectors.design_list(user=request.user)
    query = PageQuery.parse(request.GET)
    context: dict[str, Any] = {
        "choices": visible.order_by("-is_demo", "name"),
        "selected": [r.design_id for r in query.refs if r.version is None],  # ticked: current versions
        "asked": bool(query.refs),
    }
    rows, problems = _compare_rows(request.user, query)
    if query.refs and not 2 <= len(rows) <= 6:
        problems.append(f"Choose 2 to 6 designs to compare ({len(rows)} can be compared).")
    context["problems"] = problems
    if 2 <= len(rows) <= 6:
        # On the verdict's basis (issue #31): each chosen option's NPV over the horizon, from its design's
        # rent-or-own verdict; an option the verdict does not price (not chosen) is not drawn.
        npvs = [_verdict_npv(r) for r in rows]
        points = [
            {
                "days": o.days,
                "npv_usd": npv.get(o.key),
                "label": f"{r.name}: {o.label}",
                "url": r.url,
            }
            for r, npv in zip(rows, npvs, strict=True)
            for o in r.options
        ]
        context.update(
            rows=rows,
            table=compare_table(rows),
            charts=[
                page_chart("compare-bars", charts.compare_bars_chart(rows)),
                page_chart(
                    "compare-pareto",
                    charts.pareto_chart(
                        points,
                        title="NPV over the horizon against expected days, every chosen option",
                        value="npv_usd",
                        y_title="NPV over the horizon (USD, the verdict's basis)",
                    ),
                ),
            ],
        )
    return render(request, "dashboard/compare.html", context)


@login_required
def sweep(request: HttpRequest) -> HttpResponse:
    sweeps = access.visible_to(request.user, Analysis.objects.filter(kind=Analysis.Kind.SWEEP))
    recent = sweeps.order_by("-created_at")[:8]
    return render(
        request,
        "dashboard/sweep.html",
        {
            **_picker_context(),
            "recent": recent,
            "default_accelerators": defaults.SWEEP_ACCELERATORS,
            "default_nodes": ", ".join(str(n) for n in defaults.SWEEP_NODES),
            "sweep_pricing": defaults.SWEEP_PRICING,
            "sweep_defaults": {
                "preset": defaults.MODEL_PRESET.value,
                "training": defaults.training(),
                "horizon_years": defaults.HORIZON_YEARS.value,
                "utilization": defaults.UTILIZATION.value,
            },
        },
    )


def _sweep_point_url(row: SweepRow, models: Mapping[str, Any], params: Mapping[str, Any]) -> str:
    """The new-design editor prefilled with a sweep point (``models``: the snapshot's model specs by key)."""
    prefill = Prefill.of_sweep_row(row, models=models, params=params)
    return f"{reverse('dashboard:design-new')}?{urlencode(prefill.query())}"


def _sweep_context(request: HttpRequest, analysis_id: int) -> dict[str, Any]:
    sweeps = access.visible_to(request.user, Analysis.objects.filter(kind=Analysis.Kind.SWEEP))
    analysis = sweeps.filter(pk=analysis_id).first()
    if analysis is None:
        raise Http404("No sweep with this id is yours.")
    context: dict[str, Any] = {"analysis": analysis}
    if analysis.status == Analysis.Status.SUCCEEDED and analysis.result:
        rows = [SweepRow.from_json(r) for r in analysis.result["rows"]]
        models = AnalysisSnapshot.from_json(analysis.snapshot).models or {}
        params = analysis.params or {}
        # The front's basis as the analysis stored it; None: stored before #31's one basis (per run, on days).
        stored_basis = analysis.result.get("basis")
        npv = stored_basis == tradeoffs.NPV_BASIS
        figure: charts.SweepFigure = "npv_usd" if npv else "cost_usd"
        name = "NPV over the horizon" if npv else "run cost (one run, undiscounted)"
        points = [
            {
                **row.to_json(),
                "finish_days": tradeoffs.finish_days(row),
                "url": _sweep_point_url(row, models, params),
                "label": f"{row.accelerator} × {row.nodes} nodes, {pricing_label(row.pricing_model)}",
            }
            for row in rows
            if row.priced
        ]
        context.update(
            rows=rows,
            failed=[r for r in rows if r.error],
            priced_count=sum(1 for r in rows if not r.error),
            offerings=_sweep_offerings(analysis.snapshot),
            pareto=[SweepRow.from_json(r) for r in analysis.result["pareto"]],
            basis=stored_basis,
            charts=[
                page_chart("sweep-days", charts.sweep_heatmap(rows, value="days")),
                page_chart("sweep-cost", charts.sweep_heatmap(rows, value=figure)),
                page_chart(
                    "sweep-pareto",
                    charts.pareto_chart(
                        points,
                        title=f"Pareto front: {name} against days",
                        subtitle="click a point to open it as a design",
                        value=figure,
                        y_title=f"{name[:1].upper()}{name[1:]} (USD)",  # "NPV …", "Run cost …"
                        x="finish_days" if stored_basis else "days",
                        x_title="Days until done, expected (owning's procurement lead time, then the run)"
                        if stored_basis
                        else "Days to train, expected (with failures and restarts)",
                    ),
                ),
            ],
        )
    return context


def _sweep_offerings(snapshot: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The offering each accelerator's cloud rows of a sweep were priced on, per pricing model, as its
    snapshot recorded it, with the price used and its date: a reader sees which instance a "b200 spot"
    cell means."""
    stored = AnalysisSnapshot.from_json(snapshot)
    records = {o["slug"]: o for o in stored.catalog["cloud_offerings"]}
    models = [m for m in stored.params["pricing_models"] if m != defaults.OWN]
    return [
        {
            "accelerator": accelerator,
            "prices": [
                _sweep_price(records.get(slug or ""), model, (stored.prices or {}).get(accelerator))
                for model, slug in stored.priced_on(accelerator, models).items()
            ],
        }
        for accelerator in stored.params["accelerators"]
    ]


def _sweep_price(record: dict[str, Any] | None, model: str, book: Mapping[str, Any] | None) -> dict[str, Any]:
    """The price a sweep's row of ``model`` used on the offering ``record``: the owner's price book's where
    it set one (``book``: the snapshot's resolved prices of the accelerator, apps.designs.pricing; per
    instance-hour, dated by its entry), else the engine's own rule (the latest per model; of one date, the
    lowest); blanks when the snapshot has no such offering."""
    spec = cloud_offering_from_dict(record) if record else None
    name = f"{spec.provider.upper()} {spec.instance_type}" if spec else ""
    usd = spec.usd_per_hour.get(model) if spec else None
    as_of = spec.price_as_of.get(model) if spec else None
    rows = {r["name"]: r for r in (book or {}).get("rows") or []}
    row = rows.get(f"prices.cloud.{spec.slug}.{model}") if spec else None
    if spec is not None and book and row and row.get("origin") == "price_book":
        usd = float(row["value"]) * spec.gpu_count / int(book["gpus_per_node"])
        as_of = f"price book entry {row.get('entry_id')}, {row.get('as_of')}"
    return {"model": _pricing_name(model), "offering": name, "usd_per_hour": usd, "as_of": as_of}


@login_required
def sweep_detail(request: HttpRequest, analysis_id: int) -> HttpResponse:
    return render(request, "dashboard/sweep_detail.html", _sweep_context(request, analysis_id))


@login_required
@require_GET
def sweep_results(request: HttpRequest, analysis_id: int) -> HttpResponse:
    """The heatmaps, Pareto chart and table alone: the sweep page swaps them in under its finished bar."""
    return render(request, "includes/_sweep_results.html", _sweep_context(request, analysis_id))


# --- Share view (no sign-in)


@require_GET
def share(request: HttpRequest, token: str) -> HttpResponse:
    # The page is a function of the link (its token, dates) and its frozen evaluation, except for what
    # base.html shows a signed-in reader (the name, a CSRF token) or flash messages: a reader with neither
    # gets the page rendered once per process (clusterdesigner.memo), keyed by what share_link_open returns.
    # That statement runs on every request and checks revocation and expiry, so a revoked or expired link is
    # a 404 at once; a kept page costs it alone.
    key = or_404(share_links.share_link_opened(request, token))
    frame = PageQuery.parse(request.GET).frame
    follows = bool(key[-1])  # a link that follows the approved version: the page moves with the approval
    # Only the default frame (over the horizon) is kept: "rank per run" is the same link with ?frame=run.
    anonymous = (
        not follows
        and not request.user.is_authenticated
        and not len(get_messages(request))
        and frame in (None, "horizon")
    )
    body = memo.SHARE_PAGES.get(key) if anonymous else None
    if body is not None:
        response = HttpResponse(body)
    else:
        link = or_404(selectors.share_link_resolve(token=token))
        response = _share_render(request, link, token, frame)
        if anonymous and response.status_code == 200:
            memo.SHARE_PAGES.put(key, bytes(response.content), len(response.content))
    response["X-Robots-Tag"] = "noindex"
    response["Cache-Control"] = "private, no-store"
    # A kept page (a reader with no session, no messages) is replayed before Django's stack
    # (clusterdesigner.fastpath), its probe counting the open as this view does.
    return memo.keep(response, key) if anonymous else response


fastpath.route(
    "dashboard:share",
    method="GET",
    kwarg="token",
    value=share_links.TOKEN,
    probe=share_links.share_link_probe,
)


def _share_render(request: HttpRequest, link: Any, token: str, frame: str | None) -> HttpResponse:
    evaluation = services.share_link_evaluation(link=link)
    results = _results_context(evaluation, frame)
    version = evaluation.version
    # The approval the page states: the version it shows is the design's approved one.
    approved = version if link.follow_approved and link.design.approved_version_id == version.pk else None
    context = {
        "link": link,
        "token": token,
        "version": version,
        "approval": getattr(approved, "review", None) if approved else None,
        "assumptions": results["result"].assumptions if "result" in results else (),
        **results,
    }
    return render(request, "dashboard/share.html", context)


@require_GET
def share_export(request: HttpRequest, token: str, fmt: str) -> HttpResponse:
    link = or_404(selectors.share_link_resolve(token=token))
    if fmt not in ("csv", "xlsx"):
        raise Http404("Share links download CSV or XLSX.")
    evaluation = services.share_link_evaluation(link=link)
    version = evaluation.version
    try:
        return export_response(evaluation.result, fmt, f"design-{link.design_id}-v{version.number}")
    except InvalidInput as exc:
        return HttpResponseBadRequest(exc.message)
