"""One basis for the rent-or-own answer: the NPV of the monthly cash flows (engine/cashflow.py).

The verdict, the ranking, the tornado, the break-even utilization and the thresholds that flip the verdict
are all read off NPV(rent option) − NPV(own), the same figure the cash-flow table shows (issue #31 item 5):
never the annualised closed form (tco.break_even_utilization), which discounts differently and can sit
several points away from where the two NPVs actually cross.

Thresholds are roots of that gap as one input moves, found by Brent's method (scipy.optimize.brentq; Brent,
*Algorithms for Minimization without Derivatives*, 1973, ch. 4) inside a stated bracket. The gap is linear
in each of the inputs moved today, so the root is exact to the solver's tolerance; a root outside the bracket
is reported as none (one option wins over the whole range) rather than extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from scipy.optimize import brentq

from clusterdesigner.engine.cashflow import CashflowInputs, cash_flows
from clusterdesigner.engine.json_object import JsonObject

# Solver tolerance on the moved input; small enough that the NPV gap at the root is well under $1 for any
# cluster the bounds allow (the gap's slope is at most ~$1e10 per unit of utilization).
XTOL = 1e-13
RTOL = 4e-15
# A secant root is accepted when the NPV gap there is at most this (USD).
SECANT_TOLERANCE_USD = 0.01


@dataclass(frozen=True, kw_only=True)
class NpvPair(JsonObject):
    """Owning's NPV and one rent option's NPV at the same inputs, and the gap rent − own (> 0: owning costs
    less)."""

    own_npv_usd: float
    rent_npv_usd: float

    @property
    def gap_usd(self) -> float:
        return self.rent_npv_usd - self.own_npv_usd


def npv_pair(*, inputs: CashflowInputs, option: str) -> NpvPair:
    """NPV(own) and NPV(``option``) of the monthly cash flows (cashflow.cash_flows, end-of-month, discounted
    monthly at (1 + r)^(1/12) − 1). Owning's lead-time rent is the cash-flow model's own convention."""
    result = cash_flows(inputs=inputs, break_even=False, irr=False)
    rent = next((r for r in result.rent if r.name == option), None)
    if rent is None:
        raise KeyError(option)
    return NpvPair(own_npv_usd=result.own.npv_usd, rent_npv_usd=rent.npv_usd)


def root(*, gap: Callable[[float], float], low: float, high: float) -> float | None:
    """The x in [low, high] where gap(x) = 0 (the secant through the ends when gap is affine there, else
    Brent's method), or None when gap has the same sign at both ends (no crossing in the range: one side wins
    throughout)."""
    g_low, g_high = gap(low), gap(high)
    if not (math.isfinite(g_low) and math.isfinite(g_high)):
        return None  # an end of the range cannot be compared (an option cannot finish there)
    if g_low == 0.0:
        return low
    if g_high == 0.0:
        return high
    if (g_low > 0) == (g_high > 0):
        return None
    # The NPV gap is affine in each input moved today, so the secant through the ends is the root; kept
    # when the gap there is within a cent (one evaluation), else Brent's method from the bracket.
    x = low - g_low * (high - low) / (g_high - g_low)
    g_x = gap(x)
    if math.isfinite(g_x) and abs(g_x) <= SECANT_TOLERANCE_USD:
        return x
    try:
        x = float(brentq(gap, low, high, xtol=XTOL, rtol=RTOL, maxiter=200))
    except RuntimeError:
        return None  # no convergence in 200 steps: no threshold is stated rather than a wrong one
    return x if math.isfinite(gap(x)) else None  # an input the engine cannot compare inside the range


def break_even_utilization(*, inputs: CashflowInputs, option: str) -> float | None:
    """The utilization u in (0, 1] at which NPV(own) = NPV(``option``), solved on the monthly cash flows;
    None when one side is cheaper at every utilization from 0 to 100 %.

    Both NPVs are affine in u (energy = full · (idle + (1 − idle) · u); a pay-as-you-go bill = nodes · 730 h ·
    u · price; a reservation's bill does not depend on u), so the root is unique when it exists."""

    def gap(u: float) -> float:
        return npv_pair(inputs=replace(inputs, utilization=u), option=option).gap_usd

    return root(gap=gap, low=1e-9, high=1.0)
