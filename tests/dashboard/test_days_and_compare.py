"""Issue 13, defects 6 and 7: one meaning of "days to train", and a compare page that compares what it says.

Before: demo 1 read 27.7 days on its page (failure-free), 28.4 on compare (with failures and restarts)
and spot a third figure, each labelled "days"; ``/compare/?ids=1,2,3`` showed an empty page; the chart's
right axis read "Run cost (USD)" over days; every column showed owning as its "cheapest option".
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def _evaluation(client: Client, design_id: int) -> dict[str, Any]:
    return client.post(f"/api/v1/designs/{design_id}/evaluate/").json()


def test_design_page_shows_failure_free_and_expected_days_labelled(
    alice_client: Client, demos: list[Any]
) -> None:
    demo = demos[0]  # 64 H100 nodes on-demand
    result = _evaluation(alice_client, demo.pk)
    failure_free = result["training"]["time_to_train_days"]
    expected = next(o["days"] for o in result["options"] if o["pricing_model"] != "spot")
    assert expected > failure_free  # restarts and lost work add time
    body = alice_client.get(f"/designs/{demo.pk}/").content.decode()
    card = body.split('id="days-to-train"')[1].split("</div></div>")[0]
    assert f"{expected:,.1f} days" in card and "expected, with failures and restarts" in card
    assert f"{failure_free:,.1f} days failure-free" in card


def test_compare_uses_the_same_expected_days_as_the_design_page(
    alice_client: Client, demos: list[Any]
) -> None:
    ids = ",".join(str(d.pk) for d in demos[:3])
    response = alice_client.get(f"/compare/?ids={ids}")  # the README's form
    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="compare-table"' in body
    expected_row = body.split("Days to train, expected (with failures and restarts)</th>")[1].split("</tr>")[
        0
    ]
    free_row = body.split("Days to train, failure-free</th>")[1].split("</tr>")[0]
    for demo, shown in zip(demos[:3], re.findall(r"([\d.,]+) days", expected_row), strict=True):
        result = _evaluation(alice_client, demo.pk)
        option = next(o for o in result["options"] if o["key"] == _first_cloud_key(demo))
        assert shown == f"{option['days']:,.1f}"
    assert len(re.findall(r"([\d.,]+) days", free_row)) == 3


def _first_cloud_key(demo: Any) -> str:
    choice = demo.current.spec["costs"]["cloud"][0]
    return f"{choice['offering']}:{choice['pricing_models'][0]}"


def test_compare_shows_each_designs_verdict_choice_and_lets_the_reviewer_pick(
    alice_client: Client, demos: list[Any]
) -> None:
    a, b = demos[0], demos[3]
    body = alice_client.get(f"/compare/?ids={a.pk}&ids={b.pk}").content.decode()
    option_row = body.split("Option shown (by default the verdict&#x27;s choice)</th>")[1].split("</tr>")[0]
    # Each column shows the option its design's rent-or-own verdict picks on the NPV of the monthly cash
    # flows (issue #36, "each column's best option by the verdict's basis"; issue #31, one basis): owning
    # when owning's NPV is lower, else the cheapest chosen rent option, whatever the order of the offerings.
    verdicts = [_evaluation(alice_client, d.pk)["design_verdict"] for d in (a, b)]
    labels = []
    for v in verdicts:
        chosen = v["own"] if v["winner"] == "own" else v["rival"]
        assert chosen["npv_usd"] == min(o["npv_usd"] for o in (v["own"], *v["options"]))
        labels.append(chosen["label"])
    assert option_row == "".join(f'<td class="num">{label}</td>' for label in labels)
    picked = alice_client.get(f"/compare/?ids={a.pk}&ids={b.pk}&option-{b.pk}=own").content.decode()
    assert "Own (on-prem)" in picked.split("Option shown (by default")[1].split("</tr>")[0]
    assert '<option value="own" selected>' in picked


def test_compare_names_what_is_missing(alice_client: Client, demos: list[Any]) -> None:
    body = alice_client.get(f"/compare/?ids={demos[0].pk},999999").content.decode()
    assert "Design 999999 does not exist or is not shared with you." in body
    assert "Choose 2 to 6 designs to compare (1 can be compared)." in body


def test_compare_chart_axes_say_what_they_plot(alice_client: Client, demos: list[Any]) -> None:
    from apps.dashboard import charts

    # The page's ComparePageRow is read by attribute: name, the shown option's run cost, days and label.
    rows = [SimpleNamespace(name="a", run_cost_usd=1.0, days=2.0, option="x")]
    layout = charts.compare_bars_chart(rows)["layout"]  # type: ignore[arg-type]
    assert layout["yaxis"]["title"]["text"] == "Run cost (USD)"
    assert layout["yaxis2"]["title"]["text"] == "Expected days to train"


def test_the_compare_analysis_names_each_designs_verdict_choice_as_its_best(
    alice_client: Client, demos: list[Any], django_capture_on_commit_callbacks: Any
) -> None:
    # Issue #31, one basis: the compare analysis's best option of a design is the one its rent-or-own
    # verdict picks on the NPV of the monthly cash flows: owning for the 64 × H100 demo (owning saves), spot
    # for the 48 × B200 spot demo (renting spot saves $4.7M).
    a, b = demos[0], demos[1]
    with django_capture_on_commit_callbacks(execute=True):
        response = alice_client.post(
            "/api/v1/analyses/",
            {"kind": "compare", "params": {"designs": [a.pk, b.pk]}},
            content_type="application/json",
        )
    assert response.status_code == 202, response.content
    body = alice_client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded", body
    rows = body["result"]["designs"]
    best = {row["design"]: (row["best_option"], row["best_run_cost_usd"]) for row in rows}
    for demo in (a, b):
        result = _evaluation(alice_client, demo.pk)
        verdict = result["design_verdict"]
        key = "own" if verdict["winner"] == "own" else verdict["rival"]["key"]
        chosen = next(o for o in result["options"] if o["key"] == key)
        assert best[demo.pk] == (chosen["label"], pytest.approx(chosen["run_cost_usd"])), demo.name
        # ... with its NPV over the horizon, the verdict's own figure for that option
        npv = verdict["own"]["npv_usd"] if key == "own" else verdict["rival"]["npv_usd"]
        assert next(r for r in rows if r["design"] == demo.pk)["best_npv_usd"] == pytest.approx(npv, abs=0.01)
    assert best[a.pk][0] == "Own (on-prem)"
    assert best[b.pk][0].endswith("spot")
    # The front is drawn on that basis: a design is on it unless another is both cheaper by NPV and faster.
    assert body["result"]["basis"] == "npv"
    by_design = {r["design"]: (r["best_npv_usd"], r["days"]) for r in rows}
    expected = sorted(
        (
            d
            for d, (n, t) in by_design.items()
            if not any(n2 <= n and t2 <= t and (n2, t2) != (n, t) for n2, t2 in by_design.values())
        ),
        key=lambda d: by_design[d][0],
    )
    assert body["result"]["pareto"] == expected
