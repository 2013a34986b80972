"""The account's API token page: create (or replace) and revoke the token internal tools send as
`Authorization: Token <key>`, with its scope and expiry. Forms post with CSRF and redirect back; the new key
is shown once (only its hash is stored)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from clusterdesigner.api_tokens import api_token_create, api_token_get, api_token_revoke
from clusterdesigner.models import ApiToken

# The key just created, carried through the redirect in the session and removed when the page shows it.
NEW_KEY_SESSION = "api_token_new_key"
# Expiry choices on the form, in days ("" = never).
EXPIRY_DAYS = {"": "Never", "30": "30 days", "90": "90 days", "365": "1 year"}


def _scopes(user: Any) -> list[tuple[str, str]]:
    """The scopes this user may give a token: the catalog scope only to staff, who alone write the catalog."""
    return [(v, label) for v, label in ApiToken.Scope.choices if v != ApiToken.Scope.CATALOG or user.is_staff]


@never_cache
@login_required
@require_GET
def api_tokens(request: HttpRequest) -> HttpResponse:
    context = {
        "token": api_token_get(user=request.user),
        "new_key": request.session.pop(NEW_KEY_SESSION, None),
        "api_url": request.build_absolute_uri(reverse("design-list")),
        "scopes": _scopes(request.user),
        "expiry_days": EXPIRY_DAYS,
    }
    return render(request, "dashboard/api_tokens.html", context)


@login_required
@require_POST
def api_token_create_view(request: HttpRequest) -> HttpResponse:
    scope = request.POST.get("scope", ApiToken.Scope.READ)
    days = request.POST.get("expires_days", "")
    if scope not in dict(_scopes(request.user)) or days not in EXPIRY_DAYS:
        messages.error(request, "Choose a scope and an expiry from the lists.")
        return HttpResponseRedirect(reverse("api-tokens"))
    expires_at = timezone.now() + dt.timedelta(days=int(days)) if days else None
    replaced = api_token_get(user=request.user) is not None
    token = api_token_create(user=request.user, scope=scope, expires_at=expires_at)
    request.session[NEW_KEY_SESSION] = token.key
    if replaced:
        messages.info(request, "New token created. The previous one no longer works.")
    return HttpResponseRedirect(reverse("api-tokens"))


@login_required
@require_POST
def api_token_revoke_view(request: HttpRequest) -> HttpResponse:
    if api_token_revoke(user=request.user):
        messages.success(request, "Token revoked: requests that send it are now refused (401).")
    return HttpResponseRedirect(reverse("api-tokens"))
