"""The fast path of an nccl-tests table row (pure): what `nccl_records.row_record` makes of a plain
row — every figure a finite number, in range, algbw agreeing with size / time — computed
from the row's tokens by column index, without the per-row dicts of `row_fields`/`figures`;
and its JSON line, written from a per-table template without a NetRecord or `to_dict`.

A 250 MB log is ~430k rows: its import cost ~150 us of CPU a row on the 2-core bed, most of
it here (two dicts, a dozen str() round trips per figure, a frozen dataclass, to_dict and
json.dumps per record); with this path, ~40 us a row for the whole import. Anything this path is not sure of — a token that is no figure, N/A where a
figure belongs, a row of another width, old alltoall's blank redop, a figure out of range —
gives None, and the caller takes the general path, which names what is wrong. So a row
this path accepts is one the general path accepts, with the same values
(tests/unit/test_nccl_fast.py checks both paths against each other on damaged logs).
"""

from __future__ import annotations

import itertools
import json
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from reports.ingest.nccl_rows import row_fields
from reports.shared.ops import algbw_share, bus_factor, ranks_from_factor
from reports.shared.records import NetRecord, to_dict

BACKEND = "nccl-tests"


@dataclass(frozen=True, kw_only=True, slots=True)
class Context:
    """What every record of one table (or -J file) shares."""

    op: str
    run_id: str
    ts: str
    hosts: tuple[str, ...]
    ranks: int
    device: str
    warmup: int
    iters: int
    source: str
    graph: bool | None = None  # None: the log does not say
    process_hosts: tuple[str, ...] = ()  # -J: the host of each process (per-iteration straggler view)
    # the ranks ran as several communicators (NCCL_TESTS_SPLIT: several Group numbers): each
    # row's bus factor is that of a group's ranks, unknown here, so busbw is not checked
    split: bool = False
    # the node count when the device lines do not name the hosts (NCCL's `nNodes`, or as
    # many hosts as NCCL's INFO lines named); None: as many as `hosts`
    nodes: int | None = None
    # what the log did not print and was inferred, and from what (docs/contract.md `inferred`)
    inferred: tuple[tuple[str, str], ...] = ()


# One record's values, in this order: ranks, dtype, bytes, time_s, algbw_GBps, busbw_GBps,
# wrong, count, redop, root, in_place, time_min_s, time_p99_s, time_cv, max_error (None:
# none printed), check_off (neither #wrong nor error printed: extra["check"] = "off").
Values = tuple[
    int,
    str,
    int,
    float,
    float,
    float,
    int,
    int,
    str,
    int,
    bool,
    float | None,
    float | None,
    float | None,
    float | None,
    bool,
]

_NA = ("N/A", "NA")  # nccl_rows.is_na of a token (tokens come from str.split: stripped, never empty)
_MAX = 2**62
_isfinite = math.isfinite


class _Slow(Exception):
    """The row is not plainly good: take the general path (it says what is wrong)."""


def _fig(tok: str) -> float | None:
    """nccl_rows.number(tok) when it is a figure, None when is_na(tok); _Slow otherwise."""
    if tok.isascii():
        try:
            v = float(tok)
        except ValueError:
            pass
        else:
            if _isfinite(v):
                return v
            raise _Slow  # nan, inf: not N/A either
    if tok.upper() in _NA:
        return None
    raise _Slow


