"""The review page of a design (issue #36): the stated answer and its findings, the diff to the last approved
version, the open comments with a form to add one and buttons to resolve, and the review state with the
buttons the reader may use. Who may do what is apps/reviews' rule (apps/teams/access.py underneath)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_http_methods

from apps.dashboard.diff_views import _diff_context, _number
from apps.dashboard.views import _evaluated_context
from apps.designs import diffs, selectors
from apps.designs.models import Design, DesignVersion
from apps.reviews import selectors as review_selectors
from apps.reviews import services as review_services
from apps.reviews.markdown import render_markdown
from apps.reviews.models import Comment, VersionReview
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.errors import InvalidInput, NotFound
from clusterdesigner.views import or_404


@login_required
@require_http_methods(["GET", "POST"])
def design_review(request: HttpRequest, design_id: int) -> HttpResponse:
    """GET: the page for version ``?version=`` (default: the current one). POST: one of its forms (``action``
    comment, resolve, unresolve or review); then back to the page, or the page again with the field's error
    (400)."""
    design = or_404(selectors.design_get(user=request.user, design_id=design_id))
    number = _number(request.GET.get("version")) or design.version
    version = or_404(selectors.design_version_get(design=design, number=number))
    version.design = design
    if request.method == "POST":
        try:
            note = _act(request, version)
        except InvalidInput as exc:
            errors = {field: " ".join(found) for field, found in exc.fields.items()}
            return render(request, "dashboard/review.html", _context(request, version, errors), status=400)
        except NotFound as exc:  # a change this reader may not make: 404, as for a design they cannot edit
            raise Http404(str(exc)) from exc
        messages.success(request, note)
        url = reverse("dashboard:design-review", args=[design.pk])
        return HttpResponseRedirect(f"{url}?version={version.number}", status=303)
    return render(request, "dashboard/review.html", _context(request, version, {}))


def _act(request: HttpRequest, version: DesignVersion) -> str:
    """Do what the posted form asks; the sentence the page then flashes."""
    action = request.POST.get("action", "")
    if action == "comment":
        body = request.POST.get("body", "").strip()
        if not body:
            raise InvalidInput({"body": ["write a comment first"]})
        if len(body) > 10000:
            raise InvalidInput({"body": ["at most 10,000 characters"]})
        if request.POST.get("parent"):
            # A reply goes on its parent's version (a thread stays on one version), whichever is shown.
            parent_id = or_404(_number(request.POST.get("parent")))
            parent = Comment.objects.filter(pk=parent_id, version__design=version.design).select_related(
                "version"
            )
            found = or_404(parent.first())
            review_services.comment_create(
                user=request.user, version=found.version, body=body, parent_id=found.pk
            )
            return f"Reply added to #{found.pk} on v{found.version.number}."
        review_services.comment_create(user=request.user, version=version, body=body)
        return f"Comment added to v{version.number}."
    if action in ("resolve", "unresolve"):
        comment_id = or_404(_number(request.POST.get("comment")))
        comment = Comment.objects.filter(pk=comment_id, version__design=version.design)
        found = or_404(comment.select_related("version").first())
        found.version.design = version.design
        review_services.comment_resolve(user=request.user, comment=found, resolved=action == "resolve")
        return "Comment resolved." if action == "resolve" else "Comment opened again."
    if action == "review":
        state = request.POST.get("state", "")
        if state not in VersionReview.State.values:
            raise InvalidInput({"state": [f"must be one of {', '.join(VersionReview.State.values)}"]})
        note = request.POST.get("note", "").strip()[:5000]
        review = review_services.review_transition(user=request.user, version=version, state=state, note=note)
        return f"v{version.number} is now {review.get_state_display().lower()}."
    raise Http404("No such form on this page.")


def _context(request: HttpRequest, version: DesignVersion, errors: dict[str, str]) -> dict[str, Any]:
    design = version.design
    review = review_selectors.review_get(version=version)
    approval = review_selectors.approved_review(design=design)
    comments = [
        {
            "comment": c,
            "depth": depth,
            "html": mark_safe(render_markdown(c.body)),  # noqa: S308 -- escaped by render_markdown
            "can_resolve": review_services.can_resolve(user=request.user, comment=c),
        }
        for c, depth in _threaded(list(review_selectors.open_comments(design=design)))
    ]
    states = review_services.allowed_states(user=request.user, version=version, current=review.state)
    return {
        "design": design,
        "version": version,
        "versions": selectors.design_version_list(design=design),
        "review": review,
        "approval": approval,
        "allowed": [(s, VersionReview.State(s).label) for s in states],
        "comments": comments,
        "history": review_selectors.review_history(version=version),
        "errors": errors,
        **_evaluated_context(version),
        **_approved_diff(design, approval, version),
    }


def _threaded(comments: list[Comment]) -> list[tuple[Comment, int]]:
    """The comments in thread order with their depth: each reply right after its parent (and the parent's
    earlier replies), oldest first; a reply whose parent is not in the list (resolved) starts a thread.
    Depths are capped at 3 for the indentation."""
    shown = {c.pk for c in comments}
    children: dict[int | None, list[Comment]] = {}
    for c in comments:
        children.setdefault(c.parent_id if c.parent_id in shown else None, []).append(c)
    ordered: list[tuple[Comment, int]] = []
    stack = [(c, 0) for c in reversed(children.get(None, []))]
    while stack:
        comment, depth = stack.pop()
        ordered.append((comment, min(depth, 3)))
        stack.extend((reply, depth + 1) for reply in reversed(children.get(comment.pk, [])))
    return ordered


def _approved_diff(design: Design, approval: VersionReview | None, version: DesignVersion) -> dict[str, Any]:
    """The diff from the last approved version to this one, under ``review_diff`` (its own keys, so that they
    do not mix with the results' charts); nothing when no other version is approved."""
    if approval is None or approval.version_id == version.pk:
        return {}
    old = approval.version
    try:
        found = diffs.version_diff(old=old, new=version, order=None)
    except EngineError as error:
        return {"diff_old": old, "diff_problem": error.message}
    return {"diff_old": old, "review_diff": _diff_context(found)}
