"""A sweep's and a comparison's stored rows are what the typed rows write, key for key."""

from __future__ import annotations

from typing import Any

import pytest

from apps.analysis.models import Analysis
from clusterdesigner.engine.design.analysis_result import SweepRow
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


def test_a_sweep_row_is_the_same_with_the_what_ifs_it_leaves_out(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """compute prices a sweep's points without the tornado and the verdict's flips (what_ifs=False): no row
    reads them. Every pricing model, owning included, row for row and key for key the same as with them."""
    from apps.analysis import compute
    from clusterdesigner.engine.cost import cost

    params = {**SWEEP["params"], "pricing_models": ["on_demand", "spot", "reserved_1y", "own"]}
    response = _post(user_client, {"kind": "sweep", "params": params}, django_capture_on_commit_callbacks)
    analysis = Analysis.objects.get(pk=response.json()["id"])
    points = [item for chunk in analysis.chunks.order_by("index") for item in chunk.items]
    asked: list[bool] = []
    tco = cost.tco

    def with_what_ifs(*args: Any, **kwargs: Any) -> Any:
        asked.append(kwargs.pop("what_ifs"))
        return tco(*args, **kwargs)  # the default: tornado and flips computed

    lean = compute.compute_items(kind="sweep", items=points, snapshot=analysis.snapshot)
    monkeypatch.setattr(cost, "tco", with_what_ifs)
    full = compute.compute_items(kind="sweep", items=points, snapshot=analysis.snapshot)
    assert asked and not any(asked)  # the shipped call leaves them out
    assert len(full) == 24 and any(r.get("npv_usd") for r in full) and any(r.get("error") for r in full)
    assert lean == full == analysis.result["rows"]


def test_a_sweep_row_without_a_price_names_the_model_with_its_article() -> None:
    # Issue #31 (d): "has a on demand price". The model as people write it (cost.MODEL_LABELS), with "an"
    # before a vowel: "an on-demand price", "a reserved 1-year price", "a spot price".
    from types import SimpleNamespace

    from apps.analysis.compute import _priced_row

    result = SimpleNamespace(
        per_run=SimpleNamespace(usd={}, spot_effective_days=None, effective_days=None),
        on_prem=SimpleNamespace(usd_per_gpu_hour=1.0, capex_usd=1.0),
        cloud={},
        cloud_unavailable={},  # CostResult's options left out and why (none here: no price at all)
    )
    train = SimpleNamespace(
        chosen=SimpleNamespace(
            time_to_train_days=2.0, mfu=0.4, parallelism=SimpleNamespace(to_json=lambda: {"tp": 8})
        ),
        summary=SimpleNamespace(model=SimpleNamespace(params=8e9)),
    )
    base = {"accelerator": "h100-sxm", "nodes": 2, "gpus": 16, "model": "m"}
    errors = {
        model: _priced_row(base, model, None, result, train)["error"]  # type: ignore[arg-type]
        for model in ("on_demand", "reserved_1y", "spot")
    }
    assert errors == {
        "on_demand": "no offering of h100-sxm has an on-demand price in the catalog",
        "reserved_1y": "no offering of h100-sxm has a reserved 1-year price in the catalog",
        "spot": "no offering of h100-sxm has a spot price in the catalog",
    }
    assert _priced_row(base, "on_demand", "aws-p5", result, train)["error"] == "aws-p5 has no on-demand price"  # type: ignore[arg-type]


def test_each_priced_sweep_row_states_its_npv_over_the_horizon_beside_the_run_cost(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Issue #31, one basis: a sweep row's run cost is one run, undiscounted; beside it the option's NPV of
    # its monthly cash flows over the cost horizon, the rent-or-own verdict's basis. By hand for on-demand
    # (flat prices, 8 %/year, 3 years, 70 % busy by default): its bill over the horizon is $/GPU-h used ×
    # GPUs × 8,760 h × 3 × 0.7, paid in 36 equal months, so NPV = that ÷ 36 × Σ_{m=1..36} 1.08^(−m/12).
    response = _post(user_client, SWEEP, django_capture_on_commit_callbacks)
    rows = Analysis.objects.get(pk=response.json()["id"]).result["rows"]
    annuity = sum(1.08 ** (-m / 12) for m in range(1, 37))
    priced = [r for r in rows if r.get("cost_usd") is not None]
    assert priced and all(r["npv_usd"] > 0 for r in priced)
    for row in (r for r in priced if r["pricing_model"] == "on_demand"):
        bill = row["usd_per_gpu_hour"] * row["gpus"] * 8760 * 3 * 0.7
        assert row["npv_usd"] == pytest.approx(bill / 36 * annuity, rel=1e-9), row
