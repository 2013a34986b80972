"""One basis for the rent-or-own answer: the NPV of the monthly cash flows (engine/cost/cashflow.py).

The verdict, the ranking, the tornado, the break-even utilization and the thresholds that flip the verdict
are all read off NPV(rent option) − NPV(own), the same figure the cash-flow table shows (issue #31 item 5):
never the annualised closed form (tco.break_even_utilization), which discounts differently and can sit
several points away from where the two NPVs actually cross.

Thresholds are roots of that gap as one input moves, found by the one root finder (engine/core/roots.py: the
secant, else Brent's method) inside a stated bracket; a root outside the bracket is reported as none (one
option wins over the whole range) rather than extrapolated. The break-even utilization is the cash-flow
model's own (cashflow.break_even_utilization), re-exported here: one solver for the cash-flow result, the
cost result, the verdict and the design verdict.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterdesigner.engine.core.json_object import JsonObject
from clusterdesigner.engine.core.roots import root
from clusterdesigner.engine.cost.cashflow import CashflowInputs, break_even_utilization, cash_flows

__all__ = ["NpvPair", "break_even_utilization", "npv_pair", "root"]


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
