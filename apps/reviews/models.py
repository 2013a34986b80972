"""Comments on a design version and each version's review state (issue #36). Who may do what is
apps/teams/access.py's rule on the version's design: readers comment, the author or an editor resolves, owners
approve."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from apps.designs.models import DesignVersion


class Comment(models.Model):
    """One comment on one design version, in Markdown (rendered safely: apps/reviews/markdown.py); a reply
    names its parent, on the same version. Resolving records who and when; unresolving clears both."""

    version = models.ForeignKey(DesignVersion, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    parent = models.ForeignKey(
        "self", on_delete=models.CASCADE, null=True, blank=True, related_name="replies"
    )
    body = models.TextField()
    resolved = models.BooleanField(default=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["version", "created_at"], name="reviews_comment_version_idx")]

    def __str__(self) -> str:
        return f"comment {self.pk} on {self.version}"


class VersionReview(models.Model):
    """The review state of one design version, with who set it last, their note and when. A version without a
    row is a draft. Approval is final for its version: an edit after it saves a new version (a draft), and the
    approval stays on the version it was given to."""

    class State(models.TextChoices):
        DRAFT = "draft", "Draft"
        IN_REVIEW = "in_review", "In review"
        APPROVED = "approved", "Approved"
        CHANGES_REQUESTED = "changes_requested", "Changes requested"

    version = models.OneToOneField(DesignVersion, on_delete=models.CASCADE, related_name="review")
    state = models.CharField(max_length=20, choices=State.choices, default=State.DRAFT)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    note = models.TextField(blank=True)
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["version__design_id", "version__number"]

    def __str__(self) -> str:
        return f"{self.version}: {self.state}"


class ReviewEvent(models.Model):
    """One move of a version's review state, kept for its history: who moved it from which state to which,
    when, and their note. Only ever added (apps/reviews/services.review_transition writes one with each
    move); VersionReview holds the latest state."""

    version = models.ForeignKey(DesignVersion, on_delete=models.CASCADE, related_name="review_events")
    from_state = models.CharField(max_length=20, choices=VersionReview.State.choices)
    to_state = models.CharField(max_length=20, choices=VersionReview.State.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    note = models.TextField(blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["version", "created_at"], name="reviews_event_version_idx")]

    def __str__(self) -> str:
        return f"{self.version}: {self.from_state} → {self.to_state}"
