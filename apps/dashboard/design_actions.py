"""Design-page actions beside the page itself: the share-link list (swapped in by static/js/design.js after a
link is created or revoked through the API), cloning a design you can read, moving one you edit into a
team and discarding your unsaved draft of it."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from apps.designs import drafts, selectors, services
from apps.designs import prices as design_prices
from apps.teams import services as team_services
from clusterdesigner.errors import InvalidInput, NotFound
from clusterdesigner.views import or_404


@login_required
@require_GET
def share_links_table(request: HttpRequest, design_id: int) -> HttpResponse:
    """The share-link table alone (includes/_share_links.html), for those who may edit the design; 404 for
    anyone else."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    context = {"design": design, "share_links": selectors.share_link_list(design=design)[:20]}
    response = render(request, "includes/_share_links.html", context)
    response["Cache-Control"] = "private, no-store"
    return response


@login_required
@require_POST
def design_clone(request: HttpRequest, design_id: int) -> HttpResponse:
    """Copy the current version of a design this user can read into a new private design they own, then open
    it. A design they cannot read is a 404, as on its page."""
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    try:
        copy = services.design_clone(design=design, owner=request.user)
    except InvalidInput as exc:
        # The copy is checked like any new design; a stored spec the catalog no longer supports is refused.
        reasons = "; ".join(f"{path}: {m}" for path, found in exc.fields.items() for m in found)
        messages.error(request, f"Could not clone “{design.name}”: {reasons}")
        return HttpResponseRedirect(reverse("dashboard:design", args=[design.pk]))
    messages.success(
        request, f"Cloned “{design.name}” (version {design.version}): this copy is yours to edit."
    )
    return HttpResponseRedirect(reverse("dashboard:design", args=[copy.pk]))


@login_required
@require_POST
def draft_discard(request: HttpRequest, design_id: int) -> HttpResponse:
    """Discard the user's unsaved draft of a design they may edit (the API's DELETE, as a form), then back to
    the editor (``back=edit``) or the design page; 404 for a design they may not change."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    try:
        drafts.draft_discard(design=design, user=request.user)
    except NotFound:
        messages.info(request, "There was no unsaved draft to discard.")
    else:
        messages.success(
            request, f"Discarded your unsaved draft; the design stays at version {design.version}."
        )
    page = "dashboard:design-edit" if request.POST.get("back") == "edit" else "dashboard:design"
    return HttpResponseRedirect(reverse(page, args=[design.pk]))


@login_required
@require_POST
def design_move(request: HttpRequest, design_id: int) -> HttpResponse:
    """Move a design this user may edit into a team they own or edit (the API's move, as a form); 404 for a
    design they may not change, the reason on the page for a team they may not move into."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    raw = request.POST.get("team") or ""
    team_id = int(raw) if raw.isascii() and raw.isdigit() else None
    try:
        team_services.owned_move(user=request.user, obj=design, team_id=team_id)
    except InvalidInput as exc:
        messages.error(request, f"Could not move “{design.name}”: team: {'; '.join(exc.fields['team'])}")
    else:
        messages.success(request, f"Moved “{design.name}” into the team “{design.team}”.")
    return HttpResponseRedirect(reverse("dashboard:design", args=[design.pk]))


@login_required
@require_POST
def design_prices_accept(request: HttpRequest, design_id: int) -> HttpResponse:
    """Accept the prices the design's current version resolves now (the API's prices/accept, as a form): it
    is no longer marked stale. 404 for a design this user may not change."""
    design = or_404(selectors.design_get_editable(user=request.user, design_id=design_id))
    design_prices.design_price_accept(design=design)
    messages.success(request, f"Accepted the prices “{design.name}” resolves now.")
    return HttpResponseRedirect(reverse("dashboard:design", args=[design.pk]))
