"""A price book as a file: its rows read from CSV or XLSX (each data row with its place in the file, for
errors naming the row and the column) and the book written back in either format, in the import's columns,
so that importing an export gives the same book."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from collections.abc import Iterable
from typing import Any

from apps.pricebook.models import PriceEntry
from apps.pricebook.serializers import IMPORT_COLUMNS
from clusterdesigner.errors import InvalidInput
from clusterdesigner.spreadsheets import csv_refused_as, csv_text, formula_safe, formula_unescaped

MAX_IMPORT_ROWS = 5_000
# Text columns a spreadsheet could read as a formula (written with formula_safe, read back unescaped).
TEXT_COLUMNS = frozenset({"source", "attachment_name"})

Row = tuple[str, dict[str, str]]  # (where: "line 3" or "row 3", the row's non-empty cells by column)


def _header(names: Iterable[Any]) -> list[str]:
    header = [str(name).strip() if name is not None else "" for name in names]
    while header and not header[-1]:
        header.pop()  # a spreadsheet's trailing empty columns
    unknown = [c for c in header if c not in IMPORT_COLUMNS]
    if not header or unknown:
        known = ", ".join(IMPORT_COLUMNS)
        message = f"unknown column {unknown[0]!r}" if unknown else "the file has no header row"
        raise InvalidInput({"file": [f"{message}; the columns are: {known}"]})
    return header


def _kept(rows: list[Row], where: str, cells: dict[str, str]) -> None:
    cells = {k: formula_unescaped(v) if k in TEXT_COLUMNS else v for k, v in cells.items()}
    if cells:
        rows.append((where, cells))
    if len(rows) > MAX_IMPORT_ROWS:
        raise InvalidInput({"file": [f"more than {MAX_IMPORT_ROWS} rows; split the file"]})


def csv_rows(text: str) -> list[Row]:
    """Each data row of a CSV as ("line N", cells): N is the file's line, the header being line 1."""
    reader = csv.reader(csv_text(text))
    with csv_refused_as("file", reader):
        records = [(reader.line_num, values) for values in reader]
    header = _header(records[0][1] if records else [])
    rows: list[Row] = []
    for line, values in records[1:]:
        if len(values) > len(header) and any(v.strip() for v in values[len(header) :]):
            raise InvalidInput({f"line {line}": ["more cells than the header has columns"]})
        cells = {k: v.strip() for k, v in zip(header, values, strict=False) if v.strip()}
        _kept(rows, f"line {line}", cells)
    return rows


def _cell_text(value: Any) -> str:
    """A spreadsheet cell as the text the entry's serializer reads (a date as ISO, a whole float as an
    integer, a boolean as true/false)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value).strip()


def xlsx_rows(data: bytes) -> list[Row]:
    """Each data row of the workbook's first sheet as ("row N", cells): N is the sheet's row number."""
    from openpyxl import load_workbook

    try:
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, TypeError) as exc:
        raise InvalidInput({"file": [f"not a readable XLSX workbook ({type(exc).__name__})"]}) from exc
    try:
        sheet = book.worksheets[0]
        lines = sheet.iter_rows(values_only=True)
        header = _header(next(lines, ()))
        rows: list[Row] = []
        for number, values in enumerate(lines, start=2):
            extra = values[len(header) :]
            if any(_cell_text(v) for v in extra):
                raise InvalidInput({f"row {number}": ["more cells than the header has columns"]})
            cells = {k: _cell_text(v) for k, v in zip(header, values, strict=False) if _cell_text(v)}
            _kept(rows, f"row {number}", cells)
        return rows
    finally:
        book.close()


def file_rows(content: str | bytes) -> list[Row]:
    """The rows of an uploaded book: an XLSX workbook (bytes) or CSV text."""
    return xlsx_rows(content) if isinstance(content, bytes) else csv_rows(content)


def _value(entry: PriceEntry, column: str) -> Any:
    if column == "team":
        return entry.team_id
    return getattr(entry, column)


def _csv_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    return str(value)


def book_csv(entries: Iterable[PriceEntry]) -> str:
    """The entries as CSV in the import's columns (a text cell that a spreadsheet would run is escaped)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(IMPORT_COLUMNS)
    for entry in entries:
        cells = [_csv_text(_value(entry, c)) for c in IMPORT_COLUMNS]
        writer.writerow(
            [formula_safe(v) if c in TEXT_COLUMNS else v for c, v in zip(IMPORT_COLUMNS, cells, strict=True)]
        )
    return out.getvalue()


def book_xlsx(entries: Iterable[PriceEntry], title: str) -> bytes:
    """The entries as an XLSX workbook, one sheet in the import's columns: numbers as numbers, dates as
    dates, text always as text (never a formula)."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    sheet.title = "Price book"
    sheet.append(list(IMPORT_COLUMNS))
    for entry in entries:
        sheet.append([_value(entry, c) if _value(entry, c) != "" else None for c in IMPORT_COLUMNS])
        for cell in sheet[sheet.max_row]:
            if isinstance(cell.value, str):
                cell.data_type = "s"  # "=…" stays text
    book.properties.title = title
    book.properties.creator = "ClusterDesigner"
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()
