"""Request parsers for the API: DRF's, with the body size limit and JSON values no column stores refused.

Kept apart from api.py, as permissions.py is: DRF imports the parser classes while rest_framework.views loads.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

from django.conf import settings
from rest_framework import exceptions, parsers

Context = dict[str, Any] | None


class PayloadTooLarge(exceptions.APIException):
    status_code = 413
    default_code = "too_large"
    default_detail = "request body is too large"


class _NonFinite(float):
    """A NaN or ±Infinity read from JSON, kept as a marker so the error can name the field it sits in."""


NON_FINITE = "must be a finite number (NaN, Infinity and numbers beyond ±1.8e308 are not accepted)"
NUL = "must not contain NUL characters"


def _bad_json_value(value: Any, path: str = "") -> tuple[str, str] | None:
    """The first (field path, reason) for a value no JSON column stores: a non-finite number (SQLite writes
    NaN, PostgreSQL refuses it) or a NUL character (PostgreSQL's jsonb refuses it), in a key or a value."""
    where = path or "non_field_errors"
    if isinstance(value, float) and not math.isfinite(value):
        return where, NON_FINITE
    if isinstance(value, str):
        return (where, NUL) if "\x00" in value else None
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        child = f"{path}.{key}" if path else str(key)
        if isinstance(key, str) and "\x00" in key:
            return child, NUL
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
    body = stream.read(limit + 1) if limit is not None else stream.read()
    if limit is not None and len(body) > limit:
        raise PayloadTooLarge(f"request body is over the limit of {limit} bytes")
    return body


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser with a body size limit, and NaN / Infinity / out-of-range numbers (1e400) and NUL
    characters refused with the field they were in, e.g. ``spec.workload.training.tokens`` (Python's json
    accepts all of them)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Context = None) -> Any:
        body = _read_limited(stream, parser_context)
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            data = json.loads(body.decode(encoding), parse_constant=_NonFinite, parse_float=_parse_float)
        except (ValueError, UnicodeDecodeError) as exc:
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
