"""Sizes and rates: parsing and printing (pure).

Sizes on the command line take K, M, G, T suffixes as powers of 1024, as nccl-tests
does (`-b 8 -e 128M`). Rates are always 10^9 B/s = 1 GB/s.
"""

from __future__ import annotations

import math
import re

from reports.shared.errors import UsageError

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str | int, what: str = "size") -> int:
    """'32M' -> 33554432. K/M/G/T are powers of 1024; a trailing B or iB is allowed."""
    if isinstance(text, int):
        if text < 0:
            raise UsageError(f"{what} must not be negative, got {text}")
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise UsageError(
            f"bad {what} {text!r}: give a number with an optional K, M, G or T suffix "
            "(powers of 1024), e.g. 8, 64K, 32M, 1G"
        )
    value = float(m.group(1)) * _SUFFIX[m.group(2).upper()]
    if value != int(value):
        raise UsageError(f"bad {what} {text!r}: it is not a whole number of bytes")
    return int(value)


def format_size(n: int) -> str:
    """Bytes as the largest exact power-of-1024 unit: 1048576 -> '1M', 1536 -> '1536'."""
    for suffix in ("T", "G", "M", "K"):
        unit = _SUFFIX[suffix]
        if n >= unit and n % unit == 0:
            return f"{n // unit}{suffix}"
    return str(n)


def gbps(nbytes: float, seconds: float) -> float:
    """Bytes over seconds in GB/s (10^9 B/s); 0 when no time elapsed."""
    return nbytes / seconds / 1e9 if seconds > 0 else 0.0


# --- durations and paths given as options: one rule for every command and the phases
# `stoker run` starts. `--timeout nan` passed `<= 0` (NaN compares False) and never fired;
# `inf` and `1e20` made a deadline no clock reaches.
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
