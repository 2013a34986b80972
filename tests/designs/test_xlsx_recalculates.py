"""Issue 31, item 10: the design XLSX recalculates. Summary and Options are formulas over Inputs and Cash
flows (the verdict text an IF over the NPVs; NPV, payback and IRR as formulas), every formula cell carries a
cached value (pandas and previewers read numbers), and a formula engine (the ``formulas`` package) that
recomputes the workbook after a change of utilization on Inputs finds the verdict and NPVs the API gives for
that utilization."""

from __future__ import annotations

import copy
import functools
import gc
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import formulas
import pytest
from django.test import Client
from openpyxl import Workbook, load_workbook

from apps.designs import demo as demo_module
from apps.designs.services import share_link_create
from tests.designs.test_xlsx_finance import CASES, _case_design

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(catalog: Any) -> Any:
    """Demo 1, 64 × 8 H100 on AWS p5 (on-demand ticked), 1 year at 70 %, saved by demo_load as the ``demos``
    fixture saves it, alone: these tests read no other demo, and saving the other four (each evaluated and
    stored) was ~0.2 s of every test."""
    with (
        pytest.MonkeyPatch.context() as patch
    ):  # not the test's monkeypatch: that would end its shared answers
        patch.setattr(demo_module, "DEMOS", demo_module.DEMOS[:1])
        (design,) = demo_module.demo_load()
    return design


SUMMARY_ROWS = ("Verdict", "Capex (owning)", "Cash out over the horizon (owning)", "NPV of owning")


def _download(client: Client, url: str, path: Path) -> Path:
    response = client.get(url)
    assert response.status_code == 200, response.content[:300]
    path.write_bytes(response.content)
    return path


def _evaluation(client: Client, design_id: int) -> dict[str, Any]:
    response = client.post(f"/api/v1/designs/{design_id}/evaluate/")
    assert response.status_code == 200
    return response.json()


@functools.lru_cache(maxsize=2)
def _values_book(content: bytes) -> Workbook:
    return load_workbook(io.BytesIO(content), data_only=True)


def _cached_values(path: Path) -> Workbook:
    """The workbook's cached values as pandas reads them (openpyxl, ``data_only``; neither calculates), read
    once per download's bytes: a test reads them several times (Summary, Options, every formula cell) and
    only reads."""
    return _values_book(path.read_bytes())


def _table(path: Path, sheet: str) -> list[dict[str, Any]]:
    """A sheet's rows by header, as pandas reads them (the cached values)."""
    rows = list(_cached_values(path)[sheet].iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=False)) for row in rows[1:]]


def _summary(path: Path) -> dict[str, Any]:
    return {row["Field"]: row["Value"] for row in _table(path, "Summary")}


# Reading a workbook into ``formulas`` parses and compiles every cell (~2,500 here, ~5 s of CPU), and most of
# the workbooks these tests recalculate are one layout: the same formula text in the same cell of the same
# sheet. A compiled cell is a function of exactly what ExcelModel._compile_cell is given (the coordinate, the
# cell's value, the sheet's context, the defined names) and ExcelModel only reads it after, so this process
# keeps each one under those arguments and hands the next workbook that has the same cell the same object
# (the values each calculation computes live in its own solution, not in the cell). Recalculation itself runs
# every time; every workbook is read under one file name, so that cells of different downloads key alike.
_COMPILED_CELLS: dict[tuple[Any, ...], Any] = {}
_compile_cell = formulas.ExcelModel._compile_cell


def _shared_compile_cell(crd: str, val: Any, context: Any, check_formula: bool, references: Any) -> Any:
    if references:  # defined names (none in these workbooks): compiled afresh, never shared
        return _compile_cell(crd, val, context, check_formula, references)
    key = (crd, type(val), val, check_formula, repr(sorted(context.items())))
    if key not in _COMPILED_CELLS:
        _COMPILED_CELLS[key] = _compile_cell(crd, val, context, check_formula, references)
    return _COMPILED_CELLS[key]


