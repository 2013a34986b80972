"""Shared shape of the engine commands: read a JSON request from a file or stdin, print the JSON response."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from clusterdesigner.engine.errors import EngineError


class EngineCommand(BaseCommand):
    """Subclasses set ``help`` and implement ``compute(request) -> response``."""

    compute: Callable[[dict[str, Any]], dict[str, Any]]

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
            response = type(self).compute(request)
        except EngineError as exc:
            raise CommandError(f"{exc.field}: {exc.message}" if exc.field else exc.message) from exc
        self.stdout.write(json.dumps(response, indent=None if options["compact"] else 2))
