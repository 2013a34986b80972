"""Saved designs, their versions and read-only share links."""

from __future__ import annotations

import datetime as dt
import hashlib

from django.conf import settings
from django.db import models
from django.utils import timezone


class Design(models.Model):
    """A cluster design someone saved: its current spec lives in the newest DesignVersion. It is its owner's,
    or its team's when ``team`` is set; everyone signed in reads it when its visibility is organisation.

    ``version`` is the number of the current version; an edit must name it (optimistic concurrency), so two
    people saving the same version at once cannot silently overwrite each other.
    """

    class Visibility(models.TextChoices):
        PRIVATE = "private", "Only me"
        ORGANISATION = "organisation", "Everyone signed in"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="designs")
    # Set: the design is the team's (apps/teams/access.py says who reads and edits it). PROTECT: a team with
    # designs cannot be deleted from under them.
    team = models.ForeignKey(
        "teams.Team", on_delete=models.PROTECT, null=True, blank=True, related_name="designs"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    visibility = models.CharField(max_length=20, choices=Visibility.choices, default=Visibility.PRIVATE)
    version = models.PositiveIntegerField(default=1)
    is_demo = models.BooleanField(default=False)
    # The version approved last (apps/reviews sets it): share links that follow the approved version show it.
    # An edit after approval makes a new version and leaves this on the approved one.
    approved_version = models.ForeignKey(
        "DesignVersion", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The evaluation whose resolved prices (its prices.* assumptions: entry ids and values) were last seen
    # or accepted for the current version: a later evaluation resolving other prices (an entry changed,
    # expired or added) marks the design stale, with the verdict before and after (apps/designs/prices.py).
    priced_evaluation = models.ForeignKey(
        "Evaluation", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Everyone signed in reads a design shared with the organisation (apps.teams.access).
    ORGANISATION_READ = ("visibility", Visibility.ORGANISATION)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="designs_owner_updated_idx")]

    def __str__(self) -> str:
        return self.name

    @property
    def current(self) -> DesignVersion:
        # Lists prefetch the versions; use them rather than one query per design.
        prefetched = getattr(self, "_prefetched_objects_cache", {}).get("versions")
        if prefetched is not None:
            version: DesignVersion = next(v for v in prefetched if v.number == self.version)
            return version
        return self.versions.get(number=self.version)


class DesignVersion(models.Model):
    """One saved state of a design: the full spec (workload, cluster, layout, cost assumptions). Never
    edited."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    spec = models.JSONField()
    # Why this version was saved ("Save version" asks for it; optional, and blank for versions saved before).
    message = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["design", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["design", "number"], name="designs_version_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.number}"


class DesignDraft(models.Model):
    """One user's unsaved edit of a design: what the editor shows and evaluates as they type, based on
    version ``base_number``. "Save version" turns it into the next version (and deletes it); leaving the page
    keeps it. One per design and user, not one per design: a team's editors each edit in private until they
    save, so one editor's typing never rewrites another's unsaved work, and saving goes through the same
    base-version check as any edit (a draft based on an older version than the current one is refused with a
    409, never saved over someone else's version)."""

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="drafts")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    base_number = models.PositiveIntegerField(help_text="The version this draft was started from.")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    visibility = models.CharField(max_length=20, choices=Design.Visibility.choices)
    spec = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["design", "author"], name="designs_draft_one_per_author")
        ]

    def __str__(self) -> str:
        return f"draft of {self.design} by {self.author_id}, based on v{self.base_number}"


class Evaluation(models.Model):
    """A stored evaluation of one design version: the input snapshot (spec and catalog rows) and the
    result."""

    version = models.ForeignKey(DesignVersion, on_delete=models.CASCADE, related_name="evaluations")
    input_hash = models.CharField(max_length=64)
    snapshot = models.JSONField()
    result = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["version", "input_hash"], name="designs_evaluation_unique_input")
        ]

    def __str__(self) -> str:
        return f"evaluation {self.pk} of version {self.version_id}"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ShareLink(models.Model):
    """A read-only link to a frozen evaluation of one design version, for people without an account.

    Only the SHA-256 of the token is stored: a database leak reveals no working link, and lookups compare
    fixed-length digests.
    """

    design = models.ForeignKey(Design, on_delete=models.CASCADE, related_name="share_links")
    # RESTRICT, not PROTECT: an evaluation a link serves cannot be deleted on its own, but deleting its design
    # deletes the design's links with its versions and evaluations (PROTECT refused that: a 500).
    evaluation = models.ForeignKey(Evaluation, on_delete=models.RESTRICT, related_name="share_links")
    token_hash = models.CharField(max_length=64, unique=True)
    token_hint = models.CharField(
        max_length=8, help_text="First characters of the token, to tell links apart."
    )
    label = models.CharField(max_length=200, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_opened_at = models.DateTimeField(null=True, blank=True)
    open_count = models.PositiveIntegerField(default=0)
    # Follow the design's approved version (apps/reviews) rather than the evaluation frozen at creation: the
    # share page then shows the latest approved version and says so (the frozen one until any is approved).
    follow_approved = models.BooleanField(default=False)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"share {self.token_hint}… of {self.design}"

    @property
    def is_active(self) -> bool:
        now = timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)

    @property
    def opens(self) -> int:
        """Opens counted: those added to ``open_count`` and those still in the log (ShareLinkOpen), which
        apps.designs.selectors.share_link_list annotates as ``pending_opens``."""
        return self.open_count + (getattr(self, "pending_opens", None) or 0)

    @property
    def last_opened(self) -> dt.datetime | None:
        """The latest open, counted or still in the log (``pending_last``, annotated as ``pending_opens``)."""
        times = [t for t in (self.last_opened_at, getattr(self, "pending_last", None)) if t is not None]
        return max(times, default=None)


class ShareLinkOpen(models.Model):
    """One open of a share link on PostgreSQL, logged rather than counted on the link's row: concurrent
    readers of one link then insert rows side by side instead of queueing on the link's row lock (and
    growing its chain of row versions), issue #38. apps.designs.services.share_link_opens_fold adds the
    logged opens to ``ShareLink.open_count`` and ``last_opened_at`` and deletes them, in one statement (Celery
    beat runs it every minute); until then the owner's list adds them
    (apps.designs.selectors.share_link_list), so the count it shows is exact either way.

    No foreign-key constraint: checking one would lock the link's row in share mode for every open, the
    contention this log exists to avoid. A deleted link's opens are deleted by the next fold."""

    link = models.ForeignKey(ShareLink, on_delete=models.DO_NOTHING, db_constraint=False, related_name="+")
    opened_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"open of share link {self.link_id} at {self.opened_at}"
