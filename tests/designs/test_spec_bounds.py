"""Every number of a design spec is bounded at save, and no state of a saved design answers 500: a design
saved before the bounds (a server at 1e308 USD), and a share link frozen on its evaluation of nulls, show why
on their pages (issue #20, part A)."""

from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import pytest
from django.core.cache.backends.dummy import DummyCache
from django.test import Client

from apps.designs import services
from apps.designs.demo import DEMOS
from apps.designs.models import Design, DesignVersion, Evaluation
from clusterdesigner.engine.core import bounds
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.design import design as engine_design

# The demo "8 × 8 H200 owned for 2 years vs AWS reserved", compared with on-demand only.
SPEC = copy.deepcopy(DEMOS[3]["spec"])
SPEC["costs"]["cloud"] = [
    {
        "offering": "aws-p5e-48xlarge",
        "pricing_models": ["on_demand"],
        "usd_per_node_hour": {"on_demand": 55.04},
    }
]
CANNOT = "This design cannot be evaluated"


def _with_on_prem(**values: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    spec["costs"]["on_prem"].update(values)
    return spec


def _saved_before_the_bounds(owner: Any, spec: dict[str, Any]) -> Design:
    """A design as the API saved it before its numbers were bounded: straight to the database."""
    design = Design.objects.create(owner=owner, name="Overflowing server price", version=1)
    DesignVersion.objects.create(design=design, number=1, name=design.name, spec=spec, created_by=owner)
    return design


def _unbounded() -> dict[str, bounds.Bound]:
    return {path: dataclasses.replace(bound, high=math.inf) for path, bound in bounds.COST.items()}


@pytest.fixture
def unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The code before the fix: no upper bounds in the cost engine; non-finite results stored (as nulls)."""
    monkeypatch.setattr(bounds, "COST", _unbounded())
    monkeypatch.setattr(engine_design, "_check_finite", lambda value: None)


def _browser(user: Any = None) -> Client:
    client = Client(raise_request_exception=False)
    if user is not None:
        client.force_login(user)
    return client


def test_a_server_price_of_1e308_is_refused_at_save_naming_the_field(user_client: Any, catalog: Any) -> None:
    response = user_client.post(
        "/api/v1/designs/", {"name": "1e308", "spec": _with_on_prem(server_usd=1e308)}, format="json"
    )
    assert response.status_code == 400, response.content
    fields = response.json()["error"]["fields"]
    assert fields == {"spec.costs.on_prem.server_usd": ["must be at most 100,000,000, got 1e+308"]}
    assert not Design.objects.filter(name="1e308").exists()


@pytest.mark.parametrize("key", cost.ON_PREM_FIELDS)
def test_every_owning_input_has_an_upper_bound_at_save(user_client: Any, catalog: Any, key: str) -> None:
    most = cost.field_max(f"on_prem.{key}")
    assert most is not None and math.isfinite(most)
    response = user_client.post(
        "/api/v1/designs/", {"name": "over", "spec": _with_on_prem(**{key: most * 10 + 1})}, format="json"
    )
    assert response.status_code == 400, response.content
    [message] = response.json()["error"]["fields"][f"spec.costs.on_prem.{key}"]
    assert message.startswith("must be at most") or message.startswith("must be a fraction"), message


def test_the_largest_allowed_server_price_evaluates_to_finite_figures(user_client: Any, catalog: Any) -> None:
    created = user_client.post(
        "/api/v1/designs/", {"name": "dear", "spec": _with_on_prem(server_usd=1e8)}, format="json"
    )
    assert created.status_code == 201, created.content
    result = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/").json()
    own = next(o for o in result["options"] if o["key"] == "own")
    assert isinstance(own["total_usd"], float) and own["total_usd"] > 8 * 1e8 * 0.5  # 8 servers, 2 of 5 years


def test_a_design_saved_with_a_1e308_server_shows_why_on_its_pages(user_client: Any, catalog: Any) -> None:
    design = _saved_before_the_bounds(user_client.user, _with_on_prem(server_usd=1e308))
    browser = _browser(user_client.user)
    for url in (f"/designs/{design.pk}/", f"/designs/{design.pk}/results/", f"/designs/{design.pk}/edit/"):
        page = browser.get(url)
        assert page.status_code == 200, url
        body = page.content.decode()
        assert CANNOT in body and "must be at most 100,000,000, got 1e+308" in body, url
    evaluate = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/")
    assert evaluate.status_code == 400
    assert list(evaluate.json()["error"]["fields"]) == ["spec.costs.on_prem.server_usd"]
    assert not Evaluation.objects.filter(version__design=design).exists()


def test_an_evaluation_that_overflows_is_refused_not_stored_as_nulls(
    user_client: Any, catalog: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bounds, "COST", _unbounded())  # the engine's bounds gone
    # Pages cache why an input does not evaluate, by input hash; with the bounds patched away the same input
    # fails another way than the cached reason (from an earlier test, with the bounds) says.
    monkeypatch.setattr(services, "cache", DummyCache("none", {}))
    design = _saved_before_the_bounds(user_client.user, _with_on_prem(server_usd=1e308))
    response = user_client.post(f"/api/v1/designs/{design.pk}/evaluate/")
    assert response.status_code == 400, response.content
    assert "the evaluation overflowed" in response.json()["error"]["message"]
    assert not Evaluation.objects.filter(version__design=design).exists()
    page = _browser(user_client.user).get(f"/designs/{design.pk}/")
    assert page.status_code == 200 and "the evaluation overflowed" in page.content.decode()


def test_a_share_link_frozen_on_an_evaluation_of_nulls_still_opens_and_says_why(
    user_client: Any, catalog: Any, unbounded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    design = _saved_before_the_bounds(user_client.user, _with_on_prem(server_usd=1e308))
    link, token = services.share_link_create(design=design, user=user_client.user)
    own = next(o for o in link.evaluation.result["options"] if o["key"] == "own")
    assert own["total_usd"] is None  # what the overflow stored
    monkeypatch.undo()  # the fixed code reads what the old code stored

    shared = _browser().get(f"/share/{token}/")
    assert shared.status_code == 200
    body = shared.content.decode()
    assert "cannot be shown" in body and "version 1" in body
    assert shared["X-Robots-Tag"] == "noindex"
    # The design page finds the same stored evaluation (same spec, same catalog) and says the same.
    page = _browser(user_client.user).get(f"/designs/{design.pk}/")
    assert page.status_code == 200 and "cannot be shown" in page.content.decode()
