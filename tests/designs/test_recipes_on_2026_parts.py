"""Issue #32's "done when" through the designs API: a GB300 NVL72, a B300 and an MI350X design evaluate with
NVFP4 or MXFP8 selected, MFU against the part's own peak at the recipe's matmul precision, the error band says
no run was measured, MI350X refuses NVFP4 naming the field, the torchrun and sbatch exports carry the recipe's
and the model's Megatron-LM flags, and the design page shows the part's catalog sources.

Peaks (apps/catalog/data/seed_catalog.json, hand-checked against their sources in
tests/catalog/test_parts_2026.py): GB300 FP4 1,080,000 / 72 = 15,000 TFLOP/s dense, FP8 360,000 / 72 = 5,000;
B300 FP4 14,000, FP8 72,000 / 8 / 2 = 4,500; MI350X FP8 2.2e9 x 1,024 x 1,024 x 2 / 1e12 = 4,613.7 (MXFP8 runs
at the FP8 rate on CDNA 4).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.designs.test_parts_2026_api import _spec


def _create(client: Any, slug: str, precision: str, per_node: int, nodes: int) -> int:
    spec = _spec(slug, per_node, nodes, None, precision)
    created = client.post("/api/v1/designs/", {"name": f"{slug} {precision}", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    return int(created.json()["id"])


def _flags(text: str) -> list[str]:
    return text.replace("\\\n", " ").split()


# slug, GPUs a node, nodes, recipe, the dense peak MFU is taken against (TFLOP/s a GPU), its GPU count
CASES = [
    ("gb300", 72, 8, "nvfp4", 1_080_000 / 72, 576),
    ("b300", 8, 64, "mxfp8", 72_000 / 8 / 2, 512),
    ("b300", 8, 64, "nvfp4", 14_000.0, 512),
    ("mi350x", 8, 64, "mxfp8", 2.2e9 * 1024 * 1024 * 2 / 1e12, 512),
]


@pytest.mark.parametrize(("slug", "per_node", "nodes", "precision", "peak", "gpus"), CASES)
def test_a_2026_part_evaluates_with_its_recipe_against_its_own_peak(
    user_client: Any,
    catalog: Any,
    slug: str,
    per_node: int,
    nodes: int,
    precision: str,
    peak: float,
    gpus: int,
) -> None:
    design = _create(user_client, slug, precision, per_node, nodes)
    response = user_client.post(f"/api/v1/designs/{design}/evaluate/")
    assert response.status_code == 200, response.json()
    body = response.json()
    training = body["training"]
    assert training["summary"]["training"]["precision"] == precision
    assert training["summary"]["cluster"]["accelerator"] == slug
    # MFU = model TFLOP/s a GPU over the part's dense peak at the recipe's matmul precision; the cluster's
    # peak is that x the GPU count (GB300: 576 x 15,000 = 8.64 EF FP4; MI350X: 512 x 4,613.7 = 2.362 EF).
    # (rel 1e-4: the catalog keeps MI350X's 4,613.73 as 4,613.7.)
    assert training["mfu"] == pytest.approx(training["model_tflops_per_gpu"] / peak, rel=1e-4)
    cluster_tflops = training["model_tflops_per_gpu"] * gpus
    assert cluster_tflops / (peak * gpus) == pytest.approx(training["mfu"], rel=1e-4)
    assert 0.05 < training["mfu"] < 0.9
    # Neither the part nor the recipe has a measured run: the band is its family's widest and says so.
    basis = training["error_band"]["basis"]
    assert f"no measured run of {slug}" in basis or f"no measured {precision} run" in basis, basis
    names = {a["name"]: a["value"] for a in body["assumptions"]}
    matmul = "fp4" if precision == "nvfp4" else "fp8"
    assert names[f"catalog.{slug}.{matmul}_dense_tflops"] == pytest.approx(peak, rel=1e-4)


def test_nvfp4_beats_mxfp8_on_the_same_b300_design(user_client: Any, catalog: Any) -> None:
    days = {}
    for precision in ("mxfp8", "nvfp4"):
        design = _create(user_client, "b300", precision, 8, 64)
        days[precision] = user_client.post(f"/api/v1/designs/{design}/evaluate/").json()["training"][
            "time_to_train_days"
        ]
    assert days["nvfp4"] < days["mxfp8"]


def test_mi350x_with_nvfp4_is_a_400_naming_the_precision(user_client: Any, catalog: Any) -> None:
    # CDNA 4 has MX block scales (E8M0 per 32) but no NVFP4 (E4M3 per 16 plus a tensor scale).
    spec = _spec("mi350x", 8, 64, None, "nvfp4")
    before = user_client.get("/api/v1/designs/").json()["count"]
    response = user_client.post("/api/v1/designs/", {"name": "mi350x nvfp4", "spec": spec}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()["error"]["fields"]) == ["spec.workload.training.precision"]
    assert "nvfp4" in response.json()["error"]["fields"]["spec.workload.training.precision"][0].lower()
    assert user_client.get("/api/v1/designs/").json()["count"] == before  # nothing half-saved


# Llama 3 70B: 80 layers, round(0.16 x 80) = 13 in BF16 under NVFP4, round(13 / 5) = 3 first and 10 last;
# RMSNorm, RoPE with base 500,000 (its config.json's rope_theta).
RECIPE_FLAGS = {
    "nvfp4": [
        ("--fp4-format", "e2m1"),
        ("--fp4-recipe", "nvfp4"),
        ("--num-layers-at-start-in-bf16", "3"),
        ("--num-layers-at-end-in-bf16", "10"),
    ],
    "mxfp8": [("--fp8-format", "e4m3"), ("--fp8-recipe", "mxfp8")],
}
MODEL_FLAGS = [
    ("--normalization", "RMSNorm"),
    ("--position-embedding-type", "rope"),
    ("--rotary-base", "500000"),
]


@pytest.mark.parametrize("export", ["torchrun", "sbatch"])
@pytest.mark.parametrize(("slug", "per_node", "nodes", "precision"), [c[:4] for c in CASES])
def test_the_launch_exports_carry_the_recipe_and_the_model_flags(
    user_client: Any, catalog: Any, slug: str, per_node: int, nodes: int, precision: str, export: str
) -> None:
    design = _create(user_client, slug, precision, per_node, nodes)
    response = user_client.get(f"/api/v1/designs/{design}/export/?format={export}")
    assert response.status_code == 200, response.content[:400]
    tokens = _flags(response.content.decode())
    for flag, value in RECIPE_FLAGS[precision] + MODEL_FLAGS:
        assert flag in tokens, (flag, export)
        assert tokens[tokens.index(flag) + 1] == value, (flag, export)
    assert "--swiglu" in tokens and "--untie-embeddings-and-output-weights" in tokens
    assert "--bf16" in tokens
    if precision == "nvfp4":
        assert "--fp8-format" not in tokens
    else:
        assert "--fp4-format" not in tokens


@pytest.mark.parametrize(
    ("slug", "per_node", "nodes", "precision", "source"),
    [
        ("gb300", 72, 8, "nvfp4", "verda.com/blog/gb300-nvl72-architecture"),
        ("b300", 8, 64, "mxfp8", "resources.nvidia.com/en-us-dgx-systems/dgx-b300-datasheet"),
        ("mi350x", 8, 64, "mxfp8", "servethehome.com/?p=99664"),
    ],
)
def test_the_design_page_shows_the_parts_sources(
    user_client: Any, catalog: Any, slug: str, per_node: int, nodes: int, precision: str, source: str
) -> None:
    design = _create(user_client, slug, precision, per_node, nodes)
    assert user_client.post(f"/api/v1/designs/{design}/evaluate/").status_code == 200
    browser = Client()
    browser.force_login(user_client.user)
    response = browser.get(f"/designs/{design}/")
    assert response.status_code == 200
    body = response.content.decode()
    matmul = "fp4" if precision == "nvfp4" else "fp8"
    assert f"catalog.{slug}.{matmul}_dense_tflops" in body
    assert f"catalog.{slug}.memory_gib" in body
    assert source in body
