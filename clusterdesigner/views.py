"""Project-level views that belong to no app."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseRedirect
from django.templatetags.static import static


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """/favicon.ico, which browsers and tools ask for whatever the page links, sent to the SVG icon.

    The static URL is resolved per request, not at import: with the manifest storage a missing manifest entry
    would otherwise break the whole URLconf. Temporary (302), because that URL carries the file's hash."""
    response = HttpResponseRedirect(static("favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response
