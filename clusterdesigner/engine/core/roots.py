"""One root finder for the cost engine's thresholds: where a gap between two costs is zero as one input moves.

The NPV break-even utilization (cashflow.break_even_utilization) and the thresholds that flip the verdict
(cost._flips) are both roots of an NPV gap inside a stated bracket. The gap is affine in each input moved
today, so the secant through the bracket's ends is the root; Brent's method (scipy.optimize.brentq; Brent,
*Algorithms for Minimization without Derivatives*, 1973, ch. 4) takes over when it is not. A root outside the
bracket is reported as none (one side wins over the whole range) rather than extrapolated.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from scipy.optimize import brentq

# Solver tolerance on the moved input; small enough that the NPV gap at the root is well under $1 for any
# cluster the bounds allow (the gap's slope is at most ~$1e10 per unit of utilization).
XTOL = 1e-13
RTOL = 4e-15
# A secant root is accepted when the NPV gap there is at most this (USD).
SECANT_TOLERANCE_USD = 0.01


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
