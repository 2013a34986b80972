"""The OpenAPI schema states what the API does (schemathesis' ST108/ST202 classes of finding): each test reads
the schema a client reads, at its URL, and checks the behaviour it states at the API's URL."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.designs.test_api import _create


# The schema is generated from the code alone (drf-spectacular: ~1-2 s of CPU each time) and is the same for
# every test here: it is read once for the module, at its URL as a client reads it; each test gets a copy.
@pytest.fixture(scope="module")
def schema_text(django_db_setup: Any, django_db_blocker: Any) -> bytes:
    from rest_framework.test import APIClient

    with django_db_blocker.unblock():
        response = APIClient().get("/api/v1/schema/?format=json")
    assert response.status_code == 200
    response.json()  # the test client reads it as JSON (its Content-Type says so) or raises
    return bytes(response.content)


@pytest.fixture
def schema(schema_text: bytes) -> dict[str, Any]:
    return dict(json.loads(schema_text))


def _query_parameter(schema: dict[str, Any], path: str, method: str, name: str) -> dict[str, Any]:
    parameters = schema["paths"][path][method]["parameters"]
    return dict(next(p for p in parameters if p["name"] == name and p["in"] == "query")["schema"])


def test_design_version_of_an_analysis_is_nullable_and_null_for_a_compare(
    schema: dict[str, Any], user_client: Any, catalog: Any
) -> None:
    """It said integer, and a compare analysis answers null."""
    assert schema["components"]["schemas"]["Analysis"]["properties"]["design_version"]["nullable"] is True
    ids = [_create(user_client)["id"], _create(user_client, name="second")["id"]]
    started = user_client.post(
        "/api/v1/analyses/", {"kind": "compare", "params": {"designs": ids}}, format="json"
    )
    assert started.status_code == 202, started.json()
    assert user_client.get(f"/api/v1/analyses/{started.json()['id']}/").json()["design_version"] is None


@pytest.mark.parametrize("path", ["/api/v1/designs/{id}/evaluate/", "/api/v1/designs/{id}/export/"])
def test_a_version_query_parameter_starts_at_1(schema: dict[str, Any], path: str) -> None:
    method = "post" if path.endswith("evaluate/") else "get"
    version = _query_parameter(schema, path, method, "version")
    assert version["type"] == "integer" and version["minimum"] == 1


def test_version_0_is_a_400_on_version(user_client: Any, catalog: Any) -> None:
    design = _create(user_client)
    response = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/?version=0")
    assert response.status_code == 400 and "version" in response.json()["error"]["fields"]


def test_an_empty_text_filter_is_refused_as_the_schema_says(
    schema: dict[str, Any], api_client: Any, catalog: Any
) -> None:
    assert _query_parameter(schema, "/api/v1/accelerators/", "get", "vendor")["minLength"] == 1
    assert _query_parameter(schema, "/api/v1/cloud-prices/", "get", "currency")["minLength"] == 1
    response = api_client.get("/api/v1/accelerators/?vendor=")
    assert response.status_code == 400 and "vendor" in response.json()["error"]["fields"]
    assert api_client.get("/api/v1/accelerators/?vendor=nvidia").status_code == 200


def test_the_stale_price_filter_is_a_boolean_in_the_schema(
    schema: dict[str, Any], api_client: Any, catalog: Any
) -> None:
    """It read as any string, while anything but true or false is a 400."""
    assert _query_parameter(schema, "/api/v1/cloud-prices/", "get", "stale") == {"type": "boolean"}
    assert api_client.get("/api/v1/cloud-prices/?stale=maybe").status_code == 400
    assert api_client.get("/api/v1/cloud-prices/?stale=false").status_code == 200


def test_an_edit_without_its_version_is_a_documented_428(
    schema: dict[str, Any], user_client: Any, catalog: Any
) -> None:
    operation = schema["paths"]["/api/v1/designs/{id}/"]["patch"]
    assert "428" in operation["responses"] and "428" in operation["description"]
    version = schema["components"]["schemas"]["PatchedDesignUpdateRequest"]["properties"]["version"]
    assert "428" in version["description"]
    design = _create(user_client)
    response = user_client.patch(f"/api/v1/designs/{design['id']}/", {"name": "renamed"}, format="json")
    assert response.status_code == 428 and response.json()["error"]["code"] == "version_required"


def test_a_past_expiry_is_documented_and_refused(
    schema: dict[str, Any], user_client: Any, catalog: Any
) -> None:
    expires = schema["components"]["schemas"]["ShareLinkInputRequest"]["properties"]["expires_at"]
    assert "future" in expires["description"]
    design = _create(user_client)
    response = user_client.post(
        f"/api/v1/designs/{design['id']}/share-links/", {"expires_at": "2001-01-01T00:00:00Z"}, format="json"
    )
    assert response.status_code == 400 and "expires_at" in response.json()["error"]["fields"]


def test_analysis_params_are_stated_for_each_kind(schema: dict[str, Any]) -> None:
    """``params`` was any object; each kind's params are now a component with their required keys, closed to
    keys the kind does not define."""
    schemas = schema["components"]["schemas"]
    body = schema["paths"]["/api/v1/analyses/"]["post"]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    union = schemas[body["$ref"].rsplit("/", 1)[1]]
    assert union["discriminator"]["propertyName"] == "kind"
    assert set(union["discriminator"]["mapping"]) == {"evaluate", "compare", "sweep", "recommend"}
    assert schemas["EvaluateParamsRequest"]["required"] == ["design"]
    assert set(schemas["SweepParamsRequest"]["required"]) == {"accelerators", "nodes"}
    assert schemas["CompareParamsRequest"]["properties"]["designs"]["minItems"] == 2
    for name in (
        "EvaluateParamsRequest",
        "CompareParamsRequest",
        "SweepParamsRequest",
        "RecommendParamsRequest",
    ):
        assert schemas[name]["additionalProperties"] is False, name


def test_no_component_is_described_by_a_serializer_mixin(schema: dict[str, Any]) -> None:
    """The checking mixins' docstrings ("Serializer mixin: refuse a JSON value ...") described bodies."""
    described = [
        name
        for name, body in schema["components"]["schemas"].items()
        if "mixin" in body.get("description", "")
    ]
    assert described == []


