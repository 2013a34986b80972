"""Issue #31 in the design XLSX, continued: the Options sheet's annualised total, cost per GPU-hour, run cost,
days, closed-form break-even and implied commitment are formulas over Inputs; the Summary's cheapest-option
rows and the utilization and power-price flip thresholds are formulas; the Commitments sheet's dollars by
month are formulas. The ``formulas`` package recomputes the downloaded workbook after a change of
utilization and of the power price on Inputs, and every recomputed figure is the API's for a design saved
at those inputs (dollars within $1)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

from tests.designs.test_xlsx_recalculates import (
    _cell,
    _check_cached_values,
    _download,
    _evaluation,
    _recalculated,
    formula_cells,  # noqa: F401 (autouse: releases the compiled cells _recalculated keeps)
)

pytestmark = pytest.mark.django_db

# 64 × 8 H100 on AWS p5 (demo 1) over 2 years. The on-demand and reserved 1-year rates are TEST INPUTS
# written here, not catalog prices (spot is the catalog's); prices held flat for the hand calculation below.
PRICES = {"on_demand": 55.04, "reserved_1y": 34.0}
MODELS = ["on_demand", "reserved_1y", "spot"]
FORMULA_COLUMNS = {"E": "total_usd", "F": "usd_per_gpu_hour", "G": "run_cost_usd", "H": "days"}
STALE = "value at the API's inputs; not recalculated"


def _design(client: Client, demo: Any, *, utilization: float, on_prem: dict[str, Any] | None = None) -> int:
    spec = copy.deepcopy(demo.current.spec)
    costs = spec["costs"]
    # All 64 nodes obtainable on spot (a stated input: the engine's default cap is 8).
    costs.update(horizon_years=2, utilization=utilization, spot_capacity_nodes=64)
    costs["cashflow"] = {"cloud_price_change_per_year": 0.0}
    costs["cloud"] = [{"offering": "aws-p5-48xlarge", "pricing_models": MODELS, "usd_per_node_hour": PRICES}]
    if on_prem:
        costs["on_prem"] = {**costs.get("on_prem", {}), **on_prem}
    response = client.post(
        "/api/v1/designs/", {"name": "options", "spec": spec}, content_type="application/json"
    )
    assert response.status_code == 201, response.content[:500]
    return int(response.json()["id"])


def _rows(book: Any) -> dict[str, int]:
    """Options row by option key ("own" or "<offering>:<model>")."""
    ws = book["Options"]
    out = {}
    for row in range(2, ws.max_row + 1):
        kind, offering, model = (ws.cell(row=row, column=c).value for c in (2, 3, 4))
        key = "own" if kind == "own" else f"{offering}:{model}"
        out.setdefault(key, row)
    return out


def _per_term(evaluation: dict[str, Any], model: str) -> float:
    return evaluation["costs"]["aws-p5-48xlarge"]["per_run"]["usd"][model]["commitment_per_term_usd"]


def test_options_columns_are_formulas_with_the_api_figures_cached(
    alice_client: Client, demos: list[Any], tmp_path: Path
) -> None:
    design = _design(alice_client, demos[0], utilization=0.7)
    evaluation = _evaluation(alice_client, design)
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "o.xlsx")
    book, cached = load_workbook(path), load_workbook(path, data_only=True)
    rows = _rows(book)
    options = {o["key"]: o for o in evaluation["options"]}
    assert set(options) <= set(rows) and len(options) == 4  # owning and the three ticked models
    for key, option in options.items():
        row = rows[key]
        for col, name in FORMULA_COLUMNS.items():
            formula = book["Options"][f"{col}{row}"].value
            assert isinstance(formula, str) and formula.startswith("="), (key, col)
            # openpyxl's data_only read (what pandas reads): the number, the API's figure.
            assert cached["Options"][f"{col}{row}"].value == pytest.approx(option[name], rel=1e-9), (key, col)
        if key == "own":
            continue
        # The break-even with owning on the NPV basis (the API's, shown in (0, 1]) and the annualised closed
        # form (the cost engine's, unbounded), both formulas.
        assert book["Options"][f"I{row}"].value.startswith("=IF(")
        assert book["Options"][f"O{row}"].value.startswith("=IF(")
        expected = option["break_even_utilization"]
        got = cached["Options"][f"I{row}"].value
        assert got == ("none in (0, 1]" if expected is None else pytest.approx(expected, rel=1e-9)), key
        # The annualised closed form is the XLSX's own (the API's break-even is the NPV root, column I); its
        # value is checked against the API's annualised totals in the recalculation test below.
        closed = cached["Options"][f"O{row}"].value
        assert isinstance(closed, float) or closed == "none: parallel cost lines", key
    # The commitment each choice implies: owning's capex; a 1-year reservation one term of every hour on every
    # node, by hand 64 nodes × 730 h × 12 months × $34 = $19,061,760 (no managed overhead on p5).
    own = evaluation["costs"]["aws-p5-48xlarge"]["on_prem"]["capex_usd"]
    assert cached["Options"][f"M{rows['own']}"].value == pytest.approx(own, abs=1e-6)
    reserved = rows["aws-p5-48xlarge:reserved_1y"]
    assert cached["Options"][f"M{reserved}"].value == pytest.approx(19_061_760.0, abs=1e-6)
    assert cached["Options"][f"M{reserved}"].value == pytest.approx(
        _per_term(evaluation, "reserved_1y"), abs=1
    )
    assert cached["Options"][f"N{reserved}"].value == 12
    # No Options cell of a listed option was left a value: none carries the "not recalculated" note.
    assert not [c.coordinate for r in book["Options"].iter_rows() for c in r if c.comment]
    # The Summary names what stays a value, visibly.
    summary = {r[0].value: r[1].value for r in cached["Summary"].iter_rows(min_row=2)}
    note = summary["Not recalculated when Inputs change"]
    assert "Sensitivity" in note and "Uncertainty" in note and "server price" in note
    assert any(str(k).startswith("Flip threshold (recalculated): utilization") for k in summary)
    assert _check_cached_values(path) > 300


def test_changing_utilization_and_the_power_price_on_inputs_gives_the_api_figures(
    alice_client: Client, demos: list[Any], tmp_path: Path
) -> None:
    """Utilization 70 % → 45 % and the power price × 1.5 on Inputs. Hand check of the direction: each
    pay-as-you-go option's total scales with u (45/70 of its compute), a reservation's does not, owning's
    energy grows with the price; the API asked for a design saved at 45 % and that price gives every Options
    figure (annualised total, $/GPU-hour, run cost, days, closed-form break-even, NPV, commitment) and the
    Summary's cheapest options and utilization and power-price flips, dollars within $1."""
    design = _design(alice_client, demos[0], utilization=0.7)
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "p.xlsx")
    book = load_workbook(path)
    price_cell = _cell(book, "Inputs", "Power price per kWh")
    price = load_workbook(path, data_only=True)["Inputs"][price_cell].value
    assert isinstance(price, float) and price > 0
    new_price = price * 1.5
    computed = _recalculated(
        path, {("Inputs", _cell(book, "Inputs", "Utilization")): 0.45, ("Inputs", price_cell): new_price}
    )
    changed = _design(alice_client, demos[0], utilization=0.45, on_prem={"usd_per_kwh": new_price})
    evaluation = _evaluation(alice_client, changed)
    cash = evaluation["costs"]["aws-p5-48xlarge"]["cashflow"]
    npv = {
        "own": cash["own"]["npv_usd"],
        **{f"aws-p5-48xlarge:{r['name']}": r["npv_usd"] for r in cash["rent"]},
    }
    at_70 = _design(alice_client, demos[0], utilization=0.7, on_prem={"usd_per_kwh": new_price})
    low = {o["key"]: o["total_usd"] for o in evaluation["options"]}
    high = {o["key"]: o["total_usd"] for o in _evaluation(alice_client, at_70)["options"]}
    line = {k: (low[k] - (high[k] - low[k]) / 0.25 * 0.45, (high[k] - low[k]) / 0.25) for k in low}
    rows = _rows(book)
    for option in evaluation["options"]:
        key, row = option["key"], rows[option["key"]]
        got = {col: computed.get(("OPTIONS", f"{col}{row}")) for col in "EFGHIJMO"}
        assert abs(got["E"] - option["total_usd"]) < 1.0, key
        assert got["F"] == pytest.approx(option["usd_per_gpu_hour"], rel=1e-9), key
        assert abs(got["G"] - option["run_cost_usd"]) < 1.0, key
        assert got["H"] == pytest.approx(option["days"], rel=1e-9), key
        assert abs(got["J"] - npv[key]) < 1.0, key
        if key != "own":
            expected = option["break_even_utilization"]
            assert got["I"] == (
                "none in (0, 1]" if expected is None else pytest.approx(expected, rel=1e-9)
            ), key
            # Hand check of the annualised closed form: each side's total over the horizon is a line in u; the
            # API's totals at 45 % and at 70 % (same price) give both lines, and O is where they cross.
            own_fixed, own_slope = line["own"]
            fixed, slope = line[key]
            assert got["O"] == pytest.approx((own_fixed - fixed) / (slope - own_slope), rel=1e-6), key
    assert abs(computed[("OPTIONS", f"M{rows['own']}")] - cash["inputs"]["capex_usd"]) < 1.0
    reserved = rows["aws-p5-48xlarge:reserved_1y"]
    assert abs(computed[("OPTIONS", f"M{reserved}")] - _per_term(evaluation, "reserved_1y")) < 1.0
    # The Summary's cheapest options, each in its frame.
    # Over the horizon: ranked on the NPV of the cash flows, its total over the horizon beside it.
    first = evaluation["ranking"]["options"][0]
    cheapest = next(o for o in evaluation["options"] if o["key"] == first["key"])
    assert (
        computed[("SUMMARY", _cell(book, "Summary", "Cheapest option over the horizon"))] == cheapest["label"]
    )
    horizon = computed[("SUMMARY", _cell(book, "Summary", "Its cost over the horizon"))]
    assert abs(horizon - cheapest["total_usd"]) < 1.0
    per_hour = computed[("SUMMARY", _cell(book, "Summary", "Its cost per GPU-hour"))]
    assert per_hour == pytest.approx(cheapest["usd_per_gpu_hour"], rel=1e-9)
    per_run = min(evaluation["options"], key=lambda o: o["run_cost_usd"])
    assert computed[("SUMMARY", _cell(book, "Summary", "Cheapest option per run"))] == per_run["label"]
    assert (
        abs(computed[("SUMMARY", _cell(book, "Summary", "Its cost per run"))] - per_run["run_cost_usd"]) < 1
    )
    # The flip thresholds that are closed forms, utilization, the power price and the rival's rate (the API
    # solves them by Brent's method on the evaluation).
    flips = {f["name"]: f for f in evaluation["design_verdict"]["flips"]}
    rival = "cloud.usd_per_node_hour." + evaluation["design_verdict"]["rival"]["pricing_model"]
    for name in ("utilization", "on_prem.usd_per_kwh", rival):
        cell = _cell(book, "Summary", f"Flip threshold (recalculated): {flips[name]['label']}")
        threshold = flips[name]["threshold"]
        got = computed[("SUMMARY", cell)]
        assert got == (
            "none in the range searched" if threshold is None else pytest.approx(threshold, rel=1e-6)
        ), name