_GROUP_COLS = ("time", "algbw", "busbw", "wrong", "error", "i_min", "i_max", "i_p99", "i_cv%")


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a header puts each column, as `row_fields` reads it (a leading column's last
    occurrence, a timing group's first; the first two groups: out-of-place, in-place). The
    figures are picked from a row in one call; `count`, `root` and each group's
    _GROUP_COLS are positions among them, -1 for a column not printed (it reads the None
    appended after them: not printed is N/A, as is_na(None) says)."""

    width: int
    redop_at: int  # header.index("redop"): where `aligned` looks for old alltoall's blank redop
    type: int  # row index, -1: not printed
    redop: int
    pick: Callable[[Sequence[str]], tuple[str, ...]]  # the figures' tokens: size first
    count: int
    root: int
    groups: tuple[tuple[int, ...], ...]


def layout(header: Sequence[str]) -> Layout | None:
    """None when the header names no size or no time (header_columns lets neither through)."""
    lead, groups = row_fields(header, range(len(header)))
    if "size" not in lead or not groups:
        return None
    cols = [lead["size"]]

    def at(i: int) -> int:  # the position of row column i among the picked figures
        if i < 0:
            return -1
        cols.append(i)
        return len(cols) - 1

    count, root = at(lead.get("count", -1)), at(lead.get("root", -1))
    picked = tuple(tuple(at(g.get(k, -1)) for k in _GROUP_COLS) for g in groups[:2])
    return Layout(
        width=len(header),
        redop_at=header.index("redop") if "redop" in header else -1,
        type=lead.get("type", -1),
        redop=lead.get("redop", -1),
        pick=operator.itemgetter(*cols),
        count=count,
        root=root,
        groups=picked,
    )


def _figures(toks: tuple[str, ...]) -> list[float | None]:
    """nccl_rows.number of each token, None for N/A; _Slow for a token that is neither."""
    if "".join(toks).isascii():  # float() also reads '٣' and '１': number() does not
        try:
            vals: list[float | None] = list(map(float, toks))
        except ValueError:  # N/A, or a word: token by token below
            pass
        else:
            total = sum(vals)  # type: ignore[arg-type]  # all floats here
            if total - total == 0.0:  # nan and inf (or a sum past 1e308): token by token below
                return vals
    return [_fig(t) for t in toks]


def row_values(
    lay: Layout, row: Sequence[str], op: str, ranks: int, dtypes: dict[str, str], check_busbw: bool = True
) -> list[Values] | None:
    """The records of a plain row (none for a group printed all N/A), or None: take the
    general path. `ranks` 0: read from each record's bus factor, as row_record does;
    `check_busbw` False (Context.split): busbw is not set against algbw x the bus factor."""
    if len(row) != lay.width:
        return None  # cut short, a timestamp's two tokens, or more: `aligned` decides
    k = lay.redop_at
    if k > 0 and not row[k].isalpha():  # an alphabetic token is never number(): nothing inserted
        return None
    try:
        v = _figures(lay.pick(row))
    except _Slow:
        return None
    v.append(None)  # what position -1 reads: a column not printed
    size, count, root = v[0], v[lay.count], v[lay.root]
    if size is None or size < 0 or size != int(size) or size > _MAX:
        return None
    if count is not None and (count != int(count) or not -1 <= count <= _MAX):
        return None
    if root is not None and (root != int(root) or not -1 <= root <= _MAX):
        return None
    type_tok = row[lay.type] if lay.type >= 0 else "unknown"
    dtype = dtypes.get(type_tok, type_tok)
    redop = row[lay.redop] if lay.redop >= 0 else "none"
    checked = ranks > 0 and check_busbw  # a factor of 0 (one rank, most ops) is checked too
    factor = bus_factor(op, ranks) if checked else 0.0
    share = algbw_share(op, ranks)  # hypercube: (n-1)/n; None when its ranks are not known
    out: list[Values] = []
    for gi, (ti, ai, bi, wi, ei, i_min, i_max, i_p99, i_cv) in enumerate(lay.groups):
        t, a, b = v[ti], v[ai], v[bi]
        if t is None or a is None or b is None:
            if t is None and a is None and b is None:
                continue  # a mode this test does not have: no record, no note
            return None
        if t < 0 or a < 0 or b < 0:
            return None
        if t > 0 and share is not None:  # nccl_rows.figures: algbw is share x size / time as printed
            want = size * share / t / 1e3
            if abs(a - want) > 0.02 * want + 0.011:
                return None
        if checked and abs(b - a * factor) > 0.005 * factor + 0.005 + 1e-9 * max(a * factor, b):
            return None  # nccl_rows.busbw_why names it
        wrong, error, tmin, tmax, tp99, tcv = v[wi], v[ei], v[i_min], v[i_max], v[i_p99], v[i_cv]
        if wrong is not None and (wrong < 0 or wrong != int(wrong) or wrong > _MAX):
            return None
        if (
            (error or 0.0) < 0
            or (tmin or 0.0) < 0
            or (tmax or 0.0) < 0
            or (tp99 or 0.0) < 0
            or (tcv or 0.0) < 0
        ):
            return None
        out.append(
            (
                ranks or ranks_from_factor(op, a, b),
                dtype,
                int(size),
                t * 1e-6,
                a,
                b,
                int(wrong) if wrong is not None else 0,
                int(count) if count is not None else 0,
                redop,
                int(root) if root is not None else -1,
                gi == 1,
                tmin * 1e-6 if tmin is not None else None,
                tp99 * 1e-6 if tp99 is not None else None,
                tcv / 100 if tcv is not None else None,
                error,
                error is None and wrong is None,
            )
        )
    return out


def context_extra(ctx: Context) -> dict[str, Any]:
    """The extra keys every record of the table carries, first in each record's extra."""
    extra: dict[str, Any] = {"source": ctx.source}
    if ctx.graph is not None:
        extra["graph"] = ctx.graph
    if ctx.inferred:
        extra["inferred"] = dict(ctx.inferred)
    return extra


def world_record(
    ctx: Context,
    extra: dict[str, Any],
    *,
    ranks: int,
    dtype: str,
    bytes: int,
    time_s: float,
    algbw_GBps: float,
    busbw_GBps: float,
    wrong: int,
    count: int,
    redop: str,
    root: int,
    in_place: bool,
    time_min_s: float | None = None,
    time_p50_s: float | None = None,
    time_p99_s: float | None = None,
    time_cv: float | None = None,
) -> NetRecord:
    """One row's NetRecord, the table's shared fields from ctx: both paths build it here."""
    return NetRecord(
        run_id=ctx.run_id,
        ts=ctx.ts,
        hosts=ctx.hosts,
        nodes=len(set(ctx.hosts)) if ctx.nodes is None else ctx.nodes,
        op=ctx.op,
        # one host's table is that node's own links, judged and compared node by node as
        # stoker's intra-node sweeps are (several per-node logs: the slow node is named)
        scope="intra-node" if ctx.nodes is None and len(set(ctx.hosts)) == 1 else "world",
        ranks=ranks,
        backend=BACKEND,
        dtype=dtype,
        bytes=bytes,
        time_s=time_s,
        algbw_GBps=algbw_GBps,
        busbw_GBps=busbw_GBps,
        wrong=wrong,
        count=count,
        redop=redop,
        root=root,
        in_place=in_place,
        iters=ctx.iters,
        warmup=ctx.warmup,
        device=ctx.device,
        extra=extra,
        time_min_s=time_min_s,
        time_p50_s=time_p50_s,
        time_p99_s=time_p99_s,
        time_cv=time_cv,
    )


def record(ctx: Context, v: Values) -> NetRecord:
    """The NetRecord nccl_records.row_record makes of the same row."""
    extra = context_extra(ctx)
    if v[14] is not None:
        extra["max_error"] = v[14]
    elif v[15]:
        extra["check"] = "off"
    return world_record(
        ctx,
        extra,
        ranks=v[0],
        dtype=v[1],
        bytes=v[2],
        time_s=v[3],
        algbw_GBps=v[4],
        busbw_GBps=v[5],
        wrong=v[6],
        count=v[7],
        redop=v[8],
        root=v[9],
        in_place=v[10],
        time_min_s=v[11],
        time_p99_s=v[12],
        time_cv=v[13],
    )


class Lines:
    """The JSON lines of one table's fast-path records, each byte for byte what
    json.dumps(to_dict(record(ctx, v)), separators=(",", ":")) writes. A line is a
    %-template, made by writing a record whose figures hold markers, with only the figures
    filled in: what a table's records share (dtype, redop, mode, which -I columns and extra
    keys they have) is written into the template, one per such kind. A float's %s is its
    repr, as json writes it; a record's figures are all finite (row_values checks)."""

    _FIGS = (0, 2, 3, 4, 5, 6, 7, 9)  # Values positions filled per record, then 11-14 when present
    _MAX_TEMPLATES = 256  # a garbled table of ever-new type names: bounded

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._templates: dict[tuple[Any, ...], tuple[str, tuple[int, ...], tuple[int, ...] | None]] = {}

    def _template(
        self, key: tuple[Any, ...], v: Values
    ) -> tuple[str, tuple[int, ...], tuple[int, ...] | None]:
        slots = (*self._FIGS, *(i for i in (11, 12, 13, 14) if v[i] is not None))
        for nonce in itertools.count():  # markers found nowhere else (a host name could be one)
            fake: list[Any] = list(v)
            for i in slots:
                fake[i] = f"\x01{nonce}.{i}\x01"
            text = json.dumps(to_dict(record(self.ctx, tuple(fake))), separators=(",", ":"))
            quoted = [json.dumps(fake[i]) for i in slots]
            if all(text.count(q) == 1 for q in quoted):
                break
        text = text.replace("%", "%%")  # markers hold no '%'
        at = [text.index(q) for q in quoted]
        order = tuple(sorted(range(len(slots)), key=lambda j: at[j]))
        for q in quoted:
            text = text.replace(q, "%s")
        if len(self._templates) >= self._MAX_TEMPLATES:
            self._templates.clear()
        got = self._templates[key] = (text, slots, None if order == tuple(range(len(slots))) else order)
        return got

    def line(self, v: Values) -> str:
        key = (v[1], v[8], v[10], v[11] is None, v[12] is None, v[13] is None, v[14] is None, v[15])
        text, slots, order = self._templates.get(key) or self._template(key, v)
        args = (
            tuple(v[i] for i in slots) if len(slots) > 8 else (v[0], v[2], v[3], v[4], v[5], v[6], v[7], v[9])
        )
        if order is not None:
            args = tuple(args[j] for j in order)
        return text % args
