"""Text cells a spreadsheet never runs as a formula, for every CSV the app writes (design exports, the price
catalog export).

Excel, LibreOffice and Google Sheets treat a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, after a
leading tab or carriage return, the same) as a formula; ``=HYPERLINK(...)`` or ``=cmd|...`` in a name or a
price's source then runs on the reader's machine (OWASP "CSV injection"). Such a text cell is written with a
leading apostrophe, which the spreadsheet shows as text; ``formula_unescaped`` undoes it when a file the app
wrote is read back (the price importer), so an export imports unchanged.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from contextlib import contextmanager

from clusterdesigner.errors import InvalidInput

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(text: str) -> str:
    """``text`` with a leading apostrophe when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def formula_unescaped(text: str) -> str:
    """The text ``formula_safe`` was given: one leading apostrophe before a formula character removed."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_PREFIXES) else text


def csv_text(text: str) -> io.StringIO:
    """``text`` as the file the csv module expects (``newline=""``): a line may end in CR, LF or CR LF, as
    spreadsheets write them, and a line break inside a quoted field is kept. Without it a bare CR inside an
    unquoted field is a csv.Error."""
    return io.StringIO(text, newline="")


@contextmanager
def csv_refused_as(field: str, reader: object) -> Iterator[None]:
    """A CSV the csv module cannot read (a field over ``csv.field_size_limit()``, a quote where strict
    parsing forbids one) as InvalidInput naming ``field`` and the line ``reader`` (a ``csv.reader``, which
    counts the line it is reading) had reached, not a 500."""
    try:
        yield
    except csv.Error as exc:
        line = getattr(reader, "line_num", 0)
        raise InvalidInput({field: [f"line {line}: not readable as CSV: {exc}"]}) from exc
