"""Confirm before fail, the measuring side: at the end of `stoker net`'s phase, each swept
scope whose judged figure is under the threshold the report holds it to (the spec's, or what
healthy systems of the detected kind reach), and the intra-node scope where a node is a low
outlier of the fleet (the report's rule, given as Settings.confirm_rule: launchers.commands.net_cmd
binds reports.judging.confirm.net_to_confirm), is swept
again — its judged op, the same sizes, the same groups — and those records say
`confirmation: true`; the report judges the two together. Cost: one more sweep of one op on
each scope under its threshold; a healthy run pays nothing. A soak's passes are repeats
already: none is confirmed."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from netbench.topology import Group, Topology, scope_groups

if TYPE_CHECKING:
    from netbench.rank_run import RankRun


def chosen(r: RankRun) -> list[tuple[str, str]]:
    """Rank 0's (scope, op) to sweep again. Judging must never cost the measurement: an error
    is said and nothing is measured again."""
    if r.s.confirm_rule is None:
        return []
    try:
        return r.s.confirm_rule(r.swept, r.spec, r.manifests)
    except Exception as exc:
        sys.stdout.flush()
        print(
            f"# not measuring again what is under its threshold ({type(exc).__name__}: {exc})",
            file=sys.stderr,
        )
        return []


def confirm_under(r: RankRun, topo: Topology, sweep: Callable[[str, Sequence[Group], str], object]) -> None:
    """Every rank: hear rank 0's choice, then sweep each chosen scope's op again with `sweep`."""
    from netbench.rank_run import measure_step

    if "soak_pass" in r.tag:
        return
    with measure_step(r.wd, "choosing the figures to measure again"):
        again = r.b.bcast(chosen(r) if r.writer is not None else None)
    for scope, op in again:
        rounds, _ = scope_groups(topo, scope)
        if rounds:
            r.say(
                f"# {scope} {op}: under its threshold at first; measured again (the same test, the same nodes)"
            )
            sweep(scope, rounds[0], op)
