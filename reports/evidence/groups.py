"""The groups search replayed (evidence, pure): the rounds a `stoker net --scopes groups` run
recorded, fed back to the same search (reports.group_search) so that the report reaches the
decisions the run took; and the scale estimate of the search against the pair tournament.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from reports.group_search import Group, SearchResult, group_search, round_robin_rounds
from reports.outliers import DEFAULT_MIN_GAP
from reports.records import NetRecord, rail_of
from reports.table import NetTable


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


# -- the scale estimate -------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class Sizes:
    """What one measurement costs: bytes per rank buffer, timed and warmup iterations (the
    `standard` profile: --pair-bytes defaults to its --max-bytes 1G, 20 + 5 iterations), the
    per-pair busbw (one 400 Gb/s rail at ~80%), and a fixed cost per round (creating the
    round's communicators, barriers)."""

    bytes: int = 1 << 30
    iters: int = 20
    warmup: int = 5
    busbw_GBps: float = 40.0
    round_setup_s: float = 2.0


def round_seconds(group_nodes: int, sizes: Sizes) -> float:
    """One all-reduce round over groups of `group_nodes`: a ring moves 2(g−1)/g × bytes
    through each link per operation (nccl-tests' all_reduce bus factor)."""
    factor = 2 * (group_nodes - 1) / group_nodes
    per_op = sizes.bytes * factor / (sizes.busbw_GBps * 1e9)
    return sizes.round_setup_s + (sizes.iters + sizes.warmup) * per_op


def estimate(n: int, sizes: Sizes = Sizes()) -> dict[str, float]:
    """Rounds and minutes for the round-robin tournament and for the grouping search with
    one bad node (simulated: the round count depends only on n)."""
    rr = round_robin_rounds(n)
    hosts = [f"h{i}" for i in range(n)]
    bad = hosts[-1]
    result = group_search(hosts, lambda gs: [1.0 if bad in g else 4.0 for g in gs])
    group_s = sum(round_seconds(max(len(g) for g, _ in rnd), sizes) for rnd in result.history)
    return {
        "nodes": n,
        "round_robin_rounds": rr,
        "round_robin_min": rr * round_seconds(2, sizes) / 60,
        "group_rounds": result.rounds,
        "group_min": group_s / 60,
    }
