"""Catalog inputs the cost engine needs beyond :mod:`clusterdesigner.engine.core.hardware`.

Cloud offerings (with a price per pricing model), storage tiers, switches and server types, as frozen specs.
As with hardware specs, the engine never reads the catalog: callers build these from catalog records with the
``*_from_dict`` functions (which read the seed-schema keys of apps/catalog/data/seed_catalog.json) or
inline.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from clusterdesigner.engine.core.errors import InputError

PRICING_MODELS = ("on_demand", "reserved_1y", "reserved_3y", "savings_1y", "savings_3y", "spot")
# The catalog's cloud providers by name (apps.catalog.models.CloudOffering.Provider's labels are these).
PROVIDER_LABELS = {
    "aws": "AWS",
    "gcp": "Google Cloud",
    "azure": "Microsoft Azure",
    "oci": "Oracle Cloud",
    "coreweave": "CoreWeave",
    "lambda": "Lambda",
    "other": "Other",
}
# Term a commitment binds you to, in years; on-demand and spot bind nothing. A savings plan (AWS Compute or
# EC2 Instance Savings Plans, 1 or 3 years) commits a spend in $/hour for every hour of its term whatever is
# used, with no, partial or all upfront payment; its price here is the plan's rate per node-hour, and the
# commitment that covers the cluster is nodes × that rate $/hour, billed like a reservation of the same term.
COMMITMENT_YEARS: Mapping[str, float] = MappingProxyType(
    {"reserved_1y": 1.0, "reserved_3y": 3.0, "savings_1y": 1.0, "savings_3y": 3.0}
)
SAVINGS_PLANS = ("savings_1y", "savings_3y")
STORAGE_KINDS = ("local_nvme", "parallel_fs", "nfs", "object_store")
STORAGE_SCOPES = ("per_node", "aggregate")


def _finite_number(value: object, name: str, *, allow_zero: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"must be a finite number, got {value!r}", field=name)
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(
            f"must be {'zero or more' if allow_zero else 'more than zero'}, got {value!r}", field=name
        )
    return float(value)


def _optional_float(data: Mapping[str, Any], key: str) -> float | None:
    value = data.get(key)
    return None if value in (None, "") else float(value)


@dataclass(frozen=True)
class Freshness:
    """When a catalog price counts as stale: dated before ``today`` minus ``stale_after_days`` days.

    The caller passes today's date in (the engine never reads the clock), so a stored result can be
    recomputed exactly. Dates are ISO strings as in the catalog records; ISO dates compare as strings.
    A price with no date is not called stale: nothing says how old it is.
    """

    today: dt.date
    stale_after_days: int

    def __post_init__(self) -> None:
        if isinstance(self.stale_after_days, bool) or not isinstance(self.stale_after_days, int):
            raise InputError("must be a whole number of days", field="freshness.stale_after_days")
        if self.stale_after_days < 0:
            raise InputError("must be zero or more days", field="freshness.stale_after_days")

    @property
    def stale_before(self) -> str:
        return (self.today - dt.timedelta(days=self.stale_after_days)).isoformat()

    def is_stale(self, as_of: str | None) -> bool:
        return bool(as_of) and str(as_of) < self.stale_before

    def to_json(self) -> dict[str, Any]:
        return {
            "today": self.today.isoformat(),
            "stale_after_days": self.stale_after_days,
            "stale_before": self.stale_before,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Freshness:
        today = dt.date.fromisoformat(str(data["today"]))
        return cls(today=today, stale_after_days=int(data["stale_after_days"]))


@dataclass(frozen=True)
class CloudOfferingSpec:
    """One rentable instance type: ``usd_per_hour`` maps pricing model to USD per *instance* hour.

    ``spot_preemptions_per_day`` is per instance (None when the provider publishes no rate).
    """

    slug: str
    provider: str
    instance_type: str
    region: str
    accelerator: str
    gpu_count: int
    usd_per_hour: Mapping[str, float]
    spot_preemptions_per_day: float | None = None
    network_gbps: float | None = None
    price_as_of: Mapping[str, str] = field(default_factory=dict)
    price_source: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.gpu_count < 1:
            raise InputError("must be at least 1", field="offering.gpu_count")
        for model, price in self.usd_per_hour.items():
            if model not in PRICING_MODELS:
                raise InputError(
                    f"unknown pricing model {model!r}; use one of {', '.join(PRICING_MODELS)}",
                    field="offering.usd_per_hour",
                )
            _finite_number(price, f"offering.usd_per_hour.{model}", allow_zero=False)
        if self.spot_preemptions_per_day is not None:
            _finite_number(self.spot_preemptions_per_day, "offering.spot_preemptions_per_day")
        object.__setattr__(self, "usd_per_hour", MappingProxyType(dict(self.usd_per_hour)))
        object.__setattr__(self, "price_as_of", MappingProxyType(dict(self.price_as_of)))
        object.__setattr__(self, "price_source", MappingProxyType(dict(self.price_source)))


@dataclass(frozen=True)
class StorageTierSpec:
    """A storage tier; bandwidths are GB/s (bytes), per node or for the whole system (``scope``)."""

    slug: str
    name: str
    kind: str
    read_gbps: float
    write_gbps: float
    scope: str
    usd_per_tb_month: float | None = None
    # Throughput per TiB provisioned (MB/s/TiB, 10^6 bytes/s), for tiers whose bandwidth grows with the
    # capacity bought (FSx for Lustre PerUnitStorageThroughput: 125, 250, 500 or 1000 on PERSISTENT_2 SSD).
    mb_s_per_tib: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in STORAGE_KINDS:
            raise InputError(
                f"unknown storage kind {self.kind!r}; use one of {', '.join(STORAGE_KINDS)}",
                field="storage_tier.kind",
            )
        if self.scope not in STORAGE_SCOPES:
            raise InputError(f"scope must be one of {', '.join(STORAGE_SCOPES)}", field="storage_tier.scope")
        _finite_number(self.read_gbps, "storage_tier.read_gbps", allow_zero=False)
        _finite_number(self.write_gbps, "storage_tier.write_gbps", allow_zero=False)
        if self.usd_per_tb_month is not None:
            _finite_number(self.usd_per_tb_month, "storage_tier.usd_per_tb_month")

    def bandwidth_gbps(self, *, nodes: int, write: bool, capacity_tib: float | None = None) -> float:
        """GB/s the tier gives ``nodes`` writers (or readers): per-node tiers scale with the node count; a
        tier priced per TiB gives capacity TiB × MB/s/TiB ÷ 1,000 (AWS FSx for Lustre: "File system
        throughput capacity is equal to Storage capacity (TiB) * PerUnitStorageThroughput (MB/s/TiB)")."""
        if self.mb_s_per_tib is not None and capacity_tib is not None:
            return capacity_tib * self.mb_s_per_tib / 1000.0
        per = self.write_gbps if write else self.read_gbps
        return per * nodes if self.scope == "per_node" else per


@dataclass(frozen=True)
class SwitchSpec:
    """A scale-out switch: radix (``ports``) at ``port_gbps`` Gb/s; price may be unknown (None)."""

    slug: str
    name: str
    ports: int
    port_gbps: float
    price_usd: float | None = None
    power_w: float | None = None
    fabric_kind: str = ""

    def __post_init__(self) -> None:
        if self.ports < 2:
            raise InputError("a switch needs at least 2 ports", field="switch.ports")
        _finite_number(self.port_gbps, "switch.port_gbps", allow_zero=False)
        if self.price_usd is not None:
            _finite_number(self.price_usd, "switch.price_usd")
        if self.power_w is not None:
            _finite_number(self.power_w, "switch.power_w")


@dataclass(frozen=True)
class ServerTypeSpec:
    """A GPU server model: its accelerators, NICs, power draw at full load and price."""

    slug: str
    name: str
    accelerator: str
    gpus_per_node: int
    nics_per_node: int | None = None
    nic_gbps: float | None = None
    node_power_kw: float | None = None
    price_usd: float | None = None
    as_of: str = ""  # the date of the row's figures, price included (ISO; "" when unknown)

    def __post_init__(self) -> None:
        if self.gpus_per_node < 1:
            raise InputError("must be at least 1", field="server_type.gpus_per_node")
        for name in ("nic_gbps", "node_power_kw", "price_usd"):
            value = getattr(self, name)
            if value is not None:
                _finite_number(value, f"server_type.{name}")


def _latest_prices(
    prices: Sequence[Mapping[str, Any]],
) -> tuple[dict[str, float], dict[str, str], dict[str, str]]:
    """Per pricing model, the price with the latest ``as_of`` (ISO dates sort as strings); of several dated
    the same (one per region, as a SkyPilot import with all regions stores them), the lowest, so the choice
    does not depend on the order the rows come in."""

    def rank(row: Mapping[str, Any]) -> tuple[str, float]:
        return str(row.get("as_of") or ""), -float(row["usd_per_hour"])

    best: dict[str, Mapping[str, Any]] = {}
    for row in prices:
        model = str(row.get("pricing_model", ""))
        if model not in PRICING_MODELS or row.get("usd_per_hour") in (None, ""):
            continue
        if model not in best or rank(row) >= rank(best[model]):
            best[model] = row
    return (
        {m: float(r["usd_per_hour"]) for m, r in best.items()},
        {m: str(r.get("as_of") or "") for m, r in best.items()},
        {m: str(r.get("source") or "") for m, r in best.items()},
    )


def default_offering(
    offerings: Mapping[str, CloudOfferingSpec],
    *,
    accelerator: str,
    gpus_per_node: int,
    pricing_model: str = "on_demand",
    freshness: Freshness | None = None,
) -> str | None:
    """The offering a comparison starts from for ``accelerator`` and ``pricing_model`` (on-demand for a new
    design): one that rents that accelerator and has a price of that model; with ``freshness``, one whose
    price of that model is not stale while any such offering exists (even one of another node size: a stale
    price is never chosen silently over a fresher one); then whole nodes of the design's size, then the most
    recent price of that model, then the lower price per GPU-hour, then the slug (so the choice is stable).
    None when no offering has such a price: a design then compares owning only, and a sweep row says so.
    When every price is stale one is still chosen; the design's evaluation then says it is stale."""
    rows = [o for o in offerings.values() if o.accelerator == accelerator and pricing_model in o.usd_per_hour]
    if not rows:
        return None
    # Stable sorts, least important key first: price per GPU-hour and slug, then newest date, then node size,
    # then staleness.
    rows.sort(key=lambda o: (o.usd_per_hour[pricing_model] / o.gpu_count, o.slug))
    rows.sort(key=lambda o: o.price_as_of.get(pricing_model, ""), reverse=True)
    rows.sort(key=lambda o: o.gpu_count != gpus_per_node)
    if freshness is not None:
        rows.sort(key=lambda o: freshness.is_stale(o.price_as_of.get(pricing_model)))
    return rows[0].slug


def owner_offering(
    offerings: Mapping[str, CloudOfferingSpec],
    *,
    accelerator: str,
    gpus_per_node: int,
    pricing_model: str,
    freshness: Freshness | None = None,
    usd_per_hour: Mapping[str, float] | None = None,
    unavailable: Collection[str] = (),
) -> str | None:
    """The offering a sweep prices ``pricing_model`` of ``accelerator`` on once the owner's price book is
    applied: :func:`default_offering`'s pick among the offerings the owner can get (none in ``unavailable``,
    those whose quota of this model is 0 nodes), replaced by an offering whose price the book sets
    (``usd_per_hour``: slug → USD per instance-hour of this model) when that is lower per GPU-hour and its
    node size fits at least as well (of equal prices, the default pick, then the slug). A book price is the
    owner's current one, so it is not judged stale. Without book prices this is default_offering's pick."""
    open_ = {slug: o for slug, o in offerings.items() if slug not in unavailable}
    base = default_offering(
        open_,
        accelerator=accelerator,
        gpus_per_node=gpus_per_node,
        pricing_model=pricing_model,
        freshness=freshness,
    )
    booked = {
        s: usd
        for s, usd in (usd_per_hour or {}).items()
        if s in open_ and open_[s].accelerator == accelerator
    }

    def per_gpu(slug: str) -> float:
        offering = open_[slug]
        return booked.get(slug, offering.usd_per_hour.get(pricing_model, math.inf)) / offering.gpu_count

    def misfit(slug: str) -> bool:
        return open_[slug].gpu_count != gpus_per_node

    candidates = [s for s in sorted(booked) if base is None or misfit(s) <= misfit(base)]
    if base is not None:
        candidates.insert(0, base)
    # Stable sorts: whole nodes first, then the lower price per GPU-hour (the default pick first of equals).
    candidates.sort(key=per_gpu)
    candidates.sort(key=misfit)
    return candidates[0] if candidates else None


def cloud_offering_from_dict(data: Mapping[str, Any]) -> CloudOfferingSpec:
    """Build an offering from a seed-schema record; of several prices for one model, the latest as_of wins."""
    usd, as_of, source = _latest_prices(data.get("prices") or [])
    return CloudOfferingSpec(
        slug=str(data["slug"]),
        provider=str(data.get("provider", "")),
        instance_type=str(data.get("instance_type", "")),
        region=str(data.get("region") or ""),
        accelerator=str(data.get("accelerator", "")),
        gpu_count=int(data.get("gpu_count") or 1),
        usd_per_hour=usd,
        spot_preemptions_per_day=_optional_float(data, "spot_preemptions_per_day"),
        network_gbps=_optional_float(data, "network_gbps"),
        price_as_of=as_of,
        price_source=source,
    )


def storage_tier_from_dict(data: Mapping[str, Any]) -> StorageTierSpec:
    """Build a storage tier from a seed-schema record.

    Keys: slug, name, kind, read_gbps, write_gbps, scope, usd_per_tb_month, mb_s_per_tib (optional).
    """
    return StorageTierSpec(
        slug=str(data["slug"]),
        name=str(data.get("name", data["slug"])),
        kind=str(data.get("kind", "")),
        read_gbps=float(data["read_gbps"]),
        write_gbps=float(data["write_gbps"]),
        scope=str(data.get("scope") or "aggregate"),
        usd_per_tb_month=_optional_float(data, "usd_per_tb_month"),
        mb_s_per_tib=_optional_float(data, "mb_s_per_tib"),
    )


def switch_from_dict(data: Mapping[str, Any]) -> SwitchSpec:
    """Build a switch from a seed-schema record: slug, name, ports, port_gbps, price_usd, power_w."""
    return SwitchSpec(
        slug=str(data["slug"]),
        name=str(data.get("name", data["slug"])),
        ports=int(data["ports"]),
        port_gbps=float(data["port_gbps"]),
        price_usd=_optional_float(data, "price_usd"),
        power_w=_optional_float(data, "power_w"),
        fabric_kind=str(data.get("fabric_kind") or ""),
    )


def server_type_from_dict(data: Mapping[str, Any]) -> ServerTypeSpec:
    """Build a server type from a seed-schema record (see SEED_SCHEMA "server_types")."""
    nics = data.get("nics_per_node")
    return ServerTypeSpec(
        slug=str(data["slug"]),
        name=str(data.get("name", data["slug"])),
        accelerator=str(data.get("accelerator", "")),
        gpus_per_node=int(data.get("gpus_per_node") or 8),
        nics_per_node=None if nics in (None, "") else int(nics),
        nic_gbps=_optional_float(data, "nic_gbps"),
        node_power_kw=_optional_float(data, "node_power_kw"),
        price_usd=_optional_float(data, "price_usd"),
        as_of=str(data.get("as_of") or ""),
    )
