"""OpenAPI schema hooks (drf-spectacular settings): the schema states what the serializers refuse."""

from __future__ import annotations

import inspect
from typing import Any


def lib_doc_excludes() -> list[type]:
    """drf-spectacular describes a component with the first docstring in its class's MRO before DRF's own
    classes; the serializer mixins' docstrings (how they check) are no description of a request."""
    from drf_spectacular.plumbing import get_lib_doc_excludes

    from clusterdesigner.api import KnownKeysOnly, StrictJSONTypes

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
