"""Issue #31 in the design XLSX: the commitments (owning's capex at delivery, each chosen reservation's
committed dollars by month and its term end) on a "Commitments" sheet, and the flip thresholds on the
Summary, downloaded through the export URL and compared with the API's evaluation to the dollar."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook

pytestmark = pytest.mark.django_db

# Demo 1 (64 × 8 H100 on AWS p5) over 2 years with a 2-month lead time. The reserved and on-demand rates are
# TEST INPUTS written here, not catalog prices; prices held flat (no yearly change) for the hand calculation.
PRICES = {"on_demand": 55.04, "reserved_1y": 34.0}


def _design(client: Client, demo: Any) -> int:
    spec = copy.deepcopy(demo.current.spec)
    spec["costs"]["horizon_years"] = 2
    spec["costs"]["cashflow"] = {"lead_time_months": 2, "cloud_price_change_per_year": 0.0}
    spec["costs"]["cloud"] = [
        {"offering": "aws-p5-48xlarge", "pricing_models": list(PRICES), "usd_per_node_hour": PRICES}
    ]
    response = client.post(
        "/api/v1/designs/", {"name": "commitments", "spec": spec}, content_type="application/json"
    )
    assert response.status_code == 201, response.content[:500]
    return int(response.json()["id"])


def test_the_xlsx_states_commitments_by_month_and_flip_thresholds_as_the_api(
    alice_client: Client, demos: list[Any]
) -> None:
    design = _design(alice_client, demos[0])
    evaluation = alice_client.post(f"/api/v1/designs/{design}/evaluate/").json()
    verdict = evaluation["design_verdict"]
    cost = evaluation["costs"]["aws-p5-48xlarge"]
    response = alice_client.get(f"/api/v1/designs/{design}/export/?format=xlsx")
    assert response.status_code == 200
    book = load_workbook(io.BytesIO(response.content), data_only=True)
    ws = book["Commitments"]
    header = [c.value for c in ws[1]]
    rows = {r[0].value: [c.value for c in r] for r in ws.iter_rows(min_row=2)}
    assert len(rows) == len(verdict["commitments"]) == 2  # owning's capex and the 1-year reservation

    # Reserved 1-year, no upfront: terms start in months 1 and 13 of 24; each bills
    # 64 nodes × 730 h × $34 = $1,588,480 a month, × 12 = $19,061,760 a term, $38,123,520 in all; the last
    # term ends in month 24; due at the end of months 1..24.
    reserved = next(c for c in verdict["commitments"] if c["kind"] == "term")
    row = rows[reserved["label"]]
    assert row[2] == pytest.approx(38_123_520.0, abs=1) == pytest.approx(reserved["usd"], abs=1)
    assert row[header.index("Term end / delivery (month)")] == 24 == reserved["end_month"]
    by_month = row[header.index("Month 0 (USD)") :]
    assert by_month[0] == 0.0 and by_month[1] == pytest.approx(1_588_480.0, abs=1)
    assert by_month[24] == pytest.approx(1_588_480.0, abs=1)
    schedule = next(c for c in cost["cashflow"]["commitments"] if c["model"] == "reserved_1y")
    assert by_month[: len(schedule["monthly_usd"])] == pytest.approx(schedule["monthly_usd"], abs=1)
    assert sum(by_month) == pytest.approx(reserved["usd"], abs=1)

    # Owning: the capex, committed at delivery, month 2 (the lead time).
    own = next(c for c in verdict["commitments"] if c["kind"] == "capex")
    row = rows[own["label"]]
    assert row[2] == pytest.approx(cost["on_prem"]["capex_usd"], abs=1)
    assert row[header.index("Term end / delivery (month)")] == 2
    by_month = row[header.index("Month 0 (USD)") :]
    assert by_month[2] == pytest.approx(own["usd"], abs=1) and sum(by_month) == pytest.approx(
        own["usd"], abs=1
    )

    # The flip thresholds, one Summary row each: utilization, the power price and the rival's rate as formulas
    # (closed forms,
    # "recalculated"), the others values at the API's inputs (root-solved on the whole evaluation).
    summary = {r[0].value: (r[1].value, r[2].value) for r in book["Summary"].iter_rows(min_row=2)}
    flips = [f for f in verdict["flips"] if f["threshold"] is not None]
    assert flips, verdict["flips"]
    for flip in flips:
        formula = flip["name"] in ("utilization", "on_prem.usd_per_kwh") or flip["name"].startswith("cloud.")
        prefix = "Flip threshold (recalculated): " if formula else "Flip threshold at the API's inputs: "
        value, unit = summary[f"{prefix}{flip['label']}"]
        assert value == pytest.approx(flip["threshold"], abs=1e-6) and unit == flip["unit"]
