"""Dashboard pages through Django's test client: status codes, who may see what, and the share view."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from apps.designs.models import Design
from apps.designs.selectors import share_link_list
from apps.designs.services import design_create, share_link_create, share_link_revoke

pytestmark = pytest.mark.django_db


def _client(user: Any = None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def _private_design(owner: Any, demos: list[Any]) -> Design:
    return design_create(owner=owner, name="Alice's private 8B", spec=demos[3].current.spec)


def test_home_lists_the_demo_designs_for_a_signed_in_user(alice: Any, demos: list[Any]) -> None:
    response = _client(alice).get("/")
    assert response.status_code == 200
    body = response.content.decode()
    for demo in demos:
        assert demo.name.replace("×", "&times;") in body or demo.name in body
    assert 'href="/designs/new/"' in body


def test_home_signed_out_offers_sign_in_and_lists_no_designs(demos: list[Any]) -> None:
    body = _client().get("/").content.decode()
    assert "Sign in" in body and demos[0].name not in body


def test_design_page_shows_cards_charts_and_exports(alice: Any, demos: list[Any]) -> None:
    response = _client(alice).get(f"/designs/{demos[3].pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    for chart in (
        "memory",
        "step-time",
        "cost-utilization",
        "cumulative-cost",
        "cash-flow",
        "capex-opex",
        "sensitivity",
        "network",
    ):
        assert f'data-chart="chart-data-{chart}"' in body
    assert "Break-even utilization" in body and "Fits" in body
    assert "format=xlsx" in body and "format=sbatch" in body
    assert 'id="edit-design"' not in body  # alice does not own the demo


def test_owner_sees_edit_and_share_controls(alice: Any, demos: list[Any]) -> None:
    design = _private_design(alice, demos)
    body = _client(alice).get(f"/designs/{design.pk}/").content.decode()
    assert 'id="edit-design"' in body and 'id="create-share-link"' in body


def test_other_users_private_design_is_404_on_every_page(alice: Any, bob: Any, demos: list[Any]) -> None:
    design = _private_design(alice, demos)
    client = _client(bob)
    for url in (
        f"/designs/{design.pk}/",
        f"/designs/{design.pk}/edit/",
        f"/designs/{design.pk}/results/",
    ):
        assert client.get(url).status_code == 404, url
    # Compare names what it cannot show, in words that do not tell a private design from a missing one.
    body = client.get(f"/compare/?ids={design.pk}&ids={demos[0].pk}").content.decode()
    assert f"Design {design.pk} does not exist or is not shared with you." in body and design.name not in body


def test_editing_an_organisation_design_you_do_not_own_is_404(bob: Any, demos: list[Any]) -> None:
    assert _client(bob).get(f"/designs/{demos[0].pk}/edit/").status_code == 404


def test_design_pages_need_sign_in(demos: list[Any]) -> None:
    response = _client().get(f"/designs/{demos[0].pk}/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_editor_prefills_from_the_query_string(alice: Any, catalog: dict[str, int]) -> None:
    body = _client(alice).get("/designs/new/?accelerator=b200&nodes=32&preset=llama3-8b").content.decode()
    assert '<option value="b200" selected>' in body
    assert 'data-field="spec.cluster.nodes" value="32"' in body
    assert '<option value="llama3-8b" selected>' in body


def test_share_link_works_signed_out_read_only_with_assumptions(alice: Any, demos: list[Any]) -> None:
    design = _private_design(alice, demos)
    _, token = share_link_create(design=design, user=alice)
    response = _client().get(f"/share/{token}/")
    assert response.status_code == 200
    body = response.content.decode()
    assert design.name.replace("'", "&#x27;") in body
    for control in ('id="edit-design"', 'id="create-share-link"', 'id="design-form"', "/edit/"):
        assert control not in body
    assert 'id="assumptions"' in body and "141" in body  # the H200's 141 GiB from the catalog
    assert f"/share/{token}/export/xlsx/" in body and f"/share/{token}/export/csv/" in body
    design.refresh_from_db()
    assert share_link_list(design=design).get().opens == 1  # counted, or logged on PostgreSQL


def test_share_exports_download_with_the_token(alice: Any, demos: list[Any]) -> None:
    _, token = share_link_create(design=_private_design(alice, demos), user=alice)
    client = _client()
    xlsx = client.get(f"/share/{token}/export/xlsx/")
    assert xlsx.status_code == 200 and xlsx["Content-Type"].startswith("application/vnd.openxmlformats")
    assert xlsx.content[:2] == b"PK"  # a zip container
    csv = client.get(f"/share/{token}/export/csv/")
    assert csv.status_code == 200 and b"," in csv.content
    assert client.get(f"/share/{token}/export/sbatch/").status_code == 404  # launch scripts stay private


def test_revoked_or_unknown_share_link_is_404(alice: Any, demos: list[Any]) -> None:
    link, token = share_link_create(design=_private_design(alice, demos), user=alice)
    share_link_revoke(link=link)
    client = _client()
    assert client.get(f"/share/{token}/").status_code == 404
    assert client.get(f"/share/{token}/export/xlsx/").status_code == 404
    assert client.get("/share/not-a-token/").status_code == 404


def test_compare_marks_the_best_value_in_each_row(alice: Any, demos: list[Any]) -> None:
    ids = "&".join(f"ids={d.pk}" for d in demos[:3])
    response = _client(alice).get(f"/compare/?{ids}")
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count("★ best") >= 5  # days, run cost, $/GPU-h, MFU, tokens/s, memory
    assert 'data-chart="chart-data-compare-bars"' in body and 'data-chart="chart-data-compare-pareto"' in body


def test_the_compare_front_is_on_the_verdicts_npv(alice: Any, demos: list[Any]) -> None:
    """Issue #31, one basis: the compare page's Pareto chart draws each chosen option at the NPV of its
    monthly cash flows, the figure its design's rent-or-own verdict states (read back through the evaluate
    API), never one run's cost."""
    import json
    import re

    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(alice)
    expected: dict[str, float] = {}
    for design in demos[:3]:
        evaluation = api.post(f"/api/v1/designs/{design.pk}/evaluate/").json()
        verdict = evaluation["design_verdict"]
        npv = {o["key"]: o["npv_usd"] for o in [verdict["own"], *verdict["options"]]}
        for option in evaluation["options"]:  # the page labels an option as the design's options do
            if option["key"] in npv:
                expected[f"{design.name}: {option['label']}"] = npv[option["key"]]
    ids = "&".join(f"ids={d.pk}" for d in demos[:3])
    body = _client(alice).get(f"/compare/?{ids}").content.decode()
    found = re.search(r'<script id="chart-data-compare-pareto" type="application/json">(.*?)</script>', body)
    assert found
    figure = json.loads(found.group(1))
    assert "NPV over the horizon" in figure["layout"]["yaxis"]["title"]["text"]
    points = figure["data"][0]
    drawn = dict(zip(points["text"], points["y"], strict=True))
    assert drawn and set(drawn) <= set(expected)
    for label, npv in drawn.items():
        assert npv == pytest.approx(expected[label], abs=0.01), label


