"""Statements every API request runs, as prepared statements of the PostgreSQL connection.

PostgreSQL parses and plans a statement on every execution unless it is prepared, and for the short reads
each request makes the planning is most of the server's work (measured on the load bench's database, the
server's CPU a call: catalog_version's eight-table UNION 210-350 us plain, 70 us prepared; the token with
its user 140 us, 43 us; a design's visible version 277 us, 80 us; the evaluation stamps 157 us, 40 us).
So each connection prepares such a statement, in the same round trip as its first execution, and then
executes it by name with the parameters. Keyed by the driver's connection object: a new connection (after a
restart or a dropped one) prepares again. A connection where that failed (in an aborted transaction, say)
runs the plain SQL from then on. Not for a pooler that hands one client several server sessions (PgBouncer
in transaction mode): the project connects to PostgreSQL directly. Other databases run the plain SQL.

The SQL is Django's (``%s`` for each parameter, ``%%`` for a percent sign; without parameters, the text as it
is run), run through Django's cursor, so the debug query log and assertNumQueries see one query per call.
"""

from __future__ import annotations

import functools
import re
import weakref
from collections.abc import Sequence
from typing import Any

_prepared_on: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()


@functools.cache
def _numbered(sql: str) -> str:
    """Django's SQL with PostgreSQL's numbered parameters ($1, $2, ...) for its ``%s``, and ``%`` for
    ``%%``: the text PREPARE takes."""
    numbers = iter(range(1, sql.count("%s") + 1))
    return re.sub(r"%[s%]", lambda m: f"${next(numbers)}" if m.group() == "%s" else "%", sql)


def execute(cursor: Any, name: str, sql: str, params: Sequence[Any] = ()) -> None:
    """Run ``sql`` with ``params`` on Django's ``cursor``, on PostgreSQL as the connection's prepared
    statement ``name``; the rows are then the cursor's to fetch. ``name`` is one SQL text's, for good."""
    connection = cursor.db
    if connection.vendor != "postgresql":
        cursor.execute(sql, params or None)
        return
    driver = connection.connection
    states = _prepared_on.setdefault(driver, {})
    prepared = states.get(name)
    if prepared is False:
        cursor.execute(sql, params or None)
        return
    arguments = f"({', '.join(['%s'] * len(params))})" if params else ""
    try:
        if prepared is None:
            # One simple-protocol query of two statements: the first result is PREPARE's (no rows). The
            # PREPARE's text goes through the driver's parameter formatting when there are parameters.
            text = _numbered(sql).replace("%", "%%") if params else sql
            cursor.execute(f"PREPARE {name} AS {text}; EXECUTE {name}{arguments}", params or None)
            cursor.nextset()
        else:
            cursor.execute(f"EXECUTE {name}{arguments}", params or None)
    except Exception:
        states[name] = False
        raise
    states[name] = True


def forget(driver: Any, name: str | None = None) -> None:
    """Forget that ``driver``'s connection prepared ``name`` (None: every statement), so that the next call
    prepares it again; for tests that deallocate it."""
    if name is None:
        _prepared_on.pop(driver, None)
    else:
        _prepared_on.get(driver, {}).pop(name, None)


def mark(driver: Any, name: str, prepared: bool) -> None:
    """Record ``name`` as prepared (or failed) on ``driver``'s connection; for tests."""
    _prepared_on.setdefault(driver, {})[name] = prepared
