"""Localisation: name the slow node or link from pair and per-node results (pure).

Pair tests (`scope: pair` records, two hosts each, `pass` 1 for the round-robin and 2 for the
confirmation re-pairings) give a matrix of inter-node busbw. A node's *score* is the best busbw
of any pair it took part in: a healthy node reaches full speed with at least one healthy
partner, while every pair of a node with a slow NIC is capped by it. So

- a node is the culprit when its score is a low outlier of the fleet of scores (median minus
  the larger of K robust spreads — 1.4826 × MAD — and a minimum relative gap, so that normal
  jitter is never a finding), or is below the expected pair figure while other nodes meet it;
- a link is slow when one pair falls well below what both its ends reach with other nodes
  (min of the two scores): a slow path between two otherwise healthy nodes names both ends
  in one `link` finding, never two node findings.

Per-node intra-node busbw (one `intra-node` record per host) and per-host storage bandwidth
(`IoRecord.per_host_bw_GBps`) get the same outlier test. A fleet comparison needs 3 hosts.
"""
from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from reports.findings import Finding
from reports.records import IoRecord, NetRecord

DEFAULT_MIN_GAP = 0.25   # never call anything within 25% of its reference an outlier
MAD_K = 3.0              # ... nor within 3 robust standard deviations of the fleet
MAD_TO_SIGMA = 1.4826    # MAD of a normal distribution × this = its standard deviation
MIN_FLEET = 3            # with 2 hosts a low one cannot be told from a high one
PAIR_OPS = ("all_reduce", "sendrecv")   # preferred op for pair tests, in this order

Pair = tuple[str, str]


