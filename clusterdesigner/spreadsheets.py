"""Text cells a spreadsheet never runs as a formula, for every CSV the app writes (design exports, the price
catalog export).

Excel, LibreOffice and Google Sheets treat a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, after a
leading tab or carriage return, the same) as a formula; ``=HYPERLINK(...)`` or ``=cmd|...`` in a name or a
price's source then runs on the reader's machine (OWASP "CSV injection"). Such a text cell is written with a
leading apostrophe, which the spreadsheet shows as text; ``formula_unescaped`` undoes it when a file the app
wrote is read back (the price importer), so an export imports unchanged.
"""

from __future__ import annotations

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


def formula_safe(text: str) -> str:
    """``text`` with a leading apostrophe when a spreadsheet would read it as a formula."""
    return "'" + text if text.startswith(FORMULA_PREFIXES) else text


def formula_unescaped(text: str) -> str:
    """The text ``formula_safe`` was given: one leading apostrophe before a formula character removed."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_PREFIXES) else text
