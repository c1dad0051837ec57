"""The groups search replayed (evidence, pure): the rounds a `stoker net --scopes groups` run
recorded, fed back to the same search (reports.shared.group_search) so that the report reaches the
decisions the run took; and the scale estimate of the search against the pair tournament.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from reports.shared.group_search import Group, SearchResult, group_search
from reports.shared.outliers import DEFAULT_MIN_GAP
from reports.shared.records import NetRecord, rail_of
from reports.table.read import NetTable


# -- the search replayed on recorded rounds ---------------------------------------------
def recorded_rounds(net: Sequence[NetRecord]) -> list[dict[frozenset[str], float]]:
    """busbw per group (by its hosts) of each round of `scope: "groups"` records, for the op
    and size the search used (all_reduce preferred, the largest size); a group measured on
    several rails is its slowest rail, as the run decided."""
    recs = [r for r in net if r.scope == "groups" and r.wrong == 0 and isinstance(r.extra.get("round"), int)]
    # every round of a search has a record: a round number past their count is no round of
    # it (a hand-edited `round: 10**12` asked for a list of 10^12 rounds), and is left out
    recs = [r for r in recs if 0 <= r.extra["round"] < len(recs)]
    if not recs:
        return []
    ops = {r.op for r in recs}
    op = "all_reduce" if "all_reduce" in ops else min(ops)
    recs = [r for r in recs if r.op == op]
    size = max(r.bytes for r in recs)
    out: list[dict[frozenset[str], float]] = [{} for _ in range(1 + max(r.extra["round"] for r in recs))]
    for r in recs:
        if r.bytes == size:  # a group is as fast as its slowest rail (one record per rail)
            rnd, key = out[r.extra["round"]], frozenset(r.hosts)
            rnd[key] = min(rnd.get(key, r.busbw_GBps), r.busbw_GBps)
    return out


def recorded_rails(net: Sequence[NetRecord]) -> dict[frozenset[str], dict[int, float]]:
    """busbw per rail of each group (by its hosts) at the op and size `recorded_rounds` uses,
    from the last round that measured it (records without `rail` are rail 0)."""
    recs = [r for r in net if r.scope == "groups" and r.wrong == 0 and isinstance(r.extra.get("round"), int)]
    if not recs:
        return {}
    ops = {r.op for r in recs}
    op = "all_reduce" if "all_reduce" in ops else min(ops)
    recs = [r for r in recs if r.op == op]
    size = max(r.bytes for r in recs)
    out: dict[frozenset[str], dict[int, float]] = {}
    last: dict[frozenset[str], int] = {}
    for r in sorted((r for r in recs if r.bytes == size), key=lambda r: r.extra["round"]):
        key = frozenset(r.hosts)
        if last.get(key) != r.extra["round"]:  # a later round replaces an earlier one
            out[key], last[key] = {}, r.extra["round"]
        out[key][rail_of(r)] = r.busbw_GBps
    return out


def replay(table: NetTable, min_gap: float = DEFAULT_MIN_GAP) -> SearchResult | None:
    """The search the run took, decided again from its records (None: no groups records,
    or they do not hold a round the search asks for, e.g. the run was cut short). With several
    runs in one directory, the last run's search."""
    net = table.scope("groups")  # built only for these records when read as columns
    runs = list(dict.fromkeys(r.run_id for r in net if r.scope == "groups"))
    net = [r for r in net if r.scope == "groups" and r.run_id == runs[-1]] if runs else []
    recorded = recorded_rounds(net)
    if not recorded or not recorded[0]:
        return None
    # round 0 splits the node list into contiguous groups in rank order: their concatenation
    # is that list (hosts within a record are already in rank order)
    first = sorted(
        (r for r in net if r.scope == "groups" and r.extra.get("round") == 0), key=lambda r: r.group
    )
    hosts = list(dict.fromkeys(h for r in first for h in r.hosts))
    done = 0

    def measure(groups: list[Group]) -> list[float]:
        nonlocal done
        if done >= len(recorded):
            raise LookupError("round not recorded")
        values = [recorded[done].get(frozenset(g)) for g in groups]
        done += 1
        if any(v is None for v in values):
            raise LookupError("group not recorded")
        return [float(v) for v in values if v is not None]

    try:
        res = group_search(hosts, measure, min_gap=min_gap)
    except LookupError:
        return None
    return replace(res, rails=recorded_rails(net))
