"""The Serving page: demand and targets in (a GET form, so every estimate has its own URL), GPUs, layout,
latency curves, tokens/s and $ per million tokens out."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.catalog import selectors as catalog_selectors
from apps.designs import selectors as design_selectors
from apps.designs.pricing import PriceOwner, price_owner
from apps.serving import charts, services
from apps.serving.api import id_param
from apps.sites.selectors import site_list
from apps.teams import selectors as team_selectors
from apps.teams.params import team_param
from clusterdesigner.charts import page_chart
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.presets import PRESETS
from clusterdesigner.engine.cost import defaults
from clusterdesigner.engine.serving import serving
from clusterdesigner.errors import InvalidInput
from clusterdesigner.views import or_404

# form field → (request path, kind, default); the request path is where the engine names its errors. A
# default of None: the field is optional (blank: not sent).
FIELDS: dict[str, tuple[str, str, Any]] = {
    "preset": ("model.preset", "text", defaults.MODEL_PRESET.value),
    "accelerator": ("accelerator", "text", defaults.ACCELERATOR.value),
    "gpus_per_node": ("gpus_per_node", "int", defaults.GPUS_PER_NODE.value),
    "weight_precision": ("weight_precision", "text", "fp8"),
    "kv_precision": ("kv_precision", "text", "fp8"),
    "stack": ("stack", "text", serving.DEFAULT_STACK),
    "input_tokens": ("input_tokens", "int", 1024),
    "output_tokens": ("output_tokens", "int", 256),
    "ttft_s": ("targets.ttft_s", "float", 2),
    "tpot_s": ("targets.tpot_s", "float", 0.05),
    "percentile": ("targets.percentile", "float", 99),
    "requests_per_s": ("demand.requests_per_s", "float", 20),
    "output_tokens_per_day": ("demand.output_tokens_per_day", "float", None),
    "peak_to_mean": ("demand.peak_to_mean", "float", 2),
    "prefix_cache_hit_rate": ("prefix_cache_hit_rate", "float", None),
    "draft_tokens": ("speculative.draft_tokens", "int", None),
    "acceptance_rate": ("speculative.acceptance_rate", "float", None),
    "draft_cost": ("speculative.draft_cost", "float", None),
}
# One unit system (issue #37): the targets are in seconds on the page as in the API and the design editor.
# Links made when the page took milliseconds (?ttft_ms=2000) still open, converted: old name → (new, scale).
LEGACY_MS_FIELDS: dict[str, tuple[str, float]] = {"ttft_ms": ("ttft_s", 1e-3), "tpot_ms": ("tpot_s", 1e-3)}
# The design's serving section (docs/serving-engine.md) → form fields, with a scale.
SECTION_FIELDS: dict[str, tuple[str, float]] = {
    "input_tokens": ("input_tokens", 1),
    "output_tokens": ("output_tokens", 1),
    "targets.ttft_s": ("ttft_s", 1),
    "targets.tpot_s": ("tpot_s", 1),
    "targets.percentile": ("percentile", 1),
    "demand.requests_per_s": ("requests_per_s", 1),
    "demand.output_tokens_per_day": ("output_tokens_per_day", 1),
    "demand.peak_to_mean": ("peak_to_mean", 1),
    "weight_precision": ("weight_precision", 1),
    "kv_precision": ("kv_precision", 1),
    "stack": ("stack", 1),
}
DESIGN_MODEL = "design"  # the preset picker's value for a design's own (non-preset) model shape


def _number(raw: str, kind: str) -> float | int:
    value = float(raw)
    return int(value) if kind == "int" and value.is_integer() else value


def _section_values(section: Any) -> dict[str, Any]:
    """Form values from a design's ``serving`` section: the fields the page has (the engine checks them)."""
    out: dict[str, Any] = {}
    if not isinstance(section, dict):
        return out
    for path, (name, scale) in SECTION_FIELDS.items():
        head, _, leaf = path.partition(".")
        value = (section.get(head) or {}).get(leaf) if leaf else section.get(head)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = f"{value * scale:g}"
        elif isinstance(value, str):
            out[name] = value
    if "output_tokens_per_day" in out:
        out["requests_per_s"] = ""
    # What the form has no field for is sent as the design gives it while the form leaves it blank.
    if isinstance(section.get("lengths"), list):
        out["design_lengths"] = section["lengths"]
        out["input_tokens"] = out["output_tokens"] = ""
    demand = section.get("demand")
    if isinstance(demand, dict) and isinstance(demand.get("hourly_profile"), list):
        out["design_profile"] = demand["hourly_profile"]
        out["peak_to_mean"] = ""
    return out