def test_free_text_query_filters_state_that_they_hold_no_nul_character(
    schema: dict[str, Any], api_client: Any, catalog: Any
) -> None:
    """A random-seed fuzz found ?series=%00 answered 400 (as every filter does) where the schema allowed any
    string."""
    operation = schema["paths"]["/api/v1/residual-values/"]["get"]
    params = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert re.fullmatch(params["series"]["pattern"], "a\x00") is None
    assert re.fullmatch(params["series"]["pattern"], "a")
    assert api_client.get("/api/v1/residual-values/?series=a%00").status_code == 400
    assert api_client.get("/api/v1/residual-values/?series=a").status_code == 200


@pytest.mark.parametrize(
    "value",
    [" ", "\t", "\n", "\x1c", "\x85", "\xa0", "\u2003", "\u3000", " \t ", " h100 ", "h100", "\ufeff", "a b"],
)
def test_a_filter_of_only_whitespace_is_refused_as_the_schema_says(
    schema: dict[str, Any], api_client: Any, catalog: Any, value: str
) -> None:
    """A random-seed fuzz found ?series=%20 (or any value of only whitespace) answered 400, since the filter
    strips it to empty, where the schema allowed any non-empty string without NUL. The schema's pattern now
    matches exactly the values the filters take: a value holding anything but whitespace (``\ufeff`` is not
    whitespace to Python, so it is a value) and no NUL."""
    for path, name in [
        ("/api/v1/residual-values/", "series"),
        ("/api/v1/residual-values/", "generation"),
        ("/api/v1/accelerators/", "vendor"),
        ("/api/v1/cloud-prices/", "region"),
    ]:
        pattern = _query_parameter(schema, path, "get", name)["pattern"]
        response = api_client.get(path, {name: value})
        allowed = re.fullmatch(pattern, value) is not None
        assert allowed == (value.strip() != ""), (path, name, value)
        assert response.status_code == (200 if allowed else 400), (path, name, value, response.content)
        if not allowed:
            assert name in response.json()["error"]["fields"]


