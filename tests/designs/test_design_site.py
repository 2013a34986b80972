"""A design placed at a site (issue #35, Sites), through POST /api/v1/designs/ and evaluate: an NVL72 at an
air-cooled 40 kW site, IT load over the site's MW, and the owning cost taking power, PUE and colocation from
a saved site, each checked by hand."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.designs.test_api import LAYOUT
from tests.designs.test_design_verdict import _evaluate
from tests.sites.test_api import SITE

AIR_40KW = {**SITE, "pue": {"air": 1.5}, "cooling": ["air"], "power_now_mw": 0.5}
# No network power, so the IT load is the servers' alone: nodes × 10.2 kW (8 × 700 W × 10.2 / 5.6).
NO_NETWORK_POWER = {"switch_power_w": 0, "node_transceiver_w": 0, "switch_transceiver_w": 0}


def _spec(accelerator: str, gpus_per_node: int, nodes: int, **extra: Any) -> dict[str, Any]:
    dp = gpus_per_node * nodes // 32  # TP 8 × PP 4 = 32 GPUs a replica
    return {
        "workload": {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_tokens": dp * 32 * 8192, "precision": "bf16"},
        },
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "fabric": "ib-ndr400",
            "storage": "lustre",
        },
        "parallelism": {**LAYOUT, "dp": dp},
        "costs": {
            "horizon_years": 2,
            "utilization": 1.0,
            "cloud": [],
            "on_prem": {"load_power_fraction": 1.0},
            "network": NO_NETWORK_POWER,
        },
        **extra,
    }


def _findings(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["code"]: f for f in body["findings"]}


def test_an_nvl72_at_an_air_cooled_40_kw_site_names_rack_power_and_cooling(
    user_client: Any, catalog: Any
) -> None:
    body = _evaluate(user_client, _spec("gb200", 72, 8, site=AIR_40KW))
    found = _findings(body)
    rack = found["site_rack_power"]
    assert rack["severity"] == "critical"
    # A 72-GPU GB200 node is one NVL72 rack: 72 × 1,200 W TDP × 10.2 / 5.6 = 157.37 kW (the cost engine's
    # node power without a named server type), against the site's 40 kW per rack.
    assert "one rack of 72 GPUs drawing 157.4 kW" in rack["message"]
    assert "allows 40 kW per rack" in rack["message"]
    assert "cannot be placed there at all" in rack["message"]
    cooling = found["site_liquid_cooling"]
    assert cooling["severity"] == "critical"
    assert "needs direct liquid cooling" in cooling["message"] and "offers air only" in cooling["message"]


def test_it_load_above_the_site_mw_names_both_figures(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec("h100-sxm", 8, 64, site=AIR_40KW))
    # 64 × 10.2 kW = 652.8 kW = 0.653 MW (no network power) against the site's 0.5 MW now; 5 MW from 2027-06.
    message = _findings(body)["site_power"]["message"]
    assert "IT load at full power is 0.653 MW" in message
    assert "has 0.5 MW now" in message
    assert "reaches 5 MW from 2027-06" in message


def test_rack_count_of_an_eight_gpu_h100_server_at_a_40_kw_site(user_client: Any, catalog: Any) -> None:
    body = _evaluate(user_client, _spec("h100-sxm", 8, 16, site={**AIR_40KW, "power_now_mw": 2}))
    # ⌊40 / 10.2⌋ = 3 nodes a rack (30.6 kW); ⌈16 / 3⌉ = 6 racks; 16 × 10.2 = 163.2 kW = 0.163 MW of 2 MW.
    message = _findings(body)["site_racks"]["message"]
    assert "6 racks of 3 nodes at 10.2 kW each (30.6 kW of the 40 kW per rack)" in message
    assert "IT load 0.163 MW of 2 MW" in message


def test_a_saved_sites_power_pue_and_colocation_set_the_owning_cost(user_client: Any, catalog: Any) -> None:
    site = user_client.post("/api/v1/sites/", AIR_40KW, format="json").json()
    plain = _evaluate(user_client, _spec("h100-sxm", 8, 8))
    sited = _evaluate(user_client, _spec("h100-sxm", 8, 8, site={"id": site["id"]}))
    before = plain["costs"]["on_prem_only"]["on_prem"]
    after = sited["costs"]["on_prem_only"]["on_prem"]
    # 8 × 10.2 = 81.6 kW at full load. Defaults: 81.6 × PUE 1.3 × $0.08 × 8,760 h = $74,340.864 energy,
    # 81.6 kW × $150 × 12 = $146,880 colocation. The site: 81.6 × 1.5 × $0.12 × 8,760 = $128,666.88;
    # 81.6 × $200 × 12 = $195,840.
    assert before["annual"]["energy"]["usd"] == pytest.approx(74_340.864)
    assert before["annual"]["colocation"]["usd"] == pytest.approx(146_880)
    assert after["annual"]["energy"]["usd"] == pytest.approx(128_666.88)
    assert after["annual"]["colocation"]["usd"] == pytest.approx(195_840)
    # A year: (128,666.88 − 74,340.864) + (195,840 − 146,880) = $103,286.016 more; over 2 years twice that.
    assert after["annual_usd"] - before["annual_usd"] == pytest.approx(103_286.016)
    assert after["total_usd"] - before["total_usd"] == pytest.approx(2 * 103_286.016)
    # The answer states the source: the saved site, its cooling.
    sources = {a["name"]: a["source"] for a in sited["assumptions"]}
    assert sources["on_prem.pue"] == f"site Ashburn A (saved site {site['id']}), air cooling"
    assert sources["on_prem.usd_per_kwh"] == f"site Ashburn A (saved site {site['id']})"
    assert sources["on_prem.colo_usd_per_kw_month"] == f"site Ashburn A (saved site {site['id']})"
    # The design holds the site inline, as it was when saved.
    assert sited["spec"]["site"]["max_kw_per_rack"] == 40


def test_a_site_that_is_not_yours_is_a_400_naming_spec_site_id(
    user_client: Any, catalog: Any, bob: Any
) -> None:
    other = APIClient()
    other.force_authenticate(bob)
    site = other.post("/api/v1/sites/", AIR_40KW, format="json").json()
    spec = _spec("h100-sxm", 8, 8, site={"id": site["id"]})
    response = user_client.post("/api/v1/designs/", {"name": "not mine", "spec": spec}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"spec.site.id": [f"you have no site {site['id']}"]}


def test_a_bad_inline_site_field_is_a_400_naming_its_spec_path(user_client: Any, catalog: Any) -> None:
    spec = _spec("h100-sxm", 8, 8, site={**AIR_40KW, "max_kw_per_rack": 0})
    response = user_client.post("/api/v1/designs/", {"name": "bad site", "spec": spec}, format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert fields["spec.site.max_kw_per_rack"] == ["Ensure this value is greater than or equal to 0.1."]


def test_a_clone_by_someone_else_keeps_the_sites_figures_without_its_id(
    user_client: Any, catalog: Any, bob: Any
) -> None:
    site = user_client.post("/api/v1/sites/", AIR_40KW, format="json").json()
    spec = _spec("h100-sxm", 8, 8, site={"id": site["id"]})
    body = {"name": "shared", "spec": spec, "visibility": "organisation"}
    design = user_client.post("/api/v1/designs/", body, format="json").json()
    other = APIClient()
    other.force_authenticate(bob)
    clone = other.post(f"/api/v1/designs/{design['id']}/clone/", {}, format="json")
    assert clone.status_code == 201, clone.json()
    cloned = other.get(f"/api/v1/designs/{clone.json()['id']}/").json()
    assert "id" not in cloned["spec"]["site"]
    assert cloned["spec"]["site"]["colocation_usd_per_kw_month"] == 200
