"""Units of time the parts share, defined once: the cost engine bills by them and the serving engine states
them among its assumptions."""

from __future__ import annotations

# 365-day year: the golden scenarios (24/7 for 2 years = 17,520 h) use it.
HOURS_PER_YEAR = 8760.0
