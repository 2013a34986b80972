"""The compare page's columns and table. Each design's column is the engine's ``tradeoffs.compare_column``
(the compare analysis run by Celery builds its rows with the same function), with the option it shows read
from the stored evaluation's typed options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from apps.designs import selectors
from apps.designs.models import Design, Evaluation
from clusterdesigner.engine.cost.cost_result import DesignOption
from clusterdesigner.engine.cost.design_verdict import DesignVerdict
from clusterdesigner.engine.cost.verdict import Verdict, usd_short
from clusterdesigner.engine.design import tradeoffs

COMPARE_ROWS = [  # (label, attribute of ComparePageRow, better: "low" | "high" | None, format filter)
    # The design's rent-or-own verdict first: over all its offerings and only the options chosen, on NPV.
    ("Rent or own (NPV of the monthly cash flows, chosen options only)", "verdict", None, ""),
    ("NPV of owning", "own_npv_usd", "low", "usd"),
    ("NPV of the cheapest chosen rent option", "rival_npv_usd", "low", "usd"),
    ("Owning saves, NPV (negative: renting saves)", "saving_usd", "high", "usd"),
    ("Deadline (goals.deadline_days, the verdict's choice)", "deadline", None, ""),
    ("Fits in memory", "fits", None, "yesno"),
    ("Option shown (by default the verdict's choice)", "option", None, ""),
    ("NPV over the horizon (this option)", "shown_npv_usd", "low", "usd"),
    ("Run cost (this option, one run)", "run_cost_usd", "low", "usd"),
    ("Cost over the horizon, undiscounted (this option; owning: annualised)", "total_usd", "low", "usd"),
    ("Cost per GPU-hour (this option)", "usd_per_gpu_hour", "low", "usd2"),
    ("Days to train, expected (with failures and restarts)", "days", "low", "duration"),
    ("Days to train, failure-free", "days_failure_free", "low", "duration"),
    ("MFU", "mfu", "high", "pct_plain"),
    ("Tokens per second", "tokens_per_second", "high", "int"),
    ("Memory per GPU", "memory_gib", "low", "gib"),
    ("GPUs", "gpus", None, "int"),
]


@dataclass(frozen=True, kw_only=True)
class ComparePageRow:
    """A design's column on the compare page: the engine's compare column and the option it shows (None when
    the design has no option), with the design's options for the page's option picker."""

    id: int
    name: str
    column: tradeoffs.CompareColumn
    shown: DesignOption | None
    options: tuple[DesignOption, ...]
    design_verdict: DesignVerdict | None = None
    goals: Verdict | None = None
    key: str = ""  # the column's key in the query string: "12", or "12v3" for a version asked for
    version: int | None = None  # the version asked for (None: the design's current version)

    @property
    def url(self) -> str:
        """The design page, at the version the column shows when one was asked for."""
        url = reverse("dashboard:design", args=[self.id])
        return url if self.version is None else f"{url}?version={self.version}"

    @property
    def deadline(self) -> str:
        """“Meets: 2.3 days slack” or “Misses by 16.4 days” (the goals' deadline check, which counts the
        procurement lead time of owned capacity), or “no deadline set”."""
        check = self.goals.deadline if self.goals else None
        if check is None:
            return "no deadline set"
        if not isinstance(check.slack_days, (int, float)):  # a stored result whose slack did not serialise
            return check.message
        if check.status == "meets":
            return f"Meets the {check.deadline_days:g}-day deadline: {check.slack_days:,.1f} days slack"
        return f"Misses the {check.deadline_days:g}-day deadline by {-check.slack_days:,.1f} days"

    @property
    def shown_npv_usd(self) -> float | None:
        """The shown option's NPV over the horizon, from the design's verdict (None: not priced by it)."""
        v = self.design_verdict
        if v is None or self.shown is None:
            return None
        return next((o.npv_usd for o in (v.own, *v.options) if o.key == self.shown.key), None)

    @property
    def verdict(self) -> str | None:
        """“Own: saves $7.2M against CoreWeave 8x B200 on-demand”, or “Rent CoreWeave … : saves $1.3M”."""
        v = self.design_verdict
        if v is None:
            return None
        if v.winner == "own":
            return f"Own: saves {usd_short(v.saving_usd)} against {v.rival.label}"
        return f"Rent {v.rival.label}: saves {usd_short(-v.saving_usd)}"

    @property
    def own_npv_usd(self) -> float | None:
        return self.design_verdict.own.npv_usd if self.design_verdict else None

    @property
    def rival_npv_usd(self) -> float | None:
        return self.design_verdict.rival.npv_usd if self.design_verdict else None

    @property
    def saving_usd(self) -> float | None:
        return self.design_verdict.saving_usd if self.design_verdict else None

    @property
    def option_key(self) -> str:
        return self.column.option_key

    @property
    def fits(self) -> bool:
        return self.column.fits

    @property
    def option(self) -> str | None:
        return self.shown.label if self.shown else None

    @property
    def run_cost_usd(self) -> float | None:
        return self.shown.run_cost_usd if self.shown else None

    @property
    def total_usd(self) -> float | None:
        return self.shown.total_usd if self.shown else None

    @property
    def usd_per_gpu_hour(self) -> float | None:
        return self.shown.usd_per_gpu_hour if self.shown else None

    @property
    def days(self) -> float | None:
        """The shown option's expected days (spot's own, with interruptions)."""
        return self.shown.days if self.shown else None

    @property
    def days_failure_free(self) -> float:
        return self.column.days_failure_free

    @property
    def mfu(self) -> float:
        return self.column.mfu

    @property
    def tokens_per_second(self) -> float:
        return self.column.tokens_per_second

    @property
    def memory_gib(self) -> float:
        return self.column.memory_gib

    @property
    def gpus(self) -> int:
        return self.column.gpus


def compare_row(
    design: Design,
    evaluation: Evaluation,
    option_key: str | None,
    *,
    key: str | None = None,
    version: int | None = None,
) -> ComparePageRow:
    """The design's column (of its ``version`` when one was asked for), showing the option asked for, else
    the option its rent-or-own verdict picks (owning or the cheapest chosen rent option, by NPV), else (no
    verdict) the design's first cloud choice, else owning."""
    result = selectors.evaluation_read(result=evaluation.result)
    training = result.training
    if training is None:
        raise ValueError(f"design {design.pk}'s evaluation holds no layout")  # evaluation saves only layouts
    column = tradeoffs.compare_column(
        training=training,
        options=[o.to_json() for o in result.options],
        cloud_choices=result.cloud_choices,
        option_key=option_key,
        verdict=result.design_verdict,
    )
    shown = next((o for o in result.options if o.key == column.option_key), None)
    return ComparePageRow(
        id=design.pk,
        name=design.name if version is None else f"{design.name} (v{version})",
        key=key or str(design.pk),
        version=version,
        goals=result.verdict,
        column=column,
        shown=shown,
        options=result.options,
        design_verdict=result.design_verdict,
    )


def compare_table(rows: list[ComparePageRow]) -> list[dict[str, Any]]:
    """The table's rows (one per COMPARE_ROWS entry), each cell marked ``best`` when its value is the lowest
    (or highest) of two or more numbers."""
    table = []
    for label, name, better, fmt in COMPARE_ROWS:
        values = [getattr(r, name) for r in rows]
        numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        target = (min(numbers) if better == "low" else max(numbers)) if better and len(numbers) > 1 else None
        cells = [{"value": v, "best": target is not None and v == target} for v in values]
        table.append({"label": label, "fmt": fmt, "cells": cells})
    return table
