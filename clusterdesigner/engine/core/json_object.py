"""The JSON form of the engines' typed results: a frozen dataclass that mixes in :class:`JsonObject` is
written by ``to_json()`` as the JSON object the engine has always returned (its fields are the keys, in
declaration order) and read back by ``from_json()``; nested dataclasses, tuples (JSON lists) and mappings
(JSON objects) follow the fields' types.

Three markers say how a key that is not always there is written and read:

- :func:`omit`: the engine writes the key only when it has a value (None is written as no key, and no key
  reads as None);
- :func:`written_with`: the key, null or not, is written whenever another field is set;
- :func:`since`: the key is in every result of that ENGINE_VERSION on, and a result stored by an older
  engine lacks it; there it reads as the marker's default (None, or an empty mapping), so an old stored
  result still reads. It is always written.

A key the dataclass does not define (from another engine version) is ignored; a field without a default
that the JSON lacks is an error naming it.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, field, fields, is_dataclass
from typing import Any, Self, Union, get_args, get_origin, get_type_hints


def omit() -> Any:
    """A key the engine writes only when it has a value."""
    return field(default=None, metadata={"omit": True})


def written_with(name: str) -> Any:
    """A key (possibly null) the engine writes whenever field ``name`` is set."""
    return field(default=None, metadata={"with": name})


def since(version: int, *, factory: Callable[[], Any] | None = None) -> Any:
    """A key every result from ENGINE_VERSION ``version`` on holds; in an older stored result it reads as
    None, or as ``factory()`` (an empty mapping, say) where the readers expect a container."""
    if factory is not None:
        return field(default_factory=factory, metadata={"since": version})
    return field(default=None, metadata={"since": version})


def optional(f: Field[Any]) -> bool:
    """Whether some results lack field ``f``'s key (the engine leaves it out, or an older engine did)."""
    return bool(f.metadata.get("omit") or f.metadata.get("with") or f.metadata.get("since"))


_HINTS: dict[type, dict[str, Any]] = {}


def hints(cls: type) -> dict[str, Any]:
    """The resolved type of each field of ``cls`` (resolved once per class)."""
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    return _HINTS[cls]


def _inner(hint: Any) -> Any:
    """X of ``X | None``."""
    (inner,) = [a for a in get_args(hint) if a is not type(None)]
    return inner


def dump(hint: Any, value: Any) -> Any:
    """``value`` of type ``hint`` as JSON."""
    if value is None:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return dump(_inner(hint), value)
    if origin is tuple:
        return [dump(get_args(hint)[0], item) for item in value]
    if origin is Mapping:
        return {key: dump(get_args(hint)[1], item) for key, item in value.items()}
    if hasattr(value, "to_json"):
        return value.to_json()
    if is_dataclass(hint):
        types_ = hints(hint)  # type: ignore[arg-type]
        return {f.name: dump(types_[f.name], getattr(value, f.name)) for f in fields(hint)}
    return value


def load(hint: Any, data: Any) -> Any:
    """JSON ``data`` read as type ``hint``."""
    if data is None:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return load(_inner(hint), data)
    if origin is tuple:
        return tuple(load(get_args(hint)[0], item) for item in data)
    if origin is Mapping:
        return {key: load(get_args(hint)[1], item) for key, item in data.items()}
    if hasattr(hint, "from_json"):
        return hint.from_json(data)
    if isinstance(hint, type) and is_dataclass(hint):
        types_ = hints(hint)
        return hint(**{f.name: load(types_[f.name], data[f.name]) for f in fields(hint) if f.name in data})
    return data


def _required(f: Field[Any]) -> bool:
    return f.default is MISSING and f.default_factory is MISSING


class JsonObject:
    """to_json/from_json for a dataclass whose fields are the JSON object's keys, in the order the engine
    writes them."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        types_ = hints(type(self))
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is None and f.metadata.get("omit"):
                continue
            if "with" in f.metadata and getattr(self, f.metadata["with"]) is None:
                continue
            out[f.name] = dump(types_[f.name], value)
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """A field without a default that the JSON lacks is an error naming it."""
        names = fields(cls)  # type: ignore[arg-type]
        missing = [f.name for f in names if f.name not in data and _required(f)]
        if missing:
            raise ValueError(f"a stored engine result's {cls.__name__} lacks {', '.join(missing)}")
        types_ = hints(cls)
        return cls(**{f.name: load(types_[f.name], data[f.name]) for f in names if f.name in data})
