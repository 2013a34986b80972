"""The XLSX a finance reader downloads from the design page: the verdict first, capex, cash and NPV, and cash
flows as live formulas over an Inputs sheet. The formulas are recomputed here (a small evaluator for the
arithmetic, IF, MOD, CEILING and SUM the sheet writes), before and after changing an input cell."""

from __future__ import annotations

import io
import math
import re
from dataclasses import replace
from typing import Any

import pytest
from django.test import Client
from openpyxl import load_workbook
from openpyxl.utils import get_column_letter

from clusterdesigner.engine.cashflow import CashflowInputs, cash_flows

pytestmark = pytest.mark.django_db

_REF = re.compile(r"(?:(?:'([^']+)'|(\w+))!)?\$?([A-Z]{1,3})\$?(\d+)(?::\$?([A-Z]{1,3})\$?(\d+))?")


def _col(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


class Evaluator:
    """Evaluates the workbook's formulas with Python: references become values, ^ becomes **, = becomes ==."""

    def __init__(self, workbook: Any) -> None:
        self.wb = workbook
        self.overrides: dict[tuple[str, str], float] = {}
        self.cache: dict[tuple[str, str], float] = {}

    def value(self, sheet: str, ref: str) -> float:
        key = (sheet, ref)
        if key in self.overrides:
            return self.overrides[key]
        if key not in self.cache:
            raw = self.wb[sheet][ref].value
            self.cache[key] = (
                self._eval(sheet, raw[1:]) if isinstance(raw, str) and raw.startswith("=") else (raw or 0.0)
            )
        return self.cache[key]

    def _range(self, sheet: str, a: str, b: str) -> list[float]:
        cell = re.compile(r"([A-Z]+)(\d+)")
        (c1, r1), (c2, r2) = cell.match(a).groups(), cell.match(b).groups()  # type: ignore[union-attr]
        return [
            self.value(sheet, f"{get_column_letter(c)}{r}")
            for c in range(_col(c1), _col(c2) + 1)
            for r in range(int(r1), int(r2) + 1)
        ]

    def _eval(self, sheet: str, formula: str) -> float:
        values: list[Any] = []

        def sub(match: re.Match[str]) -> str:
            target = match.group(1) or match.group(2) or sheet
            if match.group(5):
                values.append(
                    self._range(target, match.group(3) + match.group(4), match.group(5) + match.group(6))
                )
            else:
                values.append(self.value(target, match.group(3) + match.group(4)))
            return f"_v[{len(values) - 1}]"

        code = _REF.sub(sub, formula).replace("^", "**")
        code = re.sub(r"(?<![<>=!])=(?!=)", "==", code)
        names = {
            "_v": values,
            "IF": lambda c, a, b: a if c else b,
            "MOD": lambda a, b: a % b,
            "CEILING": lambda a, s: math.ceil(a / s) * s,
            "SUM": lambda xs: sum(xs),
        }
        return float(eval(code, {"__builtins__": {}}, names))  # noqa: S307 - formulas this test wrote

    def set(self, sheet: str, ref: str, value: float) -> None:
        self.overrides[(sheet, ref)] = value
        self.cache.clear()


def _xlsx(client: Client, design_id: int) -> Any:
    response = client.get(f"/api/v1/designs/{design_id}/export/?format=xlsx")
    assert response.status_code == 200, response.content[:300]
    return load_workbook(io.BytesIO(response.content))


def _evaluation(client: Client, design_id: int) -> dict[str, Any]:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200
    return response.json()


def test_the_xlsx_states_the_verdict_capex_cash_and_npv(alice_client: Client, demos: list[Any]) -> None:
    demo = demos[0]  # 64 × 8 H100 on AWS p5
    book = _xlsx(alice_client, demo.pk)
    assert book.sheetnames[:5] == ["Summary", "Options", "Assumptions", "Sensitivity", "Uncertainty"]
    assert {"Inputs", "Cash flows", "Cash flows by year"} <= set(book.sheetnames)
    cost = next(iter(_evaluation(alice_client, demo.pk)["costs"].values()))
    summary = {row[0].value: row[1].value for row in book["Summary"].iter_rows(min_row=2)}
    assert summary["Verdict"] == cost["verdict"]["sentence"]
    assert summary["Verdict"].startswith("Over 1 year at 70% utilization, owning 512 × h100-sxm costs")
    assert summary["Capex (owning)"] == pytest.approx(cost["on_prem"]["capex_usd"])
    assert summary["NPV of owning"] == pytest.approx(cost["cashflow"]["own"]["npv_usd"])
    assert summary["NPV saving of owning (rent − own)"] == pytest.approx(
        cost["cashflow"]["npv_difference_usd"]
    )
    uncertainty = {row[0].value: row[1].value for row in book["Uncertainty"].iter_rows(min_row=2)}
    assert uncertainty["P50 of the NPV saving of owning"] == pytest.approx(
        cost["cashflow"]["uncertainty"]["p50_usd"]
    )


def test_cash_flow_formulas_recompute_the_engine_and_follow_an_input_cell(
    alice_client: Client, demos: list[Any]
) -> None:
    demo = demos[0]
    book = _xlsx(alice_client, demo.pk)
    cash = next(iter(_evaluation(alice_client, demo.pk)["costs"].values()))["cashflow"]
    sheet, ev = book["Cash flows"], Evaluator(book)
    headers = [c.value for c in sheet[1]]
    months = cash["inputs"]["months"]
    for name, flows in [("own", cash["own"]["monthly_usd"])] + [
        (r["name"], r["monthly_usd"]) for r in cash["rent"]
    ]:
        column = headers.index("Own (USD)" if name == "own" else f"{name} (USD)") + 1
        letter = get_column_letter(column)
        for m in (0, 1, months // 2 + 1, months):
            assert ev.value("Cash flows", f"{letter}{m + 2}") == pytest.approx(flows[m], rel=1e-9), (name, m)
        npv_row = months + 5
        npv = (
            next(r["npv_usd"] for r in cash["rent"] if r["name"] == name)
            if name != "own"
            else cash["own"]["npv_usd"]
        )
        assert ev.value("Cash flows", f"{letter}{npv_row}") == pytest.approx(npv, rel=1e-9)
    # Double the on-demand price in its Inputs cell: the sheet's on-demand NPV follows the engine's.
    inputs = CashflowInputs.from_json(cash["inputs"])
    k = next(i for i, o in enumerate(inputs.rent) if o.model == "on_demand")
    price_cell = f"B{[c.value for c in book['Inputs']['A']].index('on_demand') + 1}"
    ev.set("Inputs", price_cell, inputs.rent[k].usd_per_node_hour * 2)
    doubled = replace(
        inputs,
        rent=tuple(
            replace(o, usd_per_node_hour=o.usd_per_node_hour * (2 if i == k else 1))
            for i, o in enumerate(inputs.rent)
        ),
    )
    expected = next(r for r in cash_flows(inputs=doubled).rent if r.name == "on_demand")
    column = get_column_letter(headers.index("on_demand (USD)") + 1)
    assert ev.value("Cash flows", f"{column}{months + 5}") == pytest.approx(expected.npv_usd, rel=1e-9)
    # Yearly rows sum the months: year 1 holds month 0 (the capex) and months 1-12.
    year1 = ev.value("Cash flows by year", "B2")
    assert year1 == pytest.approx(sum(cash["own"]["monthly_usd"][:13]), rel=1e-9)
