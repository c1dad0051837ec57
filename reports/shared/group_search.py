"""The groups search (pure): schedules for finding a slow node at scale: the round-robin pair
tournament, and a grouping search that finds one bad node in about log2(n) rounds instead of
n − 1.

Round-robin (the `pairs` scope): n − 1 rounds of n/2 concurrent pairs (circle method; with an
odd n one node sits out each round in turn, so n rounds). It measures every pair once, so it
finds slow links as well as slow nodes, but its length grows with n.

Grouping search: a ring all-reduce runs at the speed of its slowest member, so a group's busbw
says whether it holds a slow node. Round 1 splits the nodes into FIRST_GROUPS groups; every
later round halves each slow group, all groups of a round running at once (they share no
node). Fast groups clear their members. Groups of 2 or 3 are resolved by pairing each member
with a cleared node. A group is slow when under (1 − min_gap) × the reference, which is the
expected figure when given, else the best result seen so far (any healthy group or pair runs
at link speed). Starting with 4 groups rather than 2 keeps cleared nodes available when two
bad nodes fall in different halves. A slow group of 2 or 3 whose members all reach full
speed with cleared partners holds a slow *link*: a group of 2 is that link; a group of 3 has
its three pairs measured. A slow link between groups that are never measured together (or
that a halving splits apart) is only named by the pair tournament.

`stoker net --scopes groups` runs this search with real collectives (netbench.runner), one
`round` per call of `measure`; the report replays the same search on the recorded rounds
(reports.evidence.groups.replay), so it reaches the decisions the run took, by the same code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from reports.shared.outliers import DEFAULT_MIN_GAP, rounds

FIRST_GROUPS = 4
Group = tuple[str, ...]
Measure = Callable[[list[Group]], list[float]]  # one round: busbw (GB/s) of each group


def round_robin_rounds(n: int) -> int:
    """Rounds of the pair tournament (netbench.topology.round_robin builds the schedule)."""
    return n - 1 + n % 2 if n >= 2 else 0


def _split(group: Group, parts: int) -> list[Group]:
    size, extra = divmod(len(group), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(group[start:end])
        start = end
    return [g for g in out if g]


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchResult:
    culprits: list[str]
    cleared: list[str]
    history: list[list[tuple[Group, float]]] = field(default_factory=list)  # per round
    links: list[tuple[str, str]] = field(default_factory=list)  # slow paths between cleared nodes
    reference: float = 0.0  # what "slow" was measured against (expected, or the best seen)
    # replayed runs: busbw per rail of each group (by its hosts), its last round that measured it
    rails: dict[frozenset[str], dict[int, float]] = field(default_factory=dict)

    @property
    def rounds(self) -> int:
        return len(self.history)

    def value(self, hosts: Sequence[str]) -> float:
        """The last busbw measured for exactly these hosts (a pair or a group)."""
        want = frozenset(hosts)
        return next(v for rnd in reversed(self.history) for g, v in rnd if frozenset(g) == want)


def group_search(
    hosts: Sequence[str], measure: Measure, expected: float | None = None, min_gap: float = DEFAULT_MIN_GAP
) -> SearchResult:
    """Adaptive halving search; `measure` runs one round of disjoint groups at once."""
    history: list[list[tuple[Group, float]]] = []
    best = expected or 0.0

    def run(groups: list[Group]) -> list[float]:
        nonlocal best
        values = measure(groups)
        history.append(list(zip(groups, values)))
        if expected is None:
            best = max(best, *values)
        return values

    def slow(v: float) -> bool:
        return v < (1 - min_gap) * best

    cleared: list[str] = []
    # Under 4 nodes nothing can be cleared before pairing: use the pair tournament there.
    open_groups: list[Group] = [tuple(hosts)] if len(hosts) >= 4 else []
    parts = FIRST_GROUPS if len(hosts) >= 2 * FIRST_GROUPS else 2
    while any(len(g) > 3 for g in open_groups):
        small = [g for g in open_groups if len(g) <= 3]
        groups = [sub for g in open_groups if len(g) > 3 for sub in _split(g, parts)]
        parts = 2
        values = run(groups)
        open_groups = small
        for g, v in zip(groups, values):
            if slow(v):
                open_groups.append(g)
            else:
                cleared.extend(g)
    culprits: list[str] = []
    members = [h for g in open_groups for h in g]
    if cleared and members:
        # Each suspect meets a different cleared node where possible so the pairs run at once.
        pairs = [(h, cleared[i % len(cleared)]) for i, h in enumerate(members)]
        for batch in rounds(pairs):
            for (h, _), v in zip(batch, run(list(batch))):
                (culprits if slow(v) else cleared).append(h)
    links = _links(open_groups, set(culprits), run, slow) if cleared else []
    return SearchResult(
        culprits=sorted(culprits), cleared=sorted(cleared), history=history, links=links, reference=best
    )


def _links(
    slow_groups: list[Group], culprits: set[str], run: Measure, slow: Callable[[float], bool]
) -> list[tuple[str, str]]:
    """A slow group whose members all reached full speed with cleared partners is slowed by
    a path inside it: a pair is that path; the pairs of a trio are measured to find it."""
    out: list[tuple[str, str]] = []
    trio_pairs: list[tuple[str, str]] = []
    for g in slow_groups:
        if culprits & set(g):
            continue
        if len(g) == 2:
            out.append((min(g), max(g)))
        else:
            trio_pairs += [(a, b) for i, a in enumerate(g) for b in g[i + 1 :]]
    for batch in rounds(trio_pairs):
        out += [(min(p), max(p)) for p, v in zip(batch, run(list(batch))) if slow(v)]
    return sorted(out)


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
