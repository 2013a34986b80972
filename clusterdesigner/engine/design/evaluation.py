"""A whole design evaluation, typed: what the design service stores for a design version (its spec, the
training engine's estimate, one cost result per cloud offering, the options table and its ranking over the
horizon, the assumptions and findings, the goals verdict, the price freshness, the serving estimate, and
which design and when). ``DesignEvaluation.from_json()`` reads a stored result, including one stored by an
older engine (the keys marked ``since``), and ``to_json()`` writes it back.

Pages, exports, launch scripts, comparisons and analyses read the attributes of this one object; the design
app reads stored JSON through it in one place (``apps.designs.selectors.evaluation_read``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from clusterdesigner.engine.core.json_object import JsonObject, omit, since
from clusterdesigner.engine.core.offerings import Freshness
from clusterdesigner.engine.cost.cost_result import CostResult, DesignOption
from clusterdesigner.engine.cost.design_verdict import DesignVerdict
from clusterdesigner.engine.cost.verdict import Verdict
from clusterdesigner.engine.design.spec import CloudChoice, DesignSpec, SpecError, parse_design_spec
from clusterdesigner.engine.design.tradeoffs import expected_days
from clusterdesigner.engine.rl.rl import RLResult
from clusterdesigner.engine.rl.rl_fleet import FleetCost
from clusterdesigner.engine.serving.serving import ServingResult
from clusterdesigner.engine.training.training_result import TrainingEstimate
from clusterdesigner.engine.training.user_calibration import CalibrationStatement


@dataclass(frozen=True, kw_only=True)
class RankedKey(JsonObject):
    """One option of the design's ranking: its options-table key and its cost over the whole horizon."""

    key: str
    total_usd: float


@dataclass(frozen=True, kw_only=True)
class DesignRanking(JsonObject):
    """The design's options cheapest first over the whole horizon (one frame for every option)."""

    frame: str
    options: tuple[RankedKey, ...]


@dataclass(frozen=True, kw_only=True)
class EvaluationAssumption(JsonObject):
    """An input the evaluation used (the cost engines', the training engine's as ``training.<name>``, the
    catalog's accelerator figures as ``catalog.<slug>.<figure>``, the resolved prices as ``prices.<figure>``),
    with its unit, source and date ("" when undated). A resolved price also says where it came from
    (``origin``: design, price_book, catalog or default) and, from the price book, the entry's id."""

    name: str
    value: Any
    unit: str = ""
    source: str = ""
    as_of: str | None = omit()
    origin: str | None = omit()
    entry_id: int | None = omit()


def price_origin(origin: str | None, entry_id: int | None = None, as_of: str | None = None) -> str:
    """Where a resolved price (a ``prices.*`` assumption) came from, in words: the design's own value, a price
    book entry with its date, the public catalog, the engine's default when the catalog has no figure, or
    the site the estimate is placed at."""
    if origin == "design":
        return "design value"
    if origin == "price_book":
        return f"price book entry {entry_id}" + (f" of {as_of}" if as_of else "")
    if origin == "catalog":
        return "public catalog" + (f" of {as_of}" if as_of else "")
    if origin == "default":
        return "engine default (no catalog figure)"
    if origin == "site":
        return "site"  # a saved site's figure (a sweep's or serving estimate's site); its source names it
    return ""


@dataclass(frozen=True, kw_only=True)
class EvaluationFinding(JsonObject):
    """A sentence about the design, critical first; the cost engine's findings name their source, the
    design service's (a pricing model asked for but unpriced) do not."""

    code: str
    severity: str = "info"
    message: str
    source: str | None = omit()


@dataclass(frozen=True, kw_only=True)
class DesignRef(JsonObject):
    """The design and version an evaluation was stored for."""

    id: int
    name: str
    version: int


