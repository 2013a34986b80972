"""The account's API token page: create (or replace) and revoke the token internal tools send as
`Authorization: Token <key>`. Forms post with CSRF and redirect back; the new key is shown once."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from clusterdesigner.api_tokens import api_token_create, api_token_get, api_token_revoke

# The key just created, carried through the redirect in the session and removed when the page shows it.
NEW_KEY_SESSION = "api_token_new_key"


@never_cache
@login_required
@require_GET
def api_tokens(request: HttpRequest) -> HttpResponse:
    context = {
        "token": api_token_get(user=request.user),
        "new_key": request.session.pop(NEW_KEY_SESSION, None),
        "api_url": request.build_absolute_uri(reverse("design-list")),
    }
    return render(request, "dashboard/api_tokens.html", context)


@login_required
@require_POST
def api_token_create_view(request: HttpRequest) -> HttpResponse:
    replaced = api_token_get(user=request.user) is not None
    token = api_token_create(user=request.user)
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
