"""The design's versions and the diff between two of them (issue #36): what changed, what moved and why."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.dashboard import charts
from apps.dashboard.templatetags.dashboard import num, pct_plain, usd
from apps.designs import diffs, selectors
from clusterdesigner.charts import page_chart
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.cost.verdict import format_value
from clusterdesigner.views import or_404


@require_GET
def design_versions(request: HttpRequest, design_id: int) -> HttpResponse:
    """Every version of a design the user may read, newest first, with when and by whom it was saved."""
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    versions = list(selectors.design_version_list(design=design))
    return render(request, "dashboard/versions.html", {"design": design, "versions": versions})


@require_GET
def design_diff(request: HttpRequest, design_id: int) -> HttpResponse:
    """Version ``from`` → ``to`` of the design (default: the one before the current → the current)."""
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    new_number = _number(request.GET.get("to")) or design.version
    old_number = _number(request.GET.get("from")) or max(new_number - 1, 1)
    new = or_404(selectors.design_version_get(design=design, number=new_number))
    old = or_404(selectors.design_version_get(design=design, number=old_number))
    order = diffs.parse_order(request.GET.get("order"))
    context: dict[str, Any] = {
        "design": design,
        "old": old,
        "new": new,
        "versions": selectors.design_version_list(design=design),
    }
    try:
        found = diffs.version_diff(old=old, new=new, order=order)
    except EngineError as error:
        context["problem"] = f"{error.field}: {error.message}" if error.field else error.message
        # A bad ?order= is the reader's to fix (400); a version that no longer evaluates (the catalog changed
        # since it was saved) is shown with why, as the design page shows it.
        return render(request, "dashboard/diff.html", context, status=400 if error.field == "order" else 200)
    context.update(_diff_context(found))
    return render(request, "dashboard/diff.html", context)


def _number(raw: str | None) -> int | None:
    """A version number from the query; anything else is treated as not given (the default applies)."""
    try:
        value = int(raw or "")
    except ValueError:
        return None
    return value if 0 < value < 2**31 else None


def _diff_context(found: diffs.VersionDiff) -> dict[str, Any]:
    diff = found.diff
    inputs = [
        {"path": c.path, "unit": c.unit, "old": _shown(c.old, c.unit), "new": _shown(c.new, c.unit)}
        for c in diff.inputs
    ]
    outputs = [
        {
            "name": o.name,
            "label": o.label,
            "old": _shown(o.old, o.unit),
            "new": _shown(o.new, o.unit),
            "delta": _delta_shown(o.delta, o.unit),
            "moved": o.moved,
            "number": o.delta is not None or isinstance(o.old, (int, float)),
        }
        for o in diff.outputs
        if o.name != "verdict.sentence"
    ]
    sentence = next((o for o in diff.outputs if o.name == "verdict.sentence"), None)
    attribution = diff.attribution
    chart = page_chart("attribution", charts.attribution_waterfall(attribution)) if attribution else None
    shapley = {v.inputs: v.value_usd for v in (attribution.shapley or ())} if attribution else {}
    steps = [{"step": s, "shapley": shapley.get(s.inputs)} for s in attribution.steps] if attribution else []
    return {
        "diff": diff,
        "inputs": inputs,
        "outputs": outputs,
        "sentence": sentence,
        "attribution": attribution,
        "steps": steps,
        "charts": [chart] if chart else [],
    }


def _delta_shown(delta: float | None, unit: str) -> str:
    """A change, signed: +$6.58 per node-hour, −$223,718, −3.8 points (a fraction's change)."""
    if delta is None:
        return ""
    sign = "−" if delta < 0 else "+"
    if unit in ("fraction", "fraction of hours busy"):
        return f"{sign}{abs(delta) * 100:.1f} points"
    return sign + _shown(abs(delta), unit)


def _shown(value: Any, unit: str) -> str:
    """An input's or output's value as the page writes it: dollars, a percentage, a number with its unit as
    the verdict writes it ($412,003 per node), or JSON for a list or section."""
    if value is None:
        return "–"
    if isinstance(value, (bool, str)):
        return str(value)
    if isinstance(value, (int, float)):
        if unit == "USD":
            return usd(value)
        if unit in ("fraction", "fraction of hours busy"):
            return pct_plain(value)
        return format_value(float(value), unit) if unit else str(num(value))
    return json.dumps(value, sort_keys=True)