def _design_defaults(request: HttpRequest) -> dict[str, Any]:
    """Form values of ``?design=<id>`` (a design this user may read; 404 otherwise): its model, accelerator,
    GPUs per node and, when it has a serving section, that section's demand, lengths, targets and
    precisions. A model that is not a bare preset is sent as the design's shape (``DESIGN_MODEL``)."""
    raw = request.GET.get("design", "")
    if not raw.isascii() or not raw.isdigit() or not request.user.is_authenticated:
        return {}
    design = or_404(design_selectors.design_get(user=request.user, design_id=int(raw)))
    spec = or_404(design_selectors.design_version_get(design=design)).spec
    model = (spec.get("workload") or {}).get("model") or {}
    cluster = spec.get("cluster") or {}
    out: dict[str, Any] = {"design": design, **_section_values(spec.get("serving"))}
    if isinstance(model, dict) and set(model) == {"preset"} and isinstance(model["preset"], str):
        out["preset"] = model["preset"]
    elif isinstance(model, dict) and model:
        out["preset"], out["design_model"] = DESIGN_MODEL, model
    if isinstance(cluster.get("accelerator"), str):
        out["accelerator"] = cluster["accelerator"]
    if isinstance(cluster.get("gpus_per_node"), int):
        out["gpus_per_node"] = cluster["gpus_per_node"]
    return out