@pytest.fixture(autouse=True, scope="module")
def formula_cells() -> Iterator[None]:
    """The compiled cells shared by this module's recalculations, kept frozen (out of the collector's passes,
    see _recalculated) for the rest of the process: a later module of the same process that recalculates
    (test_xlsx_options_formulas) reuses them. Releasing them cost ~4 s of CPU at the module's end (freeing
    millions of objects, most of them cyclic, and a full collection over them) for ~0.3 GB given back to a
    process that ends soon after. A module that imports _recalculated imports this fixture with it."""
    yield


def _recalculated(
    path: Path, changes: dict[tuple[str, str], float] | None = None
) -> dict[tuple[str, str], Any]:
    """Every cell of the workbook recomputed by the ``formulas`` engine, after ``changes`` to input cells,
    keyed by (sheet, coordinate) in upper case.

    Python's cyclic garbage collector walks every object it tracks in its full passes, and the compiled cells
    kept above are millions of them (a dispatcher per cell): a full pass took ~0.4 s, and reading and
    calculating a workbook (~10^6 new objects each) set off one after another, ~12 s of a run's ~55 s of CPU.
    So the collector waits while ``formulas`` reads and calculates; then one pass frees the model and its
    solution (cycles), and what is left (the compiled cells, and whatever the test holds) is frozen
    (gc.freeze: left out of later passes, still freed by reference counting; formula_cells keeps the cells).
    Nothing computed depends on when the collector runs."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _calculated(path, changes or {})
    finally:
        gc.collect()
        gc.freeze()
        if enabled:
            gc.enable()


def _calculated(path: Path, changes: dict[tuple[str, str], float]) -> dict[tuple[str, str], Any]:
    book = "workbook.xlsx"
    folder = path.parent / "recalculated"
    folder.mkdir(exist_ok=True)
    (folder / book).write_bytes(path.read_bytes())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(formulas.ExcelModel, "_compile_cell", staticmethod(_shared_compile_cell))
        model = formulas.ExcelModel().loads(str(folder / book)).finish()
    inputs = {f"'[{book}]{sheet.upper()}'!{ref}": value for (sheet, ref), value in changes.items()}
    solution = model.calculate(inputs=inputs)
    out = {}
    for key, ranges in solution.items():
        sheet, ref = key.split("]", 1)[1].split("'!")
        value = ranges.value[0, 0] if hasattr(ranges, "value") else ranges  # a changed input: as given
        out[(sheet.upper(), ref)] = value.item() if hasattr(value, "item") else value
    return out


def _cell(book: Any, sheet: str, label: str, column: int = 2) -> str:
    """The coordinate of the value beside ``label`` in column A of ``sheet``."""
    ws = book[sheet]
    row = next(c.row for c in ws["A"] if str(c.value or "").startswith(label))
    return ws.cell(row=row, column=column).coordinate


def test_pandas_reads_the_summary_verdict_and_npvs_as_the_api_states_them(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    path = _download(alice_client, f"/api/v1/designs/{demo.pk}/export/?format=xlsx", tmp_path / "d.xlsx")
    evaluation = _evaluation(alice_client, demo.pk)
    cash = next(iter(evaluation["costs"].values()))["cashflow"]
    design = evaluation["design_verdict"]
    summary = _summary(path)
    rent = {r["name"]: r for r in cash["rent"]}
    assert summary["NPV of owning"] == pytest.approx(design["own"]["npv_usd"], abs=1e-6)
    assert summary["NPV of the cheapest rent option"] == pytest.approx(design["rival"]["npv_usd"], abs=1e-6)
    assert summary["Cheapest rent option (by NPV)"] == rent[design["rival"]["pricing_model"]]["label"]
    assert design["rival"]["pricing_model"] == "on_demand"
    assert summary["NPV saving of owning (rent − own)"] == pytest.approx(design["saving_usd"], abs=1e-6)
    assert summary["Payback month"] == design["payback_month"] == 12
    assert summary["IRR of owning against renting"] == pytest.approx(cash["irr_per_year"], rel=1e-9)
    # On-demand NPV $20,735,093 − own $12,647,784 = $8,087,309: owning is cheaper at 70 % (the 4-month
    # lead time rents on-demand first, resale at the catalog's market value after a year).
    assert summary["Verdict"] == (
        "Over 12 months at 70% utilization, owning costs $12,647,784 and renting on-demand $20,735,093"
        " (NPV at 8.0%): owning saves $8,087,309 against on-demand; it pays back in month 12."
    )
    npv = {row["Pricing model"] or "own": row["NPV of cash flows (USD)"] for row in _table(path, "Options")}
    assert npv == pytest.approx({"own": cash["own"]["npv_usd"], **{k: r["npv_usd"] for k, r in rent.items()}})
    # The NPV break-even of each pay-as-you-go option, a formula over Cash flows, is the engine's.
    break_even = {
        row["Pricing model"]: row["Break-even utilization against owning (NPV)"]
        for row in _table(path, "Options")
        if row["Kind"] == "cloud" and row["Break-even utilization against owning (NPV)"] is not None
    }
    assert set(break_even) == set(cash["break_even_utilization"]) == {"on_demand"}
    assert break_even == pytest.approx(cash["break_even_utilization"], rel=1e-9)
    own = [row["Own (USD)"] for row in _table(path, "Cash flows")[:13]]
    assert own == pytest.approx(cash["own"]["monthly_usd"], rel=1e-9)


def test_every_cached_value_is_what_a_formula_engine_computes(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    path = _download(alice_client, f"/api/v1/designs/{demo.pk}/export/?format=xlsx", tmp_path / "d.xlsx")
    assert _check_cached_values(path) > 200


def _check_cached_values(path: Path) -> int:
    """Every formula cell's cached value equals the ``formulas`` engine's recalculation; returns how many."""
    cached = _cached_values(path)
    written = load_workbook(path)
    computed = _recalculated(path)
    checked = 0
    for ws in written.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                if not (isinstance(cell.value, str) and cell.value.startswith("=")):
                    continue
                stored = cached[ws.title][cell.coordinate].value
                assert stored is not None, (ws.title, cell.coordinate)
                got = computed[(ws.title.upper(), cell.coordinate)]
                if isinstance(stored, str):
                    assert got == stored, (ws.title, cell.coordinate)
                else:
                    assert float(got) == pytest.approx(stored, rel=1e-9, abs=1e-6), (
                        ws.title,
                        cell.coordinate,
                    )
                checked += 1
    return checked


def _at(client: Client, demo: Any, utilization: float, **costs: Any) -> int:
    spec = copy.deepcopy(demo.current.spec)
    spec["costs"] = {**spec["costs"], "utilization": utilization, **costs}
    created = client.post(
        "/api/v1/designs/", {"name": f"at {utilization:.0%}", "spec": spec}, content_type="application/json"
    )
    assert created.status_code == 201, created.content[:300]
    return int(created.json()["id"])


SPOT_AND_ON_DEMAND = [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "spot"]}]


@pytest.mark.parametrize(
    "cashflow",
    [
        {},
        {"tax_rate": 0.21},  # MACRS 5-year, the default schedule
        {"tax_rate": 0.21, "depreciation_schedule": "straight_line", "financing": "loan"},
    ],
    ids=["pre-tax", "tax 21 % macrs_5", "tax 21 % straight_line, loan"],
)
def test_changing_utilization_on_inputs_recomputes_the_verdict_the_api_gives(
    alice_client: Client, demo: Any, tmp_path: Path, cashflow: dict[str, Any]
) -> None:
    """20 % -> 90 % on the Inputs sheet of a design that ticks on-demand and spot (AWS p5, 64 nodes, one
    year). Hand check of the direction: owning's NPV grows only by the energy bill of the extra use, each
    rent option's by 60/30 of its compute bill, so owning wins at 90 % where renting won at 20 %; the API,
    asked for 90 % (a design saved at 90 %), gives the same design verdict, NPVs and payback within $1, with
    and without tax on both sides."""
    costs = {"cloud": SPOT_AND_ON_DEMAND, "cashflow": cashflow}
    design = _at(alice_client, demo, 0.2, **costs)
    before = _evaluation(alice_client, design)["design_verdict"]
    assert before["winner"] == "rent"
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "d.xlsx")
    book = load_workbook(path)
    u_cell = _cell(book, "Inputs", "Utilization")
    computed = _recalculated(path, {("Inputs", u_cell): 0.9})
    summary = {
        label: computed[("SUMMARY", _cell(book, "Summary", label))]
        for label in (
            "Verdict",
            "NPV of owning",
            "Cheapest rent option (by NPV)",
            "NPV of the cheapest rent option",
            "NPV saving of owning (rent − own)",
            "Payback month",
            "IRR of owning against renting",
        )
    }
    evaluation = _evaluation(alice_client, _at(alice_client, demo, 0.9, **costs))
    verdict = evaluation["design_verdict"]
    cash = evaluation["costs"]["aws-p5-48xlarge"]["cashflow"]
    labels = {r["name"]: r["label"] for r in cash["rent"]}
    assert verdict["winner"] == "own"  # the verdict flipped between 20 % and 90 %
    assert abs(summary["NPV of owning"] - verdict["own"]["npv_usd"]) < 1.0
    assert abs(summary["NPV of the cheapest rent option"] - verdict["rival"]["npv_usd"]) < 1.0
    assert summary["Cheapest rent option (by NPV)"] == labels[verdict["rival"]["pricing_model"]]
    assert abs(summary["NPV saving of owning (rent − own)"] - verdict["saving_usd"]) < 1.0
    payback = verdict["payback_month"]  # a loan spreads capex: the saving may never go below 0 ("none")
    assert summary["Payback month"] == (payback if payback is not None else "none")
    irr = cash["irr_per_year"]  # None where the saving flows change sign no way a root exists: "none"
    assert summary["IRR of owning against renting"] == (
        "none" if irr is None else pytest.approx(irr, rel=1e-6)
    )
    name = labels[verdict["rival"]["pricing_model"]]
    saving = f"${verdict['saving_usd']:,.0f}"
    assert summary["Verdict"].startswith("Over 12 months at 90% utilization")
    tail = f"; it pays back in month {payback}." if payback else "; it does not pay back within the horizon."
    assert summary["Verdict"].endswith(f": owning saves {saving} against {name}{tail}")
    # The Options NPV cells the Summary's MIN reads follow too; the NPV break-even does not move with u and
    # is the API's at 90 %.
    options = book["Options"]
    for row in range(2, options.max_row + 1):
        model = options.cell(row=row, column=4).value
        if model in cash["break_even_utilization"]:
            got = computed[("OPTIONS", f"L{row}")]
            assert got == pytest.approx(cash["break_even_utilization"][model], rel=1e-9), model
        if model in labels:
            npv = next(r["npv_usd"] for r in cash["rent"] if r["name"] == model)
            assert abs(computed[("OPTIONS", f"J{row}")] - npv) < 1.0, model


def test_the_share_page_download_carries_the_same_recalculating_summary(
    alice: Any, demo: Any, tmp_path: Path
) -> None:
    _, token = share_link_create(design=demo, user=alice)
    client = Client()  # anyone holding the link, signed in or not
    page = client.get(f"/share/{token}/").content.decode()
    url = f"/share/{token}/export/xlsx/"
    assert url in page
    path = _download(client, url, tmp_path / "shared.xlsx")
    assert load_workbook(path)["Summary"]["B2"].value.startswith('="Over "&Inputs!')
    summary = _summary(path)
    assert summary["Verdict"].endswith("owning saves $8,087,309 against on-demand; it pays back in month 12.")
    # Below the NPV break-even (28.0 %, the API's) renting on-demand is cheaper.
    computed = _recalculated(path, {("Inputs", _cell(load_workbook(path), "Inputs", "Utilization")): 0.2})
    assert computed[("SUMMARY", "B2")].startswith("Over 12 months at 20% utilization, owning costs $")
    assert "renting on-demand saves" in computed[("SUMMARY", "B2")]
    assert math.isfinite(summary["NPV of owning"])


def _two_offerings(client: Client, demo: Any, order: list[str]) -> int:
    spec = copy.deepcopy(demo.current.spec)
    spec["costs"]["cloud"] = [{"offering": slug, "pricing_models": ["on_demand"]} for slug in order]
    created = client.post("/api/v1/designs/", {"name": "two", "spec": spec}, content_type="application/json")
    assert created.status_code == 201, created.content[:300]
    return int(created.json()["id"])


def test_the_summary_takes_the_cheapest_rent_option_over_every_offering_in_either_order(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    """Demo 1 (64 × 8 H100) priced on AWS p5 and CoreWeave's 8 × H100 node. Every rent option of both
    offerings is a Cash flows column and an Options NPV cell; the Summary's cheapest rent option is the MIN
    over all of them, whichever offering comes first: its name and NPV, the saving and the verdict are the
    same in both orders, and equal to the least rent NPV of both offerings' cash flows in the API."""
    offerings = ["aws-p5-48xlarge", "coreweave-8x-h100-node"]
    summaries = []
    for order in (offerings, offerings[::-1]):
        design = _two_offerings(alice_client, demo, order)
        path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "o.xlsx")
        costs = _evaluation(alice_client, design)["costs"]
        rents = {(slug, r["name"]): r["npv_usd"] for slug, c in costs.items() for r in c["cashflow"]["rent"]}
        assert len(rents) == 2 and {slug for slug, _ in rents} == set(offerings)
        options = {
            (row["Offering"], row["Pricing model"]): row["NPV of cash flows (USD)"]
            for row in _table(path, "Options")
            if row["Kind"] == "cloud"
        }
        assert options == pytest.approx(rents, rel=1e-9)
        # Each option's NPV break-even is against owning as its own offering's result has it (its lead-time
        # rent): the API's per offering, also for AWS p5 whose owning is not the rival's.
        break_even = {
            (row["Offering"], row["Pricing model"]): row["Break-even utilization against owning (NPV)"]
            for row in _table(path, "Options")
            if row["Kind"] == "cloud"
        }
        api = {
            (slug, model): value
            for slug, c in costs.items()
            for model, value in c["cashflow"]["break_even_utilization"].items()
        }
        assert break_even == pytest.approx(api, rel=1e-9)
        summary = _summary(path)
        assert summary["NPV of the cheapest rent option"] == pytest.approx(min(rents.values()), rel=1e-9)
        # Owning rents during the 4-month lead time in the rival's offering, as the design verdict takes it.
        verdict = _evaluation(alice_client, design)["design_verdict"]
        owns = {slug: c["cashflow"]["own"]["npv_usd"] for slug, c in costs.items()}
        # CoreWeave's on-demand is the rival; its 4 lead-time months cost less than AWS p5's, so owning in
        # the first offering's result (AWS) would be the wrong figure by more than a dollar.
        assert verdict["rival"]["offering"] == "coreweave-8x-h100-node"
        assert owns["aws-p5-48xlarge"] - owns["coreweave-8x-h100-node"] > 1_000.0
        assert abs(summary["NPV of owning"] - verdict["own"]["npv_usd"]) < 1.0
        assert abs(summary["NPV saving of owning (rent − own)"] - verdict["saving_usd"]) < 1.0
        assert _check_cached_values(path) > 200
        summaries.append(summary)
    first, second = summaries
    for key in ("Verdict", "Cheapest rent option (by NPV)", "Payback month"):
        assert first[key] == second[key]
    for key in ("NPV of owning", "NPV of the cheapest rent option", "NPV saving of owning (rent − own)"):
        assert first[key] == pytest.approx(second[key], rel=1e-12)


