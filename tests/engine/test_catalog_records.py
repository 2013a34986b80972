"""Catalog records → engine specs: a record that cannot be built is left out with why, the rest are built."""

from __future__ import annotations

from clusterdesigner.engine.core.catalog import specs_from_records

PRICES = [
    {"pricing_model": "on_demand", "usd_per_hour": 55.04, "as_of": "2025-06-01"},
    {"pricing_model": "spot", "usd_per_hour": 0, "as_of": "2025-06-02"},
]
OFFERING = {
    "slug": "p5",
    "provider": "aws",
    "instance_type": "p5.48xlarge",
    "accelerator": "h100-sxm",
    "gpu_count": 8,
    "prices": PRICES,
}
TIER = {
    "slug": "lustre",
    "name": "Lustre",
    "kind": "parallel_fs",
    "read_gbps": 0,
    "write_gbps": 100,
    "scope": "aggregate",
}
NFS = {"slug": "nfs", "name": "NFS", "kind": "nfs", "read_gbps": 5, "write_gbps": 2, "scope": "aggregate"}


def test_a_price_of_zero_leaves_out_that_price_only() -> None:
    specs = specs_from_records({"cloud_offerings": [OFFERING]})
    assert dict(specs.offerings["p5"].usd_per_hour) == {"on_demand": 55.04}
    assert specs.why_unusable("cloud_offerings", "p5", "spot") == (
        "offering.usd_per_hour.spot: must be more than zero, got 0.0"
    )
    assert specs.why_unusable("cloud_offerings", "p5", "on_demand") is None


def test_a_malformed_record_is_left_out_with_why_and_the_others_are_built() -> None:
    specs = specs_from_records({"storage_tiers": [TIER, NFS, {"slug": "s3", "kind": "object_store"}]})
    assert list(specs.storage_tiers) == ["nfs"]
    assert specs.unusable == {
        "storage_tiers:lustre": "storage_tier.read_gbps: must be more than zero, got 0.0",
        "storage_tiers:s3": "read_gbps is missing",
    }
