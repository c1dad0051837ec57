"""Durations given as options: one rule for every command and the phases `stoker run` starts.

`--timeout nan` passed `<= 0` (NaN compares False) and never fired; `inf` and `1e20` made a
deadline no clock can reach (or an overflow in the arithmetic on it).
"""

from __future__ import annotations

import math

from reports.errors import UsageError

MAX_SECONDS = 7 * 86400.0  # a week: longer than any allocation a measurement runs in


def check_seconds(value: float, option: str, *, minimum: float = 0.0) -> float:
    """`value` when it is a finite number of seconds above `minimum` and at most a week."""
    if not isinstance(value, (int, float)) or not math.isfinite(value) or not minimum < value <= MAX_SECONDS:
        raise UsageError(
            f"{option} {value}: give a number of seconds larger than {minimum:g} and at most {MAX_SECONDS:g}"
        )
    return float(value)


def check_path_text(path: str, option: str) -> str:
    """A path without control characters (a newline in a path ends up splitting a line of
    a report, a job script or a log into two)."""
    if not path or any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise UsageError(f"{option} {path!r}: a path must not be empty or hold control characters")
    return path
