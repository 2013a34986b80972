"""The shipped seed catalog: the slugs the engines use exist, figures are dense, every row is sourced."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    ServerType,
    StorageTier,
    Switch,
)
from apps.catalog.selectors import engine_catalog
from apps.catalog.services import catalog_load_seed

ACCELERATORS = [
    "a100-80gb",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "gb200",
    "mi300x",
    "mi325x",
    "mi355x",
    "l40s",
    "rtx-4090",
]
FABRICS = ["ib-hdr200", "ib-ndr400", "ib-xdr800", "roce-400g", "aws-efa", "eth-100g", "eth-25g", "eth-10g"]


def test_seed_has_every_slug_the_engines_use(catalog: dict[str, int]) -> None:
    assert set(ACCELERATORS) <= set(Accelerator.objects.values_list("slug", flat=True))
    assert set(FABRICS) <= set(Fabric.objects.values_list("slug", flat=True))
    assert {"local-nvme", "lustre", "nfs", "s3"} <= set(StorageTier.objects.values_list("slug", flat=True))
    assert Switch.objects.filter(ports=64, port_gbps=400).exists()
    offerings = set(CloudOffering.objects.values_list("slug", flat=True))
    assert {"aws-p4d-24xlarge", "aws-p5-48xlarge", "aws-p5e-48xlarge", "aws-p6-b200-48xlarge"} <= offerings
    assert {o.split("-")[0] for o in offerings} >= {"aws", "gcp", "coreweave"}


def test_seed_tflops_are_dense_not_sparse(catalog: dict[str, int]) -> None:
    # Dense BF16 peaks (reference README): A100 312, H100/H200 989.4, B200 2,250, MI300X 1,307.4.
    dense = dict(Accelerator.objects.values_list("slug", "bf16_dense_tflops"))
    assert dense["a100-80gb"] == 312
    assert dense["h100-sxm"] == dense["h200"] == 989.4  # the 1,979 headline is sparse
    assert dense["b200"] == 2250
    assert dense["mi300x"] == 1307.4
    assert Accelerator.objects.get(slug="a100-80gb").fp8_dense_tflops is None


def test_rtx_4090_is_recorded_without_nvlink(catalog: dict[str, int]) -> None:
    gpu = Accelerator.objects.get(slug="rtx-4090")
    assert not gpu.has_nvlink and gpu.scaleup_bandwidth_gbps == 0 and gpu.scaleup_domain_gpus == 1
    # as the engine receives it (the catalog's one path to the engine: selectors.engine_catalog)
    assert not engine_catalog().accelerators["rtx-4090"].has_scaleup_link


def test_every_seed_row_has_a_source_and_date(catalog: dict[str, int]) -> None:
    for model in (Accelerator, Fabric, StorageTier, Switch, CloudOffering, CloudPrice):
        for row in model.objects.all():
            assert row.source.strip(), f"{model.__name__} {row} has no source"
            assert row.as_of is not None


def test_seed_slugs_are_lowercase_and_hyphenated(catalog: dict[str, int]) -> None:
    for model in (Accelerator, Fabric, StorageTier, Switch, CloudOffering):
        for slug in model.objects.values_list("slug", flat=True):
            assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", slug), slug


def test_p5_price_history_keeps_the_june_2025_cut(catalog: dict[str, int]) -> None:
    # AWS cut p5.48xlarge on-demand from $98.32 to $55.04 an hour in June 2025 (reference prices.csv).
    prices = CloudPrice.objects.filter(offering__slug="aws-p5-48xlarge", pricing_model="on_demand").order_by(
        "as_of"
    )
    values = [p.usd_per_hour for p in prices]
    assert 98.32 in values and values[-1] == 55.04


def test_server_price_ranges_load_and_bracket_the_price(catalog: dict[str, int]) -> None:
    ranged = ServerType.objects.exclude(price_low_usd=None)
    assert ranged.exists()
    for row in ranged:
        assert row.price_high_usd is not None, row.slug
        assert row.price_low_usd <= row.price_usd <= row.price_high_usd, row.slug
    dgx = ServerType.objects.get(slug="dgx-h100")
    # price_usd is the midpoint of the range
    assert (dgx.price_low_usd, dgx.price_high_usd, dgx.price_usd) == (270000, 375000, 322500)


def test_every_accelerator_has_an_owning_price_with_its_source(catalog: dict[str, int]) -> None:
    # An owning price is the accelerator's own list price or a server type of that accelerator with a price,
    # and its source names where the price came from ("list_price_usd:" or "price:" in the source text).
    servers = ServerType.objects.exclude(price_usd=None)
    priced_servers = {s.accelerator.slug: s for s in servers}
    unpriced = {
        a.slug for a in Accelerator.objects.all() if a.list_price_usd is None and a.slug not in priced_servers
    }
    # Parts with no price found are listed as missing in the data README; nothing else may be unpriced.
    readme = (Path(__file__).resolve().parents[2] / "apps/catalog/data/README.md").read_text()
    (line,) = [line for line in readme.splitlines() if line.startswith("- **Missing owning price**")]
    assert unpriced == set(re.findall(r"`([a-z0-9-]+)`", line)) == {"b300", "mi350x", "vera-rubin"}
    for accelerator in Accelerator.objects.exclude(list_price_usd=None):
        assert "list_price_usd:" in accelerator.source, accelerator.slug


def test_mi355x_is_priced_in_usd_from_its_source_not_from_the_eur_quote(catalog: dict[str, int]) -> None:
    # HSBC's September 2025 ASP estimate, $23,000 per GPU; the EUR 648,587 server quote is not converted.
    mi355x = Accelerator.objects.get(slug="mi355x")
    assert mi355x.list_price_usd == 23000
    assert "HSBC" in mi355x.source and "ESTIMATE" in mi355x.source and "2025-09-09" in mi355x.source
    assert "not converted" in mi355x.notes


def test_aws_p5_p5en_p6_b200_have_commitment_and_spot_rows(catalog: dict[str, int]) -> None:
    def models(slug: str) -> set[str]:
        return set(CloudPrice.objects.filter(offering__slug=slug).values_list("pricing_model", flat=True))

    assert models("aws-p5-48xlarge") >= {"on_demand", "reserved_3y", "spot"}
    assert models("aws-p5en-48xlarge") >= {"on_demand", "reserved_1y", "reserved_3y", "spot"}
    assert models("aws-p6-b200-48xlarge") >= {"on_demand", "reserved_1y", "spot"}
    for price in CloudPrice.objects.filter(offering__slug__in=["aws-p5-48xlarge", "aws-p5en-48xlarge"]):
        on_demand = price.offering.prices.filter(pricing_model="on_demand").latest("as_of").usd_per_hour
        if price.pricing_model != "on_demand":  # commitments and spot undercut on-demand
            assert price.usd_per_hour < on_demand


def test_loading_the_seed_twice_changes_nothing(catalog: dict[str, int], db: Any) -> None:
    before = (Accelerator.objects.count(), CloudPrice.objects.count())
    assert catalog_load_seed() == catalog
    assert (Accelerator.objects.count(), CloudPrice.objects.count()) == before


def test_system_power_tdp_and_nvlink_domains_are_cited_not_recalled(catalog: dict[str, int]) -> None:
    # Golden figures: DGX H100/H200 10.2 kW max (NVIDIA DGX H100/H200 User Guide, Power Specifications, as
    # quoted); DGX B200 14.3 kW max (NVIDIA DGX B200 User Guide, Introduction); DGX A100 6.5 kW max (NVIDIA's
    # DGX A100 documentation as reported); GB200 NVL72 ~120 kW per rack (secondary); B200 1,000 W (HGX);
    # MI355X 1,400 W TBP (AMD, ISC 2025). NVLink domain 8 per HGX/DGX node, 72 for GB200 NVL72.
    power = dict(ServerType.objects.values_list("slug", "node_power_kw"))
    assert {
        k: power[k] for k in ("dgx-h100", "dgx-h200", "dgx-b200", "dgx-a100-640gb", "gb200-nvl72-rack")
    } == {
        "dgx-h100": 10.2,
        "dgx-h200": 10.2,
        "dgx-b200": 14.3,
        "dgx-a100-640gb": 6.5,
        "gb200-nvl72-rack": 120.0,
    }
    tdp = dict(Accelerator.objects.values_list("slug", "tdp_w"))
    assert (tdp["h100-sxm"], tdp["b200"], tdp["mi355x"]) == (700, 1000, 1400)
    domain = dict(Accelerator.objects.values_list("slug", "scaleup_domain_gpus"))
    assert (domain["h100-sxm"], domain["h200"], domain["b200"], domain["gb200"]) == (8, 8, 8, 72)
    for row in [
        *Accelerator.objects.filter(slug__in=["b200", "mi355x"]),
        *ServerType.objects.filter(
            slug__in=["dgx-a100-640gb", "dgx-a100-320gb", "dgx-h100", "dgx-b200", "gb200-nvl72-rack"]
        ),
    ]:
        assert "recalled" not in row.source, row.slug
