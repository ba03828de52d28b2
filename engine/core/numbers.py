"""How a column of numbers is written, the same in every table of the app and of the report: whole numbers
without decimals when every value of the column is whole, else every value with three decimals (0.060, -0.047,
0.163 — not 0.0596 beside 0.163; 32.0 and 32.6 as 32.000 and 32.600 beside each other, never 32 beside 32.6)."""
from __future__ import annotations

import math
from typing import Iterable, Sequence

DECIMALS = 3


def column_format(values: Iterable[object]) -> str:
    """The format string for a column's numbers: ``"{:.0f}"`` when all are whole, else ``"{:.3f}"``."""
    nums = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)
            and math.isfinite(float(v))]
    return "{:.0f}" if all(v == round(v) for v in nums) else "{:.%df}" % DECIMALS


def formatted_rows(rows: Sequence[dict]) -> list[dict]:
    """``rows`` with each numeric column written by :func:`column_format` (other cells as they are)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))
    out = [dict(r) for r in rows]
    for c in cols:
        vals = [r.get(c) for r in rows]
        nums = [v for v in vals if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not nums:
            continue
        fmt = column_format(nums)
        for r in out:
            v = r.get(c)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)):
                r[c] = fmt.format(v)
    return out