@pytest.mark.parametrize("case", list(CASES))
def test_cached_values_match_a_recalculation_for_every_cash_flow_case(
    alice_client: Client, demo: Any, tmp_path: Path, case: str
) -> None:
    """Loan (past and within the horizon), lease, lead time, the MACRS shield, upfront reservations and
    savings plans: every formula cell's cached value, the Summary's included, is what the formula computes,
    and the Summary's NPVs are the engine's."""
    design = _case_design(alice_client, demo, CASES[case])
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "c.xlsx")
    assert _check_cached_values(path) > 200
    cash = next(iter(_evaluation(alice_client, design)["costs"].values()))["cashflow"]
    summary = _summary(path)
    assert summary["NPV of owning"] == pytest.approx(cash["own"]["npv_usd"], rel=1e-9)
    cheapest = min(r["npv_usd"] for r in cash["rent"])
    assert summary["NPV of the cheapest rent option"] == pytest.approx(cheapest, rel=1e-9)
    assert summary["Payback month"] == (
        cash["payback_month"] if cash["payback_month"] is not None else "none"
    )
    column = "Break-even utilization against owning (NPV)"
    rows = _table(path, "Options")
    break_even = {
        r["Pricing model"]: r[column] for r in rows if r["Kind"] == "cloud" and r[column] is not None
    }
    # The workbook solves the pay-as-you-go options' crossings as formulas; the engine's one solver states
    # every option's, in (0, 1] or null, which the workbook writes "none in (0, 1]" (issue #31 (c)).
    engine = {m: u for m, u in cash["break_even_utilization"].items() if m in ("on_demand", "spot")}
    assert set(break_even) == set(engine)
    none = "none in (0, 1]"
    assert {m for m, v in break_even.items() if v == none} == {m for m, u in engine.items() if u is None}
    crossing = {m: v for m, v in break_even.items() if v != none}
    assert crossing == pytest.approx({m: u for m, u in engine.items() if u is not None}, rel=1e-9)


