"""Reading SkyPilot's price tables (``~/.sky/catalogs/v7/<cloud>/vms.csv``) into per-region catalog prices.

No database here: :func:`skypilot_parse` turns the file's text into priced rows, rows it skipped (with why)
and bad rows (with their line), and :func:`skypilot_select` keeps the cheapest region per instance type and
pricing model. ``apps.catalog.services.cloud_price_import_skypilot`` matches the result to catalog offerings
and writes it.

Columns are read by name, not position: the clouds' files carry the same names in different orders (AWS
``InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,Region,
AvailabilityZone``; Lambda ``InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,
GpuInfo,SpotPrice``). Schema: github.com/skypilot-org/skypilot-catalog (README, vms.csv).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass

from apps.catalog.models import CATALOG_MAX
from clusterdesigner.spreadsheets import csv_text

# SkyPilot's cloud directory names that are catalog providers (CloudOffering.Provider values).
SKYPILOT_CLOUDS = ("aws", "gcp", "azure", "oci", "lambda")

# SkyPilot accelerator names → catalog accelerator slugs. Names are compared in upper case. A100 alone is the
# 40 GB part (SkyPilot names the 80 GB one A100-80GB); GCP's A3 Mega is H100-MEGA, the same H100 SXM.
SKYPILOT_ACCELERATORS = {
    "A100": "a100-40gb",
    "A100-80GB": "a100-80gb",
    "H100": "h100-sxm",
    "H100-SXM": "h100-sxm",
    "H100-MEGA": "h100-sxm",
    "H200": "h200",
    "B200": "b200",
    "GB200": "gb200",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI355X": "mi355x",
    "L40S": "l40s",
    "RTX4090": "rtx-4090",
}
# SkyPilot names PCIe H100s (Lambda's gpu_1x_h100_pcie) plain H100 too: the instance type tells them apart.
PCIE_VARIANTS = {"h100-sxm": "h100-pcie"}

REQUIRED_COLUMNS = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")
PRICE_COLUMNS = {"on_demand": "Price", "spot": "SpotPrice"}
MAX_GPU_COUNT = CATALOG_MAX["cloudoffering.gpu_count"]
MAX_PRICE = CATALOG_MAX["cloudprice.usd_per_hour"]


@dataclass(frozen=True)
class Problem:
    """A bad row: the file is refused and this is reported (line 1 is the header)."""

    line: int
    field: str
    message: str


@dataclass(frozen=True)
class Skip:
    """A row, or one price of a row, left out of the import, and why."""

    line: int
    instance_type: str
    reason: str


@dataclass(frozen=True)
class RegionPrice:
    """The price of one instance type under one pricing model in one region (the lowest of its zones)."""

    line: int
    instance_type: str
    accelerator_name: str
    accelerator: str
    gpu_count: int
    pricing_model: str
    region: str
    usd_per_hour: float


@dataclass(frozen=True)
class ParsedTable:
    prices: list[RegionPrice]
    skipped: list[Skip]
    problems: list[Problem]


def accelerator_slug(name: str, instance_type: str) -> str | None:
    """The catalog accelerator a SkyPilot accelerator name means on this instance type, or None."""
    slug = SKYPILOT_ACCELERATORS.get(name.strip().upper())
    if slug in PCIE_VARIANTS and "pcie" in instance_type.lower():
        return PCIE_VARIANTS[slug]
    return slug


def _number(raw: str, line: int, column: str, problems: list[Problem], high: float) -> float | None:
    """The cell as a finite number from 0 to ``high``; None when empty; a problem when it is anything else."""
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        problems.append(Problem(line, column, f"not a number: {raw!r}"))
        return None
    if not math.isfinite(value) or value < 0:
        problems.append(Problem(line, column, f"must be a finite number of 0 or more, got {raw!r}"))
        return None
    if value > high:
        problems.append(Problem(line, column, f"must be at most {high:g}, got {raw!r}"))
        return None
    return value


def _columns(fieldnames: Iterable[str] | None) -> dict[str, str] | Problem:
    """Map each column name as this module spells it to the file's spelling (names compare case-blind:
    older schemas wrote GPUInfo)."""
    have = {name.strip().lower(): name for name in fieldnames or []}
    missing = [c for c in REQUIRED_COLUMNS if c.lower() not in have]
    if missing:
        return Problem(1, "header", f"missing column(s): {', '.join(missing)}; is this a SkyPilot vms.csv?")
    return {c: have[c.lower()] for c in (*REQUIRED_COLUMNS, "SpotPrice") if c.lower() in have}


def skypilot_parse(*, text: str, known_accelerators: set[str]) -> ParsedTable:
    """Every row of a vms.csv: priced rows per (instance type, pricing model, region), skipped rows with their
    reason, and bad rows (a price or GPU count that is not a number) with their line.

    Skipped, not bad: rows without an accelerator (CPU instance types), without an instance type (GCP lists
    attachable GPUs priced alone), with an accelerator the catalog does not have, with a fractional GPU count
    (a shared GPU), and empty or zero prices.
    """
    reader = csv.DictReader(csv_text(text))
    columns = _columns(reader.fieldnames)
    if isinstance(columns, Problem):
        return ParsedTable([], [], [columns])
    problems: list[Problem] = []
    skipped: list[Skip] = []
    lowest: dict[tuple[str, str, str], RegionPrice] = {}
    for row in reader:
        line = reader.line_num

        def cell(name: str, row: dict[str, str] = row) -> str:
            return (row.get(columns.get(name, "")) or "").strip()

        instance_type, name = cell("InstanceType"), cell("AcceleratorName")
        prices = {
            m: _number(cell(column), line, column, problems, MAX_PRICE) for m, column in PRICE_COLUMNS.items()
        }
        count = _number(cell("AcceleratorCount"), line, "AcceleratorCount", problems, math.inf)
        slug = accelerator_slug(name, instance_type)
        reason = ""
        if not name:
            reason = "no accelerator (a CPU-only instance type)"
        elif not instance_type:
            reason = f"no instance type ({name} priced alone, without the VM it attaches to)"
        elif slug is None:
            reason = f"accelerator {name} has no catalog accelerator mapped to it"
        elif slug not in known_accelerators:
            reason = f"accelerator {name} maps to {slug}, which the catalog lacks"
        elif count is None or count < 1:
            raw = cell("AcceleratorCount")
            reason = f"accelerator count {raw!r} is not a whole number of GPUs (a shared or fractional GPU)"
        elif count != int(count) or count > MAX_GPU_COUNT:
            # 8.5 GPUs is no shared GPU but a bad row; 1e20 would overflow the offering's GPU count.
            raw = cell("AcceleratorCount")
            why = f"must be a whole number of GPUs from 1 to {MAX_GPU_COUNT:g}, got {raw!r}"
            problems.append(Problem(line, "AcceleratorCount", why))
            continue
        if reason or slug is None or count is None:
            skipped.append(Skip(line, instance_type, reason))
            continue
        region = cell("Region")
        for model, price in prices.items():
            if price is None or price == 0:
                state = "empty" if price is None else "0"
                no_price = f"{PRICE_COLUMNS[model]} is {state} (no {model.replace('_', '-')} price)"
                skipped.append(Skip(line, instance_type, no_price))
                continue
            key = (instance_type, model, region)
            held = lowest.get(key)
            if held is None or price < held.usd_per_hour:
                lowest[key] = RegionPrice(line, instance_type, name, slug, int(count), model, region, price)
    return ParsedTable(list(lowest.values()), skipped, problems)


def skypilot_select(prices: Iterable[RegionPrice], *, all_regions: bool) -> list[RegionPrice]:
    """Every region's price (``all_regions``), or per instance type and pricing model the cheapest region's
    (ties go to the region named first, so the choice is stable). Sorted by instance type, model, region."""
    rows = sorted(prices, key=lambda p: (p.instance_type, p.pricing_model, p.usd_per_hour, p.region))
    if not all_regions:
        cheapest: dict[tuple[str, str], RegionPrice] = {}
        for price in rows:
            cheapest.setdefault((price.instance_type, price.pricing_model), price)
        rows = list(cheapest.values())
    return sorted(rows, key=lambda p: (p.instance_type, p.pricing_model, p.region))
