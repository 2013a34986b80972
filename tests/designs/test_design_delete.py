"""DELETE /api/v1/designs/<id>/ takes the design's versions, evaluations and share links with it, whatever
state the links are in; the links answer 404 from then on. (It answered 500: the links protected their
evaluation.)"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.designs.models import Design, DesignVersion, Evaluation, ShareLink
from tests.designs.test_api import _create


def _share(client: Any, design_id: int, state: str) -> str:
    made = client.post(f"/api/v1/designs/{design_id}/share-links/", {"label": state}, format="json")
    assert made.status_code == 201, made.content
    link_id = made.json()["id"]
    if state == "revoked":
        assert client.post(f"/api/v1/designs/{design_id}/share-links/{link_id}/revoke/").status_code == 200
    elif state == "expired":
        ShareLink.objects.filter(pk=link_id).update(expires_at=timezone.now() - dt.timedelta(minutes=1))
    return str(made.json()["token"])


@pytest.mark.parametrize("states", [["active"], ["revoked"], ["expired"], ["active", "revoked", "expired"]])
def test_deleting_a_shared_design_deletes_it_with_its_links(
    states: list[str], user_client: Any, catalog: Any, api_client: APIClient
) -> None:
    design = _create(user_client)
    tokens = [_share(user_client, design["id"], state) for state in states]
    kept = _create(user_client, name="kept")
    kept_token = _share(user_client, kept["id"], "active")

    response = user_client.delete(f"/api/v1/designs/{design['id']}/")
    assert response.status_code == 204, response.content
    assert not Design.objects.filter(pk=design["id"]).exists()
    assert not DesignVersion.objects.filter(design_id=design["id"]).exists()
    assert not Evaluation.objects.filter(version__design_id=design["id"]).exists()
    assert not ShareLink.objects.filter(design_id=design["id"]).exists()
    assert user_client.get(f"/api/v1/designs/{design['id']}/").status_code == 404
    for token in tokens:
        assert api_client.get(f"/api/v1/shared/{token}/").status_code == 404
        assert api_client.get(f"/share/{token}/").status_code == 404
    # The owner's other design and its link are untouched.
    assert api_client.get(f"/api/v1/shared/{kept_token}/").status_code == 200
    assert ShareLink.objects.filter(design_id=kept["id"]).count() == 1


def test_only_the_owner_deletes_a_shared_design(
    user_client: Any, catalog: Any, django_user_model: Any, api_client: APIClient
) -> None:
    design = _create(user_client, visibility="organisation")
    token = _share(user_client, design["id"], "active")
    bob = APIClient()
    bob.force_authenticate(django_user_model.objects.create_user("bob", password="pw-bob-12345"))
    assert bob.delete(f"/api/v1/designs/{design['id']}/").status_code in (403, 404)
    assert api_client.delete(f"/api/v1/designs/{design['id']}/").status_code == 401
    assert Design.objects.filter(pk=design["id"]).exists()
    assert api_client.get(f"/api/v1/shared/{token}/").status_code == 200
