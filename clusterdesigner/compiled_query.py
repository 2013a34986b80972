"""A queryset whose SQL is compiled once per process, for the few reads every API request makes.

Building a QuerySet and compiling it (filters, joins, the select list, quoting) costs the ORM about half a
millisecond of CPU per query, every request, for SQL that is the same each time but for its parameters. A
CompiledQuery builds the queryset once with marker values standing in for the parameters, keeps the SQL, the
positions of the markers among its parameters, the columns' converters and the model's field list, and on
each call only substitutes the values, executes, converts and builds the instances (as Django's
ModelIterable does, select_related included). It runs through Django's cursor, so the debug query log,
assertNumQueries and execute wrappers see it like any other query.

The SQL must not depend on the values, only on their presence: the queryset is compiled twice with two
different sets of markers and the two compilations must agree (same text, the same constant parameters, the
markers at the same positions), else compiling raises. A shape that depends on a value (None for IS NULL,
``number or F(...)``) is a separate CompiledQuery, chosen by the caller.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

from clusterdesigner import prepared

M = TypeVar("M", bound=Model)

# A marker per parameter kind, distinct per name. An integer marker lies in every integer column's range
# (a small positive one): Django compiles a lookup on a value outside the column's range to no condition at
# all. A constant of the query equal to a marker is caught by the second compilation, whose markers differ.
_MARKERS: dict[type, Callable[[int], Any]] = {
    int: lambda i: 32_000 + i,
    str: lambda i: f"compiled-query-marker-{i}",
}


# The range every integer column holds (PostgreSQL's ``integer``). The SQL is compiled with in-range markers;
# a value past it would overflow its column in the database (a DataError, a 500), where Django's lookups
# compile it to "no row" or "every row" (django.db.models.lookups.IntegerFieldOverflow): such a call runs
# through the ORM, which answers as it does everywhere else.
_SMALLEST_INTEGER_COLUMN = range(-(2**31), 2**31)


class CompileError(Exception):
    """The queryset's SQL depends on its parameters' values, or a parameter does not reach the SQL."""


@dataclass(frozen=True)
class _Compiled:
    sql: str
    params: tuple[Any, ...]  # the constant parameters; a marker's position holds None
    slots: tuple[tuple[int, str], ...]  # (position in params, parameter name)
    model: type[Model]
    init_list: tuple[str, ...]
    fields: slice
    converters: tuple[tuple[int, tuple[Any, ...], Any], ...]  # (column, converter functions, expression)
    related: tuple[Any, ...]  # django.db.models.query.RelatedPopulator


def _sql(
    build: Callable[..., QuerySet[Any]], kinds: dict[str, type], using: str, offset: int
) -> tuple[Any, str, tuple[Any, ...], tuple[tuple[int, str], ...]]:
    """(the compiler, its SQL, its parameters, the markers' slots) of the queryset built with markers."""
    markers = {name: _MARKERS[kind](offset + i) for i, (name, kind) in enumerate(kinds.items())}
    queryset = build(**markers)
    compiler = queryset.query.get_compiler(using=using)
    sql, params = compiler.as_sql()
    by_value = {value: name for name, value in markers.items()}
    slots = tuple(
        (i, by_value[p]) for i, p in enumerate(params) if isinstance(p, (int, str)) and p in by_value
    )
    missing = set(kinds) - {name for _, name in slots}
    if missing:
        raise CompileError(f"parameters {sorted(missing)} do not reach the SQL as values")
    return compiler, sql, tuple(params), slots


def compiled_sql(
    build: Callable[..., QuerySet[Any]],
    *,
    using: str = DEFAULT_DB_ALIAS,
    expressions: dict[str, str],
    **kinds: type,
) -> tuple[str, tuple[Any, ...], tuple[tuple[int, str], ...]]:
    """The SQL of any queryset ``build(**markers)`` returns (values_list included), for a statement that
    embeds it: (its text, its parameters with None at each marker's position, the markers' slots among them),
    compiled twice and compared as CompiledQuery compiles. A parameter named in ``expressions`` is written
    into the text as that SQL expression (a column of the embedding statement) and is no longer a
    parameter; the slots are the remaining markers' positions."""
    first = _sql(build, kinds, using, 0)[1:]
    again = _sql(build, kinds, using, len(kinds))[1:]
    if (first[0], _constants(first)) != (again[0], _constants(again)) or [n for _, n in first[2]] != [
        n for _, n in again[2]
    ]:
        raise CompileError(f"the SQL depends on the parameters' values:\n{first[0]}")
    sql, params, slots = first
    named = dict(slots)
    pieces = re.split(r"(%[s%])", sql)
    text: list[str] = []
    kept: list[Any] = []
    kept_slots: list[tuple[int, str]] = []
    position = 0
    for piece in pieces:
        if piece != "%s":
            text.append(piece)
            continue
        name = named.get(position)
        if name in expressions:
            text.append(expressions[name])
        else:
            if name is not None:
                kept_slots.append((len(kept), name))
            kept.append(None if name is not None else params[position])
            text.append(piece)
        position += 1
    return "".join(text), tuple(kept), tuple(kept_slots)


def _constants(compiled: tuple[str, tuple[Any, ...], tuple[tuple[int, str], ...]]) -> tuple[Any, ...]:
    marked = {position for position, _ in compiled[2]}
    return tuple(None if i in marked else p for i, p in enumerate(compiled[1]))


def _compile(
    build: Callable[..., QuerySet[Any]], kinds: dict[str, type], using: str, offset: int
) -> _Compiled:
    compiler, sql, params, slots = _sql(build, kinds, using, offset)
    select, klass_info = compiler.select, compiler.klass_info
    if klass_info is None or compiler.annotation_col_map:
        raise CompileError("only querysets of model instances without annotations are supported")
    columns = klass_info["select_fields"]
    fields = slice(columns[0], columns[-1] + 1)
    converters = compiler.get_converters([column[0] for column in select])
    marked = {position for position, _ in slots}
    return _Compiled(
        sql=sql,
        params=tuple(None if i in marked else p for i, p in enumerate(params)),
        slots=slots,
        model=klass_info["model"],
        init_list=tuple(column[0].target.attname for column in select[fields]),
        fields=fields,
        converters=tuple((i, tuple(convs), expression) for i, (convs, expression) in converters.items()),
        # Django 5.2's signature; the stubs describe a later one.
        related=tuple(get_related_populators(klass_info, select, using)),  # type: ignore[call-arg]
    )


class CompiledQuery(Generic[M]):
    """``build(**markers)`` returns the queryset; ``kinds`` names its parameters and their types (int or str).

    VISIBLE = CompiledQuery(lambda design_id: Design.objects.filter(pk=design_id), design_id=int)
    VISIBLE.first(design_id=3)

    ``prepare`` names it as a prepared statement of each PostgreSQL connection (clusterdesigner.prepared):
    the server then plans it once per connection rather than on every call.
    """

    def __init__(
        self,
        build: Callable[..., QuerySet[M]],
        *,
        using: str = DEFAULT_DB_ALIAS,
        prepare: str | None = None,
        **kinds: type,
    ) -> None:
        unknown = {name: kind for name, kind in kinds.items() if kind not in _MARKERS}
        if unknown:
            raise CompileError(f"parameter kinds must be int or str, got {unknown}")
        self._build = build
        self._kinds = kinds
        self._using = using
        self._prepare = prepare
        self._compiled: _Compiled | None = None
        self._lock = threading.Lock()

    def compiled(self) -> _Compiled:
        """The compiled query, compiled on the first call (twice, and the two compared)."""
        compiled = self._compiled
        if compiled is None:
            with self._lock:
                compiled = self._compiled
                if compiled is None:
                    compiled = _compile(self._build, self._kinds, self._using, 0)
                    again = _compile(self._build, self._kinds, self._using, len(self._kinds))
                    if (compiled.sql, compiled.params, compiled.slots) != (
                        again.sql,
                        again.params,
                        again.slots,
                    ):
                        raise CompileError(f"the SQL depends on the parameters' values:\n{compiled.sql}")
                    self._compiled = compiled
        return compiled

    def all(self, **values: Any) -> list[M]:
        """The rows for these parameter values, as model instances (with their select_related objects)."""
        if values.keys() != self._kinds.keys():
            raise TypeError(f"expected parameters {sorted(self._kinds)}, got {sorted(values)}")
        if any(type(value) is int and value not in _SMALLEST_INTEGER_COLUMN for value in values.values()):
            return list(self._build(**values).using(self._using))
        compiled = self.compiled()
        params = list(compiled.params)
        for position, name in compiled.slots:
            params[position] = values[name]
        connection = connections[self._using]
        with connection.cursor() as cursor:
            if self._prepare:
                prepared.execute(cursor, self._prepare, compiled.sql, params)
            else:
                cursor.execute(compiled.sql, params)
            rows = cursor.fetchall()
        return [self._instance(compiled, row, connection) for row in rows]

    def first(self, **values: Any) -> M | None:
        """The first row (the queryset orders and limits), or None."""
        rows = self.all(**values)
        return rows[0] if rows else None

    def _instance(self, compiled: _Compiled, row: Sequence[Any], connection: Any) -> M:
        if compiled.converters:
            row = list(row)
            for column, functions, expression in compiled.converters:
                value = row[column]
                for function in functions:
                    value = function(value, expression, connection)
                row[column] = value
        obj = compiled.model.from_db(self._using, compiled.init_list, row[compiled.fields])
        for populator in compiled.related:
            populator.populate(row, obj)
        return obj  # type: ignore[return-value]
