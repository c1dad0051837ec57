"""Findings of the groups search (`--scopes groups`): the culprits and slow links its replay
named (reports.evidence.groups)."""

from __future__ import annotations

from dataclasses import replace

from reports.shared.findings import Finding
from reports.shared.group_search import SearchResult
from reports.shared.outliers import DEFAULT_MIN_GAP


def group_findings(res: SearchResult | None) -> list[Finding]:
    """`node` findings for the search's culprits and `link` findings for its slow paths (the
    search replayed on its records: reports.evidence.groups.replay)."""
    if res is None:
        return []
    ref = res.reference
    rounds_used = res.rounds
    out: list[Finding] = []
    for h in res.culprits:
        partner = next(g for rnd in reversed(res.history) for g, _ in rnd if h in g and len(g) == 2)
        v = res.value(partner)
        other = next(x for x in partner if x != h)
        out += _by_rail(
            res,
            partner,
            Finding(
                component="node",
                check="groups busbw",
                status="below_spec",
                measured=v,
                expected=ref,
                unit="GB/s",
                hosts=(h,),
                extra={"basis": "fleet", "rounds": rounds_used, "confirmed_with": [other]},
                message=f"{h} is slow: its group and its pair with the cleared node {other} reach {v:.3g} GB/s "
                f"against {ref:.3g} GB/s for healthy groups (found in {rounds_used} rounds): "
                "check its NIC, cable and switch port, or drain it.",
            ),
        )
    for a, b in res.links:
        v = res.value((a, b))
        out += _by_rail(
            res,
            (a, b),
            Finding(
                component="link",
                check="groups busbw",
                status="below_spec",
                measured=v,
                expected=ref,
                unit="GB/s",
                hosts=(a, b),
                extra={"basis": "fleet", "rounds": rounds_used},
                message=f"The path between {a} and {b} is slow ({v:.3g} GB/s) while both reach full speed with "
                "other nodes: check the cables, switch ports and routes between them.",
            ),
        )
    return out


def _by_rail(res: SearchResult, hosts: tuple[str, ...], f: Finding) -> list[Finding]:
    """The finding as it stands where every rail of `hosts` measured slow (with `rails`), or
    one finding per slow rail where only some did (with `rail`: that NIC, not the node)."""
    per = res.rails.get(frozenset(hosts), {})
    if len(per) < 2:
        return [f]
    slow = sorted(j for j, v in per.items() if v < (1 - DEFAULT_MIN_GAP) * res.reference)
    if not slow or len(slow) == len(per):
        return [replace(f, extra={**f.extra, "rails": sorted(per)})]
    return [
        replace(
            f,
            measured=per[j],
            extra={**f.extra, "rail": j},
            message=f"Rail {j} only (the NIC of local rank {j}, nearest GPU {j}; the other rails "
            f"reach full speed): {f.message}",
        )
        for j in slow
    ]
