"""OpenAPI schema hooks (drf-spectacular settings): the schema states what the serializers refuse."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def lib_doc_excludes() -> list[type]:
    """drf-spectacular describes a component with the first docstring in its class's MRO before DRF's own
    classes; the serializer mixins' docstrings (how they check) are no description of a request."""
    from drf_spectacular import plumbing

    from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes

    # drf-spectacular ships no type hints: its function is called through the type it has
    get_lib_doc_excludes: Callable[[], list[type]] = plumbing.get_lib_doc_excludes
    return [*get_lib_doc_excludes(), KnownKeysOnly, StrictJSONTypes]


def closed_objects(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: a component whose serializer refuses unknown keys (KnownKeysOnly) says so with
    ``additionalProperties: false``."""
    from clusterdesigner.api import KnownKeysOnly

    schemas = result.get("components", {}).get("schemas", {})
    for component in generator.registry._components.values():
        target = component.object
        cls = target if inspect.isclass(target) else type(target)
        if issubclass(cls, KnownKeysOnly) and "properties" in schemas.get(component.name, {}):
            schemas[component.name]["additionalProperties"] = False
    return result


# What the API answers for a query value holding U+0000 (a 400: PostgreSQL text cannot hold it), as the schema
# states it. Python's and ECMA-262's regex syntax read "\x00" alike.
NO_NUL = r"^[^\x00]*$"

# The characters Python's str.strip() removes (str.isspace()), as a regex class body both Python and ECMA-262
# read alike (\xHH and \uHHHH escapes). ECMA's own \s differs (it lacks \x1c-\x1f and \x85, and has \ufeff).
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x1f\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# A filter value as the filters read it: django-filter's text fields strip surrounding whitespace, so a value
# with nothing else (?series=%20) reads as empty, a 400 (StrictFilterBackend); and no NUL.
FILTER_TEXT = rf"^[^\x00]*[^\x00{WHITESPACE}][^\x00]*$"


def query_strings_without_nul(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Postprocessing hook: every free-text filter and search parameter (a string with no enum) says it holds
    no NUL character, which the filters and search refuse with a 400 naming them. Not ``ordering``: an
    unknown ordering, NUL or not, is ignored (DRF's OrderingFilter), so the schema must allow it."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                free_text = schema.get("type") == "string" and "enum" not in schema
                if parameter.get("in") == "query" and free_text and parameter.get("name") != "ordering":
                    schema.setdefault("pattern", NO_NUL)
    return result


# gunicorn answers 414 itself, before the app, for a request line (method, path and query) over its
# limit_request_line (4,094 bytes by default; gunicorn/workers/base.py): every operation can get it.
URI_TOO_LONG = {
    "description": "URI too long: the request line is over the server's limit (4,094 bytes); answered by "
    "gunicorn before the application, as text, not in the error envelope."
}


def uri_too_long(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: every operation documents the 414 the server in front of it may answer."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if isinstance(operation, dict) and "responses" in operation:
                operation["responses"].setdefault("414", dict(URI_TOO_LONG))
    return result


def body_refusals(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Postprocessing hook: every operation that takes a request body documents the 413 the app answers, in
    the error envelope, for a body over DATA_UPLOAD_MAX_MEMORY_SIZE (clusterdesigner/api.py turns Django's
    RequestDataTooBig into it, whatever the view), and the 415 DRF answers, whatever the view, for a body
    whose Content-Type none of the operation's parsers reads (or that has none). The envelope's schema is the
    operation's own 400's. The fuzz found an undocumented 413 on a measured-runs CSV import over 2 MiB, and an
    undocumented 415 on the price-book import (a multipart body sent without its Content-Type)."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            if not isinstance(operation, dict) or "requestBody" not in operation:
                continue
            responses = operation.get("responses", {})
            bad_input = responses.get("400")
            if bad_input and "content" in bad_input:
                responses.setdefault(
                    "413",
                    {"description": "Request body over the size limit.", "content": bad_input["content"]},
                )
                responses.setdefault(
                    "415",
                    {
                        "description": "The body's Content-Type is none this operation reads (its request "
                        "body's media types), or missing.",
                        "content": bad_input["content"],
                    },
                )
    return result
