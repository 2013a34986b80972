"""The 2026 parts (issue #32): each one's dense FP4/FP8 peak and memory checked by hand against its source's
totals, and the pickers (API list, editor, serving page, sweep form) offering them."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from apps.catalog.models import Accelerator, ServerType


@pytest.mark.parametrize(
    ("slug", "fp4", "fp8", "memory_gib"),
    [
        # GB300 NVL72 rack, dense: 1,080 PF FP4 and 360 PF FP8 over 72 GPUs (glennklockwood citing NVIDIA GTC
        # 2025: "1.1 EF dense FP4", "360 PF FP8"; Verda's rack table 1,080 PF); HBM 20 TB / 72 = 278 GB, the
        # per-GPU 279 GB of Verda's table.
        ("gb300", 1_080_000 / 72, 360_000 / 72, 279),
        # DGX B300: 72 PF FP8 *sparse* over 8 GPUs, halved for dense = 4,500; FP4 dense 14,000 (Verda per-GPU
        # table); 2.30 TB HBM3e per 8-GPU node / 8 = 287.5, nominal 288 GB.
        ("b300", 14_000, 72_000 / 8 / 2, 288),
        # MI350X: 2,200 MHz x 1,024 x 1,024 dense BF16 FLOP/clk, x2 FP8, x4 FP4; AMD's 8-GPU platform totals
        # 37 PF FP8 and 74 PF FP4 (8 x 4,613.7 = 36,909; 8 x 9,227.5 = 73,820); 288 GB HBM3e.
        ("mi350x", 2.2e9 * 1024 * 1024 * 4 / 1e12, 2.2e9 * 1024 * 1024 * 2 / 1e12, 288),
        # Vera Rubin NVL144 (announced): 3.6 EF NVFP4 and 1.2 EF FP8 over 72 packages; 288 GB HBM4.
        ("vera-rubin", 3_600_000 / 72, 1_200_000 / 72, 288),
    ],
)
def test_part_peaks_and_memory_match_the_hand_calculation_from_its_source(
    catalog: Any, slug: str, fp4: float, fp8: float, memory_gib: float
) -> None:
    part = Accelerator.objects.get(slug=slug)
    assert part.fp4_dense_tflops == pytest.approx(fp4, rel=1e-4)
    assert part.fp8_dense_tflops == pytest.approx(fp8, rel=1e-4)
    assert part.memory_gib == memory_gib
    assert part.source and part.as_of


def test_gb300_rack_is_72_gpus_in_one_nvlink_domain_and_the_tray_is_4(catalog: Any) -> None:
    rack = ServerType.objects.get(slug="gb300-nvl72-rack")
    tray = ServerType.objects.get(slug="gb300-nvl72-compute-tray")
    assert (rack.gpus_per_node, rack.nics_per_node, rack.nic_gbps) == (72, 72, 800)
    assert tray.gpus_per_node * 18 == rack.gpus_per_node == rack.accelerator.scaleup_domain_gpus
    assert rack.price_low_usd <= rack.price_usd <= rack.price_high_usd


def test_rubin_is_marked_announced_not_measured_with_its_date(catalog: Any) -> None:
    rubin = Accelerator.objects.get(slug="vera-rubin")
    assert rubin.availability == Accelerator.Availability.ANNOUNCED
    assert rubin.get_availability_display() == "Announced, not measured"
    assert rubin.as_of.isoformat() == "2025-03-18" and "ANNOUNCED, NOT MEASURED" in rubin.source
    shipping = Accelerator.objects.filter(slug__in=["gb300", "b300", "mi350x"])
    assert {a.availability for a in shipping} == {"shipping"}


def test_the_api_picker_lists_the_2026_parts_with_their_precisions(api_client: Any, catalog: Any) -> None:
    body = api_client.get("/api/v1/accelerators/?page_size=100").json()
    rows = {row["slug"]: row for row in body["results"]}
    assert {"gb300", "b300", "mi350x", "vera-rubin"} <= set(rows)
    assert rows["gb300"]["precisions"] == ["tf32", "bf16", "fp8", "fp4"]
    assert rows["vera-rubin"]["precisions"] == ["fp8", "fp4"]  # no dense BF16 figure announced
    assert rows["vera-rubin"]["availability"] == "announced"
    amd = api_client.get("/api/v1/accelerators/?vendor=amd&page_size=100").json()["results"]
    assert "mi350x" in {row["slug"] for row in amd}
    servers = api_client.get("/api/v1/server-types/?page_size=100").json()["results"]
    assert {"gb300-nvl72-rack", "gb300-nvl72-compute-tray", "dgx-b300", "mi350x-8gpu-platform"} <= {
        s["slug"] for s in servers
    }


def test_the_editor_serving_and_sweep_pickers_offer_the_2026_parts(alice: Any, catalog: Any) -> None:
    client = Client()
    client.force_login(alice)
    editor = client.get("/designs/new/?accelerator=gb300").content.decode()
    assert '<option value="gb300" selected>' in editor
    for slug in ("b300", "mi350x", "vera-rubin"):
        assert f'<option value="{slug}"' in editor
    for page in ("/serving/", "/sweep/"):
        body = client.get(page).content.decode()
        for slug in ("gb300", "b300", "mi350x"):
            assert f'value="{slug}"' in body, (page, slug)


def test_the_accelerator_page_marks_rubin_announced_not_measured(alice: Any, catalog: Any) -> None:
    client = Client()
    client.force_login(alice)
    body = client.get("/catalog/").content.decode()
    row = body[body.index("NVIDIA Rubin (per GPU package") :][:600]
    assert "announced, not measured" in row and "2025-03-18" in row
    gb300 = body[body.index("NVIDIA GB300 (per Blackwell Ultra GPU") :][:300]
    assert "announced, not measured" not in gb300
