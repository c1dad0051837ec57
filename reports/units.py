"""Sizes and rates: parsing and printing (pure).

Sizes on the command line take K, M, G, T suffixes as powers of 1024, as nccl-tests
does (`-b 8 -e 128M`). Rates are always 10^9 B/s = 1 GB/s.
"""

from __future__ import annotations

import re

from reports.errors import UsageError

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
