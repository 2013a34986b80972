"""The Serving page: demand and targets in (a GET form, so every estimate has its own URL), GPUs, layout,
latency curves, tokens/s and $ per million tokens out."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.catalog import selectors as catalog_selectors
from apps.dashboard.views import page_chart
from apps.designs import selectors as design_selectors
from apps.serving import charts, services
from clusterdesigner.engine import defaults, serving
from clusterdesigner.engine.errors import EngineError
from clusterdesigner.engine.presets import PRESETS
from clusterdesigner.views import or_404

# form field → (request path, kind, default); the request path is where the engine names its errors
FIELDS: dict[str, tuple[str, str, Any]] = {
    "preset": ("model.preset", "text", defaults.MODEL_PRESET.value),
    "accelerator": ("accelerator", "text", defaults.ACCELERATOR.value),
    "weight_precision": ("weight_precision", "text", "fp8"),
    "kv_precision": ("kv_precision", "text", "fp8"),
    "stack": ("stack", "text", serving.DEFAULT_STACK),
    "input_tokens": ("input_tokens", "int", 1024),
    "output_tokens": ("output_tokens", "int", 256),
    "ttft_ms": ("targets.ttft_s", "ms", 2000),
    "tpot_ms": ("targets.tpot_s", "ms", 50),
    "requests_per_s": ("demand.requests_per_s", "float", 20),
    "peak_to_mean": ("demand.peak_to_mean", "float", 2),
}


def _number(raw: str, kind: str) -> float | int:
    value = float(raw)
    return int(value) if kind == "int" and value.is_integer() else value


def _design_defaults(request: HttpRequest) -> dict[str, Any]:
    """Model preset and accelerator of ``?design=<id>`` (a design this user may read; 404 otherwise)."""
    raw = request.GET.get("design", "")
    if not raw.isascii() or not raw.isdigit() or not request.user.is_authenticated:
        return {}
    design = or_404(design_selectors.design_get(user=request.user, design_id=int(raw)))
    spec = or_404(design_selectors.design_version_get(design=design)).spec
    model, cluster = spec.get("model") or {}, spec.get("cluster") or {}
    out: dict[str, Any] = {"design": design}
    if isinstance(model.get("preset"), str):
        out["preset"] = model["preset"]
    if isinstance(cluster.get("accelerator"), str):
        out["accelerator"] = cluster["accelerator"]
    return out


def _form(
    request: HttpRequest, defaults: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """(form values to show, engine request, errors by form field) from the query string."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    body: dict[str, Any] = {"targets": {}, "demand": {}, "model": {}}
    for name, (path, kind, default) in FIELDS.items():
        raw = request.GET.get(name, "").strip()
        values[name] = raw or defaults.get(name, default)
        value: Any = values[name]
        if kind != "text":
            try:
                value = _number(str(value), kind)
            except ValueError:
                errors[name] = f"must be a number, got {raw!r}"
                continue
            if kind == "ms":
                value = value / 1000.0
        head, _, leaf = path.partition(".")
        if leaf:
            body[head][leaf] = value
        else:
            body[head] = value
    return values, body, errors


def serving_page(request: HttpRequest) -> HttpResponse:
    defaults = _design_defaults(request)
    values, body, errors = _form(request, defaults)
    context: dict[str, Any] = {
        "values": values,
        "errors": errors,
        "design": defaults.get("design"),
        "presets": [{"slug": s, "name": m.name} for s, m in PRESETS.items()],
        "accelerators": sorted(
            catalog_selectors.engine_catalog().accelerators.values(), key=lambda a: a.name
        ),
        "precisions": serving.SERVING_PRECISIONS,
        "stacks": list(serving.STACKS),
    }
    if not errors:
        try:
            result = services.serving_estimate(request=body)
        except EngineError as exc:
            by_path = {path: name for name, (path, _, _) in FIELDS.items()}
            field = by_path.get(exc.field, "")
            errors[field or "form"] = exc.message
        else:
            ttft, tpot = body["targets"]["ttft_s"], body["targets"]["tpot_s"]
            context.update(
                result=result,
                charts=[
                    page_chart("serving-latency", charts.latency_figure(result, ttft_s=ttft, tpot_s=tpot)),
                    page_chart("serving-cost", charts.cost_figure(result)),
                    page_chart("serving-layouts", charts.layouts_figure(result)),
                ],
                costs=sorted(result.costs, key=lambda c: c.usd_per_m_output_tokens),
                layouts=[r for r in result.layouts if r.meets_targets][:12],
            )
    status = 400 if errors else 200
    return render(request, "serving/serving.html", context, status=status)
