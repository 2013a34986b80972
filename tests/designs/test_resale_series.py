"""Resale from the catalog's residual-value series of the design's accelerator (engine/resale.py): read at
the depreciation life, the age at which the cost engine's residual_fraction applies, in place of the
unsourced 0.2 placeholder, with the series named in the assumptions.

Hand figures, from the seed's GLRI residual value guide for h100-sxm (ages 1-5: 0.625, 0.425, 0.3, 0.175,
0.125):
- default depreciation life 5 years: 0.125;
- life 2.5 years: 0.425 + (0.3 - 0.425) * (2.5 - 2) / (3 - 2) = 0.3625;
- life 0.5 years: before the series' first age, so the 0.2 default stays.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from clusterdesigner.engine import cost
from clusterdesigner.engine.resale import ResaleCurve, covering
from tests.designs.test_stale_prices import SPEC


def _result(client: Any, **on_prem: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SPEC)
    spec["costs"]["on_prem"].update(on_prem)
    created = client.post("/api/v1/designs/", {"name": "resale", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    response = client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200
    return dict(response.json())


def _residual(result: dict[str, Any]) -> dict[str, Any]:
    return next(a for a in result["assumptions"] if a["name"] == "on_prem.residual_fraction")


@pytest.mark.parametrize(("life", "expected"), [(None, 0.125), (2.5, 0.3625)])
def test_the_residual_value_comes_from_the_accelerators_series(
    user_client: Any, catalog: Any, life: float | None, expected: float
) -> None:
    used = _residual(_result(user_client, **({} if life is None else {"depreciation_years": life})))
    assert used["value"] == pytest.approx(expected, rel=1e-12)
    assert "GLRI residual value guide for h100-sxm" in used["source"]
    assert "interpolation" in used["source"] and "as of 20" in used["source"]


def test_a_given_residual_value_wins_and_an_uncovered_life_keeps_the_default(
    user_client: Any, catalog: Any
) -> None:
    given = _residual(_result(user_client, residual_fraction=0.1))
    assert (given["value"], given["source"]) == (0.1, "request")
    default = _residual(_result(user_client, depreciation_years=0.5))
    placeholder = cost.DEFAULTS["on_prem.residual_fraction"]
    assert (default["value"], default["source"]) == (placeholder.value, placeholder.source)


def test_the_owning_cash_flow_resells_at_the_book_value_towards_the_series_figure(
    user_client: Any, catalog: Any
) -> None:
    # Horizon 2 of a 5-year life: resale = 1 - (1 - residual) * 2/5 of capex. Against the 0.2 placeholder the
    # series' 0.125 resells for (0.8 - 0.875) * 0.4 = -0.03 of capex, so the last month costs 0.03 capex more.
    series = _result(user_client)["costs"]["aws-p5-48xlarge"]
    placeholder = _result(user_client, residual_fraction=0.2)["costs"]["aws-p5-48xlarge"]
    capex = series["on_prem"]["capex_usd"]
    last = series["cashflow"]["own"]["monthly_usd"][-1] - placeholder["cashflow"]["own"]["monthly_usd"][-1]
    assert last == pytest.approx(0.03 * capex, rel=1e-9)


def test_covering_picks_the_series_with_the_most_points_that_covers_the_age() -> None:
    short = ResaleCurve("a", "x", ((3.0, 0.6),), "s", "2026-01-01")
    long = ResaleCurve("b", "x", ((1.0, 0.8), (2.0, 0.6), (4.0, 0.3)), "s", "2026-01-01")
    assert covering([short, long], age_years=3.0) is long
    assert long.fraction_at(age_years=3.0) == pytest.approx(0.45)  # 0.6 + (0.3 - 0.6) * (3 - 2) / (4 - 2)
    assert covering([short, long], age_years=5.0) is None
    assert short.fraction_at(age_years=3.0) == 0.6


# --- The same resale outside the design evaluation: sweeps and `manage.py tco` ------------------------------

SWEEP = {
    "model": {"preset": "llama3-8b"},
    "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
    "accelerators": ["h100-sxm"],
    "nodes": [1],
    "pricing_models": ["on_demand", "own"],
}


def _sweep_own_usd(client: Any, capture: Any, **on_prem: Any) -> float:
    params = {**SWEEP, **({"on_prem": on_prem} if on_prem else {})}
    with capture(execute=True):
        response = client.post("/api/v1/analyses/", {"kind": "sweep", "params": params}, format="json")
    assert response.status_code == 202, response.json()
    body = client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded", body
    return float(next(r["cost_usd"] for r in body["result"]["rows"] if r["pricing_model"] == "own"))


def test_a_sweep_owns_with_the_series_residual_value_not_the_placeholder(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Before: the sweep priced owning with the 0.2 placeholder. Now its own row equals the run with the
    # series' 0.125 at the 5-year life given outright, and keeping 0.2 (more resale) makes owning cheaper.
    default = _sweep_own_usd(user_client, django_capture_on_commit_callbacks)
    series = _sweep_own_usd(user_client, django_capture_on_commit_callbacks, residual_fraction=0.125)
    placeholder = _sweep_own_usd(user_client, django_capture_on_commit_callbacks, residual_fraction=0.2)
    assert default == pytest.approx(series, rel=1e-12)
    assert placeholder < default


def test_manage_py_tco_reads_the_series_residual_value(catalog: Any, tmp_path: Any) -> None:
    import json
    from io import StringIO

    from django.core.management import call_command

    request = {"cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8}}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    out = StringIO()
    call_command("tco", str(path), "--compact", stdout=out)
    used = _residual(json.loads(out.getvalue()))
    assert used["value"] == pytest.approx(0.125, rel=1e-12)  # GLRI h100-sxm at 5 years
    assert "GLRI residual value guide for h100-sxm" in used["source"]
    # An accelerator with no series covering its life keeps the stated placeholder.
    request["cluster"]["accelerator"] = "mi300x"
    path.write_text(json.dumps(request))
    out = StringIO()
    call_command("tco", str(path), "--compact", stdout=out)
    other = _residual(json.loads(out.getvalue()))
    assert other["source"] == cost.DEFAULTS["on_prem.residual_fraction"].source
