"""Request parsers for the API: DRF's, with the body size limit and JSON values no column stores refused.

Kept apart from api.py, as permissions.py is: DRF imports the parser classes while rest_framework.views loads.
"""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers

Context = Mapping[str, Any] | None


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "too_large"
    default_detail = "request body is too large"


class _NonFinite(float):
    """A NaN or ±Infinity read from JSON, kept as a marker so the error can name the field it sits in."""


NON_FINITE = "must be a finite number (NaN, Infinity and numbers beyond ±1.8e308 are not accepted)"
NUL = "must not contain NUL characters"
SURROGATE = "must not contain unpaired surrogates (\\ud800-\\udfff): they are not text"
# Deeper than any body the API takes (a design spec is 6 levels), and far below what json.loads and the
# recursive code after it (serializers, the error envelope) survive: 5,000 levels raised RecursionError.
MAX_JSON_DEPTH = 64
TOO_DEEP = f"nested more than {MAX_JSON_DEPTH} levels deep"
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')


def _field_name(key: str) -> str:
    """A key as it can appear in an error's field path: an unpaired surrogate as its escape, ``\\ud800``
    (the envelope is UTF-8, which cannot carry it)."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return NUL
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return SURROGATE
    return None


def _too_deep(text: str) -> str | None:
    """The field path (``spec.workload.a.0.b``) of the first value nested deeper than MAX_JSON_DEPTH, or
    None; read from the JSON text before it is parsed, so the error names the deepest place at fault, not
    only its top-level key. Brackets inside strings are skipped with the strings; an array's index counts its
    commas. Malformed JSON is left to json.loads."""
    # One entry per open container: [is_object, key or index, expecting a key].
    stack: list[list[Any]] = []
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            if len(stack) >= MAX_JSON_DEPTH:
                if not stack[0][0]:  # a bare array: no field to name
                    return "non_field_errors"
                return (
                    ".".join(str(entry[1]) for entry in stack if entry[1] is not None) or "non_field_errors"
                )
            stack.append([True, None, True] if token == "{" else [False, 0, False])
        elif not stack:
            continue
        elif token in "]}":
            stack.pop()
        elif token == ",":
            top = stack[-1]
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif token == ":":
            stack[-1][2] = False
        elif stack[-1][0] and stack[-1][2]:
            try:
                stack[-1][1] = _field_name(json.loads(token))
            except ValueError:
                stack[-1][1] = None
    return None


def _bad_json_value(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first (field path, reason) for a value no JSON column stores: a non-finite number (SQLite writes
    NaN, PostgreSQL refuses it), a NUL character (PostgreSQL's jsonb refuses it) or an unpaired surrogate
    (no UTF-8 encoder writes it), in a key or a value. Recursive: the caller has bounded the depth."""
    where = path or "non_field_errors"
    if isinstance(value, float) and not math.isfinite(value):
        return where, NON_FINITE
    if isinstance(value, str):
        problem = _text_problem(value)
        return (where, problem) if problem else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        name = _field_name(key) if isinstance(key, str) else str(key)
        child = f"{path}.{name}" if path else name
        problem = _text_problem(key) if isinstance(key, str) else None
        if problem:
            return child, problem
        found = _bad_json_value(item, child)
        if found:
            return found
    return None


def _refuse_declared_length(parser_context: Context, *, allowance: int) -> None:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    request = (parser_context or {}).get("request")
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
    except ValueError:
        declared = 0
    if limit is not None and declared > limit + allowance:
        raise PayloadTooLarge(f"request body is {declared} bytes; the limit is {limit} bytes")


def _read_limited(stream: Any, parser_context: Context) -> bytes:
    """Read at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes; a longer body is 413, before any of it is parsed.

    Django checks that limit only when request.body or request.POST is read; DRF's parsers read the stream.
    """
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if stream is None:
        return b""
    _refuse_declared_length(parser_context, allowance=0)
    body: bytes = stream.read(limit + 1) if limit is not None else stream.read()
    if limit is not None and len(body) > limit:
        raise PayloadTooLarge(f"request body is over the limit of {limit} bytes")
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with a body size limit; NaN / Infinity / out-of-range numbers (1e400), NUL
    characters and unpaired surrogates (``"\\ud800"``) refused with the field they were in, e.g.
    ``spec.workload.training.tokens`` (Python's json accepts all of them); and nesting deeper than
    MAX_JSON_DEPTH refused with the top-level field it is in, before it is parsed."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Context = None) -> Any:
        body = _read_limited(stream, parser_context)
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        deep = _too_deep(text)
        if deep:
            raise exceptions.ValidationError({deep: [TOO_DEEP]})
        try:
            data = json.loads(text, parse_constant=_NonFinite, parse_float=_parse_float)
        except RecursionError as exc:  # not expected after _too_deep; never a 500
            raise exceptions.ValidationError({"non_field_errors": [TOO_DEEP]}) from exc
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        bad = _bad_json_value(data)
        if bad:
            raise exceptions.ValidationError({bad[0]: [bad[1]]})
        return data


def _parse_float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(value)


class FormParser(parsers.FormParser):
    """DRF's form parser with the same body size limit as JSON."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Context = None) -> Any:
        return super().parse(io.BytesIO(_read_limited(stream, parser_context)), media_type, parser_context)


class MultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser, refusing a body whose declared length is over the limit (plus room for the
    form's own boundaries and headers). Django streams file parts to disk and limits only the other fields;
    the CSV importer checks its file's size itself."""

    FORM_OVERHEAD_BYTES = 64 * 1024

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Context = None) -> Any:
        _refuse_declared_length(parser_context, allowance=self.FORM_OVERHEAD_BYTES)
        return super().parse(stream, media_type, parser_context)
