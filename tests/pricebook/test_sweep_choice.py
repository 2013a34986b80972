"""A sweep (and a recommendation) chooses each row's offering after the owner's price book is applied (issue
#35): a discount or private rate on an offering other than the catalog's pick moves the row to it when it
makes that offering the cheaper, and an offering the book says is unavailable (a quota of 0 nodes) is not
chosen. Through POST /api/v1/analyses/.

Hand figures (seed catalog, H200 on-demand, 8 GPUs an instance, every price dated 2026-09-01): CoreWeave's
8 × H200 node is $50.44 an instance-hour (the catalog's cheapest, so the catalog's pick), AWS p5en.48xlarge
$63.296 (the second cheapest), OCI $80.00, Azure $84.80, GCP a3-ultragpu $84.806908.
- 30 % off p5en: 63.296 × 0.7 = $44.3072 < $50.44, so p5en becomes the row's offering.
- 10 % off p5en: 63.296 × 0.9 = $56.9664 > $50.44, so CoreWeave stays.
- CoreWeave on-demand quota 0: the next of the catalog's order is p5en at $63.296 (< OCI's $80)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.pricebook.test_consumers import _entry, _price, _rows, _run
from tests.teams.conftest import People

CW_H200 = "coreweave-8x-h200-node"
P5EN = "aws-p5en-48xlarge"
P5EN_ON_DEMAND = 63.296

SWEEP = {
    "kind": "sweep",
    "params": {
        "model": {"preset": "llama3-8b"},
        "training": {"tokens": 1e11, "global_batch_tokens": 2097152, "precision": "bf16"},
        "accelerators": ["h200"],
        "nodes": [1],
        "pricing_models": ["on_demand", "own"],
    },
}


def _discount(client: Any, offering: str, value: float) -> dict[str, Any]:
    return _entry(client, kind="cloud_discount", offering=offering, pricing_model="on_demand", value=value)


def test_a_discount_that_makes_the_second_cheapest_offering_the_cheapest_moves_the_row_to_it(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    plain = _rows(_run(people.client("outsider"), SWEEP, django_capture_on_commit_callbacks))
    assert plain["on_demand"]["offering"] == CW_H200  # the catalog's pick
    entry = _discount(editor, P5EN, 0.3)
    body = _run(editor, SWEEP, django_capture_on_commit_callbacks)
    row = _rows(body)["on_demand"]
    assert row["offering"] == P5EN
    cloud = _price(body["result"]["prices"]["h200"]["rows"], f"cloud.{P5EN}.on_demand")
    assert (cloud["origin"], cloud["entry_id"]) == ("price_book", entry["id"])
    assert cloud["value"] == pytest.approx(P5EN_ON_DEMAND * 0.7, rel=1e-12)  # 44.3072
    # The row is priced at it: $44.3072 ÷ 8 GPUs = $5.5384 a GPU-hour against CoreWeave's $50.44 ÷ 8 =
    # $6.305 (the storage the row adds is the same in both).
    assert plain["on_demand"]["usd_per_gpu_hour"] - row["usd_per_gpu_hour"] == pytest.approx(
        (50.44 - P5EN_ON_DEMAND * 0.7) / 8, rel=1e-9
    )


def test_a_discount_that_leaves_the_offering_dearer_keeps_the_catalogs_pick(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    _discount(editor, P5EN, 0.1)  # 63.296 × 0.9 = 56.9664 > 50.44
    assert _rows(_run(editor, SWEEP, django_capture_on_commit_callbacks))["on_demand"]["offering"] == CW_H200


def test_an_offering_the_book_gives_no_quota_on_is_not_chosen_and_a_recommendation_follows(
    people: People, catalog: Any, django_capture_on_commit_callbacks: Any
) -> None:
    editor = people.client("editor")
    _entry(editor, kind="quota", offering=CW_H200, pricing_model="on_demand", value=0)
    assert _rows(_run(editor, SWEEP, django_capture_on_commit_callbacks))["on_demand"]["offering"] == P5EN
    recommend = {
        "kind": "recommend",
        "params": {
            "model": {"preset": "llama3-8b"},
            "tokens": 1e11,
            "deadline_days": 30,
            "interruption_tolerance": "none",
            "accelerators": ["h200"],
            "nodes": [1, 2],
        },
    }
    result = _run(editor, recommend, django_capture_on_commit_callbacks)["result"]
    offerings = {r["offering"] for r in result["rows"] if r["pricing_model"] == "on_demand"}
    assert offerings == {P5EN}
