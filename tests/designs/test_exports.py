"""CSV and XLSX exports of a design evaluation: written, read back with csv and openpyxl, numbers intact."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apps.designs.exports import _csv_cell, design_export_csv, design_export_xlsx
from tests.designs.fixtures import evaluation_fixture

ROOT = Path(__file__).resolve().parents[2]


def csv_blocks(text: str) -> dict[str, list[list[str]]]:
    """{title: [header, *rows]} from the block CSV (blocks separated by an empty row)."""
    assert text.startswith("\ufeff")
    rows = list(csv.reader(io.StringIO(text.removeprefix("\ufeff"))))
    blocks: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for row in rows:
        if not row:
            current = None
        elif current is None:
            current = blocks.setdefault(row[0], [])
        else:
            current.append(row)
    return blocks


def workbook(evaluation: dict[str, Any]) -> Any:
    return openpyxl.load_workbook(io.BytesIO(design_export_xlsx(evaluation=evaluation)))


def without_cash_flows(evaluation: dict[str, Any]) -> dict[str, Any]:
    """The evaluation as the engine gives it when no rent option is priced: its cash flows only a note."""
    for cost in evaluation["costs"].values():
        cost["cashflow"] = {"note": "no cloud price to compare owning with"}
    return evaluation


def summary_rows(ws: Any) -> dict[str, Any]:
    return {row[0].value: row[1] for row in ws.iter_rows(min_row=2)}


# ---- CSV -------------------------------------------------------------------------------------------------
def test_csv_has_three_blocks_with_their_headers() -> None:
    blocks = csv_blocks(design_export_csv(evaluation=evaluation_fixture()))
    assert list(blocks) == ["Summary", "Options", "Assumptions"]
    assert blocks["Options"][0] == [
        "Option",
        "Kind",
        "Offering",
        "Pricing model",
        "Total cost (USD)",
        "Cost per GPU-hour (USD)",
        "Run cost (USD)",
        "Days to train, expected (with failures and restarts)",
        "Break-even utilization",
    ]
    assert blocks["Assumptions"][0] == ["Name", "Value", "Unit", "Source", "As of"]
    assert len(blocks["Options"]) == 1 + 4
    assert len(blocks["Assumptions"]) == 1 + 9


def test_csv_option_numbers_survive_exactly_and_unquoted() -> None:
    evaluation = evaluation_fixture()
    text = design_export_csv(evaluation=evaluation)
    rows = csv_blocks(text)["Options"][1:]
    for row, option in zip(rows, evaluation["options"], strict=True):
        assert row[0] == option["label"]
        assert float(row[4]) == option["total_usd"]
        assert float(row[5]) == option["usd_per_gpu_hour"]
        assert float(row[6]) == option["run_cost_usd"]
        assert float(row[7]) == option["days"]
        assert row[8] == (
            "" if option["break_even_utilization"] is None else repr(option["break_even_utilization"])
        )
    # Numbers are written bare, so a spreadsheet types them as numbers: no quotes around 41234567.89.
    assert ",41234567.89,2.2977,748512.25,26.53," in text
    assert rows[3][8] == "0.41"


def test_csv_summary_has_the_key_training_figures() -> None:
    summary = {
        row[0]: row[1:] for row in csv_blocks(design_export_csv(evaluation=evaluation_fixture()))["Summary"]
    }
    assert summary["Fits in memory"][0] == "TRUE"
    assert (
        float(summary["Days to train, failure-free"][0]) == 26.53
        and summary["Days to train, failure-free"][1] == "days"
    )
    assert float(summary["MFU"][0]) == 0.42
    assert float(summary["Step time"][0]) == 9.614
    assert summary["Layout"][0] == "TP8 PP4 DP16 CP1 VPP1 mb1 recompute=selective sharding=zero1 SP"
    assert summary["GPUs"][0] == "512"
    # Each frame ranks alone: spot is cheapest over the horizon ($27.8M < own's $41.2M), owning per run
    # ($748,512 < spot's $1,062,605); the per-run pick's horizon total is never reported as "cheapest".
    assert summary["Cheapest option over the horizon"][0] == "AWS p5.48xlarge spot"
    assert float(summary["Its cost over the horizon"][0]) == 27800000.0
    assert summary["Cheapest option per run"][0] == "Own (on-prem)"
    assert float(summary["Its cost per run"][0]) == 748512.25


def test_csv_summary_reads_the_design_and_its_spec() -> None:
    # The fixture's spec (tests/designs/fixtures.py): llama3-70b on 64 × 8 h100-sxm over ib-ndr400,
    # 1e12 tokens in batches of 4,194,304, bf16; the model's name is the one the engine reported.
    summary = {
        row[0]: row[1] for row in csv_blocks(design_export_csv(evaluation=evaluation_fixture()))["Summary"]
    }
    assert summary["Model"] == "llama3-70b (Llama 3 70B)"
    assert (summary["Training tokens"], summary["Global batch"], summary["Precision"]) == (
        "1000000000000.0",  # a float in the spec, written in full (repr)
        "4194304",
        "bf16",
    )
    assert (summary["Accelerator"], summary["GPUs per node"], summary["Nodes"]) == ("h100-sxm", "8", "64")
    assert (summary["Fabric"], summary["Oversubscription"]) == ("ib-ndr400", "1.0")


def test_a_stored_spec_that_no_longer_parses_still_exports() -> None:
    # A costs key today's parser refuses: the spec's rows are blank (not applicable), the rest is as always.
    evaluation = evaluation_fixture()
    evaluation["spec"]["costs"]["retired_setting"] = 1
    blocks = csv_blocks(design_export_csv(evaluation=evaluation))
    summary = {row[0]: row[1] for row in blocks["Summary"]}
    assert summary["Model"] == "Llama 3 70B"
    assert summary["Nodes"] == summary["Fabric"] == summary["Training tokens"] == summary["GPUs"] == ""
    assert summary["Layout"] == "TP8 PP4 DP16 CP1 VPP1 mb1 recompute=selective sharding=zero1 SP"
    assert [r[0] for r in blocks["Options"][1:]] == [o["label"] for o in evaluation["options"]]
    assert summary_rows(workbook(evaluation)["Summary"])["Nodes"].value is None


def test_csv_neutralises_formula_text_but_not_negative_numbers() -> None:
    rows = {
        row[0]: row
        for row in csv_blocks(design_export_csv(evaluation=evaluation_fixture()))["Assumptions"][1:]
    }
    assert rows["spot_interruptions_per_day"][3] == '\'=HYPERLINK("http://evil.example")'
    assert "'-risk premium" in rows
    risk = rows["'-risk premium"]
    assert risk[1] == "-12.5"  # a number, so no apostrophe
    assert risk[3] == "'+analyst estimate"
    assert risk[4] == "2026-01"


def test_csv_writes_ints_bools_and_empty_as_of() -> None:
    rows = {
        row[0]: row
        for row in csv_blocks(design_export_csv(evaluation=evaluation_fixture()))["Assumptions"][1:]
    }
    assert rows["server_usd"][1:] == ["300000", "USD", "request", ""]
    assert rows["training.flash_attention"][1] == "TRUE"
    assert rows["pue"][4] == "2024-07-01"


def test_csv_uses_crlf_rows_and_a_utf8_bom() -> None:
    text = design_export_csv(evaluation=evaluation_fixture())
    assert text.startswith("\ufeffSummary\r\nField,Value,Unit\r\n")
    assert "\r\n\r\nOptions\r\n" in text and "\r\n\r\nAssumptions\r\n" in text


def test_csv_leaves_non_finite_numbers_empty() -> None:
    evaluation = evaluation_fixture()
    evaluation["options"][3]["break_even_utilization"] = math.inf
    evaluation["options"][2]["days"] = math.nan
    rows = csv_blocks(design_export_csv(evaluation=evaluation))["Options"][1:]
    assert rows[3][8] == "" and rows[2][7] == ""


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_csv_cell_round_trips_every_finite_float(value: float) -> None:
    assert float(_csv_cell(value)) == value


@given(st.text(min_size=1))
def test_csv_cell_never_starts_text_with_a_formula_character(text: str) -> None:
    cell = _csv_cell(text)
    assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))
    assert cell.removeprefix("'") == text or cell == text


# ---- XLSX ------------------------------------------------------------------------------------------------
def test_xlsx_has_the_table_sheets_with_frozen_bold_headers() -> None:
    # Without cash flows (no rent option priced), no Inputs or Cash flows sheets.
    wb = workbook(without_cash_flows(evaluation_fixture()))
    assert wb.sheetnames == ["Summary", "Options", "Assumptions", "Sensitivity", "Uncertainty"]
    for ws in wb.worksheets:
        assert ws.freeze_panes == "A2"
        assert all(cell.font.bold for cell in ws[1])
    assert [c.value for c in wb["Assumptions"][1]] == ["Name", "Value", "Unit", "Source", "As of"]


def test_xlsx_option_values_are_numbers_with_currency_and_percent_formats() -> None:
    evaluation = evaluation_fixture()
    ws = workbook(evaluation)["Options"]
    rows = list(ws.iter_rows(min_row=2))
    # The four options and nothing more: the cash flows compare only the options the design ticked (w1), so
    # no rent option needs a row of its own for the Summary's MIN.
    extra = [r[3].value for r in rows[4:]]
    cash_names = {r["name"] for r in next(iter(evaluation["costs"].values()))["cashflow"]["rent"]}
    listed = {o["pricing_model"] for o in evaluation["options"]}
    assert extra == [] and cash_names <= listed
    rows = rows[:4]
    for row, option in zip(rows, evaluation["options"], strict=True):
        total, per_hour, run, days, break_even = row[4], row[5], row[6], row[7], row[8]
        assert total.data_type == "n" and total.value == option["total_usd"]
        assert per_hour.value == option["usd_per_gpu_hour"] and isinstance(per_hour.value, float)
        assert run.value == option["run_cost_usd"]
        assert days.value == option["days"]
        assert break_even.value == option["break_even_utilization"]
        assert total.number_format == '"$"#,##0'
        assert per_hour.number_format == '"$"#,##0.00'
        assert days.number_format == "0.0"
    assert rows[3][8].value == 0.41 and rows[3][8].number_format == "0.0%"
    assert rows[0][0].value == "Own (on-prem)" and rows[0][3].value is None


def test_xlsx_summary_figures_are_typed_and_formatted() -> None:
    ws = workbook(evaluation_fixture())["Summary"]
    cells = summary_rows(ws)
    assert cells["MFU"].value == 0.42 and cells["MFU"].number_format == "0.0%"
    assert (
        cells["Days to train, failure-free"].value == 26.53
        and cells["Days to train, failure-free"].number_format == "0.0"
    )
    assert cells["Step time"].value == 9.614
    assert cells["Fits in memory"].value is True
    assert cells["Parameters"].value == 70553706496 and cells["Parameters"].number_format == "#,##0"
    assert cells["Training tokens"].value == 1.0e12
    assert cells["Its cost over the horizon"].value == 27800000.0
    assert cells["Its cost over the horizon"].number_format == '"$"#,##0'
    assert cells["Layout"].value == "TP8 PP4 DP16 CP1 VPP1 mb1 recompute=selective sharding=zero1 SP"
    assert cells["Tensor parallel"].value == 8 and cells["Data parallel"].value == 16


def test_xlsx_stores_formula_like_text_as_text() -> None:
    # The table sheets hold no formula (the Cash flows sheet's live formulas are left out here).
    data = design_export_xlsx(evaluation=without_cash_flows(evaluation_fixture()))
    ws = openpyxl.load_workbook(io.BytesIO(data))["Assumptions"]
    rows = {row[0].value: row for row in ws.iter_rows(min_row=2)}
    source = rows["spot_interruptions_per_day"][3]
    assert source.value == '=HYPERLINK("http://evil.example")' and source.data_type == "s"
    assert rows["-risk premium"][1].value == -12.5
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        sheets = [z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/sheet")]
    assert sheets and not any("<f>" in xml or "<f " in xml for xml in sheets)


def test_xlsx_assumptions_keep_value_types_dates_and_unit_formats() -> None:
    ws = workbook(evaluation_fixture())["Assumptions"]
    rows = {row[0].value: row for row in ws.iter_rows(min_row=2)}
    assert rows["pue"][1].value == 1.3 and rows["pue"][2].value == "ratio"
    assert rows["pue"][4].value == dt.datetime(2024, 7, 1) and rows["pue"][4].number_format == "yyyy-mm-dd"
    assert rows["server_usd"][1].value == 300000 and rows["server_usd"][1].number_format == '"$"#,##0'
    assert rows["usd_per_kwh"][1].number_format == '"$"#,##0.00'
    assert rows["utilization"][1].value == 0.6 and rows["utilization"][1].number_format == "0.0%"
    assert rows["cluster.fabric"][1].value == "ib-ndr400"
    assert rows["training.flash_attention"][1].value is True
    assert rows["server_usd"][4].value is None  # as_of "" → empty cell
    assert rows["-risk premium"][4].value == "2026-01"  # not an ISO date: left as text


def test_xlsx_sets_column_widths_from_content() -> None:
    wb = workbook(evaluation_fixture())
    options = wb["Options"]
    assert options.column_dimensions["A"].width >= len("AWS p5.48xlarge reserved 1 year")
    assert options.column_dimensions["E"].width >= len("Total cost (USD)")
    assert wb["Assumptions"].column_dimensions["D"].width == 70
    assert wb["Summary"].column_dimensions["A"].width == 28


def test_xlsx_writes_non_finite_numbers_as_empty_cells() -> None:
    evaluation = evaluation_fixture()
    evaluation["options"][3]["break_even_utilization"] = math.inf
    row = list(workbook(evaluation)["Options"].iter_rows(min_row=5))[0]
    assert row[8].value is None and row[4].value == 61699000.0


def test_exports_work_for_an_evaluation_with_no_layout() -> None:
    evaluation = evaluation_fixture()
    evaluation["training"] = {"fits": False, "assumptions": []}
    summary = summary_rows(workbook(evaluation)["Summary"])
    assert summary["Layout"].value == "none fits" and summary["Fits in memory"].value is False
    assert csv_blocks(design_export_csv(evaluation=evaluation))["Summary"]


def test_assumptions_fall_back_to_engine_lists_when_the_combined_list_is_missing() -> None:
    evaluation = evaluation_fixture()
    evaluation["assumptions"] = []
    evaluation["costs"]["aws-p5-48xlarge"]["assumptions"] = [
        {"name": "pue", "value": 1.3, "unit": "ratio", "source": "Uptime", "as_of": "2024-07-01"}
    ]
    rows = csv_blocks(design_export_csv(evaluation=evaluation))["Assumptions"][1:]
    assert [r[0] for r in rows] == ["flash_attention", "pue"]


def test_real_engine_evaluation_round_trips_through_both_formats() -> None:
    # The engine's evaluate_design on the seed catalog (no database): 8 × 8 H200 owned vs AWS p5e.
    from apps.designs.demo import DEMOS
    from tests.designs.fixtures import evaluated_json

    records = json.loads((ROOT / "apps/catalog/data/seed_catalog.json").read_text())
    spec = next(d["spec"] for d in DEMOS if d["spec"]["cluster"]["accelerator"] == "h200")
    evaluation = evaluated_json(spec=spec, records=records)
    evaluation["design"] = {"id": 1, "name": "8 × 8 H200", "version": 1}
    rows = csv_blocks(design_export_csv(evaluation=evaluation))["Options"][1:]
    # The XLSX Options figures are formulas over Inputs (issue #31); a reader that does not calculate
    # (openpyxl's data_only, pandas) sees their cached values, the engine's figures to 1e-9.
    data = design_export_xlsx(evaluation=evaluation)
    xlsx = list(openpyxl.load_workbook(io.BytesIO(data), data_only=True)["Options"].iter_rows(min_row=2))
    formulas = list(workbook(evaluation)["Options"].iter_rows(min_row=2))
    assert len(rows) == len(xlsx) == len(evaluation["options"]) >= 2
    for row, cells, written, option in zip(rows, xlsx, formulas, evaluation["options"], strict=True):
        # CSV keeps all 17 digits.
        assert float(row[4]) == option["total_usd"] and float(row[7]) == option["days"]
        assert str(written[4].value).startswith("=") and str(written[7].value).startswith("=")
        assert cells[4].value == pytest.approx(option["total_usd"], rel=1e-9)
        assert cells[7].value == pytest.approx(option["days"], rel=1e-9)
    names = {r[0].value for r in workbook(evaluation)["Assumptions"].iter_rows(min_row=2)}
    assert len(names) == len(evaluation["assumptions"]) and "catalog.h200.bf16_dense_tflops" in names
