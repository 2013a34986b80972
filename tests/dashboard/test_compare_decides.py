"""Compare that decides (issue #36): each column shows its design's best option on the verdict's basis
(the NPV of the monthly cash flows), with the NPV, the verdict and the deadline rows; columns may be
versions of one design (``?ids=12v1,12v2``), each evaluated as that version stands.

The figures asserted are read from two independent evaluate calls through the API (one per version), not from
the page's own code.
"""

from __future__ import annotations

import copy
import re
from html import unescape
from typing import Any

from tests.designs.test_design_verdict import _p5_spec


def _row(body: str, label: str) -> list[str]:
    """The cells of the compare table's row headed ``label`` (text, unescaped)."""
    head = re.escape(label)
    found = re.search(rf'<th scope="row">{head}</th>(.*?)</tr>', unescape(body), re.S)
    assert found, f"no row {label!r}"
    return [
        re.sub(r"<[^>]+>", "", c).replace("★ best", "").strip()
        for c in re.findall(r"<td[^>]*>(.*?)</td>", found.group(1), re.S)
    ]


def _money(text: str) -> float:
    return float(text.replace("$", "").replace(",", ""))


def test_two_versions_of_one_design_compare_on_the_verdicts_npv_with_the_deadline(
    user_client: Any, catalog: Any
) -> None:
    spec = _p5_spec()
    spec["goals"] = {"deadline_days": 200}
    created = user_client.post("/api/v1/designs/", {"name": "p5 review", "spec": spec}, format="json").json()
    v2 = copy.deepcopy(spec)
    v2["costs"]["utilization"] = 0.3  # idle most of the time: renting gets cheaper than owning
    v2["goals"] = {"deadline_days": 0.1}  # shorter than the run itself (0.28 days on 64 nodes)
    patched = user_client.patch(
        f"/api/v1/designs/{created['id']}/", {"version": 1, "spec": v2}, format="json"
    )
    assert patched.status_code == 200 and patched.json()["version"] == 2
    # The oracle: each version evaluated through the API (v2 is current; v1 as a copy of its spec).
    old = user_client.post("/api/v1/designs/", {"name": "v1 copy", "spec": spec}, format="json").json()
    answers = [user_client.post(f"/api/v1/designs/{d}/evaluate/").json() for d in (old["id"], created["id"])]
    evaluations = [a["design_verdict"] for a in answers]

    user_client.force_login(user_client.user)
    body = user_client.get(f"/compare/?ids={created['id']}v1,{created['id']}v2").content.decode()
    assert "p5 review (v1)" in body and "p5 review (v2)" in body
    shown = _row(body, "Option shown (by default the verdict's choice)")
    npvs = [_money(c) for c in _row(body, "NPV over the horizon (this option)")]
    for verdict, label, npv in zip(evaluations, shown, npvs, strict=True):
        chosen = verdict["own"] if verdict["winner"] == "own" else verdict["rival"]
        assert label == chosen["label"]  # the verdict's choice, not the first ticked option
        assert npv == round(chosen["npv_usd"])  # to the dollar
    # The utilization change moved the choice (if it did not, the test shows nothing about the default).
    assert [v["winner"] for v in evaluations] == ["own", "rent"]
    deadline = _row(body, "Deadline (goals.deadline_days, the verdict's choice)")
    slack = [a["verdict"]["deadline"]["slack_days"] for a in answers]
    assert slack[0] > 0 > slack[1]
    assert deadline == [
        f"Meets the 200-day deadline: {slack[0]:,.1f} days slack",
        f"Misses the 0.1-day deadline by {-slack[1]:,.1f} days",
    ]
    # The form keeps the versions when an option is changed: hidden ids, one select per version column.
    assert f'name="ids" value="{created["id"]}v1"' in body
    assert f'name="option-{created["id"]}v2"' in body
    picked = user_client.get(
        f"/compare/?ids={created['id']}v1,{created['id']}v2&option-{created['id']}v1=own"
    )
    assert (
        _row(picked.content.decode(), "Option shown (by default the verdict's choice)")[0] == "Own (on-prem)"
    )


def test_an_unknown_version_is_named_and_never_a_500(user_client: Any, catalog: Any) -> None:
    created = user_client.post("/api/v1/designs/", {"name": "one", "spec": _p5_spec()}, format="json").json()
    user_client.force_login(user_client.user)
    body = user_client.get(
        f"/compare/?ids={created['id']}v7,{created['id']}v1,{created['id']}vx"
    ).content.decode()
    assert "one has no version 7." in body
    assert "Choose 2 to 6 designs to compare (1 can be compared)." in body


def test_long_design_names_wrap_under_their_bars_instead_of_being_cut() -> None:
    from types import SimpleNamespace

    from apps.dashboard import charts

    name = "Llama 3 405B on 2,048 H100 <reserved> & owned, 3-year horizon"
    rows = [SimpleNamespace(name=name, run_cost_usd=1.0, days=2.0, option="x")]
    x = charts.compare_bars_chart(rows)["data"][0]["x"]  # type: ignore[arg-type]
    lines = x[0].split("<br>")
    # By hand: words packed into lines of at most 18 characters, markup escaped, nothing dropped.
    assert lines == ["Llama 3 405B on", "2,048 H100", "&lt;reserved&gt; &amp;", "owned, 3-year", "horizon"]
    assert unescape(" ".join(lines)) == name
