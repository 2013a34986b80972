"""Capacity plan pages: the owner's plans with a new-plan form (training runs picked from saved designs),
and a plan's result with its charts. Views parse, call one service or selector, and render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import json_script
from django.views.decorators.http import require_GET, require_http_methods

from apps.designs import selectors as design_selectors
from apps.plans import charts, selectors, services
from apps.plans.exports import XLSX, plan_xlsx
from apps.plans.models import PlanRun
from apps.teams import access
from clusterdesigner.engine.capacity.capacity import PlanResult
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.views import or_404

# The new-plan form's starting spec. Prices: aws-p5-48xlarge on-demand $55.04 (us-east-1, 2026-09-01) and
# 3-year RI $23.776 (2026-09-19) from the seed catalog; owning per node from the cost engine's model of
# demo design 1 (tests/engine/test_capacity.py shows the arithmetic), with the capital share of its fixed
# cost, life and residual, so that the plan's NPV pays capex at delivery and takes the resale back (the cash
# basis). Replace them with your own.
EXAMPLE_SPEC: dict[str, Any] = {
    "horizon_months": 12,
    "gpus_per_node": 8,
    "growth_pct_per_month": 10.0,
    "discount_rate": 0.08,
    "training": [],
    "inference": [{"name": "chat", "peak_gpus": 16, "offpeak_fraction": 0.5}],
    "baseline": [
        {
            "name": "research",
            "gpus_by_day_hour": [
                [32.0 if d < 5 and 9 <= h < 18 else 8.0 for h in range(24)] for d in range(7)
            ],
        }
    ],
    "supply": {
        "owned": {
            "lead_time_months": 2,
            "capex_usd_per_node": 336883.91,
            "fixed_usd_per_node_month": 9539.32,
            "usd_per_node_hour_used": 0.76986,
            "capital_usd_per_node_month": 6074.16,
            "depreciation_years": 5.0,
            "residual_fraction": 0.2,
        },
        "reservations": [{"term_months": 36, "usd_per_node_hour": 23.776}],
        "on_demand": {"usd_per_node_hour": 55.04},
    },
}


# Share link expiry choices in days, as for designs (templates/includes/_share_expiry.html).
SHARE_EXPIRY_DAYS = ("7", "30", "90")


def _form_spec(request: HttpRequest) -> dict[str, Any]:
    """The JSON spec from the form, with a training run for each ticked design (its deadline beside it)."""
    try:
        spec = json.loads(request.POST.get("spec") or "{}")
    except json.JSONDecodeError as exc:
        raise EngineError(f"is not JSON: {exc.msg} at line {exc.lineno}", field="spec") from exc
    if not isinstance(spec, dict):
        raise EngineError("must be a JSON object", field="spec")
    runs = list(spec.get("training") or [])
    for raw in request.POST.getlist("design"):
        deadline = request.POST.get(f"deadline-{raw}") or "0"
        if not raw.isdigit() or not deadline.isdigit():
            raise EngineError("must be whole numbers", field=f"deadline-{raw}")
        runs.append({"design_id": int(raw), "deadline_month": int(deadline)})
    return {**spec, "training": runs}


@login_required
@require_http_methods(["GET", "POST"])
def plan_list(request: HttpRequest) -> HttpResponse:
    error: EngineError | None = None
    spec_text = json.dumps(EXAMPLE_SPEC, indent=1)
    if request.method == "POST":
        spec_text = request.POST.get("spec") or ""
        try:
            plan = services.plan_create(
                owner=request.user, name=request.POST.get("name") or "Capacity plan", spec=_form_spec(request)
            )
            return redirect("plans:detail", plan_id=plan.pk)
        except EngineError as exc:
            error = exc
    context = {
        "plans": selectors.plan_list(user=request.user),
        "designs": design_selectors.design_list(user=request.user).order_by("name"),
        "spec_text": spec_text,
        "error": error,
    }
    return render(request, "plans/list.html", context, status=400 if error else 200)


def _supply_rows(supply: Any) -> list[tuple[str, str, str]]:
    """The prices the solve used, from the stored input snapshot: layer, price, source (a catalog offering, a
    saved design, or "given in the plan")."""
    supply = supply if isinstance(supply, dict) else {}
    rows = []
    owned = supply.get("owned")
    if isinstance(owned, dict):
        price = (
            f"${owned['fixed_usd_per_node_month']:,.2f} a node-month + "
            f"${owned['usd_per_node_hour_used']:,.4f} a node-hour used; "
            f"capex ${owned['capex_usd_per_node']:,.0f} a node"
        )
        rows.append(("Owned nodes", price, owned.get("source") or "given in the plan"))
    options = [(f"Reserved {r['term_months']} months", r) for r in supply.get("reservations") or []]
    options += [(label, supply.get(key)) for key, label in (("on_demand", "On-demand"), ("spot", "Spot"))]
    for label, option in options:
        if isinstance(option, dict):
            price = f"${option['usd_per_node_hour']:,.3f} a node-hour"
            if option.get("cap_nodes") is not None:  # spot's availability, or the price book's quota
                price += f", at most {option['cap_nodes']:g} nodes"
            rows.append((label, price, option.get("source") or "given in the plan"))
    return rows


def _plan_supply_rows(plan: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The prices the solve used; in a plan of several node types, each type's, named by its accelerator."""
    if "node_types" not in plan:
        return _supply_rows(plan.get("supply"))
    return [
        (f"{t['accelerator']}: {layer}", price, source)
        for t in plan["node_types"]
        for layer, price, source in _supply_rows(t["plan"].get("supply"))
    ]