def test_commitments_by_month_are_formulas_that_follow_the_reserved_rate(
    alice_client: Client, demos: list[Any], tmp_path: Path
) -> None:
    """The reserved 1-year rate $34 → $30 on Inputs: by hand each month of both terms bills 64 × 730 × $30 =
    $1,401,600 (was $1,588,480), $33,638,400 over the two terms; the API asked for $30 gives the same
    schedule, total and term end. Owning's capex falls due in the delivery month (the lead time)."""
    design = _design(alice_client, demos[0], utilization=0.7)
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "c.xlsx")
    book = load_workbook(path)
    ws = book["Commitments"]
    header = [c.value for c in ws[1]]
    first = header.index("Month 0 (USD)") + 1
    rows = {ws.cell(row=r, column=2).value: r for r in range(2, ws.max_row + 1)}
    term_row, capex_row = rows["term"], rows["capex"]
    assert all(str(ws.cell(row=term_row, column=c).value).startswith("=") for c in range(3, len(header) + 1))
    assert str(ws.cell(row=capex_row, column=first).value).startswith("=IF(")
    inputs = book["Inputs"]
    reserved = next(
        r for r in range(1, inputs.max_row + 1) if inputs.cell(row=r, column=1).value == "reserved_1y"
    )
    computed = _recalculated(path, {("Inputs", f"B{reserved}"): 30.0})
    by_month = [
        computed[("COMMITMENTS", ws.cell(row=term_row, column=c).coordinate)]
        for c in range(first, len(header) + 1)
    ]
    assert by_month[0] == 0.0 and by_month[1] == pytest.approx(1_401_600.0, abs=1e-6)
    assert by_month[24] == pytest.approx(1_401_600.0, abs=1e-6)
    spec = copy.deepcopy(demos[0].current.spec)
    spec["costs"].update(
        horizon_years=2,
        utilization=0.7,
        spot_capacity_nodes=64,
        cashflow={"cloud_price_change_per_year": 0.0},
    )
    prices = {**PRICES, "reserved_1y": 30.0}
    spec["costs"]["cloud"] = [
        {"offering": "aws-p5-48xlarge", "pricing_models": MODELS, "usd_per_node_hour": prices}
    ]
    created = alice_client.post(
        "/api/v1/designs/", {"name": "30", "spec": spec}, content_type="application/json"
    )
    evaluation = _evaluation(alice_client, int(created.json()["id"]))
    schedule = next(
        c
        for c in evaluation["costs"]["aws-p5-48xlarge"]["cashflow"]["commitments"]
        if c["model"] == "reserved_1y"
    )
    assert by_month == pytest.approx(list(schedule["monthly_usd"]), abs=1.0)
    committed = next(c for c in evaluation["design_verdict"]["commitments"] if c["kind"] == "term")
    assert computed[("COMMITMENTS", f"C{term_row}")] == pytest.approx(33_638_400.0, abs=1e-6)
    assert abs(computed[("COMMITMENTS", f"C{term_row}")] - committed["usd"]) < 1.0
    assert computed[("COMMITMENTS", f"F{term_row}")] == committed["end_month"] == 24
    # Owning's capex: in month L of the lead time, as the API states it.
    own = next(c for c in evaluation["design_verdict"]["commitments"] if c["kind"] == "capex")
    capex = [
        computed[("COMMITMENTS", ws.cell(row=capex_row, column=c).coordinate)]
        for c in range(first, len(header) + 1)
    ]
    assert capex[own["end_month"]] == pytest.approx(own["usd"], abs=1.0) and sum(capex) == pytest.approx(
        own["usd"], abs=1.0
    )
    assert _check_cached_values(path) > 300
