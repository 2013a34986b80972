"""A part with no measured run gets the widest error band of its family, and says so (issue #32)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterdesigner.engine.error_band import BANDS, MEASURED_PARTS, band_for, band_for_part, regime_key
from tests.engine.calibration_cases import _cluster
from tests.engine.frontier_cases import accelerator_slug, load_rows

DATA = Path(__file__).resolve().parent / "data"


def test_measured_parts_are_the_parts_of_the_calibration_rows() -> None:
    with (DATA / "runs.csv").open(newline="") as fh:
        base = {_cluster(row)["accelerator"] for row in csv.DictReader(fh)}
    frontier = {accelerator_slug(row["gpu_type"]) for row in load_rows()} - {None}
    assert base | frontier == MEASURED_PARTS


def test_a_measured_part_keeps_its_regime_band() -> None:
    regime = regime_key("blackwell", "fp8", False, 512, 8192)
    assert band_for_part(regime, part="b200") == band_for(regime)


def test_gb300_takes_the_widest_blackwell_band_and_names_itself() -> None:
    regime = regime_key("blackwell", "fp8", False, 512, 8192)
    band = band_for_part(regime, part="gb300")
    # Blackwell keys of the table and their p90 − p10: fp8/dense 0.1361 + 0.0724 = 0.2085; fp8/moe 0.2373 +
    # 0.0599 = 0.2972; */moe 0.2335 + 0.0745 = 0.3080 (the widest); fp8/moe/lt32k 0.225 + 0.0361 = 0.2611.
    assert band.basis.startswith("blackwell/*/moe/*/*")
    assert "no measured run of gb300" in band.basis and "blackwell family" in band.basis
    assert (band.p10, band.p90) == BANDS["blackwell/*/moe/*/*"][1:4:2]
    own = band_for(regime)
    assert band.p90 - band.p10 > own.p90 - own.p10


def test_mi350x_takes_the_widest_cdna_band_but_never_narrower_than_its_regime() -> None:
    # FP8: the CDNA keys' widest is cdna3/fp8/dense (0.1203 + 0.0586 = 0.1789), wider than cdna4's own 0.0451.
    fp8 = band_for_part(regime_key("cdna4", "fp8", False, 64, 8192), part="mi350x")
    assert (fp8.p10, fp8.p90) == (-0.0586, 0.1203) and "cdna family" in fp8.basis
    assert (band_for(regime_key("cdna4", "fp8", False, 64, 8192)).p90) == 0.0135  # what MI355X gets
    # BF16: no CDNA bf16 rows, so the regime falls back to */bf16/dense (0.1408 + 0.0888 = 0.2296), wider
    # than any CDNA key: that stays.
    bf16 = band_for_part(regime_key("cdna4", "bf16", False, 64, 8192), part="mi350x")
    assert bf16.basis.startswith("*/bf16/dense/*/*") and (bf16.p10, bf16.p90) == (-0.0888, 0.1408)


def test_announced_rubin_with_no_family_rows_takes_the_widest_band_of_all() -> None:
    band = band_for_part(regime_key("rubin", "fp8", False, 576, 8192), part="vera-rubin")
    width = max(v[3] - v[1] for v in BANDS.values())
    assert band.p90 - band.p10 == pytest.approx(width) and "all families" in band.basis
