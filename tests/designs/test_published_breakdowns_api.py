"""A published owned $ per GPU-hour reproduced through the design API (issue 31, item 11): SemiAnalysis's
AI Cloud TCO Model, H200 "Neocloud Giant" ($1.59 per GPU-hour), entered like for like as a design's
spec.costs (the source's and the hand calculation: tests/engine/test_published_breakdowns.py, case 6), saved
at POST /api/v1/designs/ and evaluated at /evaluate/; likewise a LessWrong comment's H100 at cost ($2.3 per
H100-hour, case 9). The new owning inputs it needs (capital recovered in monthly payments, a facility's
lump sum and life) are refused with a 400 naming the field when bad."""

from __future__ import annotations

from typing import Any

import pytest

from apps.designs.models import Design
from clusterdesigner.engine.cost import defaults
from tests.designs.test_goals import LAYOUT_32

OFFERING = "aws-p5en-48xlarge"
# Every owning line the source does not carry, zero (as tests/engine/test_published_breakdowns.LIKE_FOR_LIKE).
LIKE_FOR_LIKE = {
    "idle_power_fraction": 0,
    "maintenance_fraction_per_year": 0,
    "staff_fte": 0,
    "residual_fraction": 0,
    "installation_fraction": 0,
}
SOURCE = {
    "server_usd": 361_255,  # total upfront cluster capex per 8-GPU server
    "depreciation_years": 6,
    "discount_rate": 0.1025,  # WACC
    "capital_payments_per_year": 12,  # the model's monthly amortisation, PMT(WACC/12, 72, −capex)
    "node_power_kw": 10.93,
    "load_power_fraction": 0.8,  # its "utilization 80 %": the share of critical IT power drawn
    "pue": 1.35,
    "usd_per_kwh": 0.087,
    "colo_usd_per_kw_month": 150,
    "colo_contracted_kw": 10.93,
    "facility_ops_usd_per_year": (131 + 39) * 12,  # remote hands and support, internet: $170 a month
}


def _spec(**on_prem: Any) -> dict[str, Any]:
    spec = defaults.design_spec()
    spec["workload"]["model"] = {"preset": "llama3-8b"}
    spec["cluster"].update(accelerator="h200", nodes=1)
    # A layout given (not searched), so the evaluation answers at once.
    spec["parallelism"] = {**LAYOUT_32, "tp": 1, "pp": 1, "dp": 8}
    spec["costs"].update(
        horizon_years=6,
        utilization=1.0,  # per GPU-hour of every hour of the month, as the source counts them
        on_prem={**LIKE_FOR_LIKE, **SOURCE, **on_prem},
        network={
            "included_in_server": True,
            "switch_power_w": 0,
            "node_transceiver_w": 0,
            "switch_transceiver_w": 0,
        },
        storage={"capacity_tb": 0},
        cloud=[{"offering": OFFERING, "pricing_models": ["on_demand"]}],
        cashflow={"lead_time_months": 0},
    )
    return spec


@pytest.mark.django_db
def test_semianalysis_h200_owned_cost_per_gpu_hour_through_the_design_api(
    user_client: Any, catalog: Any
) -> None:
    created = user_client.post(
        "/api/v1/designs/", {"name": "SemiAnalysis H200", "spec": _spec()}, format="json"
    )
    assert created.status_code == 201, created.json()
    response = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    own = response.json()["costs"][OFFERING]["on_prem"]
    # 12 × PMT(0.1025/12, 72, −361,255) = 12 × $6,738.18 (published "per month per server: $6,738.18").
    assert own["annual"]["capital"]["usd"] / 12 == pytest.approx(6_738.18, abs=0.01)
    assert "12 payments a year" in own["annual"]["capital"]["formula"]
    # ($6,738.18 + 10.93 × ($68.59 + $150) + $170) ÷ (8 × 730) = $1.5920; published $1.59.
    assert own["usd_per_gpu_hour"] == pytest.approx(1.5920, abs=5e-4)
    assert own["usd_per_gpu_hour"] == pytest.approx(1.59, rel=0.02)
    used = {a["name"]: a for a in response.json()["costs"][OFFERING]["assumptions"]}
    assert used["on_prem.capital_payments_per_year"]["value"] == 12
    assert used["on_prem.capital_payments_per_year"]["source"] == "request"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("on_prem", "field", "reason"),
    [
        ({"capital_payments_per_year": 2.5}, "capital_payments_per_year", "whole number"),
        ({"capital_payments_per_year": 0}, "capital_payments_per_year", "whole number"),
        ({"facility_life_years": 0}, "facility_life_years", "more than zero"),
        ({"facility_capex_usd": -1}, "facility_capex_usd", "zero or more"),
    ],
)
def test_a_bad_recovery_input_is_a_400_naming_the_field_and_saves_nothing(
    user_client: Any, catalog: Any, on_prem: dict[str, Any], field: str, reason: str
) -> None:
    response = user_client.post("/api/v1/designs/", {"name": "bad", "spec": _spec(**on_prem)}, format="json")
    assert response.status_code == 400, response.json()
    [message] = response.json()["error"]["fields"][f"spec.costs.on_prem.{field}"]
    assert reason in message
    assert not Design.objects.exists()


@pytest.mark.django_db
def test_lesswrong_h100_at_cost_chip_hour_through_the_design_api(user_client: Any, catalog: Any) -> None:
    # Case 9 of tests/engine/test_published_breakdowns.py: $50,000 per H100 with its network, straight line
    # over 3 years, 20 % operating costs on top of the yearly payback (0.2 ÷ 3 of capex a year), no power
    # bill or building of its own, every hour counted: 50,000 ÷ 3 × 1.2 ÷ 8,760 = $2.2831 (published $2.3).
    spec = _spec()
    spec["cluster"]["accelerator"] = "h100-sxm"
    spec["costs"].update(
        horizon_years=3,
        on_prem={
            **LIKE_FOR_LIKE,
            "server_usd": 8 * 50_000,
            "depreciation_years": 3,
            "discount_rate": 0,
            "usd_per_kwh": 0,
            "colo_usd_per_kw_month": 0,
            "maintenance_fraction_per_year": 0.2 / 3,
        },
        cloud=[{"offering": "aws-p5-48xlarge", "pricing_models": ["on_demand"]}],
    )
    created = user_client.post("/api/v1/designs/", {"name": "LessWrong H100", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    response = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    costs = response.json()["costs"]["aws-p5-48xlarge"]
    used = {a["name"]: a["value"] for a in costs["assumptions"]}
    assert used["cluster.accelerator"] == "h100-sxm"
    own = costs["on_prem"]
    assert (own["annual"]["capital"]["usd"] + own["annual"]["maintenance"]["usd"]) / 8 == pytest.approx(
        20_000
    )
    assert own["usd_per_gpu_hour"] == pytest.approx(20_000 / 8760)
    assert own["usd_per_gpu_hour"] == pytest.approx(2.3, rel=0.02)
