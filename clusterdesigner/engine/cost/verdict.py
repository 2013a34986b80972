"""A design's verdict: does it meet its goals, a deadline in days and a budget in USD per training run?

Every sentence is composed from numbers the evaluation computed (days, node counts, costs); there is no free
text. The days compared with the deadline are the expected days *with* failures and restarts of the
cheapest option (``days / goodput``, the cost engine's ``per_run.effective_days``, Young 1974 first-order
goodput) when the evaluation has them, else the failure-free training estimate; the verdict names which.

When the deadline is missed the caller re-estimates the run on more nodes (× 2, × 4, then × 8, stopping at
the first that meets it: :func:`explore`), so the verdict can say how many nodes would meet it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clusterdesigner.engine.core.errors import InputError
from clusterdesigner.engine.core.json_object import JsonObject

# Node-count multiples tried, in order, when a deadline is missed: at most three extra estimates.
SCALE_FACTORS = (2, 4, 8)

# What the compared days are: the phrase each verdict sentence ends with.
DAYS_BASIS = {
    "expected": "expected, with failures and restarts",
    "failure_free": "failure-free training estimate",
}

STATUSES = ("meets", "misses", "none")


@dataclass(frozen=True)
class RunEstimate(JsonObject):
    """One node count's training run: its days (``None`` when it could not be estimated, ``error`` says
    why; ``inf`` when interruptions outpace progress) and, when known, the cheapest option's cost per run."""

    nodes: int
    days: float | None
    run_cost_usd: float | None = None
    error: str = ""
    start_delay_days: float = 0.0  # owned capacity: the procurement lead time before the run can start
    # The option's NPV of its monthly cash flows over the horizon at this size (the verdict's basis), beside
    # the per-run cost; None without cash flows.
    npv_usd: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": self.nodes,
            "days": _finite(self.days),
            "run_cost_usd": _finite(self.run_cost_usd),
            "npv_usd": _finite(self.npv_usd),
            "error": self.error,
            "start_delay_days": self.start_delay_days,
        }

    @property
    def finish_days(self) -> float | None:
        """Days from today to the run's end: the lead time (owned capacity) plus the run's days."""
        return None if self.days is None else self.days + self.start_delay_days


@dataclass(frozen=True)
class DeadlineCheck(JsonObject):
    """The design's days against the deadline. ``slack_days`` = deadline − days (negative when missed);
    ``larger`` the estimates on more nodes; ``meeting_nodes`` the fewest of those that meet it."""

    deadline_days: float
    status: str  # meets | misses
    nodes: int
    days: float
    slack_days: float
    larger: tuple[RunEstimate, ...]
    meeting_nodes: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "deadline_days": self.deadline_days,
            "status": self.status,
            "nodes": self.nodes,
            "days": _finite(self.days),
            "slack_days": _finite(self.slack_days),
            "larger": [e.to_json() for e in self.larger],
            "meeting_nodes": self.meeting_nodes,
            "message": self.message,
        }


# The per-run budget's basis, stated beside every check (issue #31: "the same basis ... for goals and
# budget"). ``goals.budget_usd`` is a sum for one training run, checked against one run's cost of the
# option the rent-or-own verdict picks on the NPV of the horizon's monthly cash flows
# (engine/cost/design_verdict.py); what choosing it commits (owning's capex, a reservation's term) is stated
# beside the per-run figure. A budget for the whole horizon is ``goals.budget_npv_usd``, checked on the
# verdict's own basis (BUDGET_NPV_BASIS).
BUDGET_BASIS = (
    "cost per run: the run's expected node-hours at the option's rate (owning: its annualised cost per hour),"
    " undiscounted, for the option the rent-or-own verdict picks on the NPV of the monthly cash flows over"
    " the horizon; a budget for the whole horizon is goals.budget_npv_usd, checked on that NPV"
)


# The horizon budget's basis (``goals.budget_npv_usd``): the rent-or-own verdict's own figure.
BUDGET_NPV_BASIS = (
    "NPV of the option's monthly cash flows over the horizon (cash out, discounted at the discount rate): the"
    " basis the rent-or-own verdict decides on"
)


@dataclass(frozen=True, kw_only=True)
class HorizonBudgetCheck(JsonObject):
    """A budget for the whole horizon (``goals.budget_npv_usd``) against the NPV of the cash out of the
    option the rent-or-own verdict picks (owning, or the cheapest chosen rent option), over ``horizon_years``.
    ``margin_usd`` = budget − NPV (negative when over); status "unknown" when there is no NPV (no rent option
    chosen, so no cash flows are compared)."""

    budget_npv_usd: float
    status: str  # meets | misses | unknown
    npv_usd: float | None
    margin_usd: float | None
    option: str
    horizon_years: float | None
    message: str
    basis: str = BUDGET_NPV_BASIS


