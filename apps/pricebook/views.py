"""Price book pages: one book (the user's own, or a team's they are a member of) with its entries, their
source and expiry; owners and editors add, change, expire and delete entries and import a CSV or XLSX file;
every member exports it. Views parse, call one service, and render; a book or entry that is not the user's is
a 404."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from apps.pricebook import selectors, services
from apps.pricebook.models import PriceEntry
from apps.pricebook.serializers import IMPORT_COLUMNS, PriceBookImportSerializer
from apps.teams import access
from apps.teams import selectors as team_selectors
from clusterdesigner.engine.core.offerings import PRICING_MODELS
from clusterdesigner.engine.cost.cost_request import COLO_BASES
from clusterdesigner.errors import InvalidInput
from clusterdesigner.views import or_404

# The form's fields: the entry's columns (the import's), each left out when blank.
FORM_FIELDS = IMPORT_COLUMNS
DATES = frozenset({"valid_from", "expires_on"})
NUMBERS = frozenset({"value"})


def _book_url(team_id: int | None) -> str:
    return reverse("pricebook:team-book", args=[team_id]) if team_id else reverse("pricebook:book")


def _form_data(post: Any) -> dict[str, Any]:
    """The entry's fields from the form: blank ones left out, so the kind's rule names what is missing."""
    return {name: post[name].strip() for name in FORM_FIELDS if post.get(name, "").strip()}


def _context(request: HttpRequest, team: Any, **extra: Any) -> dict[str, Any]:
    team_id = team.pk if team else None
    entries = or_404(selectors.price_book_entries(user=request.user, team_id=team_id))
    can_edit = _can_edit(request, team)
    return {
        "team": team,
        "entries": entries,
        "can_edit": can_edit,
        "today": timezone.localdate(),
        "teams": team_selectors.team_list(user=request.user),
        "kinds": PriceEntry.Kind.choices,
        "network_items": PriceEntry.NetworkItem.choices,
        "pricing_models": PRICING_MODELS,
        "colocation_bases": COLO_BASES,
        "columns": IMPORT_COLUMNS,
        "form": {},
        "errors": {},
        **extra,
    }


def _can_edit(request: HttpRequest, team: Any) -> bool:
    """Own book: always; a team's: its owners and editors."""
    return team is None or team_selectors.membership_role(user=request.user, team=team) in access.EDIT_ROLES


def _team(request: HttpRequest, team_id: int | None) -> Any:
    return or_404(team_selectors.team_get(user=request.user, team_id=team_id)) if team_id else None


@login_required
@require_http_methods(["GET", "POST"])
def book(request: HttpRequest, team_id: int | None = None) -> HttpResponse:
    """The book's page; a POST adds an entry (action=add) or imports a file (action=import)."""
    team = _team(request, team_id)
    if request.method == "GET":
        return render(request, "pricebook/book.html", _context(request, team))
    if not _can_edit(request, team):
        raise Http404("not an owner or editor of this team")
    errors: dict[str, list[str]] = {}
    form: dict[str, Any] = {}
    try:
        if request.POST.get("action") == "import":
            upload = PriceBookImportSerializer(data={"file": request.FILES.get("file")})
            if not upload.is_valid():
                raise InvalidInput({"file": [str(m) for m in upload.errors.get("file", ["no file"])]})
            saved = services.price_entry_import(
                user=request.user, content=upload.validated_data["file"], team=team.pk if team else None
            )
            messages.success(request, f"Imported {len(saved)} entries.")
        else:
            form = _form_data(request.POST)
            data = {**form, "team": team.pk} if team else form
            entry = services.price_entry_create(user=request.user, data=data)
            messages.success(request, f"Added entry {entry.pk}: {entry}.")
    except InvalidInput as exc:
        errors = exc.fields
        context = _context(request, team, errors=errors, form=form, action=request.POST.get("action"))
        return render(request, "pricebook/book.html", context, status=400)
    return redirect(_book_url(team.pk if team else None))


def _editable(request: HttpRequest, entry_id: int) -> PriceEntry:
    return or_404(selectors.price_entry_get_editable(user=request.user, entry_id=entry_id))


@login_required
@require_http_methods(["GET", "POST"])
def entry_edit(request: HttpRequest, entry_id: int) -> HttpResponse:
    """An entry's form, filled in; a POST changes it (fields left blank are cleared)."""
    entry = _editable(request, entry_id)
    if request.method == "POST":
        form = _form_data(request.POST)
        # Every field is sent: one the form left blank is cleared (null, or empty text).
        data = {
            n: form.get(n, None if n in services.NULLABLE or n in DATES | NUMBERS else "")
            for n in FORM_FIELDS
        }
        try:
            services.price_entry_update(entry=entry, data=data)
        except InvalidInput as exc:
            context = {"entry": entry, "form": form, "errors": exc.fields, **_choices()}
            return render(request, "pricebook/entry_edit.html", context, status=400)
        messages.success(request, f"Changed entry {entry.pk}.")
        return redirect(_book_url(entry.team_id))
    form = {name: _form_value(getattr(entry, name)) for name in FORM_FIELDS}
    return render(
        request, "pricebook/entry_edit.html", {"entry": entry, "form": form, "errors": {}, **_choices()}
    )


def _form_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _choices() -> dict[str, Any]:
    return {
        "kinds": PriceEntry.Kind.choices,
        "network_items": PriceEntry.NetworkItem.choices,
        "pricing_models": PRICING_MODELS,
        "colocation_bases": COLO_BASES,
    }


@login_required
@require_POST
def entry_expire(request: HttpRequest, entry_id: int) -> HttpResponse:
    """Expire an entry now (it was valid through yesterday): designs using it then show it as stale."""
    entry = _editable(request, entry_id)
    try:
        services.price_entry_expire(entry=entry, today=timezone.localdate())
        messages.success(request, f"Expired entry {entry.pk} on {entry.expires_on}.")
    except InvalidInput as exc:
        messages.error(request, f"Entry {entry.pk}: {'; '.join(exc.fields.get('expires_on', []))}")
    return redirect(_book_url(entry.team_id))


@login_required
@require_POST
def entry_delete(request: HttpRequest, entry_id: int) -> HttpResponse:
    entry = _editable(request, entry_id)
    team_id = entry.team_id
    services.price_entry_delete(entry=entry)
    messages.success(request, f"Deleted entry {entry_id}.")
    return redirect(_book_url(team_id))
