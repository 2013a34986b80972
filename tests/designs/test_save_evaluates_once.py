"""Saving a design runs the engines once (issue 34): the save's check of the spec is its evaluation, stored,
and the evaluate API serves that evaluation instead of running the engines again."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apps.designs.models import Evaluation
from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.training import training
from tests.designs.test_goals import SPEC


@pytest.fixture
def engine_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times the training engine estimates (its parsed-request entry point, which training.estimate
    and the design's composition both run) and the cost engine's TCO runs (every caller reads them through
    their modules: the design service's check and the engine's composition alike)."""
    calls = {"training": 0, "cost": 0}
    estimate, tco = training.estimate_problem, cost.tco

    def counted_estimate(*args: Any, **kwargs: Any) -> Any:
        calls["training"] += 1
        return estimate(*args, **kwargs)

    def counted_tco(*args: Any, **kwargs: Any) -> Any:
        calls["cost"] += 1
        return tco(*args, **kwargs)

    monkeypatch.setattr(training, "estimate_problem", counted_estimate)
    monkeypatch.setattr(cost, "tco", counted_tco)
    return calls


def test_saving_and_evaluating_a_design_estimates_its_training_once(
    user_client: Any, catalog: Any, engine_calls: dict[str, int]
) -> None:
    # One cloud offering (AWS p5) beside owning: one training estimate, one TCO for the offering. Before the
    # save reused its check, the save's dry run estimated the training a second time.
    created = user_client.post(
        "/api/v1/designs/", {"name": "once", "spec": copy.deepcopy(SPEC)}, format="json"
    )
    assert created.status_code == 201, created.json()
    assert engine_calls == {"training": 1, "cost": len(SPEC["costs"]["cloud"])}
    evaluated = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert evaluated.status_code == 200, evaluated.json()
    assert evaluated.json()["training"]["time_to_train_days"] > 0
    assert engine_calls == {"training": 1, "cost": len(SPEC["costs"]["cloud"])}
    assert Evaluation.objects.filter(version__design_id=created.json()["id"]).count() == 1


def test_an_edit_is_evaluated_once_with_its_save(
    user_client: Any, catalog: Any, engine_calls: dict[str, int]
) -> None:
    created = user_client.post(
        "/api/v1/designs/", {"name": "edit", "spec": copy.deepcopy(SPEC)}, format="json"
    )
    design = created.json()["id"]
    spec = copy.deepcopy(SPEC)
    spec["costs"]["utilization"] = 0.5
    edited = user_client.patch(f"/api/v1/designs/{design}/", {"spec": spec, "version": 1}, format="json")
    assert edited.status_code == 200, edited.json()
    assert engine_calls["training"] == 2  # the create's and the edit's, one each
    evaluated = user_client.post(f"/api/v1/designs/{design}/evaluate/")
    assert evaluated.json()["spec"]["costs"]["utilization"] == 0.5
    assert engine_calls["training"] == 2


def test_a_design_that_fits_nowhere_is_refused_at_save_and_nothing_is_stored(
    user_client: Any, catalog: Any
) -> None:
    spec = copy.deepcopy(SPEC)
    spec["cluster"]["nodes"] = 1
    spec["parallelism"] = "search"
    response = user_client.post("/api/v1/designs/", {"name": "too small", "spec": spec}, format="json")
    assert response.status_code == 400, response.json()
    (field, messages), *_ = response.json()["error"]["fields"].items()
    assert field.startswith("spec.") and "fits from" in messages[0]
    assert not Evaluation.objects.exists()
