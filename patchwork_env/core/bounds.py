"""One rule for a bounded setting, shared by the agent specs (``patchwork_env.players.registry``)
and the trainers' configs (``train.config``): ``(low, high)`` inclusive, ``low_open`` for a value
that must be strictly above ``low`` (a learning rate).

    >>> out_of_bounds(0.5, (0, 1)) is None
    True
    >>> out_of_bounds(0, (0, float("inf")), low_open=True)
    'must be > 0'
    >>> out_of_bounds(2, (1, 1000))
    >>> out_of_bounds(5000, (1, 1000))
    'must be in [1, 1000]'
    >>> out_of_bounds(1.5, (0.0, 1.0))
    'must be in [0, 1]'
"""

from __future__ import annotations

import math


def out_of_bounds(value: float, bounds: tuple[float, float], *, low_open: bool = False) -> str | None:
    """None if ``value`` lies in ``bounds``; else what it must be (``must be in [1, 1000]``,
    ``must be > 0``), for the caller's message naming the setting and the value given."""
    low, high = bounds
    if (value > low if low_open else value >= low) and value <= high:
        return None
    if low_open:
        return f"must be > {number(low)}" + ("" if math.isinf(high) else f" and <= {number(high)}")
    if math.isinf(high):
        return f"must be >= {number(low)}"
    return f"must be in [{number(low)}, {number(high)}]"


def number(x: float) -> str:
    """``x`` as written in a bound: whole numbers without a point or exponent (10000000), others short (0.5)."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
