"""Hardware inputs shared by the training and cost engines.

The engines never read the catalog themselves: callers (the Django services, the management commands,
tests) build these specs, from catalog rows via ``to_engine()`` or inline, and pass them in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from clusterdesigner.engine.core.errors import InputError

PRECISIONS = ("tf32", "bf16", "fp8", "fp4")


def _positive(value: float, name: str) -> None:
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"must be a positive finite number, got {value!r}", field=name)


@dataclass(frozen=True)
class AcceleratorSpec:
    """One accelerator as the engines see it.

    ``dense_tflops`` maps precision (tf32, bf16, fp8, fp4) to the vendor's *dense* peak (never sparse).
    ``achievable_matmul_tflops`` maps precision to a measured maximum achievable matmul rate where one is
    published (e.g. mamf-finder results), used to derive the achievable fraction of peak.
    ``scaleup_bandwidth_gbps`` is GB/s per GPU in one direction over the scale-up link (NVLink, XGMI);
    0 when the GPU has none (PCIe only). ``scaleup_domain_gpus`` is how many GPUs share that link domain
    (8 for HGX, 72 for GB200 NVL72, 1 when there is none).
    """

    slug: str
    name: str
    vendor: str
    family: str
    memory_gib: float
    hbm_bandwidth_tbps: float
    dense_tflops: Mapping[str, float]
    achievable_matmul_tflops: Mapping[str, float] = field(default_factory=dict)
    scaleup_link: str = ""
    scaleup_bandwidth_gbps: float = 0.0
    scaleup_domain_gpus: int = 1
    pcie_bandwidth_gbps: float = 32.0
    # GB/s one way between one GPU and its host's memory (PCIe, or NVLink-C2C to a Grace CPU); 0 = unknown.
    host_link_gbps: float = 0.0
    tdp_w: float = 0.0
    list_price_usd: float | None = None
    as_of: str = ""  # the date of the row's figures, list price included (ISO; "" when unknown)

    def __post_init__(self) -> None:
        _positive(self.memory_gib, "accelerator.memory_gib")
        _positive(self.hbm_bandwidth_tbps, "accelerator.hbm_bandwidth_tbps")
        if not self.dense_tflops:
            raise InputError(
                "needs a dense peak for at least one precision", field="accelerator.dense_tflops"
            )
        for precision, tflops in self.dense_tflops.items():
            if precision not in PRECISIONS:
                raise InputError(
                    f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}",
                    field="accelerator.dense_tflops",
                )
            _positive(tflops, f"accelerator.dense_tflops.{precision}")
        if self.scaleup_domain_gpus < 1:
            raise InputError("must be at least 1", field="accelerator.scaleup_domain_gpus")
        # Read-only views, so a shared spec cannot be changed behind a caller's back.
        object.__setattr__(self, "dense_tflops", MappingProxyType(dict(self.dense_tflops)))
        object.__setattr__(
            self, "achievable_matmul_tflops", MappingProxyType(dict(self.achievable_matmul_tflops))
        )

    @property
    def has_scaleup_link(self) -> bool:
        return self.scaleup_bandwidth_gbps > 0 and self.scaleup_domain_gpus > 1

    def peak_tflops(self, precision: str) -> float:
        """Dense peak TFLOP/s at ``precision``; an error naming the field if the GPU lacks it."""
        try:
            return self.dense_tflops[precision]
        except KeyError:
            have = ", ".join(sorted(self.dense_tflops))
            raise InputError(
                f"{self.name} has no dense {precision} peak (it supports {have})", field="training.precision"
            ) from None


@dataclass(frozen=True)
class FabricSpec:
    """A scale-out fabric: one port's line rate, its latency and a measured collective efficiency.

    ``collective_efficiency`` is the fraction of line rate that large NCCL collectives reach (nccl-tests
    bus bandwidth / line rate), with its source kept in the catalog.
    """

    slug: str
    name: str
    kind: str  # infiniband, roce, ethernet, efa
    port_gbps: float  # Gb/s (bits) per port
    latency_us: float
    collective_efficiency: float

    def __post_init__(self) -> None:
        _positive(self.port_gbps, "fabric.port_gbps")
        if not math.isfinite(self.latency_us) or self.latency_us < 0:
            raise InputError("must be zero or more", field="fabric.latency_us")
        if not 0 < self.collective_efficiency <= 1:
            raise InputError("must be in (0, 1]", field="fabric.collective_efficiency")


def _optional(data: Mapping[str, object], key: str) -> float | None:
    value = data.get(key)
    return None if value in (None, "") else float(value)  # type: ignore[arg-type]


def accelerator_from_dict(data: Mapping[str, object]) -> AcceleratorSpec:
    """Build a spec from a catalog record (the seed file's and the API's flat field names).

    Keys: slug, name, vendor, family, memory_gib, hbm_bandwidth_tbps, ``<precision>_dense_tflops`` for
    tf32/bf16/fp8/fp4 (null when unsupported), ``measured_<precision>_matmul_tflops`` (null when unknown),
    scaleup_link, scaleup_bandwidth_gbps, scaleup_domain_gpus, host_link_gbps (null when unknown), tdp_w,
    list_price_usd, as_of.
    """
    dense = {p: v for p in PRECISIONS if (v := _optional(data, f"{p}_dense_tflops")) is not None}
    measured = {p: v for p in PRECISIONS if (v := _optional(data, f"measured_{p}_matmul_tflops")) is not None}
    return AcceleratorSpec(
        slug=str(data["slug"]),
        name=str(data.get("name", data["slug"])),
        vendor=str(data.get("vendor", "")),
        family=str(data.get("family", "")),
        memory_gib=float(data["memory_gib"]),  # type: ignore[arg-type]
        hbm_bandwidth_tbps=float(data["hbm_bandwidth_tbps"]),  # type: ignore[arg-type]
        dense_tflops=dense,
        achievable_matmul_tflops=measured,
        scaleup_link=str(data.get("scaleup_link", "")),
        scaleup_bandwidth_gbps=_optional(data, "scaleup_bandwidth_gbps") or 0.0,
        scaleup_domain_gpus=int(data.get("scaleup_domain_gpus") or 1),  # type: ignore[call-overload]
        host_link_gbps=_optional(data, "host_link_gbps") or 0.0,
        tdp_w=_optional(data, "tdp_w") or 0.0,
        list_price_usd=_optional(data, "list_price_usd"),
        as_of=str(data.get("as_of") or ""),
    )


def fabric_from_dict(data: Mapping[str, object]) -> FabricSpec:
    """Build a fabric spec from a catalog record: slug, name, kind, port_gbps, latency_us,
    collective_efficiency."""
    return FabricSpec(
        slug=str(data["slug"]),
        name=str(data.get("name", data["slug"])),
        kind=str(data.get("kind", "")),
        port_gbps=float(data["port_gbps"]),  # type: ignore[arg-type]
        latency_us=float(data.get("latency_us") or 0.0),  # type: ignore[arg-type]
        collective_efficiency=float(data.get("collective_efficiency") or 1.0),  # type: ignore[arg-type]
    )