@dataclass(frozen=True, kw_only=True)
class DesignEvaluation(JsonObject):
    """A design evaluation. ``training`` is None when the result holds no layout; ``costs`` are by offering
    slug (``on_prem_only`` without a cloud offering); ``options`` are cheapest per run first. ``serving`` is
    the serving engine's estimate (a design with a ``serving`` section); ``rl`` the RL post-training estimate
    (a design with an ``rl`` section, engine/rl/rl.py)."""

    spec: Mapping[str, Any]
    training: TrainingEstimate | None
    costs: Mapping[str, CostResult] = field(default_factory=dict)
    options: tuple[DesignOption, ...] = ()
    ranking: DesignRanking | None = since(3)
    assumptions: tuple[EvaluationAssumption, ...] = ()
    findings: tuple[EvaluationFinding, ...] = ()
    verdict: Verdict | None = since(1)
    # The rent-or-own answer over every offering and only the options chosen, on the NPV of the monthly
    # cash flows (engine/cost/design_verdict.py); absent without a cloud option, or in a result stored before
    # it.
    design_verdict: DesignVerdict | None = omit()
    price_freshness: Freshness | None = omit()
    serving: ServingResult | None = omit()
    rl: RLResult | None = omit()
    # A mixed RL fleet's run cost pool by pool (engine/rl/rl_fleet.py): only with a rollout pool of its own.
    rl_fleet: FleetCost | None = omit()
    # Whether the owner's own calibration (issue 40) applied to the training estimate, its factor, runs and
    # the band's source; absent in a result stored before it, or computed outside the design service.
    calibration: CalibrationStatement | None = omit()
    design: DesignRef | None = omit()
    computed_at: str | None = omit()

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DesignEvaluation:
        """A stored evaluation read back; a ``training`` without a layout (nothing fit) reads as None."""
        training = data.get("training")
        rest = super().from_json({**data, "training": None})
        if isinstance(training, Mapping) and training.get("parallelism"):
            return replace(rest, training=TrainingEstimate.from_json(training))
        return rest

    # --- What the pages, exports and launch scripts read, named once here.

    @cached_property
    def design_spec(self) -> DesignSpec | None:
        """The stored spec parsed once (clusterdesigner.engine.design.spec), on first read; None when it no
        longer parses (stored under older rules, or hand-made without its required sections): readers then
        show what it would give as not applicable, as they do for a field the spec leaves out."""
        try:
            return parse_design_spec(self.spec)
        except SpecError:
            return None

    @property
    def cluster(self) -> Mapping[str, Any]:
        """The spec's cluster section (accelerator, nodes, gpus_per_node, fabric, ...)."""
        return _section(self.spec, "cluster")

    @property
    def spec_costs(self) -> Mapping[str, Any]:
        """The spec's costs section (horizon_years, utilization, on_prem, cloud choices, ...)."""
        return _section(self.spec, "costs")

    @property
    def workload(self) -> Mapping[str, Any]:
        """The spec's workload section (model and training)."""
        return _section(self.spec, "workload")

    @property
    def cloud_choices(self) -> tuple[CloudChoice, ...]:
        """The spec's cloud offerings, in order, as the parsed spec types them (offering, the pricing models
        compared: None for every one the offering prices). A stored spec that no longer parses is read
        choice by choice, so its pages still show what it compared."""
        if self.design_spec is not None:
            return self.design_spec.costs.cloud
        raw = self.spec_costs.get("cloud")
        return tuple(_choice(c) for c in raw if isinstance(c, Mapping)) if isinstance(raw, list) else ()

    def chosen(self, slug: str, model: str) -> bool:
        """Whether the design compares offering ``slug``'s pricing model ``model``: the cost engine prices
        every model the offering has; the design's choice (as for its options) decides which are shown."""
        for choice in self.cloud_choices:
            if choice.offering == slug and choice.pricing_models:
                return model in choice.pricing_models
        return True

    @property
    def first_cost(self) -> CostResult | None:
        """The cost result of the design's first cloud offering (per-offering detail), None without
        costs."""
        return next(iter(self.costs.values()), None)

    @property
    def rival_cost(self) -> CostResult | None:
        """The cost result of the offering that holds the design verdict's rival (its cash flows, payback
        and tornado are the verdict's); the first offering's for a result stored without one."""
        rival = self.design_verdict.rival.offering if self.design_verdict else None
        return self.costs.get(rival, self.first_cost) if rival else self.first_cost

    @property
    def expected_days(self) -> float | None:
        """Days to train with failures and restarts (not spot interruptions): the days of the cheapest
        option that is not spot."""
        return expected_days([o.to_json() for o in self.options])

    def ranked_options(self, frame: str = "horizon") -> list[tuple[DesignOption, float | None]]:
        """The options cheapest first in one frame, each with the figure it is ranked by: ``horizon`` in the
        order of the whole-horizon ``ranking`` (an evaluation stored without one: by each option's own
        total over the horizon); ``run`` by the cost of one run (the options' stored order)."""
        if frame == "run":
            return [(o, o.run_cost_usd) for o in self.options]
        by_key = {o.key: o for o in self.options}
        if self.ranking is None:
            ordered = sorted(self.options, key=lambda o: (o.total_usd, o.key))
            return [(o, o.total_usd) for o in ordered]
        return [(by_key[r.key], r.total_usd) for r in self.ranking.options if r.key in by_key]


def _choice(raw: Mapping[str, Any]) -> CloudChoice:
    """A stored cloud choice that did not parse, read as far as it goes."""
    models = raw.get("pricing_models")
    return CloudChoice(
        offering=str(raw.get("offering", "")),
        pricing_models=tuple(str(m) for m in models) if isinstance(models, list) else None,
    )


def _section(spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = spec.get(name)
    return value if isinstance(value, Mapping) else {}
