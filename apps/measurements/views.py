"""The measured-runs page, for one holder: the user's own runs or (``?team=<id>``) a team's, beside the
engine's estimates, the summary by regime and the fitted factors, the holder's calibration switch, a form to
add a run (optionally from a pasted log excerpt, whose parsed figures are shown and filled in before anything
is saved), a CSV import and moving a personal run into a team. A team's viewers read the page; its owners and
editors write; anyone else gets 404. Views parse, call one service or selector, and render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from apps.measurements import selectors, services
from apps.measurements.logs import ParsedLog, log_parse
from apps.measurements.serializers import MeasuredRunFormSerializer
from apps.teams.selectors import team_list, team_list_editable
from clusterdesigner.engine.cost import defaults
from clusterdesigner.errors import InvalidInput, flatten_fields
from clusterdesigner.ids import as_id
from clusterdesigner.views import or_404

# The add-run form's starting values (the shape of tests/measurements/conftest.py's run).
FORM_DEFAULTS = {
    "model": "llama3-8b",
    "accelerator": "h100-sxm",
    "nodes": "1",
    "gpus_per_node": "8",
    "fabric": defaults.FABRIC.value,
    "tp": "1",
    "pp": "1",
    "dp": "8",
    "cp": "1",
    "ep": "1",
    "vpp": "1",
    "micro_batch": "1",
    "global_batch": "128",
    "seq_len": "8192",
    "recompute": "selective",
    "sharding": "zero1",
    "precision": "bf16",
    "framework": "megatron-core",
}


def _form_data(post: Any) -> dict[str, Any]:
    """The form's fields as the API takes them: the model a preset name or a JSON shape; blanks left out."""
    data: dict[str, Any] = {k: v for k in services.RUN_FIELDS if (v := (post.get(k) or "").strip())}
    model = data.get("model", "")
    try:
        data["model"] = json.loads(model) if model.startswith("{") else {"preset": model} if model else None
    except json.JSONDecodeError as exc:
        raise InvalidInput({"model": [f"is not JSON: {exc.msg}"]}) from exc
    return data


def _add(request: HttpRequest, holder: selectors.Holder) -> None:
    form = MeasuredRunFormSerializer(data=_form_data(request.POST))
    if not form.is_valid():
        raise InvalidInput(form.errors)
    services.run_create(owner=request.user, team_id=holder.team_id, data=form.validated_data)


def _team_id(raw: str) -> int | None:
    """The page's ``team`` (query or form): None for the user's own runs; 404 for anything but an id."""
    if not raw:
        return None
    team_id = as_id(raw)
    if team_id is None:
        raise Http404
    return team_id


def _move(request: HttpRequest) -> None:
    raw = request.POST.get("run") or ""
    run_id = as_id(raw) or 0
    run = or_404(selectors.run_get_editable(user=request.user, run_id=run_id))
    target = request.POST.get("to_team") or ""
    services.run_move(user=request.user, run=run, team_id=int(target) if target.isdigit() else target)


def _parsed_values(parsed: ParsedLog, post: Any) -> dict[str, str]:
    """The form's values with what the log gives filled in (step time, tokens/s, memory, batch)."""
    values = {k: post.get(k, "") for k in services.RUN_FIELDS}
    gpus = int(post.get("nodes") or 0) * int(post.get("gpus_per_node") or 0)
    if parsed.step_time_s is not None:
        values["step_time_s"] = f"{parsed.step_time_s:g}"
    elif parsed.tokens_per_s_per_gpu is not None and gpus:
        values["tokens_per_s"] = f"{parsed.tokens_per_s_per_gpu * gpus:g}"
    if parsed.peak_memory_gib is not None:
        values["peak_memory_gib"] = f"{parsed.peak_memory_gib:g}"
    if parsed.global_batch is not None:
        values["global_batch"] = str(parsed.global_batch)
    values["note"] = values["note"] or f"parsed from a {parsed.format} log ({parsed.steps} steps)"
    return values


def _act(request: HttpRequest, action: str, holder: selectors.Holder) -> None:
    """Do what a posted form asks of a holder the user may write (404 for a team they only read)."""
    writable = or_404(selectors.holder_get(user=request.user, team_id=holder.team_id, edit=True))
    if action == "add":
        _add(request, writable)
    elif action == "import":
        services.runs_import_csv(
            owner=request.user, team_id=writable.team_id, text=request.POST.get("csv", "")
        )
    elif action == "calibration":
        services.calibration_set(
            owner_id=writable.owner_id, team_id=writable.team_id, enabled=request.POST.get("enabled") == "on"
        )
    elif action == "move":
        _move(request)


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request: HttpRequest) -> HttpResponse:
    team_id = _team_id(request.GET.get("team") or request.POST.get("team") or "")
    holder = or_404(selectors.holder_get(user=request.user, team_id=team_id))
    action = request.POST.get("action", "")
    posted = {k: str(request.POST.get(k, "")) for k in services.RUN_FIELDS}
    values: dict[str, str] = dict(FORM_DEFAULTS) if request.method == "GET" else posted
    context: dict[str, Any] = {"errors": {}, "parsed": None, "log": request.POST.get("log", "")}
    try:
        if action in ("add", "import", "calibration", "move"):
            _act(request, action, holder)
            return redirect(_page_url(team_id))
        if action == "parse":
            context["parsed"] = log_parse(text=context["log"])
            values = _parsed_values(context["parsed"], request.POST)
    except (InvalidInput, ValueError) as exc:
        fields = exc.fields if isinstance(exc, InvalidInput) else flatten_fields(str(exc))
        context["errors"] = fields
        context["error_action"] = action
    rows = selectors.run_rows(runs=holder.runs().select_related("team").order_by("-measured_on", "-id"))
    teams = team_list(user=request.user)
    context.update(
        holder=holder,
        teams=teams,
        can_edit=selectors.holder_get(user=request.user, team_id=team_id, edit=True) is not None,
        move_teams=team_list_editable(user=request.user) if team_id is None else [],
        rows=rows,
        summary=selectors.summary_get(holder=holder, rows=rows),
        values=values,
        csv=request.POST.get("csv", ""),
        csv_columns=", ".join(services.RUN_FIELDS),
        layout_fields=[k for k in services.RUN_LAYOUT if k in services.INTS],
    )
    return render(request, "measurements/list.html", context, status=400 if context["errors"] else 200)


def _page_url(team_id: int | None) -> str:
    url = reverse("measurements:list")
    return f"{url}?team={team_id}" if team_id is not None else url
