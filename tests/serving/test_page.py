"""The Serving page through its URL: the form, the estimate, its charts, errors beside the field, the
design link."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from apps.designs.demo import DEMOS


@pytest.mark.django_db
def test_the_page_estimates_the_default_and_embeds_three_charts(client: Any, catalog: Any) -> None:
    response = client.get("/serving/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="serving-gpus"' in html and 'id="serving-costs"' in html
    scripts = re.findall(
        r'<script id="chart-data-(serving-[a-z]+)" type="application/json">(.*?)</script>', html
    )
    assert {name for name, _ in scripts} == {"serving-latency", "serving-cost", "serving-layouts"}
    latency = json.loads(dict(scripts)["serving-latency"])
    names = [t["name"] for t in latency["data"]]
    assert "TTFT target" in names and "TPOT target" in names
    assert latency["layout"]["xaxis"]["title"]["text"] and latency["layout"]["yaxis"]["title"]["text"]


@pytest.mark.django_db
def test_a_query_string_is_its_own_estimate(client: Any, catalog: Any) -> None:
    a = client.get("/serving/?requests_per_s=5").content.decode()
    b = client.get("/serving/?requests_per_s=200").content.decode()
    gpus = [int(re.search(r'id="serving-gpus">(\d+)<', h).group(1)) for h in (a, b)]  # type: ignore[union-attr]
    assert gpus[0] < gpus[1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("requests_per_s=abc", "requests_per_s"),
        ("requests_per_s=-2", "requests_per_s"),
        ("tpot_ms=0.001", "tpot_ms"),
    ],
)
def test_bad_input_is_a_400_with_the_message_beside_the_field(
    client: Any, catalog: Any, query: str, field: str
) -> None:
    response = client.get(f"/serving/?{query}")
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="serving-result"' not in html
    label = {"requests_per_s": "f-rps", "tpot_ms": "f-tpot"}[field]
    after = html.split(f'id="{label}"', 1)[1]
    assert re.search(r'<p class="field-error">[^<]+</p>', after.split("</div>", 1)[0])


@pytest.mark.django_db
def test_the_design_page_links_to_serving_on_its_accelerator(client: Any, catalog: Any, alice: Any) -> None:
    from apps.designs import services

    design = services.design_create(owner=alice, name="d", spec=DEMOS[0]["spec"])
    client.force_login(alice)
    page = client.get(f"/designs/{design.pk}/").content.decode()
    assert f"/serving/?design={design.pk}" in page
    serving = client.get(f"/serving/?design={design.pk}")
    assert serving.status_code == 200
    accelerator = DEMOS[0]["spec"]["cluster"]["accelerator"]
    assert f'<option value="{accelerator}" selected>' in serving.content.decode()


@pytest.mark.django_db
def test_another_users_design_is_not_found(client: Any, catalog: Any, alice: Any, bob: Any) -> None:
    from apps.designs import services

    design = services.design_create(owner=alice, name="d", spec=DEMOS[0]["spec"])
    client.force_login(bob)
    assert client.get(f"/serving/?design={design.pk}").status_code == 404
