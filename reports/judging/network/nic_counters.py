"""Error counters that rose on a NIC during a plain sweep (pure): the counters.jsonl records
without `soak_pass` (netbench/soak.py `sweep_counters` reads each node's counters before and
after the sweep). Where a localisation finding names the NIC's host on its rail, or the host
on every rail, the counters are that finding's evidence (reports/judging/network/rail_nic.py puts them
in its message). A NIC whose error counters rose while its rail measured fine is a `network
port` finding of its own: a port that counts errors under load fails a run later. The NIC's
rail is the GPU it is nearest (the inventory's `nvidia-smi topo -m`); an InfiniBand port the
inventory does not place is named without a rail, an Ethernet interface it does not place
(a management port, a container's veth) not at all. A soak's counters are stability.py's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from reports.judging.network.rail_nic import rails_of_nic
from reports.shared.findings import Finding


def sweep_rises(counters: Sequence[dict[str, Any]]) -> dict[tuple[str, str], dict[str, float]]:
    """{(host, device): {counter: rise}} of the error counters that rose over a plain sweep."""
    out: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for c in counters:
        delta = c.get("delta")
        if "soak_pass" in c or c.get("severity") != "error" or not isinstance(delta, (int, float)):
            continue
        if delta > 0 and not str(c.get("device", "")).startswith("gpu"):
            moved = out[(str(c.get("host")), str(c.get("device")))]
            moved[str(c.get("counter"))] = moved.get(str(c.get("counter")), 0.0) + float(delta)
    return dict(out)


def _named(located: Sequence[Finding], host: str, rails: Sequence[int]) -> bool:
    """A node or link finding names `host` on one of `rails`, or on every rail (no `rail`)."""
    for f in located:
        if f.component in ("node", "link") and host in f.hosts:
            rail = f.extra.get("rail")
            if rail is None or rail in rails:
                return True
    return False


def sweep_counter_findings(
    located: Sequence[Finding], records: Sequence[dict[str, Any]], counters: Sequence[dict[str, Any]]
) -> list[Finding]:
    """A `network port` finding per NIC whose error counters rose over the sweep while no
    localisation finding named its host on its rail."""
    out = []
    for (host, device), moved in sorted(sweep_rises(counters).items()):
        rails = rails_of_nic(host, device, records)
        if not rails and ":" not in device:
            continue  # an interface the inventory places near no GPU: not a rail's NIC
        if _named(located, host, rails):
            continue
        said = ", ".join(f"{k} +{v:g}" for k, v in sorted(moved.items()))
        where = (
            f"the NIC of rail{'s' if len(rails) > 1 else ''} {', '.join(map(str, rails))} "
            f"(nearest {', '.join(f'GPU{j}' for j in rails)})"
            if rails
            else "a port the inventory places near no GPU"
        )
        fine = f"while no slow pair named rail {', '.join(map(str, rails))} of {host}" if rails else ""
        out.append(
            Finding(
                component="network port",
                check="error counters",
                status="unstable",
                measured=sum(moved.values()),
                expected=0.0,
                unit="count",
                hosts=(host,),
                message=f"{host} {device}, {where}: {said} during the sweep{', ' + fine if fine else ''}; "
                "a port that counts errors under load fails a run later: check its cable, optic and "
                "switch port.",
                extra={
                    "device": device,
                    "counters": dict(sorted(moved.items())),
                    **({"rail": rails[0]} if len(rails) == 1 else {"rails": list(rails)} if rails else {}),
                },
            )
        )
    return out
