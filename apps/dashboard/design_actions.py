"""Design-page actions beside the page itself: the owner's share-link list (swapped in by static/js/design.js
after a link is created or revoked through the API)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from apps.designs import selectors


@login_required
@require_GET
def share_links_table(request: HttpRequest, design_id: int) -> HttpResponse:
    """The owner's share-link table alone (includes/_share_links.html); 404 for anyone else."""
    design = selectors.design_get_owned(user=request.user, design_id=design_id)
    context = {"design": design, "share_links": selectors.share_link_list(design=design)[:20]}
    response = render(request, "includes/_share_links.html", context)
    response["Cache-Control"] = "private, no-store"
    return response