def _key(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


# -- the fleet outlier test ---------------------------------------------------------
def low_threshold(values: Sequence[float], min_gap: float = DEFAULT_MIN_GAP) -> tuple[float, float]:
    """(median, threshold): values under the threshold are low outliers of this fleet."""
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    return med, med - max(MAD_K * MAD_TO_SIGMA * mad, min_gap * med)


def low_outliers(values: Mapping[str, float], min_gap: float = DEFAULT_MIN_GAP) -> tuple[float, list[str]]:
    """(fleet median, sorted names whose value is a low outlier); none under MIN_FLEET values."""
    if len(values) < MIN_FLEET:
        return (statistics.median(values.values()) if values else 0.0), []
    med, thr = low_threshold(list(values.values()), min_gap)
    return med, sorted(h for h, v in values.items() if v < thr)


# -- the pair matrix ----------------------------------------------------------------
def _pair_op(net: Sequence[NetRecord]) -> str | None:
    ops = {r.op for r in net if r.scope == "pair" and len(set(r.hosts)) == 2}
    for op in PAIR_OPS:
        if op in ops:
            return op
    return min(ops) if ops else None


def _best(recs: Iterable[NetRecord]) -> dict[Pair, float]:
    out: dict[Pair, float] = {}
    for r in recs:
        k = _key(*sorted(set(r.hosts)))
        out[k] = max(out.get(k, 0.0), r.busbw_GBps)
    return out


def pair_values(net: Sequence[NetRecord]) -> dict[Pair, float]:
    """Best busbw (GB/s) per host pair at the largest size measured. The confirmation pass
    (`pass` 2) supersedes the round-robin for the suspects it re-measured: their first-pass
    pairs are dropped, so a suspect cleared by good partners leaves no slow link behind, and
    one confirmed slow is judged on the confirmation alone. The suspects are recomputed
    from the first pass exactly as `confirmation_pairs` chose them."""
    op = _pair_op(net)
    recs = [r for r in net if r.scope == "pair" and r.op == op and len(set(r.hosts)) == 2 and r.wrong == 0]
    if not recs:
        return {}
    size = max(r.bytes for r in recs)
    first = _best(r for r in recs if r.bytes == size and r.extra.get("pass") != 2)
    second = _best(r for r in recs if r.bytes == size and r.extra.get("pass") == 2)
    if second:
        bad_nodes, bad_links = suspects(first)
        retested = (set(bad_nodes) | {h for k in bad_links for h in k}) & {h for k in second for h in k}
        first = {k: v for k, v in first.items() if not retested & set(k)}
    return {k: max(first.get(k, 0.0), second.get(k, 0.0)) for k in first.keys() | second.keys()}


def pair_matrix(net: Sequence[NetRecord]) -> tuple[list[str], list[list[float | None]]]:
    """Hosts (sorted) and the symmetric matrix of pair busbw (GB/s) at the largest size."""
    values = pair_values(net)
    hosts = sorted({h for k in values for h in k})
    index = {h: i for i, h in enumerate(hosts)}
    matrix: list[list[float | None]] = [[None] * len(hosts) for _ in hosts]
    for (a, b), v in values.items():
        matrix[index[a]][index[b]] = matrix[index[b]][index[a]] = v
    return hosts, matrix


def node_scores(pairs: Mapping[Pair, float]) -> dict[str, float]:
    """Each host's best pair: what its own link can do when its partner is not the limit."""
    best: dict[str, float] = {}
    for (a, b), v in pairs.items():
        for h in (a, b):
            best[h] = max(best.get(h, 0.0), v)
    return best


# -- judging pairs --------------------------------------------------------------------
def slow_nodes(pairs: Mapping[Pair, float], expected: float | None = None,
               min_gap: float = DEFAULT_MIN_GAP) -> dict[str, tuple[float, str]]:
    """{host: (reference GB/s, basis "fleet" | "spec")} for hosts whose every pair is slow."""
    scores = node_scores(pairs)
    med, fleet = low_outliers(scores, min_gap)
    out = {h: (med, "fleet") for h in fleet}
    if expected:
        floor = (1 - min_gap) * expected
        meeting = [s for s in scores.values() if s >= floor]
        # Every node slow is a fleet-wide network problem (the judge's finding), not a node.
        # A node just under the figure while the others are just over it is not one either:
        # it must also be clearly slower than the nodes that meet the figure.
        if meeting:
            bar = min(floor, (1 - min_gap) * statistics.median(meeting))
            for h in sorted(h for h, s in scores.items() if s < bar and h not in out):
                out[h] = (expected, "spec")
    return out


def slow_links(pairs: Mapping[Pair, float], min_gap: float = DEFAULT_MIN_GAP) -> dict[Pair, float]:
    """{pair: what both ends reach elsewhere} for pairs far below the slower end's score.
    A pair capped by a slow node sits at that node's score and is not a link."""
    scores = node_scores(pairs)
    ratios = {k: v / min(scores[k[0]], scores[k[1]]) for k, v in pairs.items() if v > 0}
    if len(scores) < MIN_FLEET or not ratios:
        return {}
    _, thr = low_threshold(list(ratios.values()), min_gap)
    # The ratio's reference is 1 (a pair at its slower end's speed), not the fleet median.
    thr = min(thr, 1 - min_gap)
    return {k: min(scores[k[0]], scores[k[1]]) for k, r in ratios.items() if r < thr}


def _confirmed_by(net: Sequence[NetRecord], host: str) -> list[str]:
    """Partners of `host` in second-pass (confirmation) pair records."""
    return sorted({h for r in net if r.scope == "pair" and r.extra.get("pass") == 2 and host in r.hosts
                   for h in r.hosts if h != host})


def pair_findings(net: Sequence[NetRecord], expected_pair_GBps: float | None = None,
                  min_gap: float = DEFAULT_MIN_GAP) -> list[Finding]:
    pairs = pair_values(net)
    hosts = node_scores(pairs)
    if len(hosts) < 2:
        return []
    size = max((r.bytes for r in net if r.scope == "pair"), default=0)
    out: list[Finding] = []
    if len(hosts) == 2:
        (k, v), = pairs.items()
        if expected_pair_GBps and v < (1 - min_gap) * expected_pair_GBps:
            out.append(Finding(
                component="link", check="pair busbw", status="below_spec", measured=v,
                expected=expected_pair_GBps, unit="GB/s", hosts=k, extra={"bytes": size, "basis": "spec"},
                message=f"The only pair, {k[0]}–{k[1]}, reaches {_fmt(v)} GB/s against {_fmt(expected_pair_GBps)} "
                        "GB/s expected; pair each with a third node to tell which end is slow."))
        return out
    for h, (ref, basis) in sorted(slow_nodes(pairs, expected_pair_GBps, min_gap).items()):
        partners = _confirmed_by(net, h)
        seen = f", confirmed with {', '.join(partners)}" if partners else ""
        against = f"{_fmt(ref)} GB/s for the fleet's median node" if basis == "fleet" else f"{_fmt(ref)} GB/s expected"
        out.append(Finding(
            component="node", check="pair busbw", status="below_spec", measured=hosts[h], expected=ref,
            unit="GB/s", hosts=(h,), extra={"bytes": size, "basis": basis, "confirmed_with": partners},
            message=f"{h} is slow with every partner (best pair {_fmt(hosts[h])} GB/s against {against}{seen}): "
                    "check its NIC, cable and switch port, or drain it."))
    for (a, b), ref in sorted(slow_links(pairs, min_gap).items()):
        v = pairs[(a, b)]
        out.append(Finding(
            component="link", check="pair busbw", status="below_spec", measured=v, expected=ref, unit="GB/s",
            hosts=(a, b), extra={"bytes": size, "basis": "fleet"},
            message=f"The path between {a} and {b} is slow ({_fmt(v)} GB/s) while both reach {_fmt(ref)} GB/s "
                    "with other nodes: check the cables, switch ports and routes between them."))
    return out


# -- per-node intra-node and storage ---------------------------------------------------
def intra_node_findings(net: Sequence[NetRecord], min_gap: float = DEFAULT_MIN_GAP) -> list[Finding]:
    by_op: dict[str, list[NetRecord]] = defaultdict(list)
    for r in net:
        if r.scope == "intra-node" and len(r.hosts) == 1 and r.wrong == 0:
            by_op[r.op].append(r)
    out: list[Finding] = []
    for op, recs in sorted(by_op.items()):
        size = max(r.bytes for r in recs)
        per_host: dict[str, float] = {}
        for r in recs:
            if r.bytes == size:
                per_host[r.hosts[0]] = max(per_host.get(r.hosts[0], 0.0), r.busbw_GBps)
        med, low = low_outliers(per_host, min_gap)
        out += [Finding(
            component="node", check=f"intra-node {op} busbw", status="below_spec", measured=per_host[h],
            expected=med, unit="GB/s", hosts=(h,), extra={"bytes": size, "basis": "fleet"},
            message=f"{h}'s intra-node {op} reaches {_fmt(per_host[h])} GB/s against a fleet median of "
                    f"{_fmt(med)} GB/s: check its GPU links (nvidia-smi topo -m, NVLink errors) or drain it.")
            for h in low]
    return out


def storage_findings(io: Sequence[IoRecord], min_gap: float = DEFAULT_MIN_GAP) -> list[Finding]:
    out: list[Finding] = []
    for r in io:
        if r.failed:
            continue
        med, low = low_outliers(r.per_host_bw_GBps, min_gap)
        what = f"{r.workload} {r.direction}"
        out += [Finding(
            component="node", check=f"per-host {what} {r.path}", status="below_spec",
            measured=r.per_host_bw_GBps[h], expected=med, unit="GB/s", hosts=(h,),
            extra={"path": r.path, "workload": r.workload, "basis": "fleet"},
            message=f"{h} runs {what} on {r.path} at {_fmt(r.per_host_bw_GBps[h])} GB/s against a fleet median "
                    f"of {_fmt(med)} GB/s: check its mount options, storage NIC and local disks.")
            for h in low]
    return out


def localise(net: Sequence[NetRecord], io: Sequence[IoRecord], expected_pair_GBps: float | None = None) -> list[Finding]:
    """`node` and `link` findings naming culprit hosts; [] when nothing stands out.
    `expected_pair_GBps` is the busbw a healthy pair should reach (None: judge by the fleet)."""
    return pair_findings(net, expected_pair_GBps) + intra_node_findings(net) + storage_findings(io)


# -- the confirmation pass --------------------------------------------------------------
def suspects(pair_GBps: Mapping[Pair, float], min_gap: float = DEFAULT_MIN_GAP / 2) -> tuple[list[str], list[Pair]]:
    """Nodes and links worth a second look: the same tests at half the gap, so that a
    borderline first pass is measured again rather than judged on one sample."""
    pairs = {_key(*k): v for k, v in pair_GBps.items()}
    return sorted(slow_nodes(pairs, None, min_gap)), sorted(slow_links(pairs, min_gap))


def confirmation_pairs(pair_GBps: dict[tuple[str, str], float], per_suspect: int = 2) -> list[tuple[str, str]]:
    """Second pass: re-pair each suspect host with known-good hosts. Input: busbw per
    (host, host) pair from the round-robin pass. Output: pairs to measure again.
    A suspect node meets `per_suspect` good partners (the fastest first, spread over the
    suspects so that the pairs can run concurrently); a suspect link is measured again and
    each of its ends meets a good partner."""
    pairs = {_key(*k): v for k, v in pair_GBps.items()}
    bad_nodes, bad_links = suspects(pairs)
    flagged = set(bad_nodes) | {h for k in bad_links for h in k}
    scores = node_scores(pairs)
    good = sorted((h for h in scores if h not in flagged), key=lambda h: (-scores[h], h))
    if not good:
        return []
    out: list[Pair] = []
    turn = 0

    def meet(h: str, count: int) -> None:
        nonlocal turn
        for i in range(min(count, len(good))):
            out.append(_key(h, good[(turn + i) % len(good)]))
        turn += 1

    for h in bad_nodes:
        meet(h, per_suspect)
    for a, b in bad_links:
        if a in bad_nodes or b in bad_nodes:
            continue
        out.append((a, b))
        meet(a, 1)
        meet(b, 1)
    return list(dict.fromkeys(out))


def rounds(pairs: Iterable[Pair]) -> list[list[Pair]]:
    """Greedy split of pairs into rounds in which no host is in two pairs, so that each
    round's pairs can run at the same time without sharing a NIC."""
    out: list[tuple[set[str], list[Pair]]] = []
    for p in pairs:
        for busy, members in out:
            if not busy & set(p):
                busy.update(p)
                members.append(p)
                break
        else:
            out.append((set(p), [p]))
    return [members for _, members in out]
