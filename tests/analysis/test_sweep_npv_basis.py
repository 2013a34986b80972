"""Issue #31, "one basis": a sweep's Pareto front, its cheapest heatmap cell and a recommendation are
chosen on the NPV of each option's monthly cash flows over the cost horizon (the rent-or-own verdict's
basis), the per-run cost kept beside it, labelled; through POST /api/v1/analyses/ and the sweep page."""

from __future__ import annotations

import json
from typing import Any

from clusterdesigner.engine.design import tradeoffs
from clusterdesigner.engine.design.analysis_result import SweepRow
from tests.analysis.test_api import RECOMMEND, SWEEP, _post


def _finish(row: dict[str, Any]) -> float:
    return row["days"] + (row.get("start_delay_days") or 0.0)


def _non_dominated(rows: list[dict[str, Any]], figure: str) -> set[tuple[str, int, str]]:
    """The front by its definition (no other row at most as dear and as slow, better on one), O(n²): an
    independent check of the sorted sweep the API uses."""
    priced = [r for r in rows if r.get(figure) is not None and r.get("days") is not None]

    def beaten(r: dict[str, Any]) -> bool:
        return any(
            o[figure] <= r[figure]
            and _finish(o) <= _finish(r)
            and (o[figure] < r[figure] or _finish(o) < _finish(r))
            for o in priced
        )

    return {(r["accelerator"], r["nodes"], r["pricing_model"]) for r in priced if not beaten(r)}


def _page(client: Any, analysis_id: int) -> str:
    """The sweep page as its owner's browser session reads it."""
    from django.test import Client

    browser = Client()
    browser.force_login(client.user)
    return str(browser.get(f"/sweep/{analysis_id}/").content.decode())


def _chart(page: str, chart_id: str) -> dict[str, Any]:
    """A chart's Plotly figure as the page embeds it (its json_script element)."""
    marker = f'id="chart-data-{chart_id}" type="application/json">'
    figure: dict[str, Any] = json.loads(page.split(marker)[1].split("</script>")[0])
    return figure


def _key(r: dict[str, Any]) -> tuple[str, int, str]:
    return (r["accelerator"], r["nodes"], r["pricing_model"])


