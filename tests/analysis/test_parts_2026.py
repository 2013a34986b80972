"""Recommend and the 2026 parts (issue #32): recommend sizes 8-GPU nodes and prices owning from the catalog,
so a part with no 8-GPU owning price (B300, and GB300 whose rack is 72) is refused naming the field rather
than priced as another part."""

from __future__ import annotations

from typing import Any

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
