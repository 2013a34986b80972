"""Issue #38 item 7: the schema a client reads (at /api/v1/schema/) states what the server enforces and
answers: closed request objects (additionalProperties: false) where unknown keys are a 400, the catalog's
upper bounds as "maximum", a nullable ResidualValuePoint.accelerator, the exports' real content types, and
the 414 the server in front of the app answers for a request line over its limit."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.models import CATALOG_MAX, ResidualValuePoint
from tests.designs.test_stale_prices import SPEC

CLOSED = [
    "DesignInputRequest",
    "PatchedDesignUpdateRequest",
    "CloneRequest",
    "ShareLinkInputRequest",
    "PlanInputRequest",
    "SweepAnalysisInputRequest",
    "FabricRequest",
    "PatchedCloudOfferingRequest",
    "CloudPriceRequest",
]
# CATALOG_MAX's model names -> the request component of each model's writes.
COMPONENTS = {
    "accelerator": "AcceleratorRequest",
    "servertype": "ServerTypeRequest",
    "fabric": "FabricRequest",
    "switch": "SwitchRequest",
    "storagetier": "StorageTierRequest",
    "cloudoffering": "CloudOfferingRequest",
    "cloudprice": "CloudPriceRequest",
}


@pytest.fixture
def schema(api_client: Any, db: Any) -> dict[str, Any]:
    response = api_client.get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    return dict(response.json())


def test_request_objects_that_refuse_unknown_keys_are_closed(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    assert {name: components[name].get("additionalProperties") for name in CLOSED} == dict.fromkeys(
        CLOSED, False
    )


def test_every_catalog_bound_is_the_schemas_maximum(schema: dict[str, Any]) -> None:
    components = schema["components"]["schemas"]
    stated = {}
    for label in CATALOG_MAX:
        model, field = label.split(".")
        stated[label] = components[COMPONENTS[model]]["properties"][field].get("maximum")
    assert stated == CATALOG_MAX


def test_residual_value_accelerator_is_nullable_and_can_be_null(
    schema: dict[str, Any], api_client: Any, catalog: Any
) -> None:
    assert schema["components"]["schemas"]["ResidualValuePoint"]["properties"]["accelerator"]["nullable"]
    point = (
        ResidualValuePoint.objects.filter(accelerator__isnull=True).first()
        or ResidualValuePoint.objects.first()
    )
    assert point is not None
    point.accelerator = None
    point.save()
    body = api_client.get(f"/api/v1/residual-values/{point.pk}/").json()
    assert body["accelerator"] is None


def test_every_operation_documents_414(schema: dict[str, Any]) -> None:
    missing = [
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "414" not in operation.get("responses", {})
    ]
    assert missing == []


def test_exports_declare_the_type_they_answer(schema: dict[str, Any], user_client: Any, catalog: Any) -> None:
    declared = schema["paths"]["/api/v1/designs/{id}/export/"]["get"]["responses"]["200"]["content"]
    assert declared["application/yaml"]["schema"] == {"type": "string"}  # text, not a binary file
    assert declared["text/csv"]["schema"] == {"type": "string"}
    assert declared["application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"]["schema"] == {
        "type": "string",
        "format": "binary",
    }
    design = user_client.post("/api/v1/designs/", {"name": "d", "spec": SPEC}, format="json").json()
    for fmt in ("volcano", "csv", "torchrun"):
        response = user_client.get(f"/api/v1/designs/{design['id']}/export/?format={fmt}")
        assert response.status_code == 200
        assert response["Content-Type"].split(";")[0] in declared
        assert response["Content-Type"].split(";")[0] != "application/json"
