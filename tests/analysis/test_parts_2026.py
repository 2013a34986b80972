"""Recommend and sweeps with the 2026 parts (issue #32): recommend sizes 8-GPU nodes and prices owning from
the catalog, so a part with no 8-GPU owning price (B300, and GB300 whose rack is 72) is refused naming the
field rather than priced as another part; a sweep takes GB300 racks in NVFP4 and B300 / MI350X in MXFP8,
each rented at its own offering's price or said to have none."""

from __future__ import annotations

from typing import Any

import pytest

from tests.analysis.test_api import _post


def _recommend(accelerators: list[str], **extra: Any) -> dict[str, Any]:
    params = {
        "model": {"preset": "llama3-8b"},
        "tokens": 1e11,
        "deadline_days": 30,
        "budget_usd": 5e7,
        "interruption_tolerance": "none",
        "accelerators": accelerators,
        "nodes": [1, 2],
        **extra,
    }
    return {"kind": "recommend", "params": params}


def test_recommend_over_an_unpriced_part_asks_for_its_server_price(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    response = _post(user_client, _recommend(["b300"]), django_capture_on_commit_callbacks)
    assert response.status_code == 400
    message = response.json()["error"]["fields"]["params.on_prem.server_usd"][0]
    assert "no price for b300 servers of 8 GPUs, nor a list price for b300" in message


def _sweep(accelerators: list[str], gpus_per_node: int, precision: str, **extra: Any) -> dict[str, Any]:
    params = {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": precision},
        "accelerators": accelerators,
        "nodes": [1, 2],
        "pricing_models": ["on_demand", "own"],
        "gpus_per_node": gpus_per_node,
        **extra,
    }
    return {"kind": "sweep", "params": params}


def _rows(client: Any, response: Any) -> dict[tuple[str, int, str], dict[str, Any]]:
    assert response.status_code == 202, response.json()
    body = client.get(response.json()["url"]).json()
    assert body["status"] == "succeeded", body
    return {(r["accelerator"], r["nodes"], r["pricing_model"]): r for r in body["result"]["rows"]}


def test_a_sweep_over_gb300_racks_in_nvfp4_rents_at_its_per_gpu_price_and_owns_at_the_racks(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    rows = _rows(
        user_client, _post(user_client, _sweep(["gb300"], 72, "nvfp4"), django_capture_on_commit_callbacks)
    )
    assert set(rows) == {("gb300", n, p) for n in (1, 2) for p in ("on_demand", "own")}
    for nodes in (1, 2):
        rent = rows[("gb300", nodes, "on_demand")]
        assert rent["gpus"] == 72 * nodes and rent["offering"] == "oci-bm-gpu-gb300-4"
        # OCI BM.GPU.GB300.4: $72.00 an hour for 4 GPUs = $18.00 a GPU-hour (Oracle's price list, 2026-09-01).
        assert rent["cost_usd"] == pytest.approx(rent["days"] * 24 * 72 * nodes * 18.0, rel=1e-9)
        own = rows[("gb300", nodes, "own")]
        assert own["cost_usd"] is not None and own["days"] == rent["days"] and own.get("error") is None
    assert rows[("gb300", 2, "own")]["days"] < rows[("gb300", 1, "own")]["days"]


def test_a_sweep_over_b300_and_mi350x_in_mxfp8_prices_what_the_catalog_has_and_says_what_it_lacks(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    # Neither part has a catalog owning price: the user's server quote (a made-up $400,000) prices owning.
    sweep = _sweep(["b300", "mi350x"], 8, "mxfp8", on_prem={"server_usd": 400_000})
    rows = _rows(user_client, _post(user_client, sweep, django_capture_on_commit_callbacks))
    b300 = rows[("b300", 1, "on_demand")]
    # The cheaper of B300's two on-demand offerings: OCI BM.GPU.B300.8 at $15.00 a GPU-hour ($120 an hour),
    # not AWS p6-b300.48xlarge at $17.80.
    assert b300["offering"] == "oci-bm-gpu-b300-8"
    assert b300["cost_usd"] == pytest.approx(b300["days"] * 24 * 8 * 15.0, rel=1e-9)
    # MI350X has no public cloud price: its rented rows say so and carry no cost; owning is priced.
    mi350x = rows[("mi350x", 1, "on_demand")]
    assert mi350x["cost_usd"] is None and "no offering of mi350x" in mi350x["error"]
    assert (
        rows[("mi350x", 1, "own")]["cost_usd"] is not None and rows[("mi350x", 1, "own")].get("error") is None
    )
    # Each part estimated on its own figures: MFU = model FLOP/s over its own FP8 peak (4,500 vs 4,613.7
    # TFLOP/s), so the same model on the same GPU count runs in days inversely proportional to MFU x peak.
    ratio = rows[("mi350x", 1, "own")]["days"] / rows[("b300", 1, "own")]["days"]
    expected = (rows[("b300", 1, "own")]["mfu"] * 4500.0) / (rows[("mi350x", 1, "own")]["mfu"] * 4613.7)
    assert ratio == pytest.approx(expected, rel=0.02)


def test_recommend_takes_b300_and_mi350x_on_the_users_server_quote(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    payload = _recommend(["b300", "mi350x"], precision="mxfp8", on_prem={"server_usd": 400_000})
    response = _post(user_client, payload, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    result = user_client.get(response.json()["url"]).json()["result"]
    offered = {
        (r["accelerator"], r["pricing_model"]) for r in result["rows"] if r.get("cost_usd") is not None
    }
    assert {("b300", "own"), ("mi350x", "own"), ("b300", "on_demand")} <= offered
    choice = result["recommendation"]
    assert choice["accelerator"] in ("b300", "mi350x")
    assert choice["days"] <= 30 and choice["cost_usd"] <= 5e7
    # The chosen row is one of the sweep's rows, priced as that row was.
    assert choice in result["rows"]


def test_recommend_sizes_gb300_in_racks_of_72_at_the_racks_catalog_price(
    user_client: Any, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    payload = _recommend(["gb300"], precision="nvfp4", gpus_per_node=72)
    response = _post(user_client, payload, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    result = user_client.get(response.json()["url"]).json()["result"]
    rows = {(r["nodes"], r["pricing_model"]): r for r in result["rows"]}
    assert rows[(1, "own")]["gpus"] == 72 and rows[(2, "own")]["gpus"] == 144
    rent = rows[(1, "on_demand")]
    assert rent["cost_usd"] == pytest.approx(rent["days"] * 24 * 72 * 18.0, rel=1e-9)  # OCI, $18 a GPU-hour
    assert result["recommendation"]["accelerator"] == "gb300"
