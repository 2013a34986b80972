"""A sweep (and a recommendation) chooses each row's offering after the owner's price book is applied (issue
#35): a discount or private rate on an offering other than the catalog's pick moves the row to it when it
makes that offering the cheaper, and an offering the book says is unavailable (a quota of 0 nodes) is not
chosen. Through POST /api/v1/analyses/.

Hand figures (seed catalog, H200 on-demand, 8 GPUs an instance, every price dated 2026-09-01): CoreWeave's
8 × H200 node is $50.44 an instance-hour (the catalog's cheapest, so the catalog's pick), AWS p5en.48xlarge
$63.296 (the second cheapest), OCI $80.00, Azure $84.80, GCP a3-ultragpu $84.806908.
- 30 % off p5en: 63.296 × 0.7 = $44.3072 < $50.44, so p5en becomes the row's offering.
- 10 % off p5en: 63.296 × 0.9 = $56.9664 > $50.44, so CoreWeave stays.
- CoreWeave on-demand quota 0: the next of the catalog's order is p5en at $63.296 (< OCI's $80)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from clusterdesigner.engine.serving import serving
from tests.analysis.test_api import RECOMMEND
from tests.pricebook.test_consumers import _entry, _options, _price, _rows, _run
from tests.sites.test_api import SITE
from tests.teams.conftest import People

CW_H200 = "coreweave-8x-h200-node"
P5EN = "aws-p5en-48xlarge"
P5EN_ON_DEMAND = 63.296

SWEEP = {
    "kind": "sweep",
    "params": {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
        "accelerators": ["h200"],
        "nodes": [1],
        "pricing_models": ["on_demand", "own"],
    },
}


def _discount(client: Any, offering: str, value: float) -> dict[str, Any]:
    return _entry(client, kind="cloud_discount", offering=offering, pricing_model="on_demand", value=value)


def test_a_discount_that_makes_the_second_cheapest_offering_the_cheapest_moves_the_row_to_it(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    plain = _rows(_run(people.client("outsider"), SWEEP, django_capture_on_commit_callbacks))
    assert plain["on_demand"]["offering"] == CW_H200  # the catalog's pick
    entry = _discount(editor, P5EN, 0.3)
    body = _run(editor, SWEEP, django_capture_on_commit_callbacks)
    row = _rows(body)["on_demand"]
    assert row["offering"] == P5EN
    cloud = _price(body["result"]["prices"]["h200"]["rows"], f"cloud.{P5EN}.on_demand")
    assert (cloud["origin"], cloud["entry_id"]) == ("price_book", entry["id"])
    assert cloud["value"] == pytest.approx(P5EN_ON_DEMAND * 0.7, rel=1e-12)  # 44.3072
    # The row is priced at it: $44.3072 ÷ 8 GPUs = $5.5384 a GPU-hour against CoreWeave's $50.44 ÷ 8 =
    # $6.305 (the storage the row adds is the same in both).
    assert plain["on_demand"]["usd_per_gpu_hour"] - row["usd_per_gpu_hour"] == pytest.approx(
        (50.44 - P5EN_ON_DEMAND * 0.7) / 8, rel=1e-9
    )


def test_a_discount_that_leaves_the_offering_dearer_keeps_the_catalogs_pick(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    _discount(editor, P5EN, 0.1)  # 63.296 × 0.9 = 56.9664 > 50.44
    assert _rows(_run(editor, SWEEP, django_capture_on_commit_callbacks))["on_demand"]["offering"] == CW_H200


def test_an_offering_the_book_gives_no_quota_on_is_not_chosen_and_a_recommendation_follows(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    _entry(editor, kind="quota", offering=CW_H200, pricing_model="on_demand", value=0)
    assert _rows(_run(editor, SWEEP, django_capture_on_commit_callbacks))["on_demand"]["offering"] == P5EN
    recommend = {**RECOMMEND, "params": {**RECOMMEND["params"], "accelerators": ["h200"], "nodes": [1, 2]}}
    result = _run(editor, recommend, django_capture_on_commit_callbacks)["result"]
    offerings = {r["offering"] for r in result["rows"] if r["pricing_model"] == "on_demand"}
    assert offerings == {P5EN}


# The saved site of tests/sites/test_api.py, placed with H200 nodes on air cooling (the site's least
# demanding on offer; an H200 is no rack-scale part): power $0.12/kWh, PUE 1.5, colocation $200/kW-month
# contracted.
OWN_SWEEP = {**SWEEP, "params": {**SWEEP["params"], "pricing_models": ["own"]}}


def _site(client: Any, **fields: Any) -> int:
    response = client.post("/api/v1/sites/", {**SITE, **fields}, format="json")
    assert response.status_code == 201, response.json()
    return int(response.json()["id"])


def _with(payload: dict[str, Any], **params: Any) -> dict[str, Any]:
    return {**payload, "params": {**payload["params"], **params}}


def test_a_sweep_at_a_site_prices_owning_as_the_sites_figures_typed_in_would(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    site = _site(editor)
    at_site = _run(editor, _with(OWN_SWEEP, site=site), django_capture_on_commit_callbacks)
    typed = _run(
        editor,
        _with(OWN_SWEEP, on_prem={"usd_per_kwh": 0.12, "pue": 1.5, "colo_usd_per_kw_month": 200}),
        django_capture_on_commit_callbacks,
    )
    bare = _run(editor, OWN_SWEEP, django_capture_on_commit_callbacks)
    own, same, plain = _rows(at_site)["own"], _rows(typed)["own"], _rows(bare)["own"]
    for figure in ("cost_usd", "usd_per_gpu_hour", "npv_usd", "capex_usd"):
        assert own[figure] == pytest.approx(same[figure], rel=1e-12), figure
    assert own["usd_per_gpu_hour"] != pytest.approx(plain["usd_per_gpu_hour"], rel=1e-6)  # the site counts
    rows = at_site["result"]["prices"]["h200"]["rows"]
    where = f"site Ashburn A (saved site {site})"
    for name, value in (
        ("on_prem.usd_per_kwh", 0.12),
        ("on_prem.colo_usd_per_kw_month", 200),
        ("on_prem.pue", 1.5),
    ):
        row = _price(rows, name)
        assert (row["origin"], row["value"]) == ("site", value), name
        assert row["source"] == (where + ", air cooling" if name == "on_prem.pue" else where)
    # Stored results are keyed by the site's figures: the same sweep at a dearer site is a new analysis.
    dearer = _site(editor, name="Ashburn B", power_usd_per_kwh=0.24)
    other = _run(editor, _with(OWN_SWEEP, site=dearer), django_capture_on_commit_callbacks)
    assert other["id"] != at_site["id"]
    assert _rows(other)["own"]["usd_per_gpu_hour"] > own["usd_per_gpu_hour"]


def test_a_site_the_requester_cannot_read_is_a_400_naming_params_site(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    site = _site(people.client("editor"))  # the editor's own, not the team's
    for kind, payload in (
        ("sweep", _with(OWN_SWEEP, site=site)),
        ("recommend", {"kind": "recommend", "params": {"tokens": 1e11, "site": site}}),
    ):
        response = people.client("outsider").post("/api/v1/analyses/", payload, format="json")
        assert response.status_code == 400, kind
        assert "params.site" in response.json()["error"]["fields"], kind
    # A team's site is its members': a viewer prices a team sweep there.
    owner = people.client("owner")
    team_site = _site(owner, name="Team site", team=people.team.pk)
    body = _run(
        people.client("viewer"),
        {**_with(OWN_SWEEP, site=team_site), "team": people.team.pk},
        django_capture_on_commit_callbacks,
    )
    assert _price(body["result"]["prices"]["h200"]["rows"], "on_prem.usd_per_kwh")["origin"] == "site"


SERVING_URL = "/api/v1/serving/estimate/"


def test_the_serving_estimate_at_a_site_prices_owning_as_the_sites_figures_typed_in_would(
    people: People, catalog: Any
) -> None:
    """Llama 3 70B on H100 SXM (serving.EXAMPLE_REQUEST) at the site: its owning option equals the one with
    the site's $0.12/kWh, PUE 1.5 (air) and $200/kW-month typed into cost.on_prem, and differs from none."""
    editor = people.client("editor")
    site = _site(editor)
    request = dict(serving.EXAMPLE_REQUEST)
    typed_cost = {
        **(request.get("cost") or {}),
        "on_prem": {"usd_per_kwh": 0.12, "pue": 1.5, "colo_usd_per_kw_month": 200},
    }
    in_body = editor.post(SERVING_URL, {**request, "site": site}, format="json")
    in_query = editor.post(f"{SERVING_URL}?site={site}", request, format="json")
    typed = editor.post(SERVING_URL, {**request, "cost": typed_cost}, format="json")
    bare = editor.post(SERVING_URL, request, format="json")
    assert in_body.status_code == in_query.status_code == typed.status_code == 200, in_body.json()
    own = _options(in_body.json())["own"]
    assert own["total_usd"] == pytest.approx(_options(typed.json())["own"]["total_usd"], rel=1e-12)
    assert own["total_usd"] == pytest.approx(_options(in_query.json())["own"]["total_usd"], rel=1e-12)
    assert own["total_usd"] != pytest.approx(_options(bare.json())["own"]["total_usd"], rel=1e-6)
    rows = {r["name"]: r for r in in_body.json()["prices"]}
    power = rows["prices.on_prem.usd_per_kwh"]
    assert (power["origin"], power["value"], power["source"]) == (
        "site",
        0.12,
        f"site Ashburn A (saved site {site})",
    )
    assert rows["prices.on_prem.pue"]["source"] == f"site Ashburn A (saved site {site}), air cooling"
    # Another's site, or any site for a visitor, is a 400 naming site.
    for client, url, body in (
        (people.client("outsider"), SERVING_URL, {**request, "site": site}),
        (people.client("outsider"), f"{SERVING_URL}?site={site}", request),
        (APIClient(), SERVING_URL, {**request, "site": site}),
        (editor, f"{SERVING_URL}?site=abc", request),
    ):
        refused = client.post(url, body, format="json")
        assert refused.status_code == 400 and "site" in refused.json()["error"]["fields"], url


def test_the_serving_page_has_a_site_picker_and_prices_owning_at_the_site_chosen(
    people: People, catalog: Any
) -> None:
    site = _site(people.client("editor"))
    page = Client()
    page.force_login(people.editor)
    body = page.get("/serving/").content.decode()
    picker = body.split('id="f-site"')[1].split("</select>")[0]
    assert f'value="{site}"' in picker and "Ashburn A" in picker
    priced = page.get("/serving/", {"site": site})
    assert priced.status_code == 200
    table = priced.content.decode().split('id="price-sources"')[1].split("</table>")[0]
    row = table.split('data-name="prices.on_prem.usd_per_kwh"')[1].split("</tr>")[0]
    assert 'data-origin="site"' in row and f"site Ashburn A (saved site {site})" in row and "0.12" in row
    outsider = Client()
    outsider.force_login(people.outsider)
    refused = outsider.get("/serving/", {"site": site})
    assert refused.status_code == 400 and f"you have no site {site}" in refused.content.decode()