def check_budget_npv(
    *, budget_npv_usd: float, npv_usd: float | None, option: str, horizon_years: float | None
) -> HorizonBudgetCheck:
    """Within when the NPV of the chosen option's cash out ≤ the budget: "Within the $30.0M budget over the
    horizon: Own (on-prem), the cheapest option by NPV, costs $22.6M (NPV of its cash out over 3 years;
    $7.4M to spare)"; else "Over the ... by $X: ..."."""
    budget = usd_short(budget_npv_usd)
    if npv_usd is None or not math.isfinite(npv_usd):
        message = (
            f"The {budget} budget over the horizon cannot be checked: no cash flows are compared (choose a"
            " cloud option to compare owning with)"
        )
        status, margin = "unknown", None
        return HorizonBudgetCheck(
            budget_npv_usd=budget_npv_usd, status=status, npv_usd=None, margin_usd=margin, option=option,
            horizon_years=horizon_years, message=message,
        )  # fmt: skip
    margin = budget_npv_usd - npv_usd
    years = (
        "" if horizon_years is None else f" over {horizon_years:g} year{'' if horizon_years == 1 else 's'}"
    )
    cost = f"{option}, the cheapest option by NPV, costs {usd_short(npv_usd)} (NPV of its cash out{years}"
    if margin >= 0:
        status, message = "meets", f"Within the {budget} budget over the horizon: {cost}; "
        message += f"{usd_short(margin)} to spare)"
    else:
        status, message = (
            "misses",
            f"Over the {budget} budget over the horizon by {usd_short(-margin)}: {cost})",
        )
    return HorizonBudgetCheck(
        budget_npv_usd=budget_npv_usd,
        status=status,
        npv_usd=npv_usd,
        margin_usd=margin,
        option=option,
        horizon_years=horizon_years,
        message=message,
    )


@dataclass(frozen=True)
class BudgetCheck(JsonObject):
    """The cheapest option's cost per run against the budget. ``margin_usd`` = budget − cost (negative when
    over); status "unknown" when no option has a cost per run. ``basis`` states what the figure is
    (BUDGET_BASIS); ``commitment_usd`` what choosing the option commits beyond the run (owning's capex at
    delivery, a reservation's dollars for its whole term), described by ``commitment``."""

    budget_usd: float
    status: str  # meets | misses | unknown
    run_cost_usd: float | None
    margin_usd: float | None
    option: str
    message: str
    basis: str = BUDGET_BASIS
    commitment_usd: float | None = None
    commitment: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "budget_usd": self.budget_usd,
            "status": self.status,
            "run_cost_usd": _finite(self.run_cost_usd),
            "margin_usd": _finite(self.margin_usd),
            "option": self.option,
            "message": self.message,
            "basis": self.basis,
            "commitment_usd": _finite(self.commitment_usd),
            "commitment": self.commitment,
        }


@dataclass(frozen=True)
class Verdict(JsonObject):
    """``status``: "misses" when any goal is missed, "meets" when every goal that can be checked is met,
    "none" when the design has no goals. ``messages``: the deadline sentence, then the budget one."""

    status: str
    messages: tuple[str, ...]
    days_basis: str
    option: str
    deadline: DeadlineCheck | None
    budget: BudgetCheck | None
    budget_npv: HorizonBudgetCheck | None = None  # goals.budget_npv_usd: the horizon budget, on NPV

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "messages": list(self.messages),
            "days_basis": self.days_basis,
            "option": self.option,
            "deadline": self.deadline.to_json() if self.deadline else None,
            "budget": self.budget.to_json() if self.budget else None,
            **({"budget_npv": self.budget_npv.to_json()} if self.budget_npv else {}),
        }


def _finite(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def usd_short(value: float) -> str:
    """Money as a sentence reads it: $3.2M, $1.5B, $759k, $8,500."""
    n = abs(value)
    if n >= 1e9:
        return f"${n / 1e9:.1f}B"
    if n >= 1e6:
        return f"${n / 1e6:.1f}M"
    if n >= 1e4:
        return f"${n / 1e3:.0f}k"
    return f"${n:,.0f}"


def _days(value: float) -> str:
    return f"{value:.1f} days"


def _positive(value: float | None, field: str) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not value > 0
        or not math.isfinite(value)
    ):
        raise InputError(f"must be a number more than zero, got {value!r}", field=field)
    return float(value)


