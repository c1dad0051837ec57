"""Findings of the groups search (`--scopes groups`): the culprits and slow links its replay
named (reports.evidence.groups)."""

from __future__ import annotations

from reports.evidence.groups import SearchResult
from reports.findings import Finding


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
        out.append(
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
            )
        )
    for a, b in res.links:
        v = res.value((a, b))
        out.append(
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
            )
        )
    return out
