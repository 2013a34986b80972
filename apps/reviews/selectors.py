"""Review reads: a version a user may read, its comments and review state, the design's approved version."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from apps.designs import selectors as design_selectors
from apps.designs.models import Design, DesignVersion
from apps.reviews.models import Comment, ReviewEvent, VersionReview


def version_get_readable(*, user: Any, design_id: int, number: int) -> DesignVersion | None:
    """Version ``number`` of a design this user may read (apps/teams/access.py), with its design; else None
    (the API answers 404, so the design's existence is not revealed)."""
    design = design_selectors.design_get(user=user, design_id=design_id)
    if design is None:
        return None
    version = design_selectors.design_version_get(design=design, number=number)
    if version is not None:
        version.design = design  # the design as read, with its owner and team, for the role checks
    return version


def comment_list(*, version: DesignVersion) -> QuerySet[Comment]:
    """The version's comments, oldest first (threads are drawn from ``parent``), with their people."""
    return Comment.objects.filter(version=version).select_related("author", "resolved_by")


def open_comments(*, design: Design) -> QuerySet[Comment]:
    """The design's unresolved comments on every version, oldest first, with the version each is on."""
    return (
        Comment.objects.filter(version__design=design, resolved=False)
        .select_related("author", "version")
        .order_by("created_at", "id")
    )


def review_get(*, version: DesignVersion) -> VersionReview:
    """The version's review; an unsaved draft when none was ever set."""
    found = VersionReview.objects.filter(version=version).select_related("reviewer").first()
    return found or VersionReview(version=version, state=VersionReview.State.DRAFT)


def approved_review(*, design: Design) -> VersionReview | None:
    """The design's pinned approval (``Design.approved_version``: the one given last; approval is final for
    its version, so an edit after it leaves this on the old version), with its version and reviewer; None
    before any approval."""
    if design.approved_version_id is None:
        return None
    return (
        VersionReview.objects.filter(
            version_id=design.approved_version_id, state=VersionReview.State.APPROVED
        )
        .select_related("version", "reviewer")
        .first()
    )


def review_history(*, version: DesignVersion) -> QuerySet[ReviewEvent]:
    """Every move of the version's review state, oldest first, with who made it."""
    return ReviewEvent.objects.filter(version=version).select_related("actor")