def explore(
    *,
    nodes: int,
    deadline_days: float,
    estimate: Callable[[int], RunEstimate],
    factors: Sequence[int] = SCALE_FACTORS,
    max_nodes: int | None = None,
) -> tuple[RunEstimate, ...]:
    """Estimate the run on ``nodes × f`` for each factor in turn, stopping at the first estimate that meets
    the deadline (days ≤ deadline) or that cannot be made (``days`` is None: more nodes will not help a
    layout that does not scale). At most ``len(factors)`` calls to ``estimate``; node counts over
    ``max_nodes`` are not tried."""
    out: list[RunEstimate] = []
    for factor in factors:
        n = nodes * factor
        if max_nodes is not None and n > max_nodes:
            break
        run = estimate(n)
        out.append(run)
        if run.days is None or run.days <= deadline_days:
            break
    return tuple(out)


def _alternative(run: RunEstimate, *, with_cost: bool) -> str:
    if run.days is None:
        return (
            f"{run.nodes} nodes: no estimate ({run.error})"
            if run.error
            else f"{run.nodes} nodes: no estimate"
        )
    if not math.isfinite(run.days):
        return f"{run.nodes} nodes never finish (interruptions outpace progress)"
    text = f"{run.nodes} nodes give {_days(run.days)}"
    if run.start_delay_days > 0:
        text += f" after the {_days(run.start_delay_days)} procurement lead time"
    if with_cost and run.npv_usd is not None and math.isfinite(run.npv_usd):
        text += f" at {usd_short(run.npv_usd)} NPV over the horizon"
        if run.run_cost_usd is not None:
            text += f" ({usd_short(run.run_cost_usd)} per run, undiscounted)"
    elif with_cost and run.run_cost_usd is not None:
        text += f" at {usd_short(run.run_cost_usd)} per run"
    return text


def check_deadline(
    *,
    deadline_days: float,
    design: RunEstimate,
    larger: Sequence[RunEstimate],
    basis: str,
    costs: bool = False,
) -> DeadlineCheck:
    """Meets when the design's days ≤ the deadline: "Meets the 30-day deadline: 27.7 days on 64 nodes
    (2.3 days slack; <basis>)". Else "Misses the 30-day deadline: 64 nodes give 46.4 days; 128 nodes give
    24.6 days (<basis>)", listing each larger estimate (with its cost per run when ``costs``) and saying so
    when none of them meets it."""
    if design.days is None:
        raise InputError("the design has no days to compare with the deadline", field="goals.deadline_days")
    label = f"{deadline_days:g}-day deadline"
    finish = design.days + design.start_delay_days  # owned capacity starts after its lead time
    slack = deadline_days - finish
    if finish <= deadline_days:
        after = (
            f" after a {_days(design.start_delay_days)} procurement lead time"
            if design.start_delay_days
            else ""
        )
        message = (
            f"Meets the {label}: {_days(design.days)} on {design.nodes} nodes{after} ({_days(slack)} slack;"
            f" {basis})"
        )
        return DeadlineCheck(deadline_days, "meets", design.nodes, design.days, slack, (), None, message)
    meeting = next(
        (
            r.nodes
            for r in larger
            if r.finish_days is not None and math.isfinite(r.finish_days) and r.finish_days <= deadline_days
        ),
        None,
    )
    parts = [_alternative(design, with_cost=False)]
    parts += [_alternative(r, with_cost=costs) for r in larger]
    tail = ""
    if meeting is None and larger:
        tail = f"; none of the node counts tried, up to {max(r.nodes for r in larger)}, meets it"
    message = f"Misses the {label}: " + "; ".join(parts) + tail + f" ({basis})"
    return DeadlineCheck(
        deadline_days, "misses", design.nodes, design.days, slack, tuple(larger), meeting, message
    )


