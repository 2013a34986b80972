"""Design reads. Who reads and edits a design is apps/teams/access.py's rule: its owner (or its team's
members, by role), and every signed-in user reads a design shared with the organisation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Count, F, Max, OuterRef, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from apps.catalog.models import Fabric
from apps.designs.models import Design, DesignVersion, Evaluation, ShareLink, ShareLinkOpen, hash_token
from apps.teams import access
from clusterdesigner.compiled_query import CompiledQuery, compiled_sql
from clusterdesigner.engine.design.evaluation import DesignEvaluation


def design_list(*, user: Any) -> QuerySet[Design]:
    """The designs this user may read (none for anonymous)."""
    return access.visible_to(user, Design.objects.select_related("owner", "team"))


def design_get(*, user: Any, design_id: int) -> Design | None:
    """The design if this user may read it, else None (views answer 404, never 403: its existence is not
    revealed)."""
    return design_list(user=user).filter(pk=design_id).first()


def design_get_editable(*, user: Any, design_id: int) -> Design | None:
    """The design if this user may change it (its owner, or an owner or editor of its team), else None."""
    return (
        access.editable_by(user, Design.objects.select_related("owner", "team")).filter(pk=design_id).first()
    )


def design_get_administered(*, user: Any, design_id: int) -> Design | None:
    """The design if this user may delete it (its owner, or an owner of its team), else None."""
    return (
        access.administered_by(user, Design.objects.select_related("owner", "team"))
        .filter(pk=design_id)
        .first()
    )


def design_version_get(*, design: Design, number: int | None = None) -> DesignVersion | None:
    """Version ``number`` of the design (default: the current one), or None when it has no such version."""
    return design.versions.filter(number=number or design.version).first()


def design_version_list(*, design: Design) -> QuerySet[DesignVersion]:
    """The design's versions, newest first, with who saved each."""
    return design.versions.select_related("created_by").order_by("-number")


def design_version_get_visible(
    *, user: Any, design_id: int, number: int | None = None
) -> DesignVersion | None:
    """Version ``number`` (default: the current one) of a design this user may read, in one query rather than
    design_get's and design_version_get's two; None when the design is not visible or has no such version."""
    if not user or not user.is_authenticated:
        return None
    # Every evaluate request reads this: its SQL is compiled once per process (compiled_query.py) and
    # prepared once per connection (prepared.py).
    if number:
        return _VERSION_NUMBERED.first(user_id=user.pk, design_id=design_id, number=number)
    return _VERSION_CURRENT.first(user_id=user.pk, design_id=design_id)


def design_version_get_of_team(
    *, team_id: int, design_id: int, number: int | None = None
) -> DesignVersion | None:
    """Version ``number`` (default: the current one) of a design of team ``team_id``: what a team's capacity
    plan may name whoever solves it (its maker may have left the team)."""
    versions = DesignVersion.objects.filter(design_id=design_id, design__team_id=team_id)
    if number:
        return versions.select_related("design").filter(number=number).first()
    return versions.select_related("design").filter(number=F("design__version")).first()


def _visible_versions(user_id: int, design_id: int) -> QuerySet[DesignVersion]:
    """design_version_get_visible's versions of one design; unordered, since (design, number) is unique and
    the callers pick one number. With the design (its owner and team say whose price book the evaluation
    resolves through, apps.designs.pricing), in the same query."""
    visible = access.readable_q(user_id, via="design", model=Design)
    versions = DesignVersion.objects.filter(visible, design_id=design_id).select_related("design")
    return versions.order_by()


_VERSION_NUMBERED: CompiledQuery[DesignVersion] = CompiledQuery(
    lambda user_id, design_id, number: _visible_versions(user_id, design_id).filter(number=number)[:1],
    prepare="designs_version_numbered",
    user_id=int,
    design_id=int,
    number=int,
)
_VERSION_CURRENT: CompiledQuery[DesignVersion] = CompiledQuery(
    lambda user_id, design_id: _visible_versions(user_id, design_id).filter(number=F("design__version"))[:1],
    prepare="designs_version_current",
    user_id=int,
    design_id=int,
)


