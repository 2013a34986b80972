"""Catalog writes: loading the shipped seed catalog, importing negotiated cloud prices from CSV and SkyPilot's
price tables (vms.csv)."""

from __future__ import annotations

import csv
import datetime as dt
import functools
import io
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import ProtectedError

from apps.catalog import skypilot
from apps.catalog.models import (
    CURRENCY_MESSAGE,
    PRICE_CURRENCY,
    Accelerator,
    CloudOffering,
    CloudPrice,
    Fabric,
    RentalPricePoint,
    ResidualValuePoint,
    ServerType,
    StorageTier,
    Switch,
    Vendor,
)
from clusterdesigner import references
from clusterdesigner.errors import Conflict, InvalidInput
from clusterdesigner.spreadsheets import csv_text, formula_safe, formula_unescaped

SEED_PATH = Path(__file__).resolve().parent / "data" / "seed_catalog.json"
PRICE_COLUMNS = ["offering", "pricing_model", "usd_per_hour", "currency", "region", "as_of", "source"]
# Written by the export for people, derived from the row, ignored by the import (so an export re-imports).
EXPORT_ONLY_COLUMNS = ["usd_per_gpu_hour"]
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
    residual = _load_series(
        ResidualValuePoint,
        data.get("residual_values", []),
        ["series", "generation", "age_years"],
        accelerators,
    )
    rental = _load_series(
        RentalPricePoint,
        data.get("rental_price_history", []),
        ["series", "generation", "basis", "as_of"],
        accelerators,
    )
    return {
        "vendors": len(vendors),
        "accelerators": len(accelerators),
        "server_types": len(data.get("server_types", [])),
        "fabrics": len(data.get("fabrics", [])),
        "switches": len(data.get("switches", [])),
        "storage_tiers": len(data.get("storage_tiers", [])),
        "cloud_offerings": len(data.get("cloud_offerings", [])),
        "cloud_prices": price_count,
        "residual_values": residual,
        "rental_price_history": rental,
    }


def _load_series(
    model: type, records: list[dict[str, Any]], keys: list[str], accelerators: dict[str, Accelerator]
) -> int:
    """Residual-value and rental-price points: each names its accelerator by slug, or null for a generation
    the catalog does not hold; a slug the catalog lacks is an error, never a silent unlinked row."""
    for record in records:
        slug = record.get("accelerator")
        if slug is not None and slug not in accelerators:
            raise ValidationError(
                {"accelerator": f"{model.__name__} {record.get('series')!r}: no accelerator {slug!r}"}
            )
        values = _fields(model, record, skip=[*keys, "accelerator"])
        values["accelerator"] = accelerators[slug] if slug is not None else None
        _save(model, {key: record[key] for key in keys}, values)
    return len(records)


@dataclass(frozen=True)
class RowError:
    line: int
    field: str
    message: str

    def __str__(self) -> str:
        if self.line == 0:  # the whole file, not a line of it
            return f"{self.field}: {self.message}"
        return f"line {self.line}: {self.field}: {self.message}"


class PriceImportError(InvalidInput):
    """The CSV had bad rows; nothing was imported. ``errors`` lists every bad row by line number; the API's
    handler answers 400 with each under ``line N.<column>``."""

    def __init__(self, errors: list[RowError]) -> None:
        fields: dict[str, list[str]] = {}
        for error in errors:
            fields.setdefault(f"line {error.line}.{error.field}", []).append(error.message)
        super().__init__(fields, message=f"{len(errors)} bad row(s); nothing was imported")
        self.errors = errors


