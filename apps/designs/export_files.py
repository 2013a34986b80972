"""A design's evaluation as a downloadable file: the format table and the one function the API's export
action and the share page's downloads both call (the dashboard no longer imports the API module)."""

from __future__ import annotations

import importlib
from typing import Any

from django.http import HttpResponse

from clusterdesigner.errors import InvalidInput

EXPORTS = {  # format: (content type, file extension, module, function)
    "csv": ("text/csv", "csv", "exports", "design_export_csv"),
    "xlsx": (
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsx",
        "exports",
        "design_export_xlsx",
    ),
    "torchrun": ("text/x-shellscript", "sh", "launch", "launch_torchrun"),
    "sbatch": ("text/x-shellscript", "sbatch", "launch", "launch_sbatch"),
    "volcano": ("application/yaml", "yaml", "launch", "launch_volcano"),
    # The stack's own config file: DeepSpeed ZeRO (2021) designs, NeMo AutoModel designs.
    "ds_config": ("application/json", "json", "launch", "launch_ds_config"),
    "automodel": ("application/yaml", "yaml", "launch", "launch_automodel_recipe"),
}


def export_response(
    evaluation: dict[str, Any], fmt: str | None, stem: str, *, fabric_kind: str | None = None
) -> HttpResponse:
    """The evaluation exported as ``fmt``; a launch configuration takes ``fabric_kind``, the kind of the
    catalog row of the design's fabric (``selectors.evaluation_fabric_kind``). An unknown format, or one
    the design cannot be exported as, is InvalidInput on ``format``."""
    if fmt not in EXPORTS:
        raise InvalidInput({"format": [f"must be one of {', '.join(EXPORTS)}"]})
    content_type, extension, module, function = EXPORTS[fmt]
    build = getattr(importlib.import_module(f"apps.designs.{module}"), function)
    try:
        body = (
            build(evaluation=evaluation, fabric_kind=fabric_kind)
            if module == "launch"
            else build(evaluation=evaluation)
        )
    except ValueError as exc:
        raise InvalidInput({"format": [str(exc)]}) from exc
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{stem}.{extension}"'
    return response
