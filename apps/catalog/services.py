"""Catalog writes: loading the shipped seed catalog and importing negotiated cloud prices from CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from apps.catalog.models import (
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    ServerType,
    StorageTier,
    Switch,
    Vendor,
)

SEED_PATH = Path(__file__).resolve().parent / "data" / "seed_catalog.json"
PRICE_COLUMNS = ["offering", "pricing_model", "usd_per_hour", "currency", "region", "as_of", "source"]
MAX_IMPORT_ROWS = 10_000


def _fields(model: type, record: dict[str, Any], *, skip: Iterable[str] = ()) -> dict[str, Any]:
    names = {f.name for f in model._meta.concrete_fields} - {"id"} - set(skip)  # type: ignore[attr-defined]
    return {key: value for key, value in record.items() if key in names}


def _save(model: type, lookup: dict[str, Any], values: dict[str, Any]) -> Any:
    instance = model.objects.filter(**lookup).first() or model(**lookup)  # type: ignore[attr-defined]
    for key, value in values.items():
        setattr(instance, key, value)
    instance.full_clean()
    instance.save()
    return instance


@transaction.atomic
def catalog_load_seed(*, path: Path = SEED_PATH) -> dict[str, int]:
    """Create or update every row of the shipped seed catalog (idempotent). Returns counts per section."""
    data = json.loads(path.read_text())
    vendors = {v["slug"]: _save(Vendor, {"slug": v["slug"]}, {"name": v["name"]}) for v in data["vendors"]}
    accelerators: dict[str, Accelerator] = {}
    for record in data["accelerators"]:
        values = _fields(Accelerator, record, skip=["slug", "vendor"])
        values["vendor"] = vendors[record["vendor"]]
        accelerators[record["slug"]] = _save(Accelerator, {"slug": record["slug"]}, values)
    for record in data.get("server_types", []):
        values = _fields(ServerType, record, skip=["slug", "vendor", "accelerator"])
        values.update(vendor=vendors[record["vendor"]], accelerator=accelerators[record["accelerator"]])
        _save(ServerType, {"slug": record["slug"]}, values)
    for record in data.get("fabrics", []):
        _save(Fabric, {"slug": record["slug"]}, _fields(Fabric, record, skip=["slug"]))
    for record in data.get("switches", []):
        values = _fields(Switch, record, skip=["slug", "vendor"])
        values["vendor"] = vendors[record["vendor"]]
        _save(Switch, {"slug": record["slug"]}, values)
    for record in data.get("storage_tiers", []):
        _save(StorageTier, {"slug": record["slug"]}, _fields(StorageTier, record, skip=["slug"]))
    price_count = 0
    for record in data.get("cloud_offerings", []):
        values = _fields(CloudOffering, record, skip=["slug", "accelerator"])
        values["accelerator"] = accelerators[record["accelerator"]]
        offering = _save(CloudOffering, {"slug": record["slug"]}, values)
        for price in record.get("prices", []):
            lookup = {
                "offering": offering,
                "pricing_model": price["pricing_model"],
                "region": price.get("region") or "",
                "as_of": price["as_of"],
            }
            _save(CloudPrice, lookup, _fields(CloudPrice, price, skip=lookup.keys()))
            price_count += 1
    return {
        "vendors": len(vendors),
        "accelerators": len(accelerators),
        "server_types": len(data.get("server_types", [])),
        "fabrics": len(data.get("fabrics", [])),
        "switches": len(data.get("switches", [])),
        "storage_tiers": len(data.get("storage_tiers", [])),
        "cloud_offerings": len(data.get("cloud_offerings", [])),
        "cloud_prices": price_count,
    }


@dataclass(frozen=True)
class RowError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.message}"


class PriceImportError(Exception):
    """The CSV had bad rows; nothing was imported. ``errors`` lists every bad row by line number."""

    def __init__(self, errors: list[RowError]) -> None:
        super().__init__(f"{len(errors)} bad row(s); nothing was imported")
        self.errors = errors

    def as_fields(self) -> dict[str, list[str]]:
        fields: dict[str, list[str]] = {}
        for error in self.errors:
            fields.setdefault(f"line {error.line}.{error.field}", []).append(error.message)
        return fields


def _parse_price_row(line: int, row: dict[str, str], offerings: dict[str, CloudOffering]) -> CloudPrice | list[RowError]:
    errors: list[RowError] = []
    offering = offerings.get((row.get("offering") or "").strip())
    if offering is None:
        errors.append(RowError(line, "offering", f"unknown offering {row.get('offering')!r}"))
    model = (row.get("pricing_model") or "").strip()
    if model not in CloudPrice.PricingModel.values:
        errors.append(
            RowError(line, "pricing_model", f"{model!r} is not one of {', '.join(CloudPrice.PricingModel.values)}")
        )
    price = math.nan
    try:
        price = float(row.get("usd_per_hour") or "")
        # The cost engine cannot use a price of 0 (nothing is free to rent): refuse it here, naming the row.
        if not math.isfinite(price) or price <= 0:
            errors.append(RowError(line, "usd_per_hour", f"must be a finite number above 0, got {price}"))
    except ValueError:
        errors.append(RowError(line, "usd_per_hour", f"not a number: {row.get('usd_per_hour')!r}"))
    currency = (row.get("currency") or "USD").strip().upper()
    if len(currency) != 3 or not currency.isalpha():
        errors.append(RowError(line, "currency", f"must be a 3-letter ISO code, got {currency!r}"))
    as_of: dt.date | None = None
    try:
        as_of = dt.date.fromisoformat((row.get("as_of") or "").strip())
    except ValueError:
        errors.append(RowError(line, "as_of", f"must be a date YYYY-MM-DD, got {row.get('as_of')!r}"))
    source = (row.get("source") or "").strip()
    if not source:
        errors.append(RowError(line, "source", "every price needs its source"))
    if errors:
        return errors
    return CloudPrice(
        offering=offering,
        pricing_model=model,
        usd_per_hour=price,
        currency=currency,
        region=(row.get("region") or "").strip(),
        as_of=as_of,
        source=source,
    )


def cloud_price_import_csv(*, content: bytes | str) -> list[CloudPrice]:
    """Validate every row, then import all of them or none.

    A row for an (offering, pricing model, region, as-of) that already exists replaces its price.
    Raises PriceImportError listing each bad row by its line number in the file (header = line 1).
    """
    text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in ("offering", "pricing_model", "usd_per_hour", "as_of", "source") if c not in (reader.fieldnames or [])]
    if missing:
        raise PriceImportError([RowError(1, "header", f"missing column(s): {', '.join(missing)}")])
    offerings = {o.slug: o for o in CloudOffering.objects.all()}
    parsed: list[CloudPrice] = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str, str, dt.date], int] = {}
    for index, row in enumerate(reader):
        line = index + 2
        if index >= MAX_IMPORT_ROWS:
            errors.append(RowError(line, "file", f"more than {MAX_IMPORT_ROWS} rows; split the file"))
            break
        result = _parse_price_row(line, row, offerings)
        if isinstance(result, list):
            errors.extend(result)
            continue
        key = (result.offering.slug, result.pricing_model, result.region, result.as_of)
        if key in seen:
            errors.append(RowError(line, "offering", f"duplicates line {seen[key]}"))
            continue
        seen[key] = line
        parsed.append(result)
    if errors:
        raise PriceImportError(errors)
    if not parsed:
        raise PriceImportError([RowError(2, "file", "no price rows")])
    saved: list[CloudPrice] = []
    with transaction.atomic():
        for price in parsed:
            existing = CloudPrice.objects.filter(
                offering=price.offering, pricing_model=price.pricing_model, region=price.region, as_of=price.as_of
            ).first()
            if existing:
                existing.usd_per_hour, existing.currency, existing.source = (
                    price.usd_per_hour, price.currency, price.source,
                )  # fmt: skip
                price = existing
            try:
                price.full_clean()
            except ValidationError as exc:  # pragma: no cover - parse already checked these
                raise PriceImportError([RowError(0, k, "; ".join(v)) for k, v in exc.message_dict.items()]) from exc
            price.save()
            saved.append(price)
    return saved


def cloud_price_export_csv(*, prices: Iterable[CloudPrice]) -> str:
    """The same columns the importer reads, so an export can be edited and imported back."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(PRICE_COLUMNS + ["usd_per_gpu_hour"])
    for price in prices:
        writer.writerow([
            price.offering.slug, price.pricing_model, price.usd_per_hour, price.currency, price.region,
            price.as_of.isoformat(), price.source, round(price.usd_per_gpu_hour, 6),
        ])  # fmt: skip
    return out.getvalue()
