"""The admin for API tokens: see, filter and revoke them (hashed: the admin never shows a key). DRF's own
token admin is removed, since its rows are no longer used (migration 0002 hashed them into ApiToken)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from rest_framework.authtoken.models import TokenProxy

from clusterdesigner.models import ApiToken

if admin.site.is_registered(TokenProxy):
    admin.site.unregister(TokenProxy)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    list_display = ["prefix", "user", "scope", "created", "expires_at", "last_used_at"]
    list_filter = ["scope"]
    search_fields = ["user__username", "prefix"]
    fields = ["user", "prefix", "scope", "created", "expires_at", "last_used_at"]
    readonly_fields = ["user", "prefix", "created", "last_used_at"]
    actions = ["revoke_selected"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # a key is made on the token page and shown there once; the admin could not show it

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: Any) -> None:
        count, _ = queryset.delete()
        self.message_user(request, f"Revoked {count} token(s): requests that send them now answer 401.")