def check_budget(
    *,
    budget_usd: float,
    run_cost_usd: float | None,
    option: str,
    commitment_usd: float | None = None,
    commitment: str = "",
) -> BudgetCheck:
    """Within when the chosen option's cost per run ≤ the budget: "Within the $5.0M budget: the cheapest
    option by NPV, <option>, costs $3.2M per run ($1.8M to spare)"; else "Over the $2.0M budget by $1.2M: the
    cheapest option by NPV, <option>, costs $3.2M per run". The option is the one the rent-or-own verdict
    picks (owning, or the cheapest chosen rent option by the NPV of its monthly cash flows), so that the goals
    and the verdict name the same option (issue #31). With a commitment, the sentence goes on: "; choosing it
    commits $15.8M (capex at delivery)", so that a per-run figure never stands without what it implies."""
    budget = usd_short(budget_usd)
    if run_cost_usd is None or not math.isfinite(run_cost_usd):
        message = f"The {budget} budget cannot be checked: no option has a cost per run"
        return BudgetCheck(budget_usd, "unknown", None, None, option, message)
    margin = budget_usd - run_cost_usd
    cost = f"the cheapest option by NPV, {option}, costs {usd_short(run_cost_usd)} per run"
    commits = ""
    if commitment_usd is not None and math.isfinite(commitment_usd):
        commits = f"; choosing it commits {usd_short(commitment_usd)}" + (
            f" ({commitment})" if commitment else ""
        )
    committed = commitment_usd if commits else None
    if margin >= 0:
        status, message = (
            "meets",
            f"Within the {budget} budget: {cost} ({usd_short(margin)} to spare){commits}",
        )
    else:
        status, message = "misses", f"Over the {budget} budget by {usd_short(-margin)}: {cost}{commits}"
    return BudgetCheck(
        budget_usd,
        status,
        run_cost_usd,
        margin,
        option,
        message,
        commitment_usd=committed,
        commitment=commitment if commits else "",
    )


def compose(
    *,
    deadline_days: float | None,
    budget_usd: float | None,
    design: RunEstimate,
    larger: Sequence[RunEstimate] = (),
    option: str = "",
    days_basis: str = "expected",
    commitment_usd: float | None = None,
    commitment: str = "",
    budget_npv_usd: float | None = None,
    npv_usd: float | None = None,
    horizon_years: float | None = None,
) -> Verdict:
    """The verdict for a design's goals. ``design`` is the design's own run (its node count, the days of
    ``days_basis`` and the cheapest option's cost per run); ``larger`` the estimates on more nodes
    (:func:`explore`); ``option`` the cheapest option's label, ``commitment_usd`` what choosing it commits
    (``commitment`` says what). ``budget_npv_usd``, a budget for the whole horizon, is checked against
    ``npv_usd``, the NPV of that option's cash out over ``horizon_years`` (check_budget_npv). No goals give
    status "none" and no messages.
    Raises InputError (field ``goals.*``) for a deadline or budget that is not a positive number."""
    deadline_days = _positive(deadline_days, "goals.deadline_days")
    budget_usd = _positive(budget_usd, "goals.budget_usd")
    budget_npv_usd = _positive(budget_npv_usd, "goals.budget_npv_usd")
    if days_basis not in DAYS_BASIS:
        raise InputError(f"unknown days basis {days_basis!r}; known: {', '.join(DAYS_BASIS)}", field="")
    basis = DAYS_BASIS[days_basis]
    if days_basis == "expected" and option:
        basis += f", for the cheapest option by NPV, {option}"
    deadline = None
    if deadline_days is not None:
        deadline = check_deadline(
            deadline_days=deadline_days,
            design=design,
            larger=larger,
            basis=basis,
            costs=budget_usd is not None or budget_npv_usd is not None,  # either budget: say what they cost
        )
    budget = None
    if budget_usd is not None:
        budget = check_budget(
            budget_usd=budget_usd,
            run_cost_usd=design.run_cost_usd,
            option=option,
            commitment_usd=commitment_usd,
            commitment=commitment,
        )
    horizon = None
    if budget_npv_usd is not None:
        horizon = check_budget_npv(
            budget_npv_usd=budget_npv_usd, npv_usd=npv_usd, option=option, horizon_years=horizon_years
        )
    checks = [c for c in (deadline, budget, horizon) if c is not None]
    statuses = [c.status for c in checks]
    status = "misses" if "misses" in statuses else "meets" if "meets" in statuses else "none"
    messages = tuple(c.message for c in checks)
    return Verdict(status, messages, days_basis, option, deadline, budget, horizon)


@dataclass(frozen=True, kw_only=True)
class Flip(JsonObject):
    """The value of one input at which owning and the verdict's rival cost the same NPV (everything else as
    given): ``threshold`` None when one side wins over the whole range ``searched``. ``name`` is the cost
    engine's input (``on_prem.server_usd``, ``cloud.usd_per_node_hour.spot``, ...)."""

    name: str
    label: str
    unit: str
    base: float
    threshold: float | None
    searched: tuple[float, float]

    def phrase(self) -> str:
        """“utilization at 26.9%”, “the server price of $412,003 per node”, ... ("" without a threshold)."""
        if self.threshold is None:
            return ""
        word = "at" if self.unit == "fraction" else "of"
        return f"{self.label} {word} {format_value(self.threshold, self.unit)}"


