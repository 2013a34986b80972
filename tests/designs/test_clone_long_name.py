"""Issue #38 item 1: cloning a design whose name already fills the 200-character column answered 500 on
PostgreSQL ("value too long for type character varying(200)"): the copy's default name "Copy of <name>" is 208
characters. SQLite does not enforce the length, so the tests also assert the stored length; run them with
DATABASE_URL pointing at PostgreSQL to see the original DataError."""

from __future__ import annotations

from typing import Any

from apps.designs.models import Design, DesignVersion
from tests.designs.test_stale_prices import SPEC

LONG_NAME = "N" * 199 + "Z"  # 200 characters, the column's limit


def _design(client: Any, name: str = LONG_NAME) -> int:
    response = client.post("/api/v1/designs/", {"name": name, "spec": SPEC}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def test_api_clone_of_a_200_character_name_fits_the_column(user_client: Any, catalog: Any) -> None:
    design_id = _design(user_client)
    response = user_client.post(f"/api/v1/designs/{design_id}/clone/", {}, format="json")
    assert response.status_code == 201, response.content[:500]
    name = response.json()["name"]
    # "Copy of " (8) + the first 191 characters of the name + "…" = 200 characters.
    assert name == "Copy of " + "N" * 191 + "\u2026"
    assert len(name) == 200
    copy = Design.objects.get(pk=response.json()["id"])
    assert len(copy.name) == 200
    assert len(DesignVersion.objects.get(design=copy).name) == 200


def test_api_clone_of_a_short_name_keeps_it_whole(user_client: Any, catalog: Any) -> None:
    design_id = _design(user_client, name="GPT-3 on H100")
    response = user_client.post(f"/api/v1/designs/{design_id}/clone/", {}, format="json")
    assert response.status_code == 201
    assert response.json()["name"] == "Copy of GPT-3 on H100"


def test_page_clone_button_of_a_200_character_name_opens_the_copy(
    client: Any, alice: Any, catalog: Any
) -> None:
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    design_id = _design(api)
    client.force_login(alice)
    response = client.post(f"/designs/{design_id}/clone/")
    assert response.status_code == 302
    copy = Design.objects.exclude(pk=design_id).get(owner=alice)
    assert response["Location"].endswith(f"/designs/{copy.pk}/")
    assert len(copy.name) == 200 and copy.name.startswith("Copy of NNN")
