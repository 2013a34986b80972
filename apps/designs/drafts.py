"""Drafts (issue #36): editing a design changes the editor's own draft, which evaluates as they type without
making versions; "Save version" with a short message turns the draft into the next version. One draft per
design and user (models.DesignDraft says why). Who may have a draft is who may edit the design (the callers
check, with apps/teams/access.py's rule)."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db import transaction

from apps.designs import pricing, services
from apps.designs.models import Design, DesignDraft, DesignVersion, Evaluation
from apps.sites.services import site_resolve
from clusterdesigner.engine.core.errors import EngineError
from clusterdesigner.errors import InvalidInput, NotFound
from clusterdesigner.memo import jsonable


def draft_get(*, design: Design, user: Any) -> DesignDraft | None:
    """This user's draft of the design, or None when they have none (nothing unsaved)."""
    return DesignDraft.objects.filter(design=design, author_id=getattr(user, "pk", None)).first()


@transaction.atomic
def draft_put(
    *,
    design: Design,
    user: Any,
    base_version: int | None = None,
    name: str | None = None,
    description: str | None = None,
    visibility: str | None = None,
    spec: dict[str, Any] | None = None,
) -> DesignDraft:
    """Write the user's draft: the fields given replace the draft's, the rest are kept (a new draft starts
    from its base version: the current one unless ``base_version`` names another). The spec is checked as a
    saved one is (services.spec_validate): a spec that would not save is InvalidInput naming the field, and
    the draft keeps its last good state."""
    locked = Design.objects.select_for_update().get(pk=design.pk)
    draft = draft_get(design=locked, user=user)
    if base_version is not None and not 1 <= base_version <= locked.version:
        raise InvalidInput({"version": [f"no version {base_version}: the design has 1 to {locked.version}"]})
    clean = services.spec_validate(spec=site_resolve(user=user, spec=spec)) if spec is not None else None
    if draft is None:
        base = locked.versions.get(number=base_version or locked.version)
        draft = DesignDraft(
            design=locked,
            author=user,
            base_number=base.number,
            name=base.name,
            description=base.description,
            visibility=locked.visibility,
            spec=base.spec,
        )
    elif base_version is not None:
        draft.base_number = base_version
    draft.name = name if name is not None else draft.name
    draft.description = description if description is not None else draft.description
    draft.visibility = visibility if visibility is not None else draft.visibility
    draft.spec = clean if clean is not None else draft.spec
    draft.save()
    return draft


@transaction.atomic
def draft_save(*, design: Design, user: Any, message: str = "") -> Design:
    """Save the user's draft as the design's next version with ``message``, and delete the draft. A draft
    based on an older version than the current one (someone saved since) is services.VersionConflict (409)
    and stays as it is; no draft is NotFound."""
    draft = draft_get(design=design, user=user)
    if draft is None:
        raise NotFound("You have no unsaved draft of this design.")
    saved = services.design_update(
        design=design,
        user=user,
        base_version=draft.base_number,
        name=draft.name,
        description=draft.description,
        visibility=draft.visibility,
        spec=draft.spec,
        message=message,
    )
    draft.delete()
    return saved


def draft_discard(*, design: Design, user: Any) -> None:
    """Delete the user's draft (NotFound when there is none): the design stays at its saved versions."""
    deleted, _ = DesignDraft.objects.filter(design=design, author_id=user.pk).delete()
    if not deleted:
        raise NotFound("You have no unsaved draft of this design.")


def draft_version(*, draft: DesignDraft) -> DesignVersion:
    """The draft as an unsaved version (numbered as its base), for the evaluation and the pages."""
    return DesignVersion(
        design=draft.design,
        number=draft.base_number,
        name=draft.name,
        description=draft.description,
        spec=draft.spec,
    )


def draft_evaluate_or_problem(*, draft: DesignDraft) -> tuple[Evaluation | None, dict[str, Any] | None]:
    """The draft evaluated as its version would be (same catalog, prices, calibration), as an unsaved
    Evaluation, or why it does not evaluate (services.design_evaluate_or_problem's problem). Nothing is
    stored in the database: a draft changes with every keystroke. The result is cached by the same input
    hash a saved version's evaluation is stored under, so typing back to an earlier value costs nothing."""
    version = draft_version(draft=draft)
    catalog, prices, digest, calibration = pricing.evaluation_input(version)
    key = f"designs:draft:v1:{digest}"
    found = cache.get(key)
    if found is None:
        try:
            found = {
                "result": jsonable(
                    services.evaluation_result(
                        version=version, catalog=catalog, prices=prices, calibration=calibration
                    )
                )
            }
        except EngineError as error:
            found = {"problem": services.evaluation_problem(error=error, spec=version.spec)}
        cache.set(key, found, 3600)
    if "problem" in found:
        return None, found["problem"]
    return Evaluation(version=version, input_hash=digest, snapshot={}, result=found["result"]), None