def test_compare_needs_two_to_six_designs(alice: Any, demos: list[Any]) -> None:
    body = _client(alice).get(f"/compare/?ids={demos[0].pk}").content.decode()
    assert "Choose 2 to 6 designs" in body


def test_sweep_result_page_draws_heatmaps_and_links_points_to_prefilled_designs(
    alice: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from apps.analysis.services import analysis_create

    with django_capture_on_commit_callbacks(execute=True):  # the chunks are enqueued on commit
        analysis = analysis_create(
            owner=alice,
            kind="sweep",
            params={
                "accelerators": ["h100-sxm", "b200"],
                "nodes": [16, 32],
                "pricing_models": ["on_demand", "own"],
            },
        )
    analysis.refresh_from_db()
    assert analysis.status == "succeeded"  # in-process Celery without REDIS_URL
    response = _client(alice).get(f"/sweep/{analysis.pk}/")
    assert response.status_code == 200
    body = response.content.decode()
    for chart in ("sweep-days", "sweep-cost", "sweep-pareto"):
        assert f'data-chart="chart-data-{chart}"' in body
    assert "/designs/new/?accelerator=" in body
    assert _client(alice).get("/sweep/").status_code == 200


def test_someone_elses_sweep_is_404(alice: Any, bob: Any, catalog: Any) -> None:
    from apps.analysis.services import analysis_create

    analysis = analysis_create(
        owner=alice,
        kind="sweep",
        params={"accelerators": ["h100-sxm"], "nodes": [16], "pricing_models": ["own"]},
    )
    assert _client(bob).get(f"/sweep/{analysis.pk}/").status_code == 404


def test_query_numbers_in_non_ascii_digits_are_ignored_not_a_500(alice: Any, demos: list[Any]) -> None:
    # "²".isdigit() holds but int("²") raises: the pages read ?version=, ?ids= and ?nodes= as ASCII digits.
    client = _client(alice)
    page = client.get(f"/designs/{demos[3].pk}/?version=²")
    assert page.status_code == 200 and f"v{demos[3].current.number}" in page.content.decode()
    compare = client.get(f"/compare/?ids=²,{demos[0].pk}")
    assert (
        compare.status_code == 200
        and "Choose 2 to 6 designs to compare (1 can be compared)" in compare.content.decode()
    )
    editor = client.get("/designs/new/?nodes=²&accelerator=b200")
    assert editor.status_code == 200
    assert 'data-field="spec.cluster.nodes" value="²"' not in editor.content.decode()


def test_compare_columns_show_the_option_asked_for_each_design(alice: Any, demos: list[Any]) -> None:
    from apps.dashboard.compare import compare_row
    from apps.designs.services import design_evaluate

    evaluation = design_evaluate(version=demos[3].current)
    row = compare_row(demos[3], evaluation, "own")
    own = next(o for o in evaluation.result["options"] if o["key"] == "own")
    assert (row.option, row.run_cost_usd, row.total_usd) == (
        own["label"],
        own["run_cost_usd"],
        own["total_usd"],
    )
    body = _client(alice).get(f"/compare/?ids={demos[3].pk},{demos[0].pk}&option-{demos[3].pk}=own")
    assert f'<option value="own" selected>{own["label"]}</option>' in body.content.decode()
