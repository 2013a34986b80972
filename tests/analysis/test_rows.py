"""A sweep's and a comparison's stored rows are what the typed rows write, key for key."""

from __future__ import annotations

from typing import Any

from apps.analysis.models import Analysis
from clusterdesigner.engine.analysis_result import SweepRow
from tests.analysis.test_api import SWEEP, _post


def test_every_stored_sweep_row_round_trips_through_sweep_row(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    params = {**SWEEP["params"], "pricing_models": ["on_demand", "spot", "own"]}
    response = _post(user_client, {"kind": "sweep", "params": params}, django_capture_on_commit_callbacks)
    analysis = Analysis.objects.get(pk=response.json()["id"])
    rows = analysis.result["rows"]
    assert len(rows) == 18  # 2 accelerators × 3 sizes × 3 pricing models
    for row in rows:  # key for key (jsonb keeps no key order; the engine test checks the written order)
        assert SweepRow.from_json(row).to_json() == row
    assert any("layout" in r for r in rows)
