"""A text field's maxLength, as the schema states it, holds for the text as sent
(clusterdesigner/text_limits.py): DRF trimmed surrounding whitespace before checking the length, so a
201-character design name with a leading space was saved (the full-coverage fuzz, ST201: "Schema-violating
request accepted")."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from apps.designs.models import Design
from apps.teams.models import Team


def _client(user: Any) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _request_name(schema: dict[str, Any], path: str) -> dict[str, Any]:
    """The ``name`` property of POST ``path``'s JSON request body in the served schema."""
    body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    return dict(schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]["properties"]["name"])


def test_the_schema_states_200_characters_for_a_design_and_a_team_name(alice: Any) -> None:
    schema = _client(alice).get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert _request_name(schema, "/api/v1/designs/")["maxLength"] == 200
    assert _request_name(schema, "/api/v1/teams/")["maxLength"] == 200


def test_a_name_over_the_limit_only_with_its_spaces_is_refused_naming_the_field(
    alice: Any, catalog: Any
) -> None:
    client = _client(alice)
    padded = " " + "x" * 200  # 201 characters as sent; 200 once trimmed
    design = client.post("/api/v1/designs/", {"name": padded}, format="json")
    assert design.status_code == 400, design.json()
    assert design.json()["error"]["fields"]["name"] == ["Ensure this field has no more than 200 characters."]
    team = client.post("/api/v1/teams/", {"name": padded + " "}, format="json")
    assert team.status_code == 400 and "name" in team.json()["error"]["fields"]
    assert not Design.objects.exists() and not Team.objects.exists()


def test_a_name_at_the_limit_is_saved_and_spaces_are_still_trimmed(alice: Any, catalog: Any) -> None:
    client = _client(alice)
    full = client.post("/api/v1/designs/", {"name": "x" * 200}, format="json")
    assert full.status_code == 201, full.json()
    assert len(Design.objects.get(pk=full.json()["id"]).name) == 200
    short = client.post("/api/v1/designs/", {"name": "  padded plan  "}, format="json")
    assert short.status_code == 201, short.json()
    assert Design.objects.get(pk=short.json()["id"]).name == "padded plan"
