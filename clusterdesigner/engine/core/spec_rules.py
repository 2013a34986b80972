"""The rules a spec field is checked by, and the one parser that applies them (types, known keys, ranges,
defaults), with SpecError naming every refused field by its path. clusterdesigner.engine.design.spec builds
the design spec's sections from them; clusterdesigner.engine.cost.site a site's, without importing the spec
(which imports the cost engine's request, which reads sites).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from clusterdesigner.engine.core.errors import InputError

# Nested error detail: a field's messages, or a nested section's detail, by key.
Errors = dict[str, Any]
_REQUIRED = "This field is required."
_SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")
_NO_DEFAULT = object()
NON_FIELD = "non_field_errors"  # an error about a value as a whole (flattened to the value's own path)


@dataclass(frozen=True)
class Rule:
    """How one spec field is checked: its JSON type (int, float, bool, text, slug, choice), its bounds or
    choices, and its default (applied when the key is missing; none: the field is optional)."""

    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    items: str | None = None  # a list's items' kind
    required: bool = False
    default: Any = _NO_DEFAULT


class SpecError(InputError):
    """Spec fields refused, every one with its reasons: ``errors`` is nested by key as the user sent them
    (``{"cluster": {"nodes": ["..."]}}``); ``field`` and ``message`` are the first one's."""

    def __init__(self, errors: Errors, *, prefix: str = "spec") -> None:
        self.prefix = prefix
        path, message = _first(errors, prefix)
        super().__init__(message, field=path)
        self.errors = errors

    def fields(self) -> dict[str, list[str]]:
        """Every refused field by its full path, in the order found: ``{"spec.cluster.nodes": [...]}``."""
        out: dict[str, list[str]] = {}

        def walk(node: Errors, prefix: str) -> None:
            for key, value in node.items():
                path = prefix if key == NON_FIELD else f"{prefix}.{key}" if prefix else key
                if isinstance(value, dict):
                    walk(value, path)
                else:
                    out.setdefault(path, []).extend(str(v) for v in value)

        walk(self.errors, self.prefix)
        return out


def _first(errors: Errors, prefix: str) -> tuple[str, str]:
    key, value = next(iter(errors.items()))
    path = prefix if key == NON_FIELD else f"{prefix}.{key}" if prefix else key
    return _first(value, path) if isinstance(value, dict) else (path, str(value[0]))


def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float))


# A kind's JSON type test and the reason it fails (any other kind is a string).
_JSON_TYPES: Mapping[str, tuple[Callable[[Any], bool], str]] = {
    "bool": (lambda value: isinstance(value, bool), "must be true or false"),
    "int": (_is_number, "must be a number"),
    "float": (_is_number, "must be a number"),
    "object": (lambda value: isinstance(value, Mapping), "must be an object"),
    "list": (lambda value: isinstance(value, list), "must be a list"),
    "any": (lambda value: True, ""),
}
_STRING = (lambda value: isinstance(value, str), "must be a string")


def type_error(rule: Rule, value: Any) -> str | None:
    """Why ``value`` (as JSON sent it) is the wrong type for ``rule``, or None (no coercion of "64" or 0;
    null is the value check's to refuse)."""
    if value is None:
        return None
    fits, reason = _JSON_TYPES.get(rule.kind, _STRING)
    if not fits(value):
        return reason
    if rule.kind == "int" and isinstance(value, float) and not value.is_integer():
        return "must be a whole number"
    if rule.kind == "list" and rule.items:
        item = Rule(rule.items)
        return next((r for r in (type_error(item, v) for v in value) if r), None)
    return None


def _number(rule: Rule, value: Any) -> tuple[Any, list[str]]:
    if rule.kind == "int":
        text = re.sub(r"\.0*\s*$", "", str(value))
        if not re.fullmatch(r"[-+]?\d+", text):
            return None, ["A valid integer is required."]
        number: float = int(text)
    else:
        try:
            number = float(value)
        except OverflowError:
            return None, ["Integer value too large to convert to float"]
        if not math.isfinite(number):
            return None, ["A valid number is required."]
    messages = []
    if rule.high is not None and number > rule.high:
        messages.append(f"Ensure this value is less than or equal to {rule.high}.")
    if rule.low is not None and number < rule.low:
        messages.append(f"Ensure this value is greater than or equal to {rule.low}.")
    return number, messages


def _text(rule: Rule, value: str) -> tuple[Any, list[str]]:
    if rule.kind == "choice":
        return value, ([] if value in rule.choices else [f'"{value}" is not a valid choice.'])
    text = value.strip()
    if not text:
        return text, ["This field may not be blank."]
    if rule.kind == "slug" and not _SLUG.match(text):
        return text, ['Enter a valid "slug" consisting of letters, numbers, underscores or hyphens.']
    if rule.max_length is not None and len(text) > rule.max_length:
        return text, [f"Ensure this field has no more than {rule.max_length} characters."]
    return text, []


def check_value(rule: Rule, value: Any) -> tuple[Any, list[str]]:
    if value is None:
        return None, ["This field may not be null."]
    if rule.kind in ("int", "float"):
        return _number(rule, value)
    if rule.kind == "bool":
        return value, []
    if rule.kind in ("object", "list", "any"):
        # The clean value is the parser's own: the caller may change it (a service fills a choice's pricing
        # models) and store it without touching what was sent.
        return copy.deepcopy(value), []
    return _text(rule, value)


def parse_object(
    data: Any, rules: Mapping[str, Rule], nested: Mapping[str, Callable[[Any], Any]] | None = None
) -> dict[str, Any]:
    """``data`` checked field by field against ``rules``: unknown keys first, then JSON types, then each value
    (required, bounds, choices; a ``nested`` field by its own parser); defaults filled in. Raises SpecError
    with every refused field, its path relative to ``data``."""
    if not isinstance(data, Mapping):
        raise SpecError({NON_FIELD: ["must be an object"]}, prefix="")
    unknown = sorted(set(data) - set(rules))
    if unknown:
        reason = f"unknown field; known: {', '.join(rules)}"
        raise SpecError({key: [reason] for key in unknown}, prefix="")
    wrong = {k: [r] for k, rule in rules.items() if k in data for r in [type_error(rule, data[k])] if r}
    if wrong:
        raise SpecError(wrong, prefix="")
    clean: dict[str, Any] = {}
    errors: Errors = {}
    for key, rule in rules.items():
        if key not in data:
            if rule.required:
                errors[key] = [_REQUIRED]
            elif rule.default is not _NO_DEFAULT:
                clean[key] = copy.deepcopy(rule.default)
            continue
        value, messages = check_value(rule, data[key])
        if messages:
            errors[key] = messages
            continue
        try:
            clean[key] = nested[key](value) if nested and key in nested else value
        except SpecError as exc:
            errors[key] = exc.errors
    if errors:
        raise SpecError(errors, prefix="")
    return clean
