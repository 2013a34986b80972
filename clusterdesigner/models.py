"""The project's own rows: the API tokens scripts and internal tools send."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A user's API token, sent as ``Authorization: Token <key>``. Only the SHA-256 of the key is stored (the
    key is 160 random bits, so a fast hash is enough: nothing to guess from a leaked table); the key is shown
    once, when it is created. A token has a scope, an optional expiry and the time it was last used; one
    token per user, revoked by deleting it (the token page, or the admin)."""

    class Scope(models.TextChoices):
        READ = "read", "Read only (GET)"
        DESIGNS = "designs", "Read, and write designs, plans and analyses"
        CATALOG = "catalog", "Everything, catalog writes included (staff only)"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex.")
    prefix = models.CharField(max_length=8, help_text="The key's first characters, to recognise it by.")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.READ)
    created = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from then on; empty: never.")
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The plain key: set only on the row api_token_create returns, never stored.
    key = ""

    class Meta:
        ordering = ["-created"]
        constraints = [models.UniqueConstraint(fields=["user"], name="api_token_one_per_user")]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user}, {self.scope})"


class SignInAttempts(models.Model):
    """Sign-in attempts counted for one account from one client address in the current window
    (clusterdesigner.auth). An attempt takes its place under a row lock before its password is checked, so
    concurrent attempts cannot all read a count under the limit: with a limit of 5, 20 simultaneous wrong
    passwords check 5 and refuse 15. A success deletes the row."""

    key = models.CharField(max_length=64, unique=True, help_text="SHA-256 of client address and account.")
    attempts = models.PositiveIntegerField(default=0)
    window_started_at = models.DateTimeField(db_index=True)

    class Meta:
        ordering = ["window_started_at"]

    def __str__(self) -> str:
        return f"{self.key[:8]}… {self.attempts} since {self.window_started_at:%Y-%m-%d %H:%M}"
