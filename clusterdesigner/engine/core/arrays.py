"""Keys over integer columns: one int64 per row, so grouping and first-seen passes sort one array, not
rows."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


def packed_key(cols: Sequence[npt.NDArray[np.integer]], *, shape: int | tuple[int, ...]) -> IntArray | None:
    """One integer per row of the non-negative integer columns ``cols`` (each of ``shape``), mixed radix with
    each column's maximum + 1, in the rows' lexicographic order of the columns: key = (…(c₀·r₁ + c₁)·r₂ + …)
    + cₙ; all zero with no column. None when the radices' product reaches 2**62 (the key would overflow
    int64): the caller then compares the columns."""
    radices = [int(c.max()) + 1 for c in cols]
    if math.prod(radices) >= 2**62:
        return None
    key = np.zeros(shape, dtype=np.int64)
    for col, radix in zip(cols, radices, strict=True):
        key = key * radix + col
    return key
