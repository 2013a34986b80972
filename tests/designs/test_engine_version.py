"""A stored evaluation is keyed by the engines' output version as well as by the spec and the catalog: after
an engine change bumps ENGINE_VERSION, a result stored by the old engine (here one without the cost engine's
``cashflow``, as results stored before the rent-or-own work are) is recomputed on its next view."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs import pricing
from apps.designs.models import Evaluation
from clusterdesigner import memo
from tests.designs.test_stale_prices import SPEC


def _design(client: Any) -> int:
    response = client.post("/api/v1/designs/", {"name": "versioned", "spec": SPEC}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def _strip_to_old_engine(design_id: int) -> None:
    """Make the stored result look like one the previous engine wrote: no cash flows, no ranking."""
    evaluation = Evaluation.objects.get(version__design_id=design_id)
    for result in evaluation.result["costs"].values():
        result.pop("cashflow", None)
        result.pop("ranking", None)
    evaluation.save()


def test_the_same_engine_version_reuses_the_stored_result(user_client: Any, catalog: Any) -> None:
    design_id = _design(user_client)
    url = f"/api/v1/designs/{design_id}/evaluate/"
    first = user_client.post(url).json()
    _strip_to_old_engine(design_id)
    memo.EVALUATIONS.clear()  # as a process that has not served it: the row, not this process's copy of it
    again = user_client.post(url).json()
    # Unchanged engine: the stored row is served as it is (so the stripped result shows, same timestamp).
    assert again["computed_at"] == first["computed_at"]
    assert all("cashflow" not in c for c in again["costs"].values())
    assert Evaluation.objects.filter(version__design_id=design_id).count() == 1


def test_a_bumped_engine_version_recomputes_a_stale_stored_result(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    design_id = _design(user_client)
    url = f"/api/v1/designs/{design_id}/evaluate/"
    first = user_client.post(url).json()
    _strip_to_old_engine(design_id)
    monkeypatch.setattr(pricing, "ENGINE_VERSION", pricing.ENGINE_VERSION + 1)
    response = user_client.post(url)
    assert response.status_code == 200
    fresh = response.json()
    assert fresh["computed_at"] != first["computed_at"]
    assert all("cashflow" in c and "ranking" in c for c in fresh["costs"].values())
    assert Evaluation.objects.filter(version__design_id=design_id).count() == 2


def test_the_design_page_recomputes_after_an_engine_change(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    design_id = _design(user_client)
    user_client.force_login(user_client.user)  # the page is a session page
    assert user_client.get(f"/designs/{design_id}/").status_code == 200
    _strip_to_old_engine(design_id)
    monkeypatch.setattr(pricing, "ENGINE_VERSION", pricing.ENGINE_VERSION + 1)
    page = user_client.get(f"/designs/{design_id}/")
    assert page.status_code == 200 and b"NPV of owning" in page.content
    newest = Evaluation.objects.filter(version__design_id=design_id).order_by("-id").first()
    assert newest is not None and Evaluation.objects.filter(version__design_id=design_id).count() == 2
    assert all("cashflow" in c for c in newest.result["costs"].values())