def visible_version_values_sql(*, user: str) -> tuple[str, tuple[Any, ...], tuple[tuple[int, str], ...]]:
    """design_version_get_visible's query of the current version as SQL for a statement that embeds it
    (compiled_query.compiled_sql), with ``user`` (an SQL expression: a column of that statement) as the
    reader's id: the version's id, creation, and its design's owner and team (columns id, created_at,
    owner_id, team_id); the design id is its one parameter left (the slots)."""
    return compiled_sql(
        lambda user_id, design_id: (
            _visible_versions(user_id, design_id)
            .filter(number=F("design__version"))
            .values_list("id", "created_at", "design__owner_id", "design__team_id")[:1]
        ),
        expressions={"user_id": user},
        user_id=int,
        design_id=int,
    )


def evaluation_get(*, version: DesignVersion, input_hash: str) -> Evaluation | None:
    """The version's evaluation stored under ``input_hash`` (its inputs' hash), or None. The stored snapshot
    (the whole catalog) is only kept to explain the result later: it is not loaded."""
    return version.evaluations.filter(input_hash=input_hash).defer("snapshot").first()


def evaluation_text_get(*, version: DesignVersion, input_hash: str) -> str | None:
    """The result of evaluation_get's evaluation as the JSON text the database holds, or None: a response
    body sent as it is (clusterdesigner.memo.JSONText), rather than decoded into objects and encoded again
    (over a millisecond of CPU for a ~40 kB result)."""
    found = version.evaluations.filter(input_hash=input_hash)
    return found.values_list(Cast("result", TextField()), flat=True).first()


def share_link_resolve(*, token: str) -> ShareLink | None:
    """The active link for a token, or None. Looks up by the token's SHA-256 (fixed length, constant-time
    index compare) and re-checks with hmac.compare_digest, so timing reveals nothing about near-miss
    tokens."""
    import hmac

    digest = hash_token(token)
    # The result is shown; the stored catalog snapshot is not needed.
    link = (
        ShareLink.objects.select_related("design", "evaluation", "evaluation__version")
        .defer("evaluation__snapshot")
        .filter(token_hash=digest)
        .first()
    )
    if link is None or not hmac.compare_digest(link.token_hash, digest) or not link.is_active:
        return None  # it does not exist, has expired or was revoked
    return link


def share_link_list(*, design: Design) -> QuerySet[ShareLink]:
    """A design's share links, newest first, with the version each serves and its opens (``opens``,
    ``last_opened``). The frozen evaluation's result and
    snapshot (tens of kilobytes each) stay unloaded: a list needs only the version number."""
    pending = ShareLinkOpen.objects.filter(link=OuterRef("pk")).order_by().values("link")
    return (
        design.share_links.select_related("evaluation__version")
        .defer("evaluation__result", "evaluation__snapshot", "evaluation__version__spec")
        # Opens still in the log (services.share_link_opens_fold has not added them yet): ShareLink.opens
        # and .last_opened add them, so the list is exact whenever it is read.
        .annotate(
            pending_opens=Subquery(pending.annotate(n=Count("id")).values("n")),
            pending_last=Subquery(pending.annotate(at=Max("opened_at")).values("at")),
        )
        .order_by("-created_at", "-id")
    )


def evaluation_read(*, result: Mapping[str, Any] | DesignEvaluation) -> DesignEvaluation:
    """An evaluation result (stored, or just computed) as the engine's typed DesignEvaluation: the one place
    that reads that JSON back, for every page, export, launch script and comparison (one already read is
    returned as it is). A result stored by an older engine reads too, without the figures it lacks (None);
    ValueError naming the field when a stored result lacks one every engine wrote."""
    if isinstance(result, DesignEvaluation):
        return result
    return DesignEvaluation.from_json(result)


def evaluation_fabric_kind(*, evaluation: Evaluation) -> str | None:
    """The kind (infiniband, roce, efa, ethernet) of the catalog fabric the evaluation's cluster names: the
    row in the evaluation's input snapshot (the catalog it was computed on), else the catalog's row now; None
    when neither has it. Reads only the snapshot's fabric rows, not the whole stored catalog."""
    slug = (evaluation.result.get("spec") or {}).get("cluster", {}).get("fabric")
    if not slug:
        return None
    rows = (
        Evaluation.objects.filter(pk=evaluation.pk)
        .values_list("snapshot__catalog__fabrics", flat=True)
        .first()
    )
    for row in rows or ():
        if isinstance(row, Mapping) and row.get("slug") == slug and row.get("kind"):
            return str(row["kind"])
    return Fabric.objects.filter(slug=slug).values_list("kind", flat=True).first()


RANKING_FRAMES = {"horizon": "over the horizon (NPV)", "run": "per run"}