def test_the_filter_whitespace_class_is_what_python_strips() -> None:
    """The pattern's whitespace class is written out (both regex dialects read it alike); it must be exactly
    the characters str.strip() removes, which is what django-filter's text fields strip."""
    from clusterdesigner.schema import WHITESPACE

    whitespace = re.compile(f"[{WHITESPACE}]")
    stripped = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    matched = {chr(c) for c in range(0x110000) if whitespace.fullmatch(chr(c))}
    assert matched == stripped and len(stripped) == 29


@pytest.mark.parametrize("path", ["/api/v1/cloud-prices/import/", "/api/v1/cloud-prices/import-skypilot/"])
def test_a_csv_upload_in_another_media_type_is_a_documented_415(
    schema: dict[str, Any], staff_client: Any, path: str
) -> None:
    """The multipart CSV imports answer 415 (DRF's parser negotiation) to a body in a media type they do not
    read, or with no Content-Type at all (schemathesis' WSGI transport sends a multipart body generated as raw
    text verbatim, without one); the schema listed only 201/200, 400, 401, 403 and 413 for them."""
    responses = schema["paths"][path]["post"]["responses"]
    assert "415" in responses
    for content_type in ("text/plain", ""):
        response = staff_client.generic("POST", path, b"offering,as_of", content_type=content_type)
        assert response.status_code == 415, content_type
        assert response.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize(
    "path", ["/api/v1/teams/", "/api/v1/sites/", "/api/v1/measured-runs/", "/api/v1/price-entries/"]
)
def test_a_search_with_a_nul_is_a_400_the_list_documents(
    schema: dict[str, Any], user_client: Any, path: str
) -> None:
    # Schemathesis found GET /api/v1/teams/?search=… with a NUL answered 400 while the list documented only
    # 200, 401 and 414 (ST103). Every list that takes a search documents the 400 it answers.
    response = user_client.get(path, {"search": "a\x00b"})
    assert response.status_code == 400
    assert "400" in schema["paths"][path]["get"]["responses"]


def _body_taking_operations_without(schema: dict[str, Any], status: str) -> list[str]:
    """The operations that take a request body and do not document ``status``."""
    return [
        f"{method.upper()} {name}"
        for name, operations in schema["paths"].items()
        for method, operation in operations.items()
        if isinstance(operation, dict) and "requestBody" in operation and status not in operation["responses"]
    ]


@pytest.mark.parametrize(
    "path", ["/api/v1/measured-runs/import/", "/api/v1/measured-runs/", "/api/v1/teams/", "/api/v1/sites/"]
)
def test_a_body_over_the_limit_is_a_413_every_body_taking_operation_documents(
    schema: dict[str, Any], user_client: Any, settings: Any, path: str
) -> None:
    # Schemathesis sent a 6 MB CSV to POST /api/v1/measured-runs/import/ and got the app's 413 (Django's
    # RequestDataTooBig in the error envelope), which that operation did not document (ST103).
    body = '{"csv": "' + "x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1) + '"}'
    response = user_client.generic("POST", path, body, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "too_large"
    assert "413" in schema["paths"][path]["post"]["responses"]
    assert _body_taking_operations_without(schema, "413") == []


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/api/v1/price-entries/import/", ""),
        ("/api/v1/price-entries/import/", "text/plain"),
        ("/api/v1/teams/", "text/plain"),
        ("/api/v1/measured-runs/import/", "application/xml"),
    ],
)
def test_a_body_in_a_type_the_operation_does_not_read_is_a_415_every_body_taking_operation_documents(
    schema: dict[str, Any], user_client: Any, path: str, content_type: str
) -> None:
    # Schemathesis sent the price-book import a multipart body without its Content-Type and got DRF's 415
    # ("Unsupported media type"), which that operation did not document (ST103).
    response = user_client.generic("POST", path, b"name=x", content_type=content_type)
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert "415" in schema["paths"][path]["post"]["responses"]
    assert _body_taking_operations_without(schema, "415") == []