def test_market_resale_and_tax_on_the_sale_recalculate_as_the_api_gives_them(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    """64 × 8 H100 over 3 years at 70 %, tax 21 % (MACRS 5-year), the default 4-month lead time. Resale at the
    horizon is the catalog's market series at the owned age (32 months), not book value; book value drives
    only the tax on the sale. Hand calculation of the book value: tax years 1 and 2 whole (20 % + 32 %), tax
    year 3 starts at month 4 + 24 = 28 and the horizon cuts it after 8 months (19.2 % × 8/12 = 12.8 %), so
    book = 1 − 0.648 = 0.352 of capex. Setting the resale cell to 10 % on Inputs gives the NPVs the API
    gives when asked for cashflow.resale_fraction 0.1, within $1."""
    costs = {"horizon_years": 3, "cashflow": {"tax_rate": 0.21}}
    design = _at(alice_client, demo, 0.7, **costs)
    evaluation = _evaluation(alice_client, design)
    cost = evaluation["costs"]["aws-p5-48xlarge"]
    inputs = cost["cashflow"]["inputs"]
    assumed = {a["name"]: a for a in cost["assumptions"]}
    assert inputs["lead_time_months"] == 4 and inputs["depreciation_schedule"] == "macrs_5"
    assert "FALLBACK" not in assumed["cashflow.resale_fraction"]["source"]  # the market series
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "r.xlsx")
    assert _check_cached_values(path) > 200
    book = load_workbook(path)
    values = _cached_values(path)["Inputs"]
    resale_cell = _cell(book, "Inputs", "Resale at the horizon")
    assert values[resale_cell].value == pytest.approx(inputs["resale_fraction"], rel=1e-12)
    assert values[_cell(book, "Inputs", "Book value at the horizon")].value == pytest.approx(0.352, abs=1e-12)
    assert inputs["resale_fraction"] != pytest.approx(0.352, abs=0.01)  # market, not book
    summary = _summary(path)
    verdict = evaluation["design_verdict"]
    assert abs(summary["NPV of owning"] - verdict["own"]["npv_usd"]) < 1.0
    assert abs(summary["NPV saving of owning (rent − own)"] - verdict["saving_usd"]) < 1.0
    assert " (NPV at 8.0%, after a 21.0% tax on both sides): " in summary["Verdict"]  # the formula's text

    computed = _recalculated(path, {("Inputs", resale_cell): 0.1})
    at_ten = _at(
        alice_client, demo, 0.7, horizon_years=3, cashflow={"tax_rate": 0.21, "resale_fraction": 0.1}
    )
    verdict = _evaluation(alice_client, at_ten)["design_verdict"]
    assert (
        abs(computed[("SUMMARY", _cell(book, "Summary", "NPV of owning"))] - verdict["own"]["npv_usd"]) < 1.0
    )
    saving = computed[("SUMMARY", _cell(book, "Summary", "NPV saving of owning (rent − own)"))]
    assert abs(saving - verdict["saving_usd"]) < 1.0


