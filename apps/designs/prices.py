"""Stale prices (issue #35): a design remembers the evaluation whose resolved prices were last seen or
accepted for its current version (Design.priced_evaluation). When a later evaluation resolves other prices
(a price book entry changed, expired or was added; a catalog price moved), the design is stale: its status
lists each figure before and after (value and origin: design, price book entry, catalog) and the verdict
before and after, until an editor accepts the new prices. A new version starts afresh (its edit is the
acceptance)."""

from __future__ import annotations

from typing import Any

from apps.designs.models import Design, Evaluation
from apps.designs.services import design_evaluate

# What makes two resolutions of a figure differ: its value and where it came from.
COMPARED = ("value", "origin", "entry_id")
KEPT = ("value", "unit", "origin", "entry_id", "as_of", "source")


def _prices(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The resolved prices of a stored result by figure (``prices.`` dropped), with what the status shows."""
    return {
        row["name"].removeprefix("prices."): {k: row.get(k) for k in KEPT}
        for row in result.get("assumptions") or []
        if str(row.get("name", "")).startswith("prices.")
    }


def _verdict(result: dict[str, Any]) -> str:
    return str((result.get("verdict") or {}).get("option") or "")


def design_price_status(*, design: Design, evaluation: Evaluation) -> dict[str, Any]:
    """The current version's price status against ``evaluation`` (its evaluation now): whether it is stale,
    the changed figures and the verdict before and after. The first evaluation of a version is recorded as
    the one seen."""
    accepted = (
        Evaluation.objects.filter(pk=design.priced_evaluation_id)
        .only("version_id", "result", "created_at")
        .first()
        if design.priced_evaluation_id
        else None
    )
    if accepted is None or accepted.version_id != evaluation.version_id:
        Design.objects.filter(pk=design.pk).update(
            priced_evaluation=evaluation
        )  # not a change: no updated_at
        design.priced_evaluation_id = evaluation.pk
        accepted = evaluation
    before, after = _prices(accepted.result), _prices(evaluation.result)
    changes = [
        {"figure": name, "before": before.get(name), "after": after.get(name)}
        for name in sorted(before.keys() | after.keys())
        if [(before.get(name) or {}).get(k) for k in COMPARED]
        != [(after.get(name) or {}).get(k) for k in COMPARED]
    ]
    return {
        "stale": bool(changes),
        "accepted_evaluation": accepted.pk,
        "accepted_at": accepted.created_at,
        "evaluation": evaluation.pk,
        "changes": changes,
        "verdict_before": _verdict(accepted.result),
        "verdict_after": _verdict(evaluation.result),
    }


def design_price_status_now(*, design: Design) -> dict[str, Any]:
    """design_price_status against the current version's evaluation now (EngineError when it does not
    evaluate)."""
    return design_price_status(design=design, evaluation=design_evaluate(version=design.current))


def design_price_accept(*, design: Design) -> dict[str, Any]:
    """Accept the prices the current version resolves now: the design is no longer stale."""
    evaluation = design_evaluate(version=design.current)
    Design.objects.filter(pk=design.pk).update(priced_evaluation=evaluation)
    design.priced_evaluation_id = evaluation.pk
    return design_price_status(design=design, evaluation=evaluation)
