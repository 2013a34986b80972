"""Published owning-cost breakdowns entered like for like (issue 31 item 11): each one's inputs as its source
states them, every line it does not carry set to zero, and its published figures reproduced within 2 %.

What each source publishes is stated beside it. None of the four publishes an owned $ per GPU-hour on its
own: each publishes the totals (or the per-unit figures) that the engine's $ per delivered GPU-hour divides,
so the $/GPU-hour asserted is the published total ÷ the same GPU-hours (GPUs × 8,760 × years ×
utilization). With the engine's defaults left in (staff, colocation, maintenance, network counted, PUE), the
same inputs cost more: the tests show that the gap closes to the published figure once each default is the
source's, not that the defaults are wrong.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_cost import _merge, run

# Every owning line a breakdown does not carry, set to zero; money not discounted (r = 0), no resale, the
# depreciation life equal to the horizon, so the engine's horizon total is capex + opex × years.
LIKE_FOR_LIKE: dict[str, Any] = {
    "on_prem": {
        "load_power_fraction": 1.0,
        "idle_power_fraction": 0,
        "colo_usd_per_kw_month": 0,
        "maintenance_fraction_per_year": 0,
        "staff_fte": 0,
        "discount_rate": 0,
        "residual_fraction": 0,
        "installation_fraction": 0,
    },
    "network": {"switch_power_w": 0, "node_transceiver_w": 0, "switch_transceiver_w": 0},
    "storage": {"capacity_tb": 0},
}


def _owned(request: dict[str, Any]) -> dict[str, Any]:
    return run(_merge(LIKE_FOR_LIKE, request))


def _per_gpu_hour(total_usd: float, *, gpus: int, years: float, utilization: float) -> float:
    return total_usd / (gpus * 8760 * years * utilization)


# 1. AI Infra Map, "H100 vs H200 vs B200 TCO" (aiinframap.com/tools/chips/h100-vs-h200-vs-b200-tco, read
# 2026): 1,024 accelerators, 5 years, 70 % utilization, street price per GPU H100 $30,000, H200 $35,000,
# B200 $40,000; TDP 700 / 700 / 1,000 W; energy = TDP × utilization × PUE 1.2 × $0.08/kWh (its stated
# assumptions; the network is excluded: "this ignores networking"). Published: "5-yr TCO — H100 acq $30.72 M
# + power $2.11 M = $32.83 M", H200 $35.84 M + $2.11 M = $37.95 M, B200 $40.96 M + $3.01 M = $43.97 M.
@pytest.mark.parametrize(
    ("usd_per_gpu", "tdp_kw", "published_power", "published_total"),
    [(30_000, 0.7, 2.11e6, 32.83e6), (35_000, 0.7, 2.11e6, 37.95e6), (40_000, 1.0, 3.01e6, 43.97e6)],
    ids=["h100", "h200", "b200"],
)
def test_ai_infra_map_five_year_tco_of_1024_gpus(
    usd_per_gpu: float, tdp_kw: float, published_power: float, published_total: float
) -> None:
    out = _owned(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 128},
            "horizon_years": 5,
            "utilization": 0.7,
            "on_prem": {
                "server_usd": 8 * usd_per_gpu,
                "node_power_kw": 8 * tdp_kw,
                "pue": 1.2,
                "usd_per_kwh": 0.08,
                "depreciation_years": 5,
            },
            "network": {"included_in_server": True},
        }
    )
    own = out["on_prem"]
    # Power: 1,024 × 0.7 kW × 0.7 × 1.2 × 0.08 × 8,760 × 5 = $2,109,800 (published $2.11 M).
    assert own["annual"]["energy"]["usd"] * 5 == pytest.approx(published_power, rel=0.02)
    assert own["total_usd"] == pytest.approx(published_total, rel=0.02)
    # $/GPU-hour of the published total: H100 32.83 M ÷ (1,024 × 8,760 × 5 × 0.7) = $1.0457.
    expected = _per_gpu_hour(published_total, gpus=1024, years=5, utilization=0.7)
    assert own["usd_per_gpu_hour"] == pytest.approx(expected, rel=0.02)
    # With the engine's defaults left in (staff, colocation, maintenance, counted network), owning costs more.
    defaults = run(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 128},
            "horizon_years": 5,
            "utilization": 0.7,
            "on_prem": {"server_usd": 8 * usd_per_gpu, "node_power_kw": 8 * tdp_kw},
        }
    )
    assert defaults["on_prem"]["usd_per_gpu_hour"] > 1.2 * expected


# 2. AI Infra Map, "Cluster Buildout Sizer" (aiinframap.com/tools/energy/cluster-buildout-sizer, read 2026):
# 50 MW → 32,051 × B200 at ~$40,000 = "Acquisition capex $1.28 B"; "Power cost (5-yr) @ 70% util,
# $0.08/kWh $94.34 M" (GPU TDP 1,000 W × PUE 1.20, the 30 % server overhead sizes the site, not this line);
# "5-yr TCO (capex + power) excludes networking, storage, facility build — $1.38 B".
def test_ai_infra_map_buildout_of_32051_b200() -> None:
    out = _owned(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 1, "nodes": 32_051},
            "horizon_years": 5,
            "utilization": 0.7,
            "on_prem": {
                "server_usd": 40_000,
                "node_power_kw": 1.0,
                "pue": 1.2,
                "usd_per_kwh": 0.08,
                "depreciation_years": 5,
            },
            "network": {"included_in_server": True},
        }
    )
    own = out["on_prem"]
    assert own["capex_usd"] == pytest.approx(1.28e9, rel=0.02)
    # 32,051 × 1.0 kW × 0.7 × 1.2 × 0.08 × 43,800 h = $94,337,465 (published $94.34 M).
    assert own["annual"]["energy"]["usd"] * 5 == pytest.approx(94.34e6, rel=0.002)
    assert own["total_usd"] == pytest.approx(1.38e9, rel=0.02)
    expected = _per_gpu_hour(1.38e9, gpus=32_051, years=5, utilization=0.7)  # $1.4044
    assert own["usd_per_gpu_hour"] == pytest.approx(expected, rel=0.02)


# 3. LegitLads, "Accelerator ROI Console" (legitlads.com/hub/tools/ai/ai-hardware/accelerator-roi-calculator,
# read 2026), its quick estimate: 64 accelerators, 4 years, 70 % utilization, cloud $2.00 per GPU-hour.
# Published: "Owning 64 accelerators costs $2,648,681 over 4 years ($1.92M capex + $728.68K energy/ops);
# cloud costs $3,139,584"; "Break-even utilization is 59%". Its energy and ops are one figure, so they are
# entered as the facility-and-ops lump sum: $728,681 ÷ 4 = $182,170.25 a year (fixed in utilization, as its
# break-even implies: 2,648,681 ÷ (64 × $2 × 8,760 × 4) = 59.06 %).
def test_legitlads_roi_console_64_accelerators() -> None:
    out = _owned(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": 8},
            "horizon_years": 4,
            "utilization": 0.7,
            "on_prem": {
                "server_usd": 8 * 30_000,
                "node_power_kw": 5.6,
                "usd_per_kwh": 0,
                "depreciation_years": 4,
                "facility_ops_usd_per_year": 728_681 / 4,
            },
            "network": {"included_in_server": True},
            "cloud": {"usd_per_node_hour": {"on_demand": 16.0}},
        }
    )
    assert out["on_prem"]["capex_usd"] == pytest.approx(1.92e6)
    assert out["on_prem"]["total_usd"] == pytest.approx(2_648_681, rel=0.02)
    assert out["cloud"]["on_demand"]["total_usd"] == pytest.approx(3_139_584)
    # The published break-even is undiscounted: where the horizon cost lines cross, u* = (A − C)/(c − B). The
    # break-even the result states is on the verdict's basis, the NPV of the monthly cash flows (issue #31),
    # and sits elsewhere (capex paid at delivery against rent paid monthly, lead time, resale).
    own, od = out["on_prem"]["cost_vs_utilization"], out["cloud"]["on_demand"]["cost_vs_utilization"]
    closed = (own["fixed_usd"] - od["fixed_usd"]) / (od["per_utilization_usd"] - own["per_utilization_usd"])
    assert closed == pytest.approx(0.59, rel=0.02)
    assert out["break_even_utilization"]["on_demand"]["basis"].startswith("NPV of the monthly cash flows")
    # $/GPU-hour: 2,648,681 ÷ (64 × 8,760 × 4 × 0.7) = $1.6878.
    expected = _per_gpu_hour(2_648_681, gpus=64, years=4, utilization=0.7)
    assert out["on_prem"]["usd_per_gpu_hour"] == pytest.approx(expected, rel=0.02)


# 4. Eugene Cheah's H100 cluster cost sheet (Google Sheets 1Ft3RbeZ…, "Prices and projections were all done as
# per: Aug 2024", cited from his Latent Space article "$2 H100s: How the GPU Bubble Burst"): an H100 node at
# $310,000 "includes the infiniband cards", a 64-port 400 Gb/s InfiniBand switch $36,000, connectors and
# cables per row, and a lifetime "Facility & Ops" amount. Rows (published): 2 nodes, 16 H100, no switch,
# facility & ops $100,000, nodes $620,000, cables $12,960, total $732,960, "Avg. H100 Raw Cost" $45,810;
# 64 nodes, 512 H100, 8 switches $288,000, cables $675,840, facility & ops $3,200,000, total $24,003,840,
# $46,883 per H100. The network is entered as the sheet's quote (network.capex_usd), the facility & ops over
# a 5-year horizon as a yearly lump sum, power inside it (no separate energy line).
@pytest.mark.parametrize(
    ("nodes", "network_usd", "facility_usd", "total", "per_gpu"),
    [(2, 12_960, 100_000, 732_960, 45_810), (64, 288_000 + 675_840, 3_200_000, 24_003_840, 46_883)],
    ids=["2-nodes", "64-nodes"],
)
def test_cheah_h100_cluster_sheet(
    nodes: int, network_usd: float, facility_usd: float, total: float, per_gpu: float
) -> None:
    out = _owned(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 8, "nodes": nodes},
            "horizon_years": 5,
            "utilization": 1.0,
            "on_prem": {
                "server_usd": 310_000,
                "usd_per_kwh": 0,
                "depreciation_years": 5,
                "facility_ops_usd_per_year": facility_usd / 5,
            },
            "network": {"capex_usd": network_usd},
        }
    )
    own = out["on_prem"]
    assert own["total_usd"] == pytest.approx(total, rel=0.02)
    assert own["total_usd"] / (nodes * 8) == pytest.approx(per_gpu, rel=0.02)
    # $/GPU-hour over 5 years fully used: 24,003,840 ÷ (512 × 8,760 × 5) = $1.0704 (64 nodes).
    expected = _per_gpu_hour(total, gpus=nodes * 8, years=5, utilization=1.0)
    assert own["usd_per_gpu_hour"] == pytest.approx(expected, rel=0.02)
