"""Design reads. Who reads and edits a design is apps/teams/access.py's rule: its owner (or its team's
members, by role), and every signed-in user reads a design shared with the organisation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection
from django.db.models import Count, F, Max, OuterRef, QuerySet, Subquery

from apps.catalog.models import Fabric
from apps.designs.models import Design, DesignVersion, Evaluation, ShareLink, ShareLinkOpen, hash_token
from apps.measurements.selectors import calibration_setting_sql
from apps.pricebook.selectors import book_stamp_sql
from apps.teams import access
from clusterdesigner.compiled_query import CompiledQuery
from clusterdesigner.engine.evaluation import DesignEvaluation


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
    # Every evaluate request reads this: its SQL is compiled once per process (compiled_query.py).
    if number:
        return _VERSION_NUMBERED.first(user_id=user.pk, design_id=design_id, number=number)
    return _VERSION_CURRENT.first(user_id=user.pk, design_id=design_id)


def _visible_versions(user_id: int, design_id: int) -> QuerySet[DesignVersion]:
    """design_version_get_visible's versions of one design; unordered, since (design, number) is unique and
    the callers pick one number. With the design (its owner and team say whose price book the evaluation
    resolves through, apps.pricebook.resolve), in the same query."""
    visible = access.readable_q(user_id, via="design", model=Design)
    versions = DesignVersion.objects.filter(visible, design_id=design_id).select_related("design")
    return versions.order_by()


_VERSION_NUMBERED: CompiledQuery[DesignVersion] = CompiledQuery(
    lambda user_id, design_id, number: _visible_versions(user_id, design_id).filter(number=number)[:1],
    user_id=int,
    design_id=int,
    number=int,
)
_VERSION_CURRENT: CompiledQuery[DesignVersion] = CompiledQuery(
    lambda user_id, design_id: _visible_versions(user_id, design_id).filter(number=F("design__version"))[:1],
    user_id=int,
    design_id=int,
)


def evaluation_owner_state(*, design: Design) -> tuple[tuple[int | None, bool, str], tuple[Any, ...]]:
    """What an evaluation of the design depends on beyond its version and the catalog, in one statement (a
    stored evaluation's request reads it every time, issue #38): the owner's calibration switch as
    (owner id, enabled, stamp), (None, False, "") when the owner has none (never wrote a run nor toggled),
    and the stamp of the price book the design resolves through (apps.pricebook.selectors.book_stamp_sql)
    with the book's identity (its team, else its owner). Neither app's rows are resolved here: the caller
    resolves prices and calibration only when these stamps are new to it."""
    book_sql, book_params = book_stamp_sql(owner_id=design.owner_id, team_id=design.team_id)
    switch_sql, switch_params = calibration_setting_sql(owner_id=design.owner_id)
    sql = (
        "SELECT book.entries, book.newest_id, book.id_sum, book.changed, switch.enabled, switch.changed_at "
        f"FROM ({book_sql}) book LEFT JOIN ({switch_sql}) switch ON 1 = 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*book_params, *switch_params])
        entries, newest_id, id_sum, changed, enabled, switched_at = cursor.fetchone()
    setting = (None, False, "") if enabled is None else (design.owner_id, bool(enabled), str(switched_at))
    book = (design.team_id, design.owner_id, entries, newest_id, id_sum, str(changed))
    return setting, book


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
