"""Site pages: the owner's sites with a new-site form. Views parse, call one service, and render."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.sites import selectors, services
from clusterdesigner.engine.cost.site import COOLING_TYPES
from clusterdesigner.errors import InvalidInput

NUMBERS = (
    "power_usd_per_kwh",
    "colocation_usd_per_kw_month",
    "max_kw_per_rack",
    "power_now_mw",
    "rack_lead_time_months",
    "capex_usd_per_rack",
    "capex_usd_per_mw",
)


def _number(text: str) -> Any:
    """A form number as the engine reads it; text that is no number is passed on for the engine to name."""
    try:
        return float(text)
    except ValueError:
        return text


def _power_later(text: str) -> list[Any]:
    """Lines "YYYY-MM MW" as power steps; a line that does not split in two is passed on for the engine to
    name by its index."""
    steps: list[Any] = []
    for line in text.splitlines():
        parts = line.split()
        if parts:
            steps.append({"date": parts[0], "mw": _number(parts[1])} if len(parts) == 2 else {"date": line})
    return steps


def _form_site(post: Any) -> dict[str, Any]:
    """The site object from the form's fields (blank optional numbers left out)."""
    data: dict[str, Any] = {"name": post.get("name", ""), "cooling": post.getlist("cooling")}
    if post.get("region"):
        data["region"] = post["region"]
    data.update({k: _number(post[k]) for k in NUMBERS if post.get(k, "").strip()})
    data["colocation_basis"] = post.get("colocation_basis") or "contracted_kw"
    data["colocation_all_in"] = post.get("colocation_all_in") == "on"
    data["pue"] = {k: _number(post[f"pue_{k}"]) for k in COOLING_TYPES if post.get(f"pue_{k}", "").strip()}
    data["power_later"] = _power_later(post.get("power_later", ""))
    return data


@login_required
@require_http_methods(["GET", "POST"])
def site_list(request: HttpRequest) -> HttpResponse:
    errors: dict[str, list[str]] = {}
    if request.method == "POST":
        try:
            services.site_create(owner=request.user, data=_form_site(request.POST))
            return redirect("sites:list")
        except InvalidInput as exc:
            errors = exc.fields
    context = {
        "sites": selectors.site_list(user=request.user),
        "errors": errors,
        "form": request.POST if errors else {},
        "cooling_types": COOLING_TYPES,
    }
    return render(request, "sites/list.html", context, status=400 if errors else 200)
