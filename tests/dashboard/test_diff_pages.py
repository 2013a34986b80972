"""The versions page and the diff page (issue #36) through their URLs: the owner sees both; another user
gets 404 for a private design; a bad ?order= is a 400 naming it; an organisation-wide design's diff is
readable by others."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client

from tests.designs.test_stale_prices import SPEC


@pytest.fixture
def design(catalog: Any, alice: Any) -> Any:
    from apps.designs.services import design_create, design_update

    created = design_create(owner=alice, name="diff page", spec=copy.deepcopy(SPEC))
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.5
    spec["costs"]["on_prem"]["server_usd"] = 280_000
    return design_update(design=created, user=alice, base_version=1, spec=spec)


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_owner_sees_versions_and_the_diff(design: Any, alice: Any) -> None:
    client = _client(alice)
    page = client.get(f"/designs/{design.pk}/")
    assert page.status_code == 200
    assert f'href="/designs/{design.pk}/diff/?from=1&amp;to=2"' in page.content.decode()
    versions = client.get(f"/designs/{design.pk}/versions/")
    assert versions.status_code == 200
    assert versions.content.decode().count('<th scope="row"><a href=') == 2
    diff = client.get(f"/designs/{design.pk}/diff/?from=1&to=2")
    assert diff.status_code == 200
    body = diff.content.decode()
    assert body.count("<code>costs.utilization</code>") == 2  # the inputs table and the step
    assert "<code>costs.on_prem.server_usd</code>" in body
    assert 'id="chart-attribution"' in body
    total = diff.context["attribution"].total_usd
    assert sum(s.delta_usd for s in diff.context["attribution"].steps) == pytest.approx(total, abs=1e-6)


def test_a_bad_order_is_a_400_naming_it(design: Any, alice: Any) -> None:
    response = _client(alice).get(f"/designs/{design.pk}/diff/?order=costs.utilization")
    assert response.status_code == 400
    assert "order: order must list every changed input once" in response.content.decode()


def test_others_get_404_for_a_private_design_and_read_a_shared_one(design: Any, bob: Any) -> None:
    client = _client(bob)
    for url in (f"/designs/{design.pk}/versions/", f"/designs/{design.pk}/diff/"):
        assert client.get(url).status_code == 404
    design.visibility = "organisation"
    design.save(update_fields=["visibility"])
    assert client.get(f"/designs/{design.pk}/diff/?from=1&to=2").status_code == 200
    assert Client().get(f"/designs/{design.pk}/versions/").status_code in (302, 404)
