"""The API's JSON renderer: DRF's, plus JSON that is already encoded sent as it is.

Kept apart from api.py, as parsers.py is: DRF imports the renderer classes while rest_framework.views loads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rest_framework import renderers

from clusterdesigner.memo import JSONText


class JSONRenderer(renderers.JSONRenderer):
    """DRF's JSON renderer; a JSONText body goes out as it is, unless indented output was asked for
    (``Accept: application/json; indent=4``, or the browsable API), which decodes it and renders as usual."""

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        if isinstance(data, JSONText):
            if not self.get_indent(accepted_media_type or "", renderer_context or {}):
                return data.encode()
            data = json.loads(data)
        return super().render(data, accepted_media_type, renderer_context)