class UnreadableFileError(PriceImportError):
    """The upload is not a CSV the csv module can read: not UTF-8, or a field over its 128 KiB limit."""

    def __init__(self, reason: str) -> None:
        InvalidInput.__init__(self, {"file": [reason]})  # the message: "file: <reason>"
        self.errors = [RowError(0, "file", reason)]


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _unreadable_file_is_an_import_error(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """The admin and the API both show PriceImportError; a file the csv module cannot read becomes one
    here, so that neither caller has to know csv.Error (the admin did not, and answered 500)."""

    @functools.wraps(function)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(f"not UTF-8 text (byte {exc.start}); save the CSV as UTF-8") from exc
        except csv.Error as exc:
            raise UnreadableFileError(f"not a readable CSV: {exc}") from exc

    return wrapper


class _BadValue(Exception):
    """One CSV field's value is wrong; the message says why (the caller names the row and field)."""


def _row_offering(row: dict[str, str], offerings: dict[str, CloudOffering]) -> CloudOffering:
    offering = offerings.get((row.get("offering") or "").strip())
    if offering is None:
        raise _BadValue(f"unknown offering {row.get('offering')!r}")
    return offering


def _row_pricing_model(row: dict[str, str]) -> str:
    model = (row.get("pricing_model") or "").strip()
    if model not in CloudPrice.PricingModel.values:
        raise _BadValue(f"{model!r} is not one of {', '.join(CloudPrice.PricingModel.values)}")
    return model


def _row_price(row: dict[str, str]) -> float:
    try:
        price = float(row.get("usd_per_hour") or "")
    except ValueError:
        raise _BadValue(f"not a number: {row.get('usd_per_hour')!r}") from None
    # The cost engine cannot use a price of 0 (nothing is free to rent): refuse it here, naming the row.
    if not math.isfinite(price) or price <= 0:
        raise _BadValue(f"must be a finite number above 0, got {price}")
    return price


def _row_currency(row: dict[str, str]) -> str:
    currency = (row.get("currency") or PRICE_CURRENCY).strip().upper()
    if currency != PRICE_CURRENCY:
        raise _BadValue(CURRENCY_MESSAGE.format(currency=repr(currency)))
    return currency


def _row_region(row: dict[str, str]) -> str:
    region = (row.get("region") or "").strip()
    region_max = CloudPrice._meta.get_field("region").max_length or 0
    if len(region) > region_max:
        raise _BadValue(f"at most {region_max} characters, got {len(region)}")
    return region


def _row_as_of(row: dict[str, str]) -> dt.date:
    try:
        return dt.date.fromisoformat((row.get("as_of") or "").strip())
    except ValueError:
        raise _BadValue(f"must be a date YYYY-MM-DD, got {row.get('as_of')!r}") from None


def _row_source(row: dict[str, str]) -> str:
    source = (row.get("source") or "").strip()
    if not source:
        raise _BadValue("every price needs its source")
    return source


def _parse_price_row(
    line: int, row: dict[str, str], offerings: dict[str, CloudOffering]
) -> CloudPrice | list[RowError]:
    """The row as an unsaved CloudPrice, or every error in it (each field is checked, in column order)."""
    # The export writes text that starts like a formula behind an apostrophe: read it back as it was.
    row = {key: formula_unescaped(value) if isinstance(value, str) else value for key, value in row.items()}
    parsers: dict[str, Callable[[dict[str, str]], Any]] = {
        "offering": lambda r: _row_offering(r, offerings),
        "pricing_model": _row_pricing_model,
        "usd_per_hour": _row_price,
        "currency": _row_currency,
        "region": _row_region,
        "as_of": _row_as_of,
        "source": _row_source,
    }
    values: dict[str, Any] = {}
    errors: list[RowError] = []
    for name, parse in parsers.items():
        try:
            values[name] = parse(row)
        except _BadValue as exc:
            errors.append(RowError(line, name, str(exc)))
    return errors or CloudPrice(**values)


def _price_header(reader: Iterator[list[str]]) -> list[str]:
    """The header's column names, refused (line 1) when a required one is missing or one is unknown."""
    try:
        header = [name.strip() for name in next(reader, [])]
    except csv.Error as exc:
        raise PriceImportError([RowError(1, "header", f"not readable as CSV: {exc}")]) from exc
    missing = [c for c in ("offering", "pricing_model", "usd_per_hour", "as_of", "source") if c not in header]
    unknown = [c for c in header if c not in PRICE_COLUMNS + EXPORT_ONLY_COLUMNS]
    if missing or unknown:
        problems = [f"missing column(s): {', '.join(missing)}"] if missing else []
        problems += (
            [f"unknown column(s): {', '.join(unknown)}; known: {', '.join(PRICE_COLUMNS)}"] if unknown else []
        )
        raise PriceImportError([RowError(1, "header", "; ".join(problems))])
    return header


def _price_records(reader: Any, errors: list[RowError]) -> Iterator[tuple[int, list[str]]]:
    """Each non-blank record with the line it starts on (a quoted field may span lines). A record the csv
    module cannot read, or one past MAX_IMPORT_ROWS, ends the file with an error appended to ``errors``."""
    index = -1
    while True:
        line = reader.line_num + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            errors.append(RowError(line, "file", f"not readable as CSV: {exc} (an unclosed quote?)"))
            return
        if not values:
            continue  # a blank line
        index += 1
        if index >= MAX_IMPORT_ROWS:
            errors.append(RowError(line, "file", f"more than {MAX_IMPORT_ROWS} rows; split the file"))
            return
        yield line, values


def _parse_price_rows(
    reader: Any, header: list[str], offerings: dict[str, CloudOffering]
) -> tuple[list[tuple[int, CloudPrice]], list[RowError]]:
    """Every row parsed, with its line, and every error (a row of the wrong width, a bad value, a row that
    repeats an earlier one's offering, pricing model, region and date)."""
    parsed: list[tuple[int, CloudPrice]] = []
    errors: list[RowError] = []
    seen: dict[tuple[str, str, str, dt.date], int] = {}
    for line, values in _price_records(reader, errors):
        if len(values) != len(header):
            more = "more" if len(values) > len(header) else "fewer"
            errors.append(
                RowError(
                    line, "file", f"{len(values)} values, {more} than the header's {len(header)} columns"
                )
            )
            continue
        result = _parse_price_row(line, dict(zip(header, values, strict=True)), offerings)
        if isinstance(result, list):
            errors.extend(result)
            continue
        key = (result.offering.slug, result.pricing_model, result.region, result.as_of)
        if key in seen:
            errors.append(RowError(line, "offering", f"duplicates line {seen[key]}"))
            continue
        seen[key] = line
        parsed.append((line, result))
    return parsed, errors


@transaction.atomic
def _save_prices(parsed: list[tuple[int, CloudPrice]]) -> list[CloudPrice]:
    """Save every parsed price, replacing the price of a row that already exists; all or none."""
    saved: list[CloudPrice] = []
    for line, price in parsed:
        existing = CloudPrice.objects.filter(
            offering=price.offering,
            pricing_model=price.pricing_model,
            region=price.region,
            as_of=price.as_of,
        ).first()
        if existing:
            existing.usd_per_hour, existing.currency, existing.source = (
                price.usd_per_hour,
                price.currency,
                price.source,
            )
            price = existing
        try:
            price.full_clean()
        except ValidationError as exc:  # parse checks these; a model rule it misses still names the row
            raise PriceImportError(
                [RowError(line, k, "; ".join(v)) for k, v in exc.message_dict.items()]
            ) from exc
        price.save()
        saved.append(price)
    return saved


@_unreadable_file_is_an_import_error
def cloud_price_import_csv(*, content: bytes | str) -> list[CloudPrice]:
    """Validate every row, then import all of them or none.

    A row for an (offering, pricing model, region, as-of) that already exists replaces its price.
    Raises PriceImportError listing each bad row by its line number in the file (header = line 1).
    """
    text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
    # strict: a quote left open is an error, not a field that swallows the rest of the file.
    reader = csv.reader(csv_text(text), strict=True)
    header = _price_header(reader)
    offerings = {o.slug: o for o in CloudOffering.objects.all()}
    parsed, errors = _parse_price_rows(reader, header, offerings)
    if errors:
        raise PriceImportError(errors)
    if not parsed:
        raise PriceImportError([RowError(2, "file", "no price rows")])
    return _save_prices(parsed)


def cloud_price_export_csv(*, prices: Iterable[CloudPrice]) -> str:
    """The same columns the importer reads, so an export can be edited and imported back."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(PRICE_COLUMNS + EXPORT_ONLY_COLUMNS)
    for price in prices:
        # Text is escaped (formula_safe) so a spreadsheet never runs it; the importer undoes the escape.
        writer.writerow(
            [
                formula_safe(price.offering.slug),
                price.pricing_model,
                price.usd_per_hour,
                formula_safe(price.currency),
                formula_safe(price.region),
                price.as_of.isoformat(),
                formula_safe(price.source),
                round(price.usd_per_gpu_hour, 6),
            ]
        )
    return out.getvalue()


# --- SkyPilot price tables ---------------------------------------------------------------------------------

SKYPILOT_SOURCE = "SkyPilot catalog {cloud}/vms.csv (github.com/skypilot-org/skypilot-catalog, schema v7)"


@dataclass(frozen=True)
class SkyPilotImport:
    """What one SkyPilot vms.csv import did: the prices saved (each with its offering), the offerings it
    created (flagged needs_review), and every row or price it skipped, with why."""

    cloud: str
    as_of: dt.date
    saved: list[CloudPrice]
    created_offerings: list[CloudOffering]
    skipped: list[skypilot.Skip]

    def mapped(self) -> list[dict[str, Any]]:
        created = {o.slug for o in self.created_offerings}
        return [
            {
                "offering": p.offering.slug,
                "instance_type": p.offering.instance_type,
                "accelerator": p.offering.accelerator.slug,
                "gpu_count": p.offering.gpu_count,
                "pricing_model": p.pricing_model,
                "region": p.region,
                "usd_per_hour": p.usd_per_hour,
                "created_offering": p.offering.slug in created,
            }
            for p in self.saved
        ]

    def skipped_summary(self, *, examples: int = 5) -> list[dict[str, Any]]:
        """Skipped rows grouped by reason, most frequent first, with their first lines and instance types."""
        groups: dict[str, list[skypilot.Skip]] = {}
        for skip in self.skipped:
            groups.setdefault(skip.reason, []).append(skip)
        out = []
        for reason, rows in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
            types = list(dict.fromkeys(s.instance_type for s in rows if s.instance_type))
            out.append(
                {
                    "reason": reason,
                    "count": len(rows),
                    "lines": [s.line for s in rows[:examples]],
                    "instance_types": types[:examples],
                }
            )
        return out


def _offering_slug(cloud: str, instance_type: str, taken: set[str]) -> str:
    base = f"{cloud}-{re.sub(r'[^a-z0-9]+', '-', instance_type.lower()).strip('-')}"[:76].strip("-")
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    return slug


def _skypilot_offerings(
    *, cloud: str, prices: list[skypilot.RegionPrice], as_of: dt.date, source: str
) -> tuple[dict[tuple[str, str], CloudOffering], list[CloudOffering], list[skypilot.Skip], list[RowError]]:
    """The catalog offering each price goes to, keyed by (instance type, region): the offering of that
    provider and instance type in the price's region, else its first by slug; a new one (needs_review) when
    the catalog has none. An offering that rents other GPUs than the SkyPilot row says gets no price."""
    existing: dict[str, list[CloudOffering]] = {}
    mine = CloudOffering.objects.filter(provider=cloud).select_related("accelerator").order_by("slug")
    for offering in mine:
        existing.setdefault(offering.instance_type, []).append(offering)
    accelerators = {a.slug: a for a in Accelerator.objects.all()}
    taken = set(CloudOffering.objects.values_list("slug", flat=True))
    target: dict[tuple[str, str], CloudOffering] = {}
    created: dict[str, CloudOffering] = {}
    skipped: list[skypilot.Skip] = []
    errors: list[RowError] = []
    # On-demand first and cheapest first, so a new offering takes the region of its cheapest on-demand price.
    for price in sorted(prices, key=lambda p: (p.pricing_model != "on_demand", p.usd_per_hour, p.region)):
        key = (price.instance_type, price.region)
        if key in target:
            continue
        rows = existing.get(price.instance_type)
        if rows:
            offering = next((o for o in rows if o.region == price.region), rows[0])
            if offering.accelerator.slug != price.accelerator or offering.gpu_count != price.gpu_count:
                reason = (
                    f"catalog offering {offering.slug} rents {offering.gpu_count} × "
                    f"{offering.accelerator.slug}; SkyPilot says {price.gpu_count} × "
                    f"{price.accelerator_name} ({price.accelerator}): correct one of them"
                )
                skipped.append(skypilot.Skip(price.line, price.instance_type, reason))
                continue
        elif price.instance_type in created:
            offering = created[price.instance_type]
        else:
            offering = CloudOffering(
                slug=_offering_slug(cloud, price.instance_type, taken),
                provider=cloud,
                instance_type=price.instance_type,
                region=price.region,
                accelerator=accelerators[price.accelerator],
                gpu_count=price.gpu_count,
                source=source,
                as_of=as_of,
                needs_review=True,
                notes=f"Created by the SkyPilot import of {as_of.isoformat()} from its row for "
                f"{price.gpu_count} × {price.accelerator_name}: check the accelerator, the GPU count "
                "and the network, then clear needs_review.",
            )
            try:
                offering.full_clean()
            except ValidationError as exc:
                errors.extend(
                    RowError(price.line, f"offering.{k}", "; ".join(v)) for k, v in exc.message_dict.items()
                )
                continue
            taken.add(offering.slug)
            created[price.instance_type] = offering
        target[key] = offering
    return target, list(created.values()), skipped, errors


@_unreadable_file_is_an_import_error
def cloud_price_import_skypilot(
    *, cloud: str, content: bytes | str, as_of: dt.date, all_regions: bool = False, source: str = ""
) -> SkyPilotImport:
    """Import one SkyPilot ``vms.csv`` (one cloud): all of its prices or none.

    Columns are read by name. SkyPilot accelerator names map to catalog accelerators
    (skypilot.SKYPILOT_ACCELERATORS); instance types map to the provider's catalog offerings, and an instance
    type the catalog lacks becomes a new offering flagged ``needs_review``. On-demand (Price) and spot
    (SpotPrice) prices are stored per region, dated ``as_of``: the cheapest region per instance type and
    pricing model, or every region with ``all_regions``. A price already stored for the same offering, model,
    region and date is replaced. Raises PriceImportError listing each bad row by line (header = line 1);
    skipped rows are reported in the result, not raised.
    """
    if cloud not in skypilot.SKYPILOT_CLOUDS:
        known = ", ".join(skypilot.SKYPILOT_CLOUDS)
        raise ValueError(f"unknown cloud {cloud!r}; the SkyPilot clouds the catalog has are {known}")
    text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
    source = source or SKYPILOT_SOURCE.format(cloud=cloud)
    known_accelerators = set(Accelerator.objects.values_list("slug", flat=True))
    parsed = skypilot.skypilot_parse(text=text, known_accelerators=known_accelerators)
    if parsed.problems:
        raise PriceImportError([RowError(p.line, p.field, p.message) for p in parsed.problems])
    chosen = skypilot.skypilot_select(parsed.prices, all_regions=all_regions)
    target, created, skipped, errors = _skypilot_offerings(
        cloud=cloud, prices=chosen, as_of=as_of, source=source
    )
    if errors:
        raise PriceImportError(errors)
    saved: list[CloudPrice] = []
    with transaction.atomic():
        for new_offering in created:
            new_offering.save()
        for row in chosen:
            offering = target.get((row.instance_type, row.region))
            if offering is None:  # skipped above: its catalog offering rents other GPUs
                continue
            lookup = dict(offering=offering, pricing_model=row.pricing_model, region=row.region, as_of=as_of)
            price = CloudPrice.objects.filter(**lookup).first() or CloudPrice(**lookup)
            price.usd_per_hour, price.currency, price.source = row.usd_per_hour, "USD", source
            try:
                price.full_clean()
            except ValidationError as exc:  # pragma: no cover - parsing already checked the figures
                problems = [RowError(row.line, k, "; ".join(v)) for k, v in exc.message_dict.items()]
                raise PriceImportError(problems) from exc
            price.save()
            saved.append(price)
    return SkyPilotImport(
        cloud=cloud, as_of=as_of, saved=saved, created_offerings=created, skipped=parsed.skipped + skipped
    )


# --- Deleting and retiring ---------------------------------------------------------------------------------

REFERENCE_KINDS: dict[type, str] = {
    Accelerator: "accelerator",
    Fabric: "fabric",
    StorageTier: "storage_tier",
    CloudOffering: "cloud_offering",
    ServerType: "server_type",
}


def catalog_row_users(*, row: Any) -> list[str]:
    """Who uses a catalog row (clusterdesigner.references): designs, plans, unfinished sweeps, defaults;
    empty for a kind nothing names by slug (a switch, a price)."""
    kind = REFERENCE_KINDS.get(type(row))
    if kind is None:
        return []
    if isinstance(row, ServerType):
        ref = references.Row(kind, row.slug, row.accelerator.slug, row.gpus_per_node)
    else:
        ref = references.Row(kind, row.slug)
    return references.users(ref)


@transaction.atomic
def catalog_row_delete(*, row: Any) -> None:
    """Delete a catalog row nothing uses. A row a design, plan, unfinished sweep or default names is a
    Conflict (409) naming who uses it: retire it instead. A row other rows point at (an accelerator a server
    type uses) is a Conflict too, naming those rows."""
    found = catalog_row_users(row=row)
    try:
        row.delete()
    except ProtectedError as exc:
        users = sorted(
            {f"{type(obj).__name__} {getattr(obj, 'slug', obj.pk)}" for obj in exc.protected_objects}
        )
        raise Conflict(f"still used by {', '.join(users[:5])}; delete or change those first") from exc
    if found:  # raised inside the transaction: the delete above is rolled back
        raise Conflict(references.in_use_message(references.Row(REFERENCE_KINDS[type(row)], row.slug), found))
