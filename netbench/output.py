"""The nccl-tests-style table on stdout (pure formatting; the caller prints).

Columns as nccl-tests prints them: size count type redop root, then time algbw busbw
#wrong for out-of-place and, with --in-place, again for in-place. Rows stream as each
size finishes, so the table is the progress display.
"""

from __future__ import annotations

from collections.abc import Sequence

from reports.shared.records import NetRecord

_LEFT = "{:>12}  {:>12}  {:>8}  {:>6}  {:>6}"
_RIGHT = "  {:>8}  {:>7}  {:>7}  {:>6}"


def scope_header(
    scope: str, group: int, ranks: int, hosts: Sequence[str], backend: str, dtype: str, extra: str = ""
) -> str:
    where = f"on host {hosts[0]}" if len(hosts) == 1 else f"on {len(hosts)} hosts {','.join(hosts)}"
    tail = f", {extra}" if extra else ""
    noun = "rank" if ranks == 1 else "ranks"
    return f"# stoker net: scope {scope}, group {group}, {ranks} {noun} {where}, backend {backend}, dtype {dtype}{tail}"


def column_header(in_place_modes: Sequence[bool], many_groups: bool) -> list[str]:
    """nccl-tests' three header lines; one block of columns per mode measured (an op that
    only runs in place on this backend gets a single block labelled in-place)."""
    modes = ["in-place" if m else "out-of-place" for m in in_place_modes]
    grp = "  group" if many_groups else ""
    line1 = "#" + " " * 51 + "".join(f"{m:^36}" for m in modes)
    line2 = (
        "#"
        + _LEFT.format("size", "count", "type", "redop", "root")[1:]
        + "".join(_RIGHT.format("time", "algbw", "busbw", "#wrong") for _ in modes)
        + grp
    )
    line3 = (
        "#"
        + _LEFT.format("(B)", "(elements)", "", "", "")[1:]
        + "".join(_RIGHT.format("(us)", "(GB/s)", "(GB/s)", "") for _ in modes)
    )
    return [line.rstrip() for line in (line1, line2, line3)]


def op_header(op: str) -> str:
    return f"# op {op}"


def _cells(rec: NetRecord) -> str:
    us = rec.time_s * 1e6
    t = f"{us:.1f}" if us < 1e4 else f"{us:.0f}"
    return _RIGHT.format(t, f"{rec.algbw_GBps:.2f}", f"{rec.busbw_GBps:.2f}", str(rec.wrong))


def row(recs: Sequence[NetRecord], group: int | None = None) -> str:
    """One size: the records of its modes (out-of-place, then in-place) side by side."""
    first = recs[0]
    left = _LEFT.format(first.bytes, first.count, first.dtype, first.redop, first.root)
    return left + "".join(_cells(x) for x in recs) + ("" if group is None else f"  {group:>5}")


def skipped(scope: str, why: str) -> str:
    return f"stoker net: scope {scope} skipped: {why}"


def footer(out_dir: str, n_records: int) -> str:
    return (
        f"# {n_records} records in {out_dir}/net.jsonl (GB/s = 1e9 B/s; busbw per nccl-tests PERFORMANCE.md)"
    )
