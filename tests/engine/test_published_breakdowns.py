"""Published owning-cost breakdowns entered like for like (issue 31 item 11): each one's inputs as its source
states them, every line it does not carry set to zero, and its published figures reproduced within 2 %.

What each source publishes is stated beside it. None of the four publishes an owned $ per GPU-hour on its
own: each publishes the totals (or the per-unit figures) that the engine's $ per delivered GPU-hour divides,
so the $/GPU-hour asserted is the published total ÷ the same GPU-hours (GPUs × 8,760 × years ×
utilization). With the engine's defaults left in (staff, colocation, maintenance, network counted, PUE), the
same inputs cost more: the tests show that the gap closes to the published figure once each default is the
source's, not that the defaults are wrong.

Cases 5 to 9 (below) are sources that do publish an owned $ per GPU-hour, with the inputs behind it: the
engine's $/GPU-hour is asserted against the published one, in each source's own convention. They come from
four publications from three publishers: ComputeTape (5), SemiAnalysis (its TCO model, 6; one article, 7
and 8) and a LessWrong comment (9).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_cost import _merge, run

from clusterdesigner.engine.core.catalog import specs_from_records
from clusterdesigner.engine.cost.cost import tco
from clusterdesigner.engine.cost.rent_own import capital_recovery_factor, sinking_fund_factor

SEED_CATALOG = Path("apps") / "catalog" / "data" / "seed_catalog.json"

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
# "5-yr TCO (capex + power) excludes networking, storage, facility build — $1.38 B". Entered as the seed
# catalog's B200 part (apps/catalog/data/seed_catalog.json, slug b200); every owning input is the source's.
def test_ai_infra_map_buildout_of_32051_b200() -> None:
    out = _owned_seed(
        {
            "cluster": {"accelerator": "b200", "gpus_per_node": 1, "nodes": 32_051},
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
    assert {a["name"]: a["value"] for a in out["assumptions"]}["cluster.accelerator"] == "b200"
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


# ---------------------------------------------------------------------------------------------------------
# Published owned $ per GPU-hour (issue 31, "Done when": "reproduce their published $/GPU-hour within 2 %").
# Each source below publishes an owned cost per GPU-hour itself, with the inputs behind it. Each is entered
# like for like (LIKE_FOR_LIKE: every line it does not carry is zero) in its own convention:
# - per GPU-hour of which hours: the engine's figure is total ÷ (GPUs × 8,760 × years × u), so a source that
#   counts every hour of the month (SemiAnalysis) is entered at u = 1; its "utilization" is the share of
#   critical IT power drawn (power utilization), which is the engine's on_prem.load_power_fraction;
# - how capital is recovered: straight line (r = 0), or a level monthly annuity at the WACC (SemiAnalysis:
#   Excel PMT(WACC/12, 12 × life, −capex)), on_prem.capital_payments_per_year = 12;
# - a facility that outlives the servers (SemiAnalysis: 15 years against 5): on_prem.facility_life_years.
# The parts are asserted too where the source publishes them. The catalog is the project's seed catalog
# (B300 and H200 are in it); no price is read from it, every owning input is the source's.

SEED = specs_from_records(json.loads((Path(__file__).parents[2] / SEED_CATALOG).read_text())).cost_kwargs()


def _owned_seed(request: dict[str, Any]) -> dict[str, Any]:
    return tco(_merge(LIKE_FOR_LIKE, request), **SEED)


def _per_hour(own: dict[str, Any], line: str, *, gpus: int) -> float:
    """A yearly line of owning per GPU-hour of every hour of the year (the SemiAnalysis basis)."""
    return float(own["annual"][line]["usd"]) / (gpus * 8760)


# 5. ComputeTape, "How Fast Does an H100 Depreciate?" (computetape.com/learn/how-fast-does-an-h100-depreciate,
# Compute College, read 2026): "Suppose an accelerator costs an illustrative $30,000. Spread straight-line
# over 3 years that is $10,000 a year; over 5 years, $6,000 a year. At an illustrative ~70% utilization
# (about 6,100 productive hours a year), the hardware-only cost is roughly $1.64 an hour at 3 years versus
# about $0.98 at 5 years — before power, networking, or facility costs." Hardware only: no power, straight
# line (r = 0), per productive hour (u = 0.7). By hand: 10,000 ÷ (8,760 × 0.7 = 6,132 h) = $1.6308 (the
# source rounds the hours to 6,100: $1.639); 6,000 ÷ 6,132 = $0.9785.
@pytest.mark.parametrize(("years", "published"), [(3, 1.64), (5, 0.98)], ids=["3-years", "5-years"])
def test_computetape_h100_hardware_only_cost_per_productive_hour(years: int, published: float) -> None:
    out = _owned_seed(
        {
            "cluster": {"accelerator": "h100-sxm", "gpus_per_node": 1, "nodes": 1},
            "horizon_years": years,
            "utilization": 0.7,
            "on_prem": {"server_usd": 30_000, "usd_per_kwh": 0, "depreciation_years": years},
            "network": {"included_in_server": True},
        }
    )
    own = out["on_prem"]
    assert own["annual"]["capital"]["usd"] == pytest.approx(30_000 / years)
    assert own["usd_per_gpu_hour"] == pytest.approx(30_000 / years / (8760 * 0.7))
    assert own["usd_per_gpu_hour"] == pytest.approx(published, rel=0.02)


# 6. SemiAnalysis AI Cloud TCO Model, H200 SXM (InfiniBand), "Neocloud Giant" profile, as excerpted in a
# public note of the model's figures (GitHub-stored Logseq page "SemiAnalysis AI TCO Model — H200 SXM",
# secondary; the same $1.59 for H200, "Neocloud Giant profile: 6-yr life, 80% utilisation, $0.087/kWh, PUE
# 1.35, WACC 10.25%", is quoted from "AI Cloud TCO Model Update — August 10 2026", sheet Full TCO row 147,
# in another public file). Published, per 8-GPU server: total upfront cluster capex $361,255 (server
# $258,001 + networking $76,155 + storage $11,732 + server service $8,000 + installation $4,500 + software
# $2,867); WACC 10.25 %, useful life 6 years → "Total cluster capital cost per month per server: $6,738.18"
# → "Capital cost per GPU-hour: $1.15"; all-in power 10.93 kW per server, $0.087/kWh, utilization 80 %, PUE
# 1.35 → electricity $68.59 per kW of critical IT a month; colocation $150/kW-month; remote hands and support
# $131 and internet $39 a month → operating cost $2,558.27 a month per server → "$0.44"; "Total cost per
# GPU-hour $1.59". By hand: PMT(0.1025/12, 72, −361,255) = $6,738.18 a month, ÷ (8 × 730 h) = $1.1538;
# 1.35 × 0.087 × 730 × 0.8 = $68.59/kW-month; 10.93 kW × ($68.59 + $150) + $170 = $2,559.2 a month, ÷ 5,840
# = $0.4382; total $1.5920. The $/GPU-hour counts every hour of the month (u = 1); the 80 % is the power
# drawn (load_power_fraction); colocation bills the critical IT kW (contracted 10.93 kW).
def test_semianalysis_tco_model_h200_neocloud_giant() -> None:
    out = _owned_seed(
        {
            "cluster": {"accelerator": "h200", "gpus_per_node": 8, "nodes": 1},
            "horizon_years": 6,
            "utilization": 1.0,
            "on_prem": {
                "server_usd": 361_255,
                "depreciation_years": 6,
                "discount_rate": 0.1025,
                "capital_payments_per_year": 12,
                "node_power_kw": 10.93,
                "load_power_fraction": 0.8,
                "pue": 1.35,
                "usd_per_kwh": 0.087,
                "colo_usd_per_kw_month": 150,
                "colo_contracted_kw": 10.93,
                "facility_ops_usd_per_year": (131 + 39) * 12,
            },
            "network": {"included_in_server": True},
        }
    )
    own = out["on_prem"]
    # The monthly annuity: 12 × PMT(0.1025/12, 72, −361,255) = 12 × $6,738.18.
    assert own["annual"]["capital"]["usd"] / 12 == pytest.approx(6_738.18, abs=0.01)
    assert _per_hour(own, "capital", gpus=8) == pytest.approx(1.15, rel=0.02)
    assert own["annual"]["energy"]["usd"] / 12 == pytest.approx(68.59 * 10.93, rel=1e-3)
    opex = sum(_per_hour(own, k, gpus=8) for k in ("energy", "colocation", "facility_ops"))
    assert opex == pytest.approx(0.44, rel=0.02)
    assert own["usd_per_gpu_hour"] == pytest.approx(1.5920, abs=5e-4)
    assert own["usd_per_gpu_hour"] == pytest.approx(1.59, rel=0.02)


# 7 and 8. SemiAnalysis, "To Boldly Go: The Case for Space Datacenters" (newsletter.semianalysis.com/p/
# to-boldly-go-the-case-for-space-datacenters, 3 June 2026, its public part): a 30.5 kW B300 cluster, 16 GPUs
# in two servers, deployed in 2026. Terrestrial: upfront IT cluster capex $986,158 (servers $880,400 +
# service, networking, storage, software and other $89,956 + capitalised server service $15,802), "a flat
# WACC of 10.3 %", "a 5-year useful life for IT equipment" → "an IT capital cost of ownership of
# approximately ... $1.81/hr/GPU for terrestrial"; datacenter capital cost "$382K for terrestrial", "the
# standard 15 years for Earth-based datacenters" → "$0.36/hr/GPU"; "an electricity cost of $0.087/kWh, a
# power utilization rate of 80 % ... a PUE of 1.35. Total operating cost of ownership is dominated by power
# tariff and lands at $0.21/hr/GPU"; "total cost of ownership ... $2.37/hr/GPU for a terrestrial
# deployment" ($27,724 a month). Space: IT capex $980,882 (burn-in $10,526 in place of server service), an
# initial WACC of 15.0 %, 5-year IT life → "$2.00/hr/GPU"; datacenter capital $3.1M with "a useful life of
# only 5 years" → "$6.29/hr/GPU"; operating costs "allocated operations costs, at $4,167 per month,
# amounting to $0.36/hr/GPU" (no power bill: solar paid upfront); "$8.64/hr/GPU for a space-based
# deployment". By hand, per GPU-hour of 16 × 730 h a month: PMT(0.103/12, 60, −986,158) = $21,099.8 → $1.8065;
# PMT(0.103/12, 180, −382,000) = $4,175.5 → $0.3575; energy 30.5 × 0.8 × 1.35 × 0.087 × 730 = $2,091.3 →
# $0.1791; total $2.3430, 1.1 % under $2.37: the rest of the published $0.21 operating cost (about $0.03)
# is not itemised in the public text, so it is not entered. Space: PMT(0.15/12, 60, −980,882) = $23,335 →
# $1.9979; PMT(0.15/12, 60, −3.1M) = $73,749 → $6.314 (the $3.1M is rounded; the published $6.29 implies
# $3.088M); $4,167 → $0.3568; total $8.669 (+0.3 %).
B300_CLUSTER = {"accelerator": "b300", "gpus_per_node": 8, "nodes": 2}


def test_semianalysis_terrestrial_b300_tco() -> None:
    request = {
        "cluster": B300_CLUSTER,
        "horizon_years": 5,
        "utilization": 1.0,
        "on_prem": {
            "server_usd": 986_158 / 2,
            "depreciation_years": 5,
            "discount_rate": 0.103,
            "capital_payments_per_year": 12,
            "node_power_kw": 30.5 / 2,
            "load_power_fraction": 0.8,
            "pue": 1.35,
            "usd_per_kwh": 0.087,
            "facility_capex_usd": 382_000,
            "facility_life_years": 15,
        },
        "network": {"included_in_server": True},
    }
    own = _owned_seed(request)["on_prem"]
    it_only = _owned_seed(_merge(request, {"on_prem": {"facility_capex_usd": 0}}))["on_prem"]
    it_capital = _per_hour(it_only, "capital", gpus=16)
    assert it_capital == pytest.approx(1.8065, abs=5e-4)
    assert it_capital == pytest.approx(1.81, rel=0.02)
    dc_capital = _per_hour(own, "capital", gpus=16) - it_capital
    assert dc_capital == pytest.approx(0.3575, abs=5e-4)
    assert dc_capital == pytest.approx(0.36, rel=0.02)
    energy = _per_hour(own, "energy", gpus=16)
    assert energy == pytest.approx(0.1791, abs=5e-4)
    assert energy < 0.21  # the published operating cost is this energy and lines the text does not itemise
    assert own["capex_parts"]["facility"]["usd"] == 382_000
    assert own["usd_per_gpu_hour"] == pytest.approx(2.3430, abs=5e-4)
    assert own["usd_per_gpu_hour"] == pytest.approx(2.37, rel=0.02)
    # One life for all capex (the facility over the servers' 5 years) costs more: the facility's own life is
    # what the source's $0.36 rests on.
    one_life = _owned_seed(_merge(request, {"on_prem": {"facility_life_years": 5}}))["on_prem"]
    assert one_life["usd_per_gpu_hour"] > 1.1 * 2.37


def test_semianalysis_space_b300_tco() -> None:
    own = _owned_seed(
        {
            "cluster": B300_CLUSTER,
            "horizon_years": 5,
            "utilization": 1.0,
            "on_prem": {
                "server_usd": 980_882 / 2,
                "depreciation_years": 5,
                "discount_rate": 0.15,
                "capital_payments_per_year": 12,
                "node_power_kw": 30.5 / 2,
                "usd_per_kwh": 0,
                "facility_capex_usd": 3_100_000,
                "facility_ops_usd_per_year": 4_167 * 12,
            },
            "network": {"included_in_server": True},
        }
    )["on_prem"]
    assert own["annual"]["capital"]["usd"] / 12 == pytest.approx(23_335 + 73_749, rel=1e-3)
    assert _per_hour(own, "facility_ops", gpus=16) == pytest.approx(0.36, rel=0.02)
    assert own["usd_per_gpu_hour"] == pytest.approx(8.669, abs=1e-3)
    assert own["usd_per_gpu_hour"] == pytest.approx(8.64, rel=0.02)


def test_monthly_capital_recovery_is_excels_pmt_and_yearly_is_unchanged() -> None:
    # Monthly: PMT(8 %/12, 60, −$1M) = $20,276.39 (the loan check in docs/cost-engine.md), × 12 a year.
    monthly = capital_recovery_factor(rate=0.08, years=5, payments_per_year=12)
    assert 1e6 * monthly / 12 == pytest.approx(20_276.39, abs=0.01)
    # Yearly (the default): CRF(8 %, 5 y) = 0.250456; at r = 0 both are 1/n.
    assert capital_recovery_factor(rate=0.08, years=5) == pytest.approx(0.250456, abs=1e-6)
    assert capital_recovery_factor(rate=0.0, years=5, payments_per_year=12) == pytest.approx(0.2)
    # A residual of 20 % credited by the monthly sinking fund: 0.2 × SFF, SFF = 12 × i / ((1 + i)^60 − 1).
    i = 0.08 / 12
    assert sinking_fund_factor(rate=0.08, years=5, payments_per_year=12) == pytest.approx(
        12 * i / ((1 + i) ** 60 - 1)
    )


# 9. A LessWrong comment estimating at-cost inference (on the shortform of user no77e; read through the
# GreaterWrong mirror, greaterwrong.com/posts/NBEmGx3djmSXawp3H/no77e-s-shortform/comment/5QKKfBJSbAykKegWo;
# written after GPT-5's release, whose batch prices it quotes; its author is not named in the stored copy):
# "An H100 system costs about $50K per chip ... all-in for compute equipment, so with networking but without
# buildings and cooling", paid back "in 3 years"; "Operational costs are maybe below 20%, which gives $20K per
# year per chip, or $2.3 per H100-hour". GB200 NVL72: "around $5M per 72-chip rack ... This is 70K capital
# cost per chip, or 27.7K per year that pay it back in 3 years with 20% operational costs. This is just $3.2
# per chip-hour." Entered like for like: capex per chip as the server price (network in it, no building, no
# power bill of its own: the operating 20 % is the only opex), straight line over 3 years (r = 0, no
# resale), the 20 % on top of the yearly payback as a yearly fraction of capex (0.2 ÷ 3 of capex a year:
# 50,000 ÷ 3 × 1.2 = $20,000), per chip-hour of every hour of the year (u = 1). By hand: H100 20,000 ÷ 8,760
# = $2.2831 (published $2.3, −0.7 %); GB200 (5,000,000 ÷ 72) ÷ 3 × 1.2 = $27,778 a year (published
# "27.7K"), ÷ 8,760 = $3.1710 (published $3.2, −0.9 %). The GB200 rack is entered as 18 compute trays of 4
# GPUs (the NVL72), $5M ÷ 18 a tray.
@pytest.mark.parametrize(
    ("accelerator", "gpus_per_node", "nodes", "usd_per_chip", "per_year", "published"),
    [("h100-sxm", 8, 1, 50_000.0, 20_000.0, 2.3), ("gb200", 4, 18, 5e6 / 72, 27_700.0, 3.2)],
    ids=["h100", "gb200-nvl72"],
)
def test_lesswrong_at_cost_chip_hour_h100_and_gb200(
    accelerator: str, gpus_per_node: int, nodes: int, usd_per_chip: float, per_year: float, published: float
) -> None:
    gpus = gpus_per_node * nodes
    out = _owned_seed(
        {
            "cluster": {"accelerator": accelerator, "gpus_per_node": gpus_per_node, "nodes": nodes},
            "horizon_years": 3,
            "utilization": 1.0,
            "on_prem": {
                "server_usd": gpus_per_node * usd_per_chip,
                "depreciation_years": 3,
                "usd_per_kwh": 0,
                "maintenance_fraction_per_year": 0.2 / 3,
            },
            "network": {"included_in_server": True},
        }
    )
    assert {a["name"]: a["value"] for a in out["assumptions"]}["cluster.accelerator"] == accelerator
    own = out["on_prem"]
    assert own["capex_usd"] == pytest.approx(gpus * usd_per_chip)
    yearly_per_chip = (own["annual"]["capital"]["usd"] + own["annual"]["maintenance"]["usd"]) / gpus
    assert yearly_per_chip == pytest.approx(usd_per_chip / 3 * 1.2)
    assert yearly_per_chip == pytest.approx(per_year, rel=0.005)  # the published yearly figure, rounded
    assert own["usd_per_gpu_hour"] == pytest.approx(usd_per_chip / 3 * 1.2 / 8760)
    assert own["usd_per_gpu_hour"] == pytest.approx(published, rel=0.02)
