"""Review writes: comments (anyone who reads the design), resolving them (the author, or an editor) and the
review state (editors send a version for review; owners approve or ask for changes)."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from apps.designs.models import Design, DesignVersion
from apps.reviews.models import Comment, ReviewEvent, VersionReview
from apps.teams import access
from clusterdesigner.errors import InvalidInput, NotFound

State = VersionReview.State

# Which state may follow which. Approval is final for its version: a change after it is a new version.
TRANSITIONS: dict[str, tuple[str, ...]] = {
    State.DRAFT: (State.IN_REVIEW,),
    State.IN_REVIEW: (State.APPROVED, State.CHANGES_REQUESTED, State.DRAFT),
    State.CHANGES_REQUESTED: (State.IN_REVIEW, State.DRAFT),
    State.APPROVED: (),
}
# Who may move a version into each state: editors (and owners) send it for review or back to draft; only the
# design's owners (its team's owners, or its owner where it has no team) decide.
DECIDERS = (State.APPROVED, State.CHANGES_REQUESTED)


def comment_create(*, user: Any, version: DesignVersion, body: str, parent_id: int | None = None) -> Comment:
    """A new comment by ``user`` (who may read the design: the caller checked). A reply's parent must be a
    comment on the same version (else InvalidInput naming ``parent``)."""
    parent = None
    if parent_id is not None:
        parent = Comment.objects.filter(pk=parent_id, version=version).first()
        if parent is None:
            raise InvalidInput({"parent": [f"no comment {parent_id} on version {version.number}"]})
    return Comment.objects.create(version=version, author=user, body=body, parent=parent)


def can_resolve(*, user: Any, comment: Comment) -> bool:
    """The comment's author, or anyone who may edit the design."""
    return bool(
        comment.author_id == getattr(user, "pk", None) or access.can_edit(user, comment.version.design)
    )


def comment_resolve(*, user: Any, comment: Comment, resolved: bool) -> Comment:
    """Mark the comment resolved (who, when) or open again. Someone who may neither (see can_resolve) gets
    NotFound (a 404), as for a design they may read but not change."""
    if not can_resolve(user=user, comment=comment):
        raise NotFound("No such comment that you may resolve.")
    comment.resolved = resolved
    comment.resolved_by = user if resolved else None
    comment.resolved_at = timezone.now() if resolved else None
    comment.save(update_fields=["resolved", "resolved_by", "resolved_at"])
    return comment


def allowed_states(*, user: Any, version: DesignVersion, current: str) -> tuple[str, ...]:
    """The states this user may move the version to from ``current``."""
    if not access.can_edit(user, version.design):
        return ()
    decides = access.can_admin(user, version.design)
    return tuple(s for s in TRANSITIONS[current] if decides or s not in DECIDERS)


@transaction.atomic
def review_transition(*, user: Any, version: DesignVersion, state: str, note: str = "") -> VersionReview:
    """Move the version's review to ``state`` with the user as reviewer and their note, and add the move to
    the version's history (ReviewEvent). A move the state
    machine does not allow is InvalidInput naming ``state``; a user who may not make it (a viewer; an editor
    approving) gets NotFound (a 404), as for a design they may not change."""
    review, _ = VersionReview.objects.select_for_update().get_or_create(version=version)
    if not access.can_edit(user, version.design) or (
        state in DECIDERS and not access.can_admin(user, version.design)
    ):
        raise NotFound("No such design that you may review.")
    if state not in TRANSITIONS[review.state]:
        nexts = ", ".join(TRANSITIONS[review.state]) or "none (approval is final; edit to make a new version)"
        raise InvalidInput({"state": [f"cannot go from {review.state} to {state}; allowed: {nexts}"]})
    moved_at = timezone.now()
    ReviewEvent.objects.create(
        version=version, from_state=review.state, to_state=state, actor=user, note=note, created_at=moved_at
    )
    review.state = state
    review.reviewer = user
    review.note = note
    review.reviewed_at = moved_at
    review.save()
    if state == State.APPROVED:  # pinned: share links that follow the approved version show this one
        Design.objects.filter(pk=version.design_id).update(approved_version=version)
        version.design.approved_version = version
    return review