def _typed(result: PlanResult, name: str) -> list[tuple[str, Any]]:
    """The purchases or reservations (``name``) of the plan, each with its node type ("" for one type)."""
    if not result.node_types:
        return [("", x) for x in getattr(result, name)]
    return [(t.accelerator, x) for t in result.node_types for x in getattr(t.result, name)]


def _result_context(solution: Any) -> dict[str, Any]:
    result = PlanResult.from_json(solution.result)
    plan = solution.snapshot["plan"]
    figures = charts.plan_charts(result=result, gpus_per_node=int(plan.get("gpus_per_node") or 0))
    return {
        "result": result,
        "node_types": [
            (
                t,
                sum(p.nodes for p in t.result.owned_purchases),
                max((m.reserved_nodes for m in t.result.months), default=0),
            )
            for t in result.node_types
        ],
        "purchases": _typed(result, "owned_purchases"),
        "reservations": _typed(result, "reservations"),
        "supply_rows": _plan_supply_rows(plan),
        "layer_costs": [
            (charts.LAYER_LABELS.get(name, "Reserved, after the horizon"), usd)
            for name, usd in result.cost_by_layer_usd.items()
            if usd
        ],
        "gap_pct": 100 * result.size.mip_gap,
        "inference_sizing": sorted(result.inference_sizing.items()),
        "run_layers": [
            (run, ", ".join(charts.LAYER_LABELS.get(k, k) for k in run.node_hours_by_layer))
            for run in result.runs
        ],
        "alternatives": [
            (a, None if a.npv_usd is None else a.npv_usd - result.npv_usd) for a in result.alternatives
        ],
        "discount_pct": f"{100 * float(_first_type(plan).get('discount_rate') or 0.0):g}",
        "charts": [
            {
                "id": key,
                "title": fig["layout"]["title"]["text"],
                "script": json_script(fig, f"chart-data-{key}"),
            }
            for key, fig in figures.items()
        ],
    }


def _first_type(plan: dict[str, Any]) -> dict[str, Any]:
    """The plan's shared terms (horizon, growth, discount rate): its own, or its first node type's."""
    types = plan.get("node_types")
    return dict(types[0]["plan"]) if types else plan


# The session key that carries a just-made share link's address from the POST to the page after it.
_NEW_SHARE_URL = "plans:new_share_url"


@login_required
@require_http_methods(["GET", "POST"])
def plan_detail(request: HttpRequest, plan_id: int) -> HttpResponse:
    """The plan's result; a POST makes a read-only share link to it and shows its address once."""
    plan = or_404(selectors.plan_get(user=request.user, plan_id=plan_id))
    version = or_404(selectors.plan_version_get(plan=plan))
    context: dict[str, Any] = {
        "plan": plan,
        "version": version,
        "xlsx_url": f"{reverse('capacity-plan-xlsx', args=[plan.pk])}?version={version.number}",
    }
    try:
        solution = services.plan_solve_start(version=version, user=request.user)
    except EngineError as exc:
        context["error"] = exc
        return render(request, "plans/detail.html", context)
    if isinstance(solution, PlanRun):  # a large plan: a worker is solving it
        return render(request, "plans/detail.html", {**context, "run": solution})
    status = 200
    if request.method == "POST" and not access.can_edit(request.user, plan):
        raise Http404("No such plan you may change.")  # a viewer reads; links are for those who edit
    if request.method == "POST" and "revoke" in request.POST:
        raw = request.POST["revoke"]
        if not raw.isdigit():
            raise Http404("No such share link of yours.")
        link = or_404(selectors.plan_share_link_get(user=request.user, plan_id=plan.pk, link_id=int(raw)))
        services.plan_share_link_revoke(link=link)
        return redirect("plans:detail", plan_id=plan.pk)
    if request.method == "POST":
        expiry = request.POST.get("expiry") or ""
        if expiry and expiry not in SHARE_EXPIRY_DAYS:
            context["share_error"] = EngineError("must be never, 7, 30 or 90 days", field="expiry")
            status = 400
        else:
            _, token = services.plan_share_link_create(
                plan=plan, user=request.user, expires_in_days=int(expiry) if expiry else None
            )
            # Post/redirect/get: a reload of the page that follows must not make a second link. The
            # address is shown once, so it rides in the server-side session to the next GET of this page.
            request.session[_NEW_SHARE_URL] = request.build_absolute_uri(reverse("plans:share", args=[token]))
            return redirect("plans:detail", plan_id=plan.pk)
    elif _NEW_SHARE_URL in request.session:
        context["share_url"] = request.session.pop(_NEW_SHARE_URL)
    if access.can_edit(request.user, plan):
        context["share_links"] = selectors.plan_share_link_list(plan=plan)[:20]
        context["plan_links"] = True
    return render(request, "plans/detail.html", {**context, **_result_context(solution)}, status=status)


@require_GET
def plan_share(request: HttpRequest, token: str) -> HttpResponse:
    """A frozen solution for someone without an account. Reads only."""
    link = or_404(selectors.plan_share_link_resolve(token=token))
    context = {
        "plan": link.plan,
        "version": link.solution.version,
        "shared": link,
        "xlsx_url": reverse("plans:share-xlsx", args=[token]),
        **_result_context(link.solution),
    }
    return render(request, "plans/detail.html", context)


@require_GET
def plan_share_xlsx(request: HttpRequest, token: str) -> HttpResponse:
    link = or_404(selectors.plan_share_link_resolve(token=token))
    version = link.solution.version
    body = plan_xlsx(
        name=link.plan.name, version=version.number, result=PlanResult.from_json(link.solution.result)
    )
    response = HttpResponse(body, content_type=XLSX)
    response["Content-Disposition"] = f'attachment; filename="plan-{link.plan_id}-v{version.number}.xlsx"'
    return response