def test_the_workbook_lists_only_the_pricing_models_the_design_ticked(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    """AWS p5 prices on-demand, spot and reservations; the design ticks on-demand and reserved 3-year: no
    Inputs row, Cash flows column or Options row names spot or reserved 1-year."""
    ticked = [{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand", "reserved_3y"]}]
    design = _at(alice_client, demo, 0.7, cloud=ticked)
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "t.xlsx")
    book = load_workbook(path)
    inputs = book["Inputs"]
    header = next(c.row for c in inputs["A"] if c.value == "Rent option")
    models = [inputs.cell(row=r, column=1).value for r in range(header + 1, inputs.max_row + 1)]
    assert [m for m in models if m] == ["on_demand", "reserved_3y"]
    flows = [c.value for c in book["Cash flows"][1]]
    assert {"on_demand (USD)", "reserved_3y (USD)"} <= set(flows)
    assert not [h for h in flows if h and ("spot" in h or "reserved_1y" in h)]
    options = {row["Pricing model"] for row in _table(path, "Options") if row["Kind"] == "cloud"}
    assert options == {"on_demand", "reserved_3y"}
    assert _check_cached_values(path) > 200


def test_a_wacc_discount_rate_is_a_formula_over_its_parts_and_the_tax_rate(
    alice_client: Client, demo: Any, tmp_path: Path
) -> None:
    """WACC 40 % debt at 6 %, equity at 12 %, tax 21 %: by hand r = 0.6 × 0.12 + 0.4 × 0.06 × 0.79 = 0.072 +
    0.01896 = 0.09096.
    On Inputs the discount rate is that formula over the three parts and the tax rate, so setting the tax
    rate to 30 % moves the rate (0.072 + 0.4 × 0.06 × 0.7 = 0.0888) with the deductions, and the
    recalculated NPVs are the API's for a design saved at 30 %, within $1."""
    wacc = {"wacc_debt_share": 0.4, "wacc_cost_of_debt": 0.06, "wacc_cost_of_equity": 0.12}
    design = _at(alice_client, demo, 0.7, cashflow={"tax_rate": 0.21, **wacc})
    verdict = _evaluation(alice_client, design)["design_verdict"]
    assert verdict["discount_rate"] == pytest.approx(0.09096, rel=1e-12)
    path = _download(alice_client, f"/api/v1/designs/{design}/export/?format=xlsx", tmp_path / "w.xlsx")
    assert _check_cached_values(path) > 200
    book = load_workbook(path)
    rate = _cell(book, "Inputs", "Discount rate")
    assert book["Inputs"][rate].value.startswith("=(1-Inputs!")
    assert _cached_values(path)["Inputs"][rate].value == pytest.approx(0.09096, rel=1e-12)
    computed = _recalculated(path, {("Inputs", _cell(book, "Inputs", "Tax rate")): 0.3})
    assert computed[("INPUTS", rate)] == pytest.approx(0.0888, rel=1e-12)
    at_30 = _at(alice_client, demo, 0.7, cashflow={"tax_rate": 0.3, **wacc})
    verdict = _evaluation(alice_client, at_30)["design_verdict"]
    assert (
        abs(computed[("SUMMARY", _cell(book, "Summary", "NPV of owning"))] - verdict["own"]["npv_usd"]) < 1.0
    )
    saving = computed[("SUMMARY", _cell(book, "Summary", "NPV saving of owning (rent − own)"))]
    assert abs(saving - verdict["saving_usd"]) < 1.0
