"""The 2026 parts (issue #32) evaluate through the designs API, and the design page shows their sources.

Each design is Llama-3-70B on the part's own server with a fixed layout; the check is that the engine uses the
part's catalog figures (its dense peak and memory), not another part's.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from tests.designs.test_api import LAYOUT


def _spec(accelerator: str, gpus_per_node: int, nodes: int, offering: str | None, precision: str) -> Any:
    """A 70B design; parts without a catalog owning price (B300, MI350X) carry the user's own server quote,
    as the API asks for (a made-up $400,000 per 8-GPU server: only the training figures are checked)."""
    dp = gpus_per_node * nodes // 32  # TP 8 x PP 4 = 32 GPUs a replica; 32 sequences of 8,192 a replica
    spec: dict[str, Any] = {
        "workload": {
            "model": {"preset": "llama3-70b"},
            "training": {"tokens": 1e12, "global_batch_tokens": dp * 32 * 8192, "precision": precision},
        },
        "cluster": {
            "accelerator": accelerator,
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "fabric": "ib-xdr800",
            "storage": "lustre",
        },
        "parallelism": {**LAYOUT, "dp": dp},
        "costs": {"horizon_years": 2, "utilization": 0.7, "cloud": []},
    }
    if accelerator != "gb300":
        spec["costs"]["on_prem"] = {"server_usd": 400000}
    if offering:
        spec["costs"]["cloud"] = [{"offering": offering, "pricing_models": ["on_demand"]}]
    return spec


CASES = [
    # slug, GPUs per node, nodes, offering, precision, dense peak used for MFU, memory GiB
    ("gb300", 72, 8, None, "fp8", 5000.0, 279.0),
    ("b300", 8, 64, "aws-p6-b300-48xlarge", "bf16", 2250.0, 288.0),
    ("mi350x", 8, 64, None, "fp8", 4613.7, 288.0),
]


@pytest.mark.parametrize(("slug", "per_node", "nodes", "offering", "precision", "peak", "memory"), CASES)
def test_a_2026_part_design_evaluates_through_the_api_on_its_own_figures(
    user_client: Any,
    catalog: Any,
    slug: str,
    per_node: int,
    nodes: int,
    offering: str | None,
    precision: str,
    peak: float,
    memory: float,
) -> None:
    spec = _spec(slug, per_node, nodes, offering, precision)
    created = user_client.post("/api/v1/designs/", {"name": f"70B on {slug}", "spec": spec}, format="json")
    assert created.status_code == 201, created.json()
    response = user_client.post(f"/api/v1/designs/{created.json()['id']}/evaluate/")
    assert response.status_code == 200, response.json()
    training = response.json()["training"]
    assert training["memory_capacity_gib"] == memory
    # MFU is model TFLOP/s over the part's own dense peak at the chosen precision.
    assert training["mfu"] == pytest.approx(training["model_tflops_per_gpu"] / peak, rel=1e-9)
    # No measured run of any of these parts: the band is its family's widest and says so.
    assert f"no measured run of {slug}" in training["error_band"]["basis"]
    names = {a["name"]: a for a in response.json()["assumptions"]}
    assert names[f"catalog.{slug}.memory_gib"]["value"] == memory
    assert "secondary" in names[f"catalog.{slug}.memory_gib"]["source"]


def test_a_b300_design_prices_its_aws_offering(user_client: Any, catalog: Any) -> None:
    spec = _spec("b300", 8, 64, "aws-p6-b300-48xlarge", "bf16")
    design = user_client.post("/api/v1/designs/", {"name": "b300", "spec": spec}, format="json").json()
    body = user_client.post(f"/api/v1/designs/{design['id']}/evaluate/").json()
    option = next(o for o in body["options"] if o["key"] == "aws-p6-b300-48xlarge:on_demand")
    # 64 instances x $142.416/h (2026-09-01 refresh): the run's cost is days x 24 x 64 x 142.416.
    assert option["run_cost_usd"] == pytest.approx(option["days"] * 24 * 64 * 142.416, rel=1e-9)


def test_bf16_on_announced_rubin_is_refused_naming_the_precision(user_client: Any, catalog: Any) -> None:
    spec = _spec("vera-rubin", 72, 8, None, "bf16")
    response = user_client.post("/api/v1/designs/", {"name": "rubin bf16", "spec": spec}, format="json")
    if response.status_code == 201:
        response = user_client.post(f"/api/v1/designs/{response.json()['id']}/evaluate/")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert any("precision" in f for f in fields), fields


def test_the_design_page_shows_the_parts_sources(user_client: Any, catalog: Any) -> None:
    spec = _spec("mi350x", 8, 64, None, "bf16")
    design = user_client.post("/api/v1/designs/", {"name": "mi350x", "spec": spec}, format="json").json()
    browser = Client()
    browser.force_login(user_client.user)
    body = browser.get(f"/designs/{design['id']}/").content.decode()
    if "catalog.mi350x" not in body:  # results may load in a fragment
        body = browser.get(f"/designs/{design['id']}/results/").content.decode()
    assert "catalog.mi350x.bf16_dense_tflops" in body
    assert "2,200 MHz" in body or "2.2 GHz" in body  # the MI350X source's clock, from its source text
