"""The catalog as the engines see it: plain records (a saved snapshot, or rows read by the caller) → specs.

One path from catalog data to engine inputs, so a result computed from today's catalog and one recomputed
from the snapshot stored beside it are built the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.hardware import AcceleratorSpec, FabricSpec, accelerator_from_dict, fabric_from_dict
from clusterdesigner.engine.offerings import (
    CloudOfferingSpec,
    ServerTypeSpec,
    StorageTierSpec,
    SwitchSpec,
    cloud_offering_from_dict,
    server_type_from_dict,
    storage_tier_from_dict,
    switch_from_dict,
)


@dataclass(frozen=True)
class CatalogSpecs:
    """Every catalog item an engine call may name, keyed by slug."""

    accelerators: Mapping[str, AcceleratorSpec]
    fabrics: Mapping[str, FabricSpec]
    offerings: Mapping[str, CloudOfferingSpec]
    storage_tiers: Mapping[str, StorageTierSpec]
    switches: Mapping[str, SwitchSpec]
    server_types: Mapping[str, ServerTypeSpec]

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


def specs_from_records(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> CatalogSpecs:
    """Build specs from records keyed like the seed catalog (accelerators, fabrics, cloud_offerings, ...)."""
    return CatalogSpecs(
        accelerators={r["slug"]: accelerator_from_dict(r) for r in records.get("accelerators", [])},
        fabrics={r["slug"]: fabric_from_dict(r) for r in records.get("fabrics", [])},
        offerings={r["slug"]: cloud_offering_from_dict(r) for r in records.get("cloud_offerings", [])},
        storage_tiers={r["slug"]: storage_tier_from_dict(r) for r in records.get("storage_tiers", [])},
        switches={r["slug"]: switch_from_dict(r) for r in records.get("switches", [])},
        server_types={r["slug"]: server_type_from_dict(r) for r in records.get("server_types", [])},
    )
