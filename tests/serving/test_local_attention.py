"""Serving a sliding-window model on a 2026 part through POST /api/v1/serving/estimate/ (issue #32): the KV
cache per token counts a windowed layer only for the window it keeps."""

from __future__ import annotations

import json
from typing import Any

import pytest

URL = "/api/v1/serving/estimate/"


@pytest.mark.django_db
@pytest.mark.parametrize("accelerator", ["gb300", "b300", "mi350x"])
def test_gpt_oss_kv_per_token_counts_the_window_not_the_context(
    api_client: Any, catalog: Any, accelerator: str
) -> None:
    body = {
        "model": {"preset": "gpt-oss-120b"},
        "accelerator": accelerator,
        "input_tokens": 8000,
        "output_tokens": 384,
        "targets": {"ttft_s": 5.0, "tpot_s": 0.1},
        "demand": {"requests_per_s": 5, "peak_to_mean": 2},
        # B300 and MI350X have no catalog owning price, GB300 only a 72-GPU rack's: the user's own quote for
        # an 8-GPU server (made up; only the KV figure is checked).
        "cost": {"on_prem": {"server_usd": 400000}},
    }
    response = api_client.post(URL, data=json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content[:500]
    # Mean context 8,000 + 384/2 = 8,192. FP8 KV: 8 KV heads × 64 × 2 (K, V) × 1 B = 1,024 B a token a layer;
    # 18 full layers keep every token, 18 windowed ones the last 128: 18 + 18 × 128/8,192 = 18.28125 layers,
    # 18,720 B a token (36 full layers would be 36,864).
    assert response.json()["kv_bytes_per_token"] == pytest.approx(18_720)
