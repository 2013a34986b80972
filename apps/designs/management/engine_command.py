"""Shared shape of the engine commands: read a JSON request from a file or stdin, print the JSON response."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError

from apps.catalog import selectors
from apps.catalog.services import SEED_PATH
from clusterdesigner.engine.core.catalog import CatalogSpecs, specs_from_records
from clusterdesigner.engine.core.errors import EngineError


def command_catalog(warn: Callable[[str], None]) -> tuple[CatalogSpecs, dict[str, Any]]:
    """The database's catalog (specs and the records they were built from), or the shipped seed catalog when
    there is none yet (a fresh checkout before ``migrate`` and ``load_catalog``), so the engine commands work
    with only the embedded defaults."""
    try:
        snapshot = selectors.engine_catalog_snapshot()
        if snapshot.specs.accelerators:
            return snapshot.specs, snapshot.records
        why = "the database's catalog is empty"
    except DatabaseError as exc:
        why = f"the database is not ready ({str(exc).strip() or type(exc).__name__})"
    warn(f"{why}: using the shipped seed catalog {SEED_PATH.name} (run migrate and load_catalog to edit it)")
    records = json.loads(SEED_PATH.read_text())
    return specs_from_records(records), records


class EngineCommand(BaseCommand):
    """Subclasses set ``help`` and implement ``compute(request, catalog, records) -> response`` (``records``:
    the catalog rows the specs were built from, for what specs do not hold, such as resale series)."""

    compute: Callable[[dict[str, Any], CatalogSpecs, dict[str, Any]], dict[str, Any]]

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", nargs="?", default="-", help="JSON request file, or - for standard input")
        parser.add_argument("--compact", action="store_true", help="print one line instead of indented JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        source = options["file"]
        try:
            text = sys.stdin.read() if source == "-" else Path(source).read_text()
        except OSError as exc:
            raise CommandError(f"cannot read {source}: {exc.strerror}") from exc
        try:
            request = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(f"{source} is not valid JSON: {exc}") from exc
        if not isinstance(request, dict):
            raise CommandError("the request must be a JSON object")
        try:
            response = type(self).compute(request, *command_catalog(self.stderr.write))
        except EngineError as exc:
            raise CommandError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from exc
        self.stdout.write(json.dumps(response, indent=None if options["compact"] else 2))