def _form(
    request: HttpRequest, defaults: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """(form values to show, engine request, errors by form field) from the query string. Demand is
    requests/s or output tokens/day: the second, when given, blanks the first."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    body: dict[str, Any] = {"targets": {}, "demand": {}, "model": {}, "speculative": {}}
    raw_values = {name: request.GET.get(name, "").strip() for name in FIELDS}
    for old, (name, scale) in LEGACY_MS_FIELDS.items():
        legacy = request.GET.get(old, "").strip()
        if legacy and not raw_values[name]:
            try:
                raw_values[name] = f"{float(legacy) * scale:g}"
            except ValueError:
                errors[name] = f"must be a number, got {legacy!r}"
    if raw_values["output_tokens_per_day"]:
        if raw_values["requests_per_s"]:
            errors["output_tokens_per_day"] = "give requests/s or output tokens/day, not both"
        defaults = {**defaults, "requests_per_s": ""}
    elif raw_values["requests_per_s"]:
        defaults = {**defaults, "output_tokens_per_day": ""}
    for name, (path, kind, default) in FIELDS.items():
        raw = raw_values[name]
        values[name] = raw or defaults.get(name, default)
        value: Any = values[name]
        if value is None or value == "":
            values[name] = ""
            continue
        if kind != "text":
            try:
                value = _number(str(value), kind)
            except ValueError:
                errors.setdefault(name, f"must be a number, got {raw!r}")
                continue
        head, _, leaf = path.partition(".")
        if leaf:
            body[head][leaf] = value
        else:
            body[head] = value
    if not body["speculative"]:
        del body["speculative"]  # blank: no speculative decoding
    if values["preset"] == DESIGN_MODEL and "design_model" in defaults:
        body["model"] = defaults["design_model"]
    if "design_lengths" in defaults and not values["input_tokens"] and not values["output_tokens"]:
        body["lengths"] = defaults["design_lengths"]
    if "design_profile" in defaults and not values["peak_to_mean"]:
        body["demand"]["hourly_profile"] = defaults["design_profile"]
    return values, body, errors


def _picker_accelerators(chosen: Any) -> list[Any]:
    """The catalog's accelerators by name, without retired rows (hidden from pickers, as in the design editor)
    unless the form already names one, e.g. a design's own part."""
    # Both from the catalog snapshot, rebuilt only when the catalog changes (a retirement is a saved row).
    snapshot = catalog_selectors.engine_catalog_snapshot()
    retired = snapshot.retired_accelerators - {chosen}
    parts = snapshot.specs.accelerators
    return sorted((a for slug, a in parts.items() if slug not in retired), key=lambda a: a.name)


def _price_owner(request: HttpRequest, design: Any) -> PriceOwner | None:
    """Whose price book the page prices with: a design's owner's (``?design=``, as its evaluation does),
    else ``?team=`` (a team the user is a member of), else the signed-in user's own; none for a visitor."""
    if design is not None:
        return PriceOwner.of(design)
    # The form's "Your own" choice sends team= empty.
    return price_owner(user=request.user, team_id=team_param(request.GET.get("team"), blank_is_own=True))


def serving_page(request: HttpRequest) -> HttpResponse:
    defaults = _design_defaults(request)
    values, body, errors = _form(request, defaults)
    context: dict[str, Any] = {
        "values": values,
        "errors": errors,
        "design": defaults.get("design"),
        "design_model": "design_model" in defaults,
        "design_lengths": "design_lengths" in defaults and "lengths" in body,
        "design_profile": "hourly_profile" in body["demand"],
        "presets": [{"slug": s, "name": m.name} for s, m in PRESETS.items()],
        "accelerators": _picker_accelerators(values.get("accelerator")),
        "precisions": serving.SERVING_PRECISIONS,
        "stacks": list(serving.STACKS),
        # The price books the user may price with: their own, or a team's they are a member of.
        "teams": list(team_selectors.team_list(user=request.user)) if request.user.is_authenticated else [],
        "team": request.GET.get("team", ""),
        # The sites the user may price owning at (theirs, and their teams').
        "sites": list(site_list(user=request.user)) if request.user.is_authenticated else [],
        "site": request.GET.get("site", ""),
    }
    if not errors:
        try:
            owner = _price_owner(request, defaults.get("design"))
            site_id = None if defaults.get("design") else id_param(request.GET.get("site"), field="site")
            site = services.serving_site(user=request.user, site_id=site_id)
            estimate = services.serving_estimate_priced(request=body, owner=owner, site=site)
            result = estimate.result
        except EngineError as exc:
            by_path = {path: name for name, (path, _, _) in FIELDS.items()}
            field = by_path.get(exc.field, exc.field if exc.field in ("team", "site") else "")
            errors[field or "form"] = exc.message
        except InvalidInput as exc:  # a team that is not an id
            errors.update((name, messages[0]) for name, messages in exc.fields.items())
        else:
            context.update(prices=estimate.prices, price_findings=estimate.findings)
            ttft, tpot = body["targets"]["ttft_s"], body["targets"]["tpot_s"]
            context["kv_kib_per_token"] = result.kv_bytes_per_token / 1024
            context.update(
                result=result,
                charts=[
                    page_chart("serving-latency", charts.latency_figure(result, ttft_s=ttft, tpot_s=tpot)),
                    page_chart("serving-cost", charts.cost_figure(result)),
                    page_chart("serving-layouts", charts.layouts_figure(result)),
                    page_chart("serving-pareto", charts.pareto_figure(result)),
                ],
                deploy=services.serving_deploy(request=body, result=result, catalog=estimate.catalog),
                costs=sorted(result.costs, key=lambda c: c.usd_per_m_output_tokens),
                layouts=[r for r in result.layouts if r.meets_targets][:12],
            )
    status = 400 if errors else 200
    return render(request, "serving/serving.html", context, status=status)
