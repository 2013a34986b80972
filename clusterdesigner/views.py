"""Project-level views that belong to no app."""

from __future__ import annotations

from typing import TypeVar

from django.http import Http404, HttpRequest, HttpResponseRedirect
from django.templatetags.static import static

_T = TypeVar("_T")


def or_404(found: _T | None) -> _T:
    """What a selector found, or 404 when it found nothing: selectors return None and views decide (never 403,
    so that what is not yours is indistinguishable from what does not exist)."""
    if found is None:
        raise Http404
    return found


def favicon(request: HttpRequest) -> HttpResponseRedirect:
    """/favicon.ico, which browsers and tools ask for whatever the page links, sent to the SVG icon.

    The static URL is resolved per request, not at import: with the manifest storage a missing manifest entry
    would otherwise break the whole URLconf. Temporary (302), because that URL carries the file's hash."""
    response = HttpResponseRedirect(static("favicon.svg"))
    response["Cache-Control"] = "public, max-age=86400"
    return response
