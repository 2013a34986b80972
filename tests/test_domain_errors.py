"""Services raise domain errors (clusterdesigner.errors), not HTTP ones; the API's one handler gives the
envelope with dotted field paths."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from clusterdesigner.errors import InvalidInput

APPS = Path(__file__).resolve().parent.parent / "apps"


def _spec_with_no_nodes() -> dict[str, Any]:
    from clusterdesigner.engine.cost import defaults

    spec = defaults.design_spec()
    spec["cluster"]["nodes"] = 0
    return spec


def test_invalid_input_flattens_nested_detail_to_dotted_paths_with_list_indexes() -> None:
    exc = InvalidInput({"spec": {"costs": {"cloud": [{"offering": ["unknown offering 'x'"]}]}}})
    assert exc.fields == {"spec.costs.cloud.0.offering": ["unknown offering 'x'"]}
    assert exc.message == "spec.costs.cloud.0.offering: unknown offering 'x'"


def test_the_spec_service_refuses_a_bad_spec_with_a_domain_error(catalog: Any) -> None:
    from apps.designs.services import spec_validate

    with pytest.raises(InvalidInput) as info:
        spec_validate(spec=_spec_with_no_nodes())
    assert list(info.value.fields) == ["spec.cluster.nodes"]


def test_no_service_raises_or_imports_a_drf_or_http_error() -> None:
    offenders = []
    for path in APPS.glob("*/services.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                called = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if ast.unparse(called).endswith(
                    ("ValidationError", "Http404")
                ) and "serializers" in ast.unparse(called):
                    offenders.append(f"{path.relative_to(APPS)}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module in (
                "rest_framework.exceptions",
                "django.http",
            ):
                offenders.append(f"{path.relative_to(APPS)}:{node.lineno} imports {node.module}")
    assert offenders == []


HTTP_MODULES = (
    "rest_framework",
    "django.http",
    "django.shortcuts",
    "clusterdesigner.renderers",
    "clusterdesigner.api",
)


def test_services_and_selectors_import_nothing_of_http_nor_define_serializers() -> None:
    """HTTP stays in views and serializers: a service or selector imports neither DRF, django.http (Http404,
    HttpResponse), get_object_or_404, the API's renderer nor its handler module, nor defines a serializer."""
    offenders = []
    for path in sorted([*APPS.glob("*/services.py"), *APPS.glob("*/selectors.py")]):
        where = path.relative_to(APPS)
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            offenders += [f"{where}:{node.lineno} imports {n}" for n in names if n.startswith(HTTP_MODULES)]
            if isinstance(node, ast.ClassDef) and any("Serializer" in ast.unparse(b) for b in node.bases):
                offenders.append(f"{where}:{node.lineno} defines {node.name}")
    assert offenders == []


def test_the_api_gives_the_envelope_for_a_refused_spec(user_client: Any, catalog: Any) -> None:
    response = user_client.post(
        "/api/v1/designs/", {"name": "x", "spec": _spec_with_no_nodes()}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and list(error["fields"]) == ["spec.cluster.nodes"]
    assert error["message"].startswith("spec.cluster.nodes: ")


def test_the_handler_answers_a_service_unavailable_domain_error_with_503_and_retry_after() -> None:
    """A queue outage is a domain error (clusterdesigner.errors), not an API class a service must import;
    tests/faults/test_redis_down.py checks the same answer through a real server with Redis down."""
    from apps.analysis.services import QueueUnavailable
    from clusterdesigner.api import exception_handler

    response = exception_handler(QueueUnavailable("The task queue is unavailable."), {"view": None})
    assert response is not None
    assert (response.status_code, response["Retry-After"], response.data) == (
        503,
        "10",
        {"error": {"code": "queue_unavailable", "message": "The task queue is unavailable.", "fields": {}}},
    )
