"""API plumbing shared by every app: the error envelope (permissions and pagination:
clusterdesigner.permissions).

Every error response has one shape::

    {"error": {"code": "invalid", "message": "...", "fields": {"parallelism.tp": ["..."]}}}

A database that goes away mid-request (a restart, a failover, a killed connection) is a 503 with code
"database_unavailable" and Retry-After, not Django's HTML 500: Django closes the broken connection when the
request ends (and CONN_HEALTH_CHECKS replaces a dead idle one), so the next request reconnects.

Why not drf-standardized-errors (tried with 0.16): its own shape ({"type", "errors": [...]}) needs a custom
formatter to become this envelope, and the domain, engine and database errors still need converting, so the
adapter was longer (55 lines) than exception_handler (37). It also changes behaviour: it flattens nested
errors breadth-first, so "message" can name a shallower field than the first one (``name`` instead of
``spec.cluster.nodes``); a nested non-field error gets a ".non_field_errors" suffix
(``spec.costs.cloud.1.non_field_errors``, here ``spec.costs.cloud.1``); and it answers every non-DRF
exception itself as a 500, so an oversized body (RequestDataTooBig) was a 500 instead of the 413
(tests/project/test_bad_input.py). Its list-index paths (``spec.costs.cloud.0.offering``) match ours.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults as django_defaults
from rest_framework import exceptions, serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from clusterdesigner.engine.core.errors import EngineError, SolverLimitError
from clusterdesigner.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    ServiceUnavailable,
    first_message,
    flatten_fields,
)

logger = logging.getLogger(__name__)
DATABASE_RETRY_AFTER_S = 5


def error_body(code: str, message: str, fields: dict[str, list[str]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, (InvalidInput, Conflict)):
        status = 409 if isinstance(exc, Conflict) else 400
        return Response(error_body(exc.code, exc.message, exc.fields), status=status)
    if isinstance(exc, SolverLimitError):  # not bad input, and not shown infeasible: the solver gave up
        return Response(error_body("solver_limit", exc.message), status=422)
    if isinstance(exc, EngineError):
        fields = {exc.field or "non_field_errors": [exc.message]}
        message = f"{exc.field}: {exc.message}" if exc.field else exc.message
        return Response(error_body("invalid", message, fields), status=400)
    if isinstance(exc, ServiceUnavailable):
        logger.warning("%s during %s: %s", exc.code, type(context.get("view")).__name__, exc.__cause__ or exc)
        return Response(
            error_body(exc.code, exc.message), status=503, headers={"Retry-After": str(exc.retry_after_s)}
        )
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable during %s: %s", type(context.get("view")).__name__, exc)
        body = error_body("database_unavailable", "The database is unavailable; try again shortly.")
        return Response(body, status=503, headers={"Retry-After": str(DATABASE_RETRY_AFTER_S)})
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    if isinstance(exc, (Http404, NotFound)):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = flatten_fields(exc.detail)
        response.data = error_body("invalid", first_message(fields), fields)
    else:
        detail = getattr(exc, "detail", str(exc))
        code = getattr(exc, "default_code", "error")
        if hasattr(detail, "code") and detail.code:
            code = detail.code
        response.data = error_body(str(code), str(detail))
    return response


class ErrorDetailSerializer(serializers.Serializer[Any]):
    code = serializers.CharField()
    message = serializers.CharField()
    # the stubs read this as Serializer.fields, but the metaclass pops declared fields off the class
    fields = serializers.DictField(child=serializers.ListField(child=serializers.CharField()))  # type: ignore[assignment]


class ErrorSerializer(serializers.Serializer[Any]):
    """The one error envelope, documented in the schema for every error response."""

    error = ErrorDetailSerializer()


# --- Django's own 404 and 500 pages, as the envelope under /api/ --------------------------------------------


def page_not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """A URL under /api/ that matches no route (e.g. an id with a dot or a slash) is a JSON 404, not HTML."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return django_defaults.page_not_found(request, exception)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's own 400s (a body over DATA_UPLOAD_MAX_MEMORY_SIZE read before DRF parses it, a bad Host) as
    the envelope under /api/; a body over the limit is a 413."""
    from django.core.exceptions import RequestDataTooBig

    if not request.path.startswith("/api/"):
        return django_defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = error_body("too_large", f"request body is over the limit of {limit} bytes")
        return JsonResponse(body, status=413)
    return JsonResponse(error_body("bad_request", "Bad request."), status=400)


def server_error(request: HttpRequest) -> HttpResponse:
    # Django calls this handler while handling the exception, so it is the one sys.exc_info() holds: a view,
    # a template or a middleware (the session's save) that lost the database lands here.
    if isinstance(sys.exc_info()[1], (OperationalError, InterfaceError)):
        return database_unavailable(request)
    if request.path.startswith("/api/"):
        body = error_body("server_error", "Internal server error; it has been logged.")
        return JsonResponse(body, status=500)
    return django_defaults.server_error(request)


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """503 with Retry-After when the database went away mid-request: the envelope under /api/ (which DRF's
    views answer themselves, see exception_handler), elsewhere a page rendered without the request's context,
    which would read the session and the user from the database again."""
    if request.path.startswith("/api/"):
        body = error_body("database_unavailable", "The database is unavailable; try again shortly.")
        response: HttpResponse = JsonResponse(body, status=503)
    else:
        response = HttpResponse(render_to_string("503.html"), status=503)
    response["Retry-After"] = str(DATABASE_RETRY_AFTER_S)
    return response


# --- JSON types as the schema states them -------------------------------------------------------------------


def _kind_error(kind: type | tuple[type, ...], reason: str) -> Callable[[Any, Any], str | None]:
    """A check that ``value`` is a ``kind`` (as JSON decodes it), else ``reason``."""
    return lambda field, value: None if isinstance(value, kind) else reason


def _number_error(field: Any, value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "must be a number"
    if isinstance(field, serializers.IntegerField) and isinstance(value, float) and not value.is_integer():
        return "must be a whole number"
    return None


def _choice_error(field: Any, value: Any) -> str | None:
    """A choice among strings must be sent as a string; choices of other types are left to DRF."""
    if isinstance(value, str) or not all(isinstance(c, str) for c in field.choices):
        return None
    return "must be a string"


# The first row whose field class matches decides (a MultipleChoiceField is a ChoiceField that DRF checks).
_JSON_TYPE_CHECKS: tuple[tuple[type | tuple[type, ...], Callable[[Any, Any], str | None]], ...] = (
    (serializers.BooleanField, _kind_error(bool, "must be true or false")),
    ((serializers.IntegerField, serializers.FloatField), _number_error),
    (serializers.MultipleChoiceField, lambda field, value: None),
    (serializers.ChoiceField, _choice_error),
    (
        (serializers.CharField, serializers.DateField, serializers.DateTimeField),
        _kind_error(str, "must be a string"),
    ),
    (serializers.DictField, _kind_error(dict, "must be an object")),
    ((serializers.ListField, serializers.ListSerializer), _kind_error(list, "must be a list")),
    (serializers.Serializer, _kind_error(dict, "must be an object")),
)


def json_type_error(field: serializers.Field[Any, Any, Any, Any], value: Any) -> str | None:
    """Why ``value`` (as JSON sent it) is the wrong type for ``field``, or None. DRF coerces: "64" for an
    integer, 0 for a string, "yes" for a boolean; a JSON client sending those has a bug worth a 400."""
    if value is None:
        return None  # DRF's own allow_null check answers
    for kind, check in _JSON_TYPE_CHECKS:
        if isinstance(field, kind):
            return check(field, value)
    return None


class StrictJSONTypes:
    """Serializer mixin: refuse a JSON value of the wrong type with the field named, instead of coercing it.
    Form input (a QueryDict, all strings) is left to DRF's usual parsing."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict) and not hasattr(data, "getlist"):
            errors: dict[str, list[str]] = {}
            for name, field in self.fields.items():  # type: ignore[attr-defined]
                if field.read_only or field.source == "*" or name not in data:
                    continue
                reason = json_type_error(field, data[name])
                child = getattr(field, "child", None)
                nested = isinstance(child, serializers.Serializer)
                if reason is None and data[name] is not None and child is not None and not nested:
                    values = data[name].values() if isinstance(data[name], dict) else data[name]
                    reason = next((r for r in (json_type_error(child, v) for v in values) if r), None)
                if reason:
                    errors[name] = [reason]
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)  # type: ignore[misc]


class KnownKeysOnly:
    """Serializer mixin for JSON objects (the design spec, analysis params): a key the serializer does not
    define is refused, naming it, instead of being dropped in silence (a misspelt "goal" or
    "parallelism.bogus" would save as if not given)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            known = self.fields  # type: ignore[attr-defined]
            unknown = sorted(set(data) - set(known))
            if unknown:
                reason = f"unknown field; known: {', '.join(known)}"
                raise serializers.ValidationError({key: [reason] for key in unknown})
        return super().to_internal_value(data)  # type: ignore[misc]


class FileNegotiation(DefaultContentNegotiation):
    """For an action whose ``format`` query parameter names the file to build (csv, xlsx, torchrun, …), not a
    renderer: DRF's default negotiation would read it as URL_FORMAT_OVERRIDE, find no renderer called "xlsx"
    and answer 404. The file is an HttpResponse; the renderer only draws error envelopes, as JSON."""

    def select_renderer(
        self, request: Any, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> Any:
        first = next(iter(renderers))
        return first, first.media_type