def format_value(value: float, unit: str) -> str:
    """An input's value as the verdict writes it: 26.9 %, $412,003 per node, $12.34 per node-hour."""
    if unit == "fraction":
        return f"{value:.1%}"
    if unit == "fraction of capex":
        return f"{value:.1%} of capex"
    if unit == "USD/node":
        return f"${value:,.0f} per node"
    if unit == "USD/node-hour":
        return f"${value:,.2f} per node-hour"
    if unit == "USD/kWh":
        return f"${value:,.4f} per kWh"
    return f"{value:,.6g} {unit}"


@dataclass(frozen=True)
class RentOrOwn(JsonObject):
    """The rent-or-own answer as numbers, and the sentence composed from them (never free text)."""

    horizon_years: float
    utilization: float
    gpus: int
    accelerator: str
    discount_rate: float
    own_npv_usd: float
    rent_npv_usd: Mapping[str, float]  # option label -> NPV of its cash flows
    saving_usd: float  # cheapest rent NPV − own NPV: > 0 when owning costs less
    cheapest_rent: str
    payback_month: int | None
    # Where NPV(own) = NPV(rival) on the monthly cash flows (npv_basis; a stored result from before engine
    # 12: the annualised closed form against the cheapest pay-as-you-go option).
    break_even_utilization: float | None
    break_even_option: str
    movers: tuple[str, ...]  # the assumptions that move the answer most, widest first
    # The answer in words, composed from the numbers above when the verdict is made (read back as stored:
    # a stored result's mappings come back from the database in another key order).
    sentence: str = ""
    # The NPV break-even utilization against each priced option, by pricing model.
    break_even_by_option: Mapping[str, float | None] = field(default_factory=dict)
    # The price that flips it: each top input's value at which the two NPVs are equal.
    flips: tuple[Flip, ...] = ()
    # Tax on both sides (cashflow.tax_rate): above 0 every NPV above is after tax, and the sentence says so
    # (a stored result from before engine 15 has none: pre-tax unless its inputs say otherwise).
    tax_rate: float = 0.0

    def __post_init__(self) -> None:
        if not self.sentence:
            object.__setattr__(self, "sentence", self.compose_sentence())

    def tax_phrase(self) -> str:
        """“, after a 21% tax on both sides” when the NPVs are after tax; nothing when pre-tax (rate 0)."""
        return f", after a {self.tax_rate * 100:g}% tax on both sides" if self.tax_rate > 0 else ""

    def compose_sentence(self) -> str:
        """“Over 3 years at 70 % utilization, owning 512 × h100-sxm costs $X (NPV at 8 %), renting
        on-demand $Y, reserved 1-year $Z: owning saves $N; it pays back in month M; below 26.8 % utilization
        renting on-demand is cheaper; the three assumptions that move the answer most are …”"""
        rents = ", ".join(f"renting {label} {usd_short(v)}" for label, v in self.rent_npv_usd.items())
        head = (
            f"Over {self.horizon_years:g} year{'' if self.horizon_years == 1 else 's'} at"
            f" {self.utilization:.0%} utilization, owning {self.gpus} × "
            f"{self.accelerator} costs {usd_short(self.own_npv_usd)} (NPV at {self.discount_rate:.0%}"
            f"{self.tax_phrase()}), {rents}"
        )
        if self.saving_usd >= 0:
            parts = [f"owning saves {usd_short(self.saving_usd)} against {self.cheapest_rent}"]
            parts.append(
                f"it pays back in month {self.payback_month}"
                if self.payback_month is not None
                else "it does not pay back within the horizon before resale"
            )
        else:
            parts = [f"renting {self.cheapest_rent} saves {usd_short(-self.saving_usd)}"]
        be = self.break_even_utilization
        if be is not None and 0 < be <= 1:
            # Beyond the crossing, on the side away from the design's utilization, the other side wins.
            side = f"renting {self.break_even_option}" if self.saving_usd >= 0 else "owning"
            where = "below" if be < self.utilization else "above"
            parts.append(f"{where} {be:.1%} utilization {side} is cheaper")
        elif be is not None and be > 1 or be is None and self.saving_usd < 0 and self.break_even_by_option:
            parts.append(f"renting {self.break_even_option} is cheaper at every utilization")
        elif be is None and self.break_even_by_option:
            parts.append(f"owning is cheaper than renting {self.break_even_option} at every utilization")
        flips = [f.phrase() for f in self.flips if f.threshold is not None and f.name != "utilization"]
        if flips:
            parts.append("the answer flips at " + ", or ".join(flips) + " (each alone, NPV equal)")
        if self.movers:
            parts.append(
                f"the {len(self.movers)} assumptions that move the answer most are " + ", ".join(self.movers)
            )
        return head + ": " + "; ".join(parts) + "."
