"""Import cloud prices: a negotiated-price CSV, or SkyPilot's price tables (one vms.csv per cloud)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.catalog import services
from apps.catalog.skypilot import SKYPILOT_CLOUDS


def _date(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError as exc:
        raise CommandError(f"--as-of must be a date YYYY-MM-DD, got {value!r}") from exc


class Command(BaseCommand):
    help = (
        "Import cloud prices. With a FILE: negotiated prices in the CSV format of the admin and API import. "
        "With --skypilot DIR: SkyPilot's price tables, DIR/<cloud>/vms.csv (e.g. ~/.sky/catalogs/v7), each "
        "file all or nothing; instance types the catalog lacks become offerings flagged needs_review."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file", nargs="?", help="A negotiated-price CSV (offering,pricing_model,usd_per_hour,…)."
        )
        parser.add_argument(
            "--skypilot", metavar="DIR", help="A SkyPilot catalog directory: DIR/<cloud>/vms.csv."
        )
        parser.add_argument(
            "--clouds",
            help=f"Comma-separated clouds to read (default: every DIR/<cloud>/vms.csv; the catalog knows "
            f"{', '.join(SKYPILOT_CLOUDS)}).",
        )
        parser.add_argument(
            "--as-of",
            help="Date the SkyPilot prices are dated (YYYY-MM-DD; default: each file's modification date, "
            "when SkyPilot last fetched it).",
        )
        parser.add_argument(
            "--all-regions",
            action="store_true",
            help="Store every region's price (default: the cheapest region per instance type and pricing "
            "model).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["file"]) == bool(options["skypilot"]):
            raise CommandError("give either a CSV file or --skypilot DIR")
        if options["file"]:
            self._negotiated(Path(options["file"]))
            return
        failed = self._skypilot(
            Path(options["skypilot"]).expanduser(),
            clouds=[c.strip() for c in (options["clouds"] or "").split(",") if c.strip()],
            as_of=_date(options["as_of"]) if options["as_of"] else None,
            all_regions=options["all_regions"],
        )
        if failed:
            raise CommandError(f"nothing imported from {', '.join(failed)}: see the errors above")

    def _negotiated(self, path: Path) -> None:
        try:
            saved = services.cloud_price_import_csv(content=path.read_bytes())
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
        except services.PriceImportError as exc:
            raise CommandError("\n".join([str(exc), *map(str, exc.errors)])) from exc
        self.stdout.write(f"Imported {len(saved)} price(s) from {path}.")

    def _skypilot(
        self, root: Path, *, clouds: list[str], as_of: dt.date | None, all_regions: bool
    ) -> list[str]:
        """Import each cloud's file in its own transaction; return the clouds whose file was refused."""
        if not root.is_dir():
            raise CommandError(f"{root} is not a directory")
        names = clouds or sorted(p.parent.name for p in root.glob("*/vms.csv"))
        if not names:
            raise CommandError(f"no {root}/<cloud>/vms.csv found")
        failed: list[str] = []
        for cloud in names:
            path = root / cloud / "vms.csv"
            if cloud not in SKYPILOT_CLOUDS:
                known = ", ".join(SKYPILOT_CLOUDS)
                self.stdout.write(f"{cloud}: skipped: not a cloud the catalog has ({known})")
                continue
            if not path.is_file():
                self.stdout.write(f"{cloud}: skipped: no {path}")
                continue
            dated = as_of or dt.date.fromtimestamp(path.stat().st_mtime)
            try:
                result = services.cloud_price_import_skypilot(
                    cloud=cloud,
                    content=path.read_bytes(),
                    as_of=dated,
                    all_regions=all_regions,
                    source=services.SKYPILOT_SOURCE.format(cloud=cloud) + f", read from {path}",
                )
            except services.PriceImportError as exc:
                self.stderr.write(f"{cloud}: {path}: {exc}")
                for error in exc.errors:
                    self.stderr.write(f"  {error}")
                failed.append(cloud)
                continue
            self._report(result)
        return failed

    def _report(self, result: services.SkyPilotImport) -> None:
        self.stdout.write(
            f"{result.cloud}: imported {len(result.saved)} price(s) as of {result.as_of.isoformat()}, "
            f"created {len(result.created_offerings)} offering(s) flagged needs_review"
        )
        for row in result.mapped():
            new = " (new offering, needs review)" if row["created_offering"] else ""
            self.stdout.write(
                f"  mapped {row['instance_type']} → {row['offering']}{new}: {row['gpu_count']} × "
                f"{row['accelerator']}, {row['pricing_model']} {row['region'] or '(no region)'} "
                f"${row['usd_per_hour']:g}/h"
            )
        for group in result.skipped_summary():
            more = "…" if group["count"] > len(group["lines"]) else ""
            where = f"lines {', '.join(map(str, group['lines']))}{more}"
            types = f" ({', '.join(group['instance_types'])}{more})" if group["instance_types"] else ""
            self.stdout.write(f"  skipped {group['count']} row(s): {group['reason']}; {where}{types}")
