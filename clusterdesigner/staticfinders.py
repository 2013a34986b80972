"""Expose plotly.js from the installed ``plotly`` package as the static file ``vendor/plotly.min.js``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, overload

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"
STATIC_NAME = "vendor/plotly.min.js"


class PlotlyJsFinder(BaseFinder):
    storage = FileSystemStorage(location=str(PLOTLY_DIR))

    def check(self, **kwargs: Any) -> list[Any]:
        return []

    @overload
    def find(self, path: str, find_all: Literal[False] = False, **kwargs: Any) -> str | None: ...
    @overload
    def find(self, path: str, find_all: Literal[True], **kwargs: Any) -> list[str]: ...
    def find(self, path: str, find_all: bool = False, **kwargs: Any) -> str | list[str] | None:
        if path == STATIC_NAME:
            found = str(PLOTLY_DIR / "plotly.min.js")
            return [found] if find_all or kwargs.get("all") else found
        return [] if find_all or kwargs.get("all") else None

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, Any]]:
        # collectstatic copies the file under its vendor/ name; the storage prefix gives it that path.
        storage = FileSystemStorage(location=str(PLOTLY_DIR))
        storage.prefix = "vendor"  # type: ignore[attr-defined]
        yield "plotly.min.js", storage
