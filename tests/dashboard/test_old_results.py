"""A share link frozen on an evaluation stored by an engine before ENGINE_VERSION 5 keeps serving it: such a
result has no cash flows, no rent-or-own verdict and no ranking (the cost engine added them at version 2, the
design's whole-horizon ranking at 3). The share view is never recomputed (it is frozen), so its page shows
what the result holds, and its CSV and XLSX exports work, instead of "cannot be shown"."""

from __future__ import annotations

import csv
import io
from typing import Any

import openpyxl
import pytest
from django.test import Client

from apps.designs.models import Evaluation
from apps.designs.services import design_create, design_evaluate, share_link_create

pytestmark = pytest.mark.django_db


def _as_stored_before_version_5(evaluation: Evaluation) -> dict[str, Any]:
    """Strip the stored result to what the engine wrote before the rent-or-own work: no cash flows, no
    verdict and no ranking in each cost result, no ranking of the design's options."""
    result = evaluation.result
    for cost in result["costs"].values():
        for key in ("cashflow", "verdict", "ranking"):
            cost.pop(key)
    result.pop("ranking")
    evaluation.save(update_fields=["result"])
    return result


@pytest.fixture
def old_link(alice: Any, demos: list[Any]) -> tuple[str, dict[str, Any]]:
    design = design_create(owner=alice, name="Owned H200, 2025", spec=demos[3].current.spec)
    evaluation = design_evaluate(version=design.current)
    result = _as_stored_before_version_5(evaluation)
    _, token = share_link_create(design=design, user=alice)
    return token, result


def test_the_share_page_of_an_old_result_shows_what_it_holds(old_link: tuple[str, dict[str, Any]]) -> None:
    token, result = old_link
    response = Client().get(f"/share/{token}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "cannot be shown" not in body and 'id="evaluation-problem"' not in body
    # Its options, ranked over the horizon by their own totals (it has no stored ranking), and its charts.
    labels = [o["label"] for o in sorted(result["options"], key=lambda o: (o["total_usd"], o["key"]))]
    cards = body[body.index('id="ranked-options"') :]
    positions = [cards.index(f">{label}") for label in labels]
    assert positions == sorted(positions) and len(labels) >= 2
    for chart in ("memory", "step-time", "cost-utilization", "capex-opex"):
        assert f'id="chart-data-{chart}"' in body, chart
    # No rent-or-own section: the result has no verdict to show.
    assert 'id="rent-or-own-verdict"' not in body


def test_the_exports_of_an_old_result_work(old_link: tuple[str, dict[str, Any]]) -> None:
    token, result = old_link
    response = Client().get(f"/share/{token}/export/csv/")
    assert response.status_code == 200
    text = b"".join(response.streaming_content if response.streaming else [response.content])
    rows = list(csv.reader(io.StringIO(text.decode("utf-8-sig"))))
    options = rows[rows.index(["Options"]) + 2 :]
    assert [r[0] for r in options[: len(result["options"])]] == [o["label"] for o in result["options"]]

    response = Client().get(f"/share/{token}/export/xlsx/")
    assert response.status_code == 200
    wb = openpyxl.load_workbook(io.BytesIO(response.content))
    # The tables are there; the cash-flow sheets are not (the result has no cash flows to write).
    assert {"Summary", "Options", "Assumptions"} <= set(wb.sheetnames)
    assert "Cash flows" not in wb.sheetnames
    summary = {row[0].value: row[1].value for row in wb["Summary"].iter_rows(min_row=2)}
    assert summary["Verdict"] is None or summary["Verdict"] == ""
    assert summary["Capex (owning)"] == pytest.approx(
        next(iter(result["costs"].values()))["on_prem"]["capex_usd"]
    )
