"""The measured-runs page: the user's runs beside the engine's estimates, the summary by regime and the
fitted factors, the calibration switch, a form to add a run (optionally from a pasted log excerpt, whose
parsed figures are shown and filled in before anything is saved) and a CSV import. Views parse, call one
service or selector, and render."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from apps.measurements import selectors, services
from apps.measurements.logs import ParsedLog, log_parse
from apps.measurements.serializers import MeasuredRunFormSerializer
from clusterdesigner.engine import defaults
from clusterdesigner.errors import InvalidInput, flatten_fields

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


def _add(request: HttpRequest) -> None:
    form = MeasuredRunFormSerializer(data=_form_data(request.POST))
    if not form.is_valid():
        raise InvalidInput(form.errors)
    services.run_create(owner=request.user, data=form.validated_data)


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


@login_required
@require_http_methods(["GET", "POST"])
def run_list(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action", "")
    posted = {k: str(request.POST.get(k, "")) for k in services.RUN_FIELDS}
    values: dict[str, str] = dict(FORM_DEFAULTS) if request.method == "GET" else posted
    context: dict[str, Any] = {"errors": {}, "parsed": None, "log": request.POST.get("log", "")}
    try:
        if action == "add":
            _add(request)
            return redirect("measurements:list")
        if action == "import":
            services.runs_import_csv(owner=request.user, text=request.POST.get("csv", ""))
            return redirect("measurements:list")
        if action == "calibration":
            services.calibration_set(owner=request.user, enabled=request.POST.get("enabled") == "on")
            return redirect("measurements:list")
        if action == "parse":
            context["parsed"] = log_parse(text=context["log"])
            values = _parsed_values(context["parsed"], request.POST)
    except (InvalidInput, ValueError) as exc:
        fields = exc.fields if isinstance(exc, InvalidInput) else flatten_fields(str(exc))
        context["errors"] = fields
        context["error_action"] = action
    runs = selectors.run_list(user=request.user).order_by("-measured_on", "-id")
    rows = selectors.run_rows(runs=runs)
    context.update(
        rows=rows,
        summary=selectors.summary_get(user=request.user, rows=rows),
        values=values,
        csv=request.POST.get("csv", ""),
        csv_columns=", ".join(services.RUN_FIELDS),
        layout_fields=("tp", "pp", "dp", "cp", "ep", "vpp", "micro_batch"),
    )
    return render(request, "measurements/list.html", context, status=400 if context["errors"] else 200)
