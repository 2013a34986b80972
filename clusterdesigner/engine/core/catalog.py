"""The catalog as the engines see it: plain records (a saved snapshot, or rows read by the caller) → specs.

One path from catalog data to engine inputs, so a result computed from today's catalog and one recomputed
from the snapshot stored beside it are built the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.engine.core.hardware import (
    AcceleratorSpec,
    FabricSpec,
    accelerator_from_dict,
    fabric_from_dict,
)
from clusterdesigner.engine.core.offerings import (
    CloudOfferingSpec,
    ServerTypeSpec,
    StorageTierSpec,
    SwitchSpec,
    cloud_offering_from_dict,
    server_type_from_dict,
    storage_tier_from_dict,
    switch_from_dict,
)

T = TypeVar("T")


@dataclass(frozen=True)
class CatalogSpecs:
    """Every catalog item an engine call may name, keyed by slug.

    ``unusable`` lists the records that could not be built (a bandwidth missing, a price of zero) with why,
    keyed ``"<section>:<slug>"``, or ``"cloud_offerings:<slug>:<pricing model>"`` for one price of an
    offering whose other prices are fine. They are left out of the mappings above, so one bad row stops only
    the designs that use it.
    """

    accelerators: Mapping[str, AcceleratorSpec]
    fabrics: Mapping[str, FabricSpec]
    offerings: Mapping[str, CloudOfferingSpec]
    storage_tiers: Mapping[str, StorageTierSpec]
    switches: Mapping[str, SwitchSpec]
    server_types: Mapping[str, ServerTypeSpec]
    unusable: Mapping[str, str] = field(default_factory=dict)

    def training_kwargs(self) -> dict[str, Any]:
        return {"accelerators": self.accelerators, "fabrics": self.fabrics}

    def cost_kwargs(self) -> dict[str, Any]:
        return {
            "accelerators": self.accelerators,
            "fabrics": self.fabrics,
            "offerings": self.offerings,
            "storage_tiers": self.storage_tiers,
            "switches": self.switches,
            "server_types": self.server_types,
        }

    def why_unusable(self, section: str, slug: str, pricing_model: str = "") -> str | None:
        """Why the record ``slug`` of ``section`` (or one price of an offering) was left out; None if it
        was not."""
        key = f"{section}:{slug}" + (f":{pricing_model}" if pricing_model else "")
        return self.unusable.get(key)


# What building a spec from a malformed record raises: the specs' own checks (EngineError is a ValueError),
# a missing key, or a value of the wrong type.
_BAD_RECORD = (ValueError, KeyError, TypeError)
_PRICE_FIELD = "offering.usd_per_hour."


def _why(exc: Exception) -> str:
    if isinstance(exc, EngineError):
        return f"{exc.field}: {exc.message}" if exc.field else exc.message
    if isinstance(exc, KeyError):
        return f"{exc.args[0]} is missing"
    return str(exc)


def _build(
    section: str,
    records: Sequence[Mapping[str, Any]],
    build: Callable[[Mapping[str, Any]], T],
    unusable: dict[str, str],
) -> dict[str, T]:
    built: dict[str, T] = {}
    for record in records:
        try:
            built[str(record["slug"])] = build(record)
        except _BAD_RECORD as exc:
            unusable[f"{section}:{record.get('slug')}"] = _why(exc)
    return built


def _offering(record: Mapping[str, Any], unusable: dict[str, str]) -> CloudOfferingSpec:
    """An offering without the prices that cannot be used (each noted), so its other prices still serve."""
    prices = list(record.get("prices") or [])
    while True:
        try:
            return cloud_offering_from_dict({**record, "prices": prices})
        except EngineError as exc:
            model = exc.field.removeprefix(_PRICE_FIELD)
            priced = any(p.get("pricing_model") == model for p in prices)
            if not exc.field.startswith(_PRICE_FIELD) or not priced:
                raise
            unusable[f"cloud_offerings:{record['slug']}:{model}"] = _why(exc)
            prices = [p for p in prices if p.get("pricing_model") != model]


def specs_from_records(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> CatalogSpecs:
    """Build specs from records keyed like the seed catalog (accelerators, fabrics, cloud_offerings, ...).
    A record that cannot be built is left out and listed in ``unusable`` with why."""
    unusable: dict[str, str] = {}

    def build(section: str, builder: Callable[[Mapping[str, Any]], T]) -> dict[str, T]:
        return _build(section, records.get(section, []), builder, unusable)

    return CatalogSpecs(
        accelerators=build("accelerators", accelerator_from_dict),
        fabrics=build("fabrics", fabric_from_dict),
        offerings=build("cloud_offerings", lambda record: _offering(record, unusable)),
        storage_tiers=build("storage_tiers", storage_tier_from_dict),
        switches=build("switches", switch_from_dict),
        server_types=build("server_types", server_type_from_dict),
        unusable=unusable,
    )
