"""Resale from the catalog's residual-value series of the design's accelerator (engine/cost/resale.py): the
book residual read at the depreciation life (it drives the annualised figure, depreciation and tax), and the
market value the cash flows receive at the horizon, read at the hardware's age then; the series named.

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

from clusterdesigner.engine.cost import cost
from clusterdesigner.engine.cost.resale import ResaleCurve, covering
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


def _resale(result: dict[str, Any]) -> dict[str, Any]:
    return dict(result["costs"]["aws-p5-48xlarge"]["cashflow"]["resale"])


def test_the_owning_cash_flow_resells_at_the_market_value_of_its_age_not_the_book_value(
    user_client: Any, catalog: Any
) -> None:
    # Horizon 2 years, the default 4-month lead time: the hardware is 20 months = 1.6667 years old when
    # sold. GLRI h100-sxm: 0.625 at 1 year, 0.425 at 2, so 0.625 + (0.425 − 0.625) × 0.6667 = 0.491667 of
    # capex, received at the end of month 24. The book value's residual (0.2 or the series' 0.125 at the
    # 5-year life) drives depreciation and tax only: it no longer moves the horizon's cash flow.
    series = _result(user_client)
    cash = series["costs"]["aws-p5-48xlarge"]["cashflow"]
    resale = _resale(series)
    capex = series["costs"]["aws-p5-48xlarge"]["on_prem"]["capex_usd"]
    expected = 0.625 + (0.425 - 0.625) * (20 / 12 - 1)
    assert resale["fraction"] == pytest.approx(expected, rel=1e-12)
    assert resale["usd"] == pytest.approx(expected * capex, rel=1e-12)
    assert (resale["basis"], resale["as_of"]) == ("market", "2026-01-08")
    assert resale["age_years"] == pytest.approx(20 / 12)
    assert "GLRI residual value guide for h100-sxm" in resale["source"] and "the horizon" in resale["source"]
    placeholder = _result(user_client, residual_fraction=0.2)["costs"]["aws-p5-48xlarge"]["cashflow"]
    assert placeholder["own"]["monthly_usd"][-1] == cash["own"]["monthly_usd"][-1]
    # The user's override wins, and says so.
    spec = copy.deepcopy(SPEC)
    spec["costs"]["cashflow"] = {"resale_fraction": 0.3}
    created = user_client.post("/api/v1/designs/", {"name": "override", "spec": spec}, format="json")
    given = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/").json()
    assert (_resale(given)["fraction"], _resale(given)["basis"]) == (0.3, "request")


def test_an_accelerator_without_a_series_resells_at_book_value_with_a_finding(catalog: Any) -> None:
    # mi300x has no residual-value series: the fallback is the straight-line book value towards the
    # residual at the servers' age, a 3-year horizon less the default 4-month lead time = 32 months:
    # 1 − (1 − 0.2) × (32/12) ÷ 5 = 0.573333 of capex (5-year life, 0.2 placeholder).
    from apps.catalog.selectors import engine_catalog

    request = {
        "cluster": {"accelerator": "mi300x", "nodes": 8},
        "horizon_years": 3,
        "on_prem": {"server_usd": 250_000},
        "cloud": {"usd_per_node_hour": {"on_demand": 30.0}},
    }
    out = cost.tco(request, **engine_catalog().cost_kwargs())
    resale = out["cashflow"]["resale"]
    assert (resale["basis"], resale["fraction"]) == (
        "book_value",
        pytest.approx(1 - 0.8 * (32 / 12) / 5, rel=1e-12),
    )
    assert "FALLBACK" in resale["source"]
    assert "resale_book_value_fallback" in {f["code"] for f in out["findings"]}


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
