"""One table row of an nccl-tests log, checked (pure): the header's columns, whether a line
is a row, the row lined up with its header, and its figures — every one a finite number
>= 0, or a one-line reason naming what is wrong, which the importer reports with the line.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from reports.shared.ops import bus_factor

_COLS = {
    "size": "size",
    "bytes": "size",
    "count": "count",
    "n": "count",
    "type": "type",
    "redop": "redop",
    "op": "redop",
    "root": "root",
    "time": "time",
    "cputime": "time",
    "algbw": "algbw",
    "busbw": "busbw",
    "#wrong": "wrong",
    "wrong": "wrong",
    "error": "error",
    "res": "error",
}


def number(tok: str) -> float | None:
    """A finite number, or None ('nan', 'inf', 'N/A', '12x', '٣' are not figures)."""
    if not str(tok).isascii():
        return None
    try:
        v = float(tok)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


FIGURES = ("time", "algbw", "busbw", "wrong", "error")  # what every timing group prints, in order


def header_columns(body: str) -> list[str] | None:
    toks = body.lstrip("#").split()
    lowered = [t.lower() for t in toks]
    if "algbw" not in lowered or "busbw" not in lowered or not ({"size", "bytes"} & set(lowered)):
        return None
    cols = [_COLS.get(t, t) for t in lowered]
    # each timing group (from its `time` on) names algbw and busbw once, or the columns
    # could not be told apart; the leading columns name the size once
    starts = [i for i, c in enumerate(cols) if c == "time"]
    groups = [cols[a:b] for a, b in zip(starts, [*starts[1:], len(cols)])]
    lead = cols[: starts[0]] if starts else cols
    if (
        not groups
        or lead.count("size") != 1
        or {"algbw", "busbw"} & set(lead)
        or not _same_figures(groups)
        or any(g.count("algbw") != 1 or g.count("busbw") != 1 for g in groups)
    ):
        return None
    return cols


def _same_figures(groups: Sequence[Sequence[str]]) -> bool:
    """Every timing group prints the first one's figures, in its order; the last may stop
    short of them (a table copied from a page that cut its right edge: in-place without #wrong)."""
    want = [c for c in groups[0] if c in FIGURES]
    for i, g in enumerate(groups[1:], 1):
        got = [c for c in g if c in FIGURES]
        if got != want and not (i == len(groups) - 1 and got == want[: len(got)] and len(got) >= 3):
            return False
    return True


def is_row(header: Sequence[str], tokens: Sequence[str]) -> bool:
    """A table row: under a header, starting with the size; or shaped like one (as many
    columns, mostly numbers), so that a row with a damaged size is named, not lost."""
    if not header:
        return False
    if tokens[0].isascii() and tokens[0].isdigit():
        return True
    return len(tokens) >= len(header) - 1 and 2 * sum(number(t) is not None for t in tokens) >= len(tokens)


T = TypeVar("T")


def row_fields(header: Sequence[str], row: Sequence[T]) -> tuple[dict[str, T], list[dict[str, T]]]:
    """Split a row by the header into its leading columns and one timing group per mode (a
    row of positions gives where each column is: nccl_fast.layout)."""
    lead: dict[str, T] = {}
    groups: list[dict[str, T]] = []
    for name, tok in zip(header, row):
        if name == "time":
            groups.append({})
        if groups:
            groups[-1].setdefault(name, tok)
        else:
            lead[name] = tok
    return lead, groups


def is_na(value: Any) -> bool:
    return value is None or str(value).strip().upper() in ("N/A", "NA", "")


def figures(
    lead: Mapping[str, Any], timing: Mapping[str, Any], share: float | None = 1.0
) -> tuple[dict[str, float], str | None]:
    """The row's figures, or what is wrong with them: every one a finite number >= 0, the
    size and count whole, #wrong (when printed) a count, algbw `share` x size / time (the op's
    reports/shared/ops.py algbw_share; None: not checked)."""
    got: dict[str, float] = {}
    for key, src, name in (
        ("size", lead, "size"),
        ("time", timing, "time"),
        ("algbw", timing, "algbw"),
        ("busbw", timing, "busbw"),
    ):
        v = number(str(src.get(key, "")))
        if v is None or v < 0:
            return got, f"{name} {str(src.get(key, ''))[:20]!r} is not a number >= 0"
        got[key] = v
    if got["size"] != int(got["size"]) or got["size"] > 2**62:
        return got, f"size {lead.get('size')!r} is not a whole number of bytes"
    # algbw is size / time as nccl-tests prints both (time in us, GB/s): a row whose algbw
    # disagrees was damaged (a digit lost or added), whatever it still parses as
    if (
        share is not None
        and got["time"] > 0
        and not algbw_fits(
            got["size"] * share, got["time"], got["algbw"], str(timing.get("time")), str(timing.get("algbw"))
        )
    ):
        want = got["size"] * share / got["time"] / 1e3
        of = "size / time" if share == 1.0 else f"{share:.4g} x size / time"
        return got, f"algbw {timing.get('algbw')!r} is not {of} ({want:.2f} GB/s)"
    for key in ("wrong", "error"):
        if not is_na(timing.get(key)):
            v = number(str(timing.get(key)))
            if v is None or v < 0 or (key == "wrong" and (v != int(v) or v > 2**62)):
                return (
                    got,
                    f"{'#wrong' if key == 'wrong' else 'error'} {str(timing.get(key))[:20]!r} is not a count",
                )
            got[key] = v
    for key in ("i_min", "i_max", "i_p99", "i_cv%"):  # nccl-tests -I columns: when printed, figures
        if not is_na(timing.get(key)):
            v = number(str(timing.get(key)))
            if v is None or v < 0:
                return got, f"{key} {str(timing.get(key))[:20]!r} is not a number >= 0"
    for key in ("count", "root"):  # optional columns: when printed, a whole number
        if not is_na(lead.get(key)):
            v = number(str(lead.get(key)))
            if v is None or v != int(v) or not -1 <= v <= 2**62:
                return got, f"{key} {str(lead.get(key))[:20]!r} is not a whole number"
            got[key] = v
    return got, None


def half_unit(tok: str) -> float:
    """Half a unit in the last place a figure was printed with: how far the printed figure
    may be from the one nccl-tests computed. Its getFloatStr (src/util.cu) fits each figure
    to its column with 2, 1 or 0 decimals, else as 1e+06 or 1.2e+06: '0.04' is 0.005 off at
    most, '2059.8' 0.05, '1e+06' 5e+05. A token that is no such figure: 0."""
    mant, _, exp = tok.strip().lower().partition("e")
    try:
        e = int(exp) if exp else 0
    except ValueError:
        return 0.0
    decimals = len(mant.partition(".")[2])
    return 0.5 * 10.0 ** (e - decimals)


def algbw_fits(size: float, time_us: float, algbw: float, time_tok: str, algbw_tok: str) -> bool:
    """Whether a printed algbw is size / time (GB/s, time in us) as far as both printed
    figures tell: 2% (+0.011) of slack, or wider where the printed digits are fewer (a time
    of 0.04 us is anywhere in 0.035..0.045, so size / time in a range of +-12%: the in-place
    column of a one-GPU run, CUDA-graph times)."""
    want = size / time_us / 1e3
    if abs(algbw - want) <= 0.02 * want + 0.011:
        return True
    dt, da = half_unit(time_tok), half_unit(algbw_tok)
    lo = size / (time_us + dt) / 1e3
    hi = size / (time_us - dt) / 1e3 if time_us > dt else math.inf
    slack = 1e-9 * max(algbw, want)
    return algbw + da + slack >= lo and algbw - da - slack <= hi


def busbw_why(
    op: str, ranks: int, algbw: float, busbw: float, algbw_tok: str = "0.00", busbw_tok: str = "0.00"
) -> str | None:
    """Why a row's busbw is not algbw x the op's bus factor among `ranks` (nccl-tests
    src/*.cu getBw, reports/shared/ops.py), or None. Each is off by up to half a unit in its last
    printed place (half_unit; 0.005 for 2 decimals), so busbw by up to that of algbw x
    factor + its own. Unknown ranks (0): the rank count is read from this very ratio,
    nothing to check."""
    if ranks <= 0:
        return None
    f = bus_factor(op, ranks)
    want = algbw * f
    da, db = max(0.005, half_unit(algbw_tok)), max(0.005, half_unit(busbw_tok))
    if abs(busbw - want) > da * f + db + 1e-9 * max(want, busbw):
        return f"busbw {busbw:g} is not algbw {algbw:g} x {f:.4g} ({op} on {ranks} ranks: {want:.2f} GB/s)"
    return None


def aligned(header: Sequence[str], row: list[str]) -> list[str] | str:
    """The row's tokens lined up with the header, or what is wrong with the row."""
    if "redop" in header:
        k = header.index("redop")
        # old versions print alltoall's redop as blanks: the type is followed by a number
        if 0 < k < len(row) and number(row[k - 1]) is None and number(row[k]) is not None:
            row = [*row[:k], "none", *row[k:]]
    if len(row) < len(header):
        return f"{len(row)} of {len(header)} columns (a line cut short?)"
    if len(row) > len(header) and header[-1] != "timestamp":  # a timestamp prints as date and time
        return f"{len(row)} columns where the header names {len(header)}"
    return row


def skipped_note(source_name: str, skipped: Sequence[tuple[str, str]], total: int) -> str:
    """'FILE: skipped 2 of 12 rows: line 7: busbw 'nan' is not a number >= 0; line 9: ...'"""
    shown = "; ".join(f"{where}: {why}" for where, why in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"{source_name}: skipped {len(skipped)} of {total} rows: {shown}{more}"


# nccl-tests' type and reduction names, as its tables print them
TYPE_NAMES = frozenset(
    {"half", "float", "double", "bfloat16", "int8", "uint8", "int32", "uint32", "int64", "uint64",
     "f8e4m3", "f8e5m2", "char", "int", "fp8_e4m3", "fp8_e5m2"}
)  # fmt: skip
REDOPS = frozenset({"sum", "prod", "max", "min", "avg", "none", "premulsum", "mulsum"})


def _check_col(tok: str) -> str:
    """`wrong` for an integer count (#wrong, 2.10 on), `error` for a float (the largest
    error, before 2.10: '0e+00', '1e-07'), N/A stays a count."""
    return "error" if ("e" in tok.lower() and tok.upper() not in ("N/A", "NA")) or "." in tok else "wrong"


def assumed_header(tokens: Sequence[str]) -> list[str] | None:
    """The columns of a row pasted without its header, when the row is one of nccl-tests'
    standard layouts (its src/common.cu writeBenchmarkLinePreamble and the two timing groups):
    `size count type redop root` (2.x), `size count type redop` (before root was printed) or
    `size count type` (the oldest),
    then time, algbw, busbw and #wrong (or error) out-of-place and in-place. None when the row
    is not plainly one of them (the reader then waits for a header)."""
    n = len(tokens)
    if n < 11 or not (tokens[0].isascii() and tokens[0].isdigit()) or tokens[2] not in TYPE_NAMES:
        return None
    if tokens[3].lower() in REDOPS:
        root = n == 13 and number(tokens[4]) is not None and float(tokens[4]) == int(float(tokens[4]))
        lead = ["size", "count", "type", "redop", *(["root"] if root else [])]
    elif n == 11 and number(tokens[3]) is not None:  # the oldest layout: no redop, no root
        lead = ["size", "count", "type"]
    else:
        return None
    if n != len(lead) + 8:
        return None
    group = ["time", "algbw", "busbw", _check_col(tokens[len(lead) + 3])]
    return [*lead, *group, *group]