def test_the_sweep_front_is_npv_against_days_until_done_and_the_page_says_so(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    body = _post(user_client, SWEEP, django_capture_on_commit_callbacks).json()
    result = user_client.get(body["url"]).json()["result"]
    assert result["basis"] == "npv" and result["basis_label"].startswith("NPV over the horizon")
    rows = result["rows"]
    assert all(r["npv_usd"] is not None for r in rows if r.get("cost_usd") is not None)
    front = result["pareto"]
    assert {_key(r) for r in front} == _non_dominated(rows, "npv_usd")
    npvs = [r["npv_usd"] for r in front]
    assert npvs == sorted(npvs)  # cheapest NPV first
    by = {_key(r): r for r in rows}
    # One A100 node owned has the lowest NPV of all (seed catalog: $345,673 against $357,107 renting it on
    # demand and $423,535 owning one H100 node), so it heads the NPV front; on one run's cost it was
    # dominated (its $15,956 a run is dearer and slower than one H100 node owned, $7,425), so the per-run
    # front left it out: the two bases give different fronts, and this one is the verdict's.
    a100 = by[("a100-80gb", 1, "own")]
    assert front[0] == a100 and a100["npv_usd"] == min(r["npv_usd"] for r in rows if r.get("npv_usd"))
    assert ("a100-80gb", 1, "own") not in _non_dominated(rows, "cost_usd")
    assert a100["cost_usd"] > by[("h100-sxm", 1, "own")]["cost_usd"]

    page = _page(user_client, body["id"])
    caption = page.split('id="pareto-basis"')[1].split("</p>")[0]
    assert "The front is NPV over the horizon against days until done" in caption
    assert "Run cost (one run, undiscounted), shown beside it" in caption and "it does not rank" in caption
    table = page.split('id="pareto-table"')[1].split("</table>")[0]
    assert table.count("<tr>") == len(front) + 1 and "$345,673" in table
    # The charts: the Pareto chart's y axis and the cost heatmap are the NPV, each titled with its basis.
    pareto = _chart(page, "sweep-pareto")
    assert pareto["layout"]["yaxis"]["title"]["text"] == "NPV over the horizon (USD)"
    assert pareto["layout"]["xaxis"]["title"]["text"].startswith("Days until done, expected")
    star = pareto["data"][1]  # the front, drawn as a line, in order of days
    assert sorted(star["y"]) == npvs and star["y"][-1] == a100["npv_usd"] and star["x"][-1] == _finish(a100)
    heat = _chart(page, "sweep-cost")
    assert heat["layout"]["title"]["text"] == "Cheapest NPV over the horizon: accelerator × node count"
    assert heat["layout"]["title"]["subtitle"]["text"] == "USD, monthly cash flows, discounted"
    # Each cell holds its cheapest option by NPV: the A100 row's one-node cell is owning's $345,673.
    a100_row = heat["data"][0]["y"].index("a100-80gb")
    assert heat["data"][0]["z"][a100_row][0] == a100["npv_usd"]


def test_recommend_chooses_on_npv_and_labels_each_figure(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    body = _post(user_client, RECOMMEND, django_capture_on_commit_callbacks).json()
    result = user_client.get(body["url"]).json()["result"]
    assert result["basis"] == "npv"
    rows = [r for r in result["rows"] if r.get("cost_usd") is not None]
    meets = [r for r in rows if _finish(r) <= 30]
    choice = result["recommendation"]
    # Hand reasoning on the seed catalog: owning waits out a ~122-day procurement lead time, so only renting
    # meets 30 days; of the rented options that do, two A100 nodes on demand (21.1 days) have the lowest NPV
    # ($710,789: 2 nodes billed over the horizon) while one H100 node on demand (16.5 days) costs $809,688.
    # On one run's cost the choice would be an H100 on-demand option (about $19,400 a run against $21,900
    # for A100s): the bases disagree and the recommendation follows the NPV.
    assert _key(choice) == ("a100-80gb", 2, "on_demand")
    assert choice["npv_usd"] == min(r["npv_usd"] for r in meets)
    assert min(meets, key=lambda r: r["cost_usd"])["accelerator"] == "h100-sxm"
    reasons = result["reasons"]
    assert reasons[0].startswith("cheapest by NPV over the horizon of ")
    stated = next(r for r in reasons if "per run" in r)
    assert f"NPV over the horizon ${choice['npv_usd']:,.0f}" in stated
    assert f"${choice['cost_usd']:,.0f} per run, undiscounted" in stated
    assert json.dumps(result["recommendation"]) == json.dumps(next(r for r in result["rows"] if r == choice))


def _row(acc: str, model: str, days: float, run: float, npv: float | None, delay: float = 0.0) -> SweepRow:
    return SweepRow(
        accelerator=acc,
        nodes=1,
        gpus=8,
        pricing_model=model,
        fits=True,
        days=days,
        cost_usd=run,
        npv_usd=npv,
        start_delay_days=delay or None,
        mfu=0.4,
    )


def test_the_front_falls_back_to_per_run_only_where_rows_have_no_cash_flows_and_says_so() -> None:
    # Hand-made rows. With NPVs: x (10 d, $100 a run, NPV $900k), y (8 d, $120, NPV $700k), z (12 d, $90,
    # NPV $800k). On NPV y beats x and z on both axes: the front is [y] alone. On one run's cost no row
    # beats another on both axes: the front is z, x, y (cheapest first).
    rows = [
        _row("x", "on_demand", 10, 100, 900e3),
        _row("y", "on_demand", 8, 120, 700e3),
        _row("z", "own", 12, 90, 800e3),
    ]
    assert tradeoffs.sweep_basis(rows) == "npv"
    assert tradeoffs.sweep_front(rows, "npv") == [1]
    picked = tradeoffs.recommend(rows=rows, front=[rows[1]], params={"deadline_days": 9})
    assert picked["recommendation"] is rows[1] and picked["basis"] == "npv"
    # One priced row without cash flows: NPVs and per-run costs are never ranked together, so all per run.
    rows[2] = _row("z", "own", 12, 90, None)
    assert tradeoffs.sweep_basis(rows) == "per_run"
    assert tradeoffs.BASIS_LABELS["per_run"].startswith("cost per run (one run, undiscounted")
    assert tradeoffs.sweep_front(rows, "per_run") == [2, 0, 1]
    picked = tradeoffs.recommend(rows=rows, front=[rows[2], rows[0], rows[1]], params={"deadline_days": 11})
    assert picked["recommendation"] is rows[0]  # z misses 11 days; x is the cheaper per run of x and y
    assert picked["reasons"][0].startswith("cheapest by cost per run (no cash flows to discount) of 2 ")
    # Owning's lead time counts towards the days: z owned (a 7-day run, NPV $600k) after a 5-day lead time
    # is done on day 12, so y (8 days, NPV $700k) is on the front beside it (on the run's days alone z would
    # beat y on both axes and hide it), and a 10-day deadline gets y.
    rows = [_row("y", "on_demand", 8, 120, 700e3), _row("z", "own", 7, 90, 600e3, delay=5)]
    assert tradeoffs.sweep_front(rows, "npv") == [1, 0]
    picked = tradeoffs.recommend(rows=rows, front=[rows[1], rows[0]], params={"deadline_days": 10})
    assert picked["recommendation"] is rows[0]
