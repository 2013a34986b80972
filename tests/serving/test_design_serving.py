"""A design with a ``serving`` section: saved and checked like the rest of the spec, estimated with the
design's evaluation, shown on the design page and the share view, and exported in the XLSX summary."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import openpyxl
import pytest

from apps.designs.demo import DEMOS

SERVING = {
    "input_tokens": 1024,
    "output_tokens": 256,
    "targets": {"ttft_s": 2.0, "tpot_s": 0.05},
    "demand": {"requests_per_s": 20, "peak_to_mean": 2},
}


def _spec(**serving: Any) -> dict[str, Any]:
    """Demo 1 with a serving section: SERVING updated by ``serving`` (a None value removes the key)."""
    spec = copy.deepcopy(DEMOS[0]["spec"])
    spec["serving"] = {k: v for k, v in {**SERVING, **serving}.items() if v is not None}
    return spec


def _create(client: Any, spec: dict[str, Any]) -> Any:
    return client.post(
        "/api/v1/designs/", data=json.dumps({"name": "served", "spec": spec}), content_type="application/json"
    )


@pytest.mark.django_db
def test_design_page_share_view_and_xlsx_show_the_serving_estimate(
    user_client: Any, client: Any, catalog: Any
) -> None:
    from apps.designs import services
    from apps.designs.models import Design

    response = _create(user_client, _spec())
    assert response.status_code == 201, response.content
    design = Design.objects.get(pk=response.json()["id"])
    client.force_login(user_client.user)
    page = client.get(f"/designs/{design.pk}/").content.decode()
    assert 'id="design-serving"' in page
    evaluation = services.design_evaluate(version=design.current)
    gpus = evaluation.result["serving"]["best"]["gpus"]
    _, token = services.share_link_create(design=design, user=user_client.user)
    client.logout()
    shared = client.get(f"/share/{token}/").content.decode()
    assert 'id="design-serving"' in shared and f">{gpus}<" in shared
    xlsx = client.get(f"/share/{token}/export/xlsx/")
    assert xlsx.status_code == 200
    ws = openpyxl.load_workbook(io.BytesIO(xlsx.content))["Summary"]
    rows = {r[0].value: r[1].value for r in ws.iter_rows(min_row=2)}
    assert rows["Serving: GPUs at the peak"] == gpus
    assert rows["Serving: own, per million output tokens"] > 0
    # every option, not only owning and the cheapest cloud one
    for c in evaluation.result["serving"]["costs"][1:]:
        assert rows[f"Serving: {c['option']}, per million output tokens"] == pytest.approx(
            c["usd_per_m_output_tokens"]
        )
    assert rows["Serving: output tokens per day"] == 20 * 86_400 * 256


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("serving", "field"),
    [
        ({"demand": {"requests_per_s": -1}}, "spec.serving.demand.requests_per_s"),
        ({"targets": {"tpot_s": 1e-6}}, "spec.serving.targets.tpot_s"),
        ({"model": {"preset": "llama3-8b"}}, "spec.serving"),
        ({"bogus": 1}, "spec.serving.bogus"),
        (
            {"input_tokens": None, "output_tokens": None, "lengths": [{"input": 9, "output": 9, "share": 2}]},
            "spec.serving.lengths.0.share",
        ),
        ({"demand": {"requests_per_s": 1, "hourly_profile": [1] * 5}}, "spec.serving.demand.hourly_profile"),
        # integers too large for a float were an OverflowError (a 500) in the engine's checks
        ({"demand": {"requests_per_s": 10**400}}, "spec.serving.demand.requests_per_s"),
        (
            {"demand": {"requests_per_s": 1, "hourly_profile": [10**400] + [1] * 23}},
            "spec.serving.demand.hourly_profile.0",
        ),
        (
            {
                "input_tokens": None,
                "output_tokens": None,
                "lengths": [{"input": 9, "output": 9, "share": 10**400}],
            },
            "spec.serving.lengths.0.share",
        ),
        ({"efficiency": {"bandwidth_efficiency": 10**400}}, "spec.serving.efficiency.bandwidth_efficiency"),
        (
            {"efficiency": {"prefill_shares_weight_read": 1}},
            "spec.serving.efficiency.prefill_shares_weight_read",
        ),
    ],
)
def test_a_bad_serving_section_is_a_400_naming_it(
    user_client: Any, catalog: Any, serving: dict[str, Any], field: str
) -> None:
    response = _create(user_client, _spec(**serving))
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"], response.json()


@pytest.mark.django_db
def test_the_serving_section_prices_every_option(user_client: Any, client: Any, catalog: Any) -> None:
    # owning, then each cloud offering × pricing model of the design's accelerator (H100: AWS p5 and others)
    from apps.designs import services
    from apps.designs.models import Design

    response = _create(user_client, _spec())
    design = Design.objects.get(pk=response.json()["id"])
    costs = services.design_evaluate(version=design.current).result["serving"]["costs"]
    assert len(costs) >= 3 and costs[0]["option"] == "own"
    _, token = services.share_link_create(design=design, user=user_client.user)
    client.force_login(user_client.user)
    for url in (f"/designs/{design.pk}/", f"/share/{token}/"):
        page = client.get(url).content.decode()
        table = page.split('id="design-serving-costs"', 1)[1].split("</table>", 1)[0]
        rows = table.count("<tr>") - 1  # minus the header
        assert rows == len(costs), url
        for c in costs:
            assert f"${c['usd_per_m_output_tokens']:.3f}" in table


@pytest.mark.django_db
def test_a_design_serving_section_takes_a_length_mix_and_an_hourly_profile(
    user_client: Any, catalog: Any
) -> None:
    from apps.designs import services
    from apps.designs.models import Design

    spec = _spec(
        input_tokens=None,
        output_tokens=None,
        lengths=[{"input": 512, "output": 256, "share": 0.8}, {"input": 8192, "output": 512, "share": 0.2}],
        demand={"requests_per_s": 20, "hourly_profile": [0.5] * 8 + [3.0] * 8 + [0.5] * 8},
    )
    response = _create(user_client, spec)
    assert response.status_code == 201, response.content
    design = Design.objects.get(pk=response.json()["id"])
    estimate = services.design_evaluate(version=design.current).result["serving"]
    # peak ÷ mean = 3 / (32/24) = 2.25; output tokens/day = 20 × 86,400 × (0.8·256 + 0.2·512)
    assert estimate["peak_to_mean"] == pytest.approx(2.25)
    assert estimate["output_tokens_per_day"] == pytest.approx(20 * 86_400 * 307.2)


@pytest.mark.django_db
def test_the_editor_sets_the_targets_percentile(user_client: Any, client: Any, catalog: Any) -> None:
    # The design editor's Serving fieldset: a percentile input (blank: the engine's p99, as placeholder), the
    # saved value shown when editing, and the estimate judging the targets at it.
    import re
    from pathlib import Path

    from apps.designs import services
    from apps.designs.models import Design

    def _tag(body: str) -> str:
        match = re.search(r'<input [^>]*data-field="spec\.serving\.targets\.percentile"[^>]*>', body)
        assert match, "no percentile input"
        return match.group(0)

    client.force_login(user_client.user)
    blank = _tag(client.get("/designs/new/").content.decode())
    assert 'placeholder="99"' in blank and 'value=""' in blank
    response = _create(user_client, _spec(targets={"ttft_s": 2.0, "tpot_s": 0.05, "percentile": 95}))
    assert response.status_code == 201, response.content
    design = Design.objects.get(pk=response.json()["id"])
    assert 'value="95' in _tag(client.get(f"/designs/{design.pk}/edit/").content.decode())
    notes = {
        a["name"]: a["value"]
        for a in services.design_evaluate(version=design.current).result["serving"]["assumptions"]
    }
    assert notes["percentile"].startswith("p95 targets")
    # The editor's script sends every serving input it shows (no browser here: read the script).
    script = (Path(__file__).resolve().parents[2] / "static" / "js" / "editor.js").read_text()
    assert '["ttft_s", "tpot_s", "percentile"]' in script
    bad = _create(user_client, _spec(targets={"ttft_s": 2.0, "tpot_s": 0.05, "percentile": 100}))
    assert bad.status_code == 400 and "spec.serving.targets.percentile" in bad.json()["error"]["fields"]


@pytest.mark.django_db
def test_the_prefill_weight_read_flag_is_taken_as_true_or_false(user_client: Any, catalog: Any) -> None:
    # The one flag among the efficiency overrides (engine/serving/serving.py ServingEfficiency): a boolean is
    # saved.
    response = _create(user_client, _spec(efficiency={"prefill_shares_weight_read": False}))
    assert response.status_code == 201, response.content
