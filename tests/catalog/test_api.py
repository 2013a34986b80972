"""Catalog REST API: reads for anyone, writes for staff, filters, ordering, pagination, the error envelope."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.models import Accelerator


def test_vendor_filter_lists_only_nvidia_with_dense_tflops(api_client: Any, catalog: Any) -> None:
    response = api_client.get("/api/v1/accelerators/", {"vendor": "nvidia"})
    assert response.status_code == 200
    rows = response.json()["results"]
    slugs = {row["slug"] for row in rows}
    assert {"a100-80gb", "h100-sxm", "h200", "b200", "rtx-4090"} <= slugs
    assert not slugs & {"mi300x", "mi325x", "mi355x"}
    assert all(row["vendor"] == "nvidia" for row in rows)
    h100 = next(row for row in rows if row["slug"] == "h100-sxm")
    assert h100["bf16_dense_tflops"] == 989.4 and h100["fp8_dense_tflops"] == 1978.9


def test_min_memory_and_precision_filters(api_client: Any, catalog: Any) -> None:
    big = api_client.get("/api/v1/accelerators/", {"min_memory_gib": 180}).json()["results"]
    assert big and all(row["memory_gib"] >= 180 for row in big)
    assert "h100-sxm" not in {row["slug"] for row in big}
    fp8 = {
        row["slug"] for row in api_client.get("/api/v1/accelerators/", {"precision": "fp8"}).json()["results"]
    }
    assert "h100-sxm" in fp8 and "a100-80gb" not in fp8


def test_unknown_filter_choice_is_a_400_naming_the_field(api_client: Any, catalog: Any) -> None:
    response = api_client.get("/api/v1/accelerators/", {"precision": "fp64"})
    assert response.status_code == 400
    assert "precision" in response.json()["error"]["fields"]


def test_ordering_and_pagination(api_client: Any, catalog: Any) -> None:
    response = api_client.get("/api/v1/accelerators/", {"ordering": "-memory_gib", "page_size": 3})
    body = response.json()
    assert body["count"] == Accelerator.objects.count() and len(body["results"]) == 3
    memories = [row["memory_gib"] for row in body["results"]]
    assert memories == sorted(memories, reverse=True)
    assert body["next"] and "page=2" in body["next"]


def test_anonymous_cannot_write_and_gets_the_envelope(api_client: Any, catalog: Any) -> None:
    response = api_client.post("/api/v1/fabrics/", {"slug": "x"}, format="json")
    assert response.status_code in (401, 403)
    assert set(response.json()["error"]) == {"code", "message", "fields"}


def test_non_staff_cannot_write(user_client: Any, catalog: Any) -> None:
    response = user_client.delete("/api/v1/accelerators/h100-sxm/")
    assert response.status_code == 403
    assert Accelerator.objects.filter(slug="h100-sxm").exists()


def test_staff_write_with_negative_memory_is_rejected_naming_the_field(
    staff_client: Any, catalog: Any
) -> None:
    payload = {
        "slug": "bad-gpu",
        "name": "Bad",
        "vendor": "nvidia",
        "memory_gib": -80,
        "hbm_bandwidth_tbps": 2,
        "bf16_dense_tflops": 100,
        "source": "test",
        "as_of": "2026-01-01",
    }
    response = staff_client.post("/api/v1/accelerators/", payload, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "memory_gib" in error["fields"]
    assert not Accelerator.objects.filter(slug="bad-gpu").exists()


def test_staff_write_without_any_precision_is_rejected(staff_client: Any, catalog: Any) -> None:
    payload = {
        "slug": "no-flops",
        "name": "No flops",
        "vendor": "nvidia",
        "memory_gib": 80,
        "hbm_bandwidth_tbps": 2,
        "source": "test",
        "as_of": "2026-01-01",
    }
    response = staff_client.post("/api/v1/accelerators/", payload, format="json")
    assert response.status_code == 400
    assert "bf16_dense_tflops" in response.json()["error"]["fields"]


def test_staff_creates_a_fabric_and_duplicate_slug_is_refused(staff_client: Any, catalog: Any) -> None:
    payload = {
        "slug": "ib-ndr400",
        "name": "dup",
        "kind": "infiniband",
        "port_gbps": 400,
        "latency_us": 1,
        "collective_efficiency": 0.9,
        "source": "test",
        "as_of": "2026-01-01",
    }
    assert staff_client.post("/api/v1/fabrics/", payload, format="json").status_code == 400
    payload["slug"] = "ib-new"
    response = staff_client.post("/api/v1/fabrics/", payload, format="json")
    assert response.status_code == 201, response.json()
    payload.update(slug="ib-too-efficient", collective_efficiency=1.5)
    response = staff_client.post("/api/v1/fabrics/", payload, format="json")
    assert response.status_code == 400 and "collective_efficiency" in response.json()["error"]["fields"]


def test_unknown_slug_is_a_404_in_the_envelope(api_client: Any, catalog: Any) -> None:
    response = api_client.get("/api/v1/accelerators/no-such-gpu/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    ("params", "check"),
    [
        ({"provider": "aws"}, lambda row: row["offering"].startswith("aws-")),
        ({"pricing_model": "spot"}, lambda row: row["pricing_model"] == "spot"),
        ({"accelerator": "h100-sxm"}, lambda row: True),
    ],
)
def test_price_filters(api_client: Any, catalog: Any, params: dict[str, str], check: Any) -> None:
    rows = api_client.get("/api/v1/cloud-prices/", {**params, "page_size": 500}).json()["results"]
    assert rows and all(check(row) for row in rows)


def test_price_per_gpu_hour_divides_by_gpus_per_instance(api_client: Any, catalog: Any) -> None:
    rows = api_client.get(
        "/api/v1/cloud-prices/", {"offering": "aws-p5-48xlarge", "pricing_model": "on_demand"}
    )
    prices = {row["usd_per_hour"]: row["usd_per_gpu_hour"] for row in rows.json()["results"]}
    assert prices[55.04] == pytest.approx(6.88)  # $55.04 / 8 GPUs


def test_token_authentication_lets_staff_tools_write(
    api_client: Any, catalog: Any, django_user_model: Any
) -> None:
    from clusterdesigner.api_tokens import api_token_create

    user = django_user_model.objects.create_user("tool", password="x-tool-pw-1", is_staff=True)
    token = api_token_create(user=user, scope="catalog")
    api_client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    response = api_client.patch("/api/v1/accelerators/h100-sxm/", {"list_price_usd": 30000}, format="json")
    assert response.status_code == 200 and response.json()["list_price_usd"] == 30000


def test_deleting_an_accelerator_still_in_use_is_a_409_naming_the_users(
    staff_client: Any, catalog: Any
) -> None:
    """A ProtectedError becomes the domain Conflict, which the one handler answers as 409 in the envelope."""
    from apps.catalog.models import Accelerator

    response = staff_client.delete("/api/v1/accelerators/h100-sxm/")
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["fields"]) == (409, "conflict", {})
    # The first five users in name order (cloud offerings sort before server types).
    assert error["message"] == (
        "still used by CloudOffering aws-p5-48xlarge, CloudOffering azure-standard-nd96isr-h100-v5, "
        "CloudOffering coreweave-8x-h100-node, CloudOffering gcp-a3-highgpu-8g, "
        "CloudOffering gcp-a3-megagpu-8g; delete or change those first"
    )
    assert Accelerator.objects.filter(slug="h100-sxm").exists()
