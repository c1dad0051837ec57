"""The log-round search (`stoker net --scopes groups`) on a namespaced 8-node cluster, run by
run: rounds used, what was named, false findings. Root only (network namespaces, tc).

    flock /tmp/stoker-heavy.lock python benchmarks/localise_bench.py            # 5 runs per case
    python benchmarks/localise_bench.py --runs 2 --cases node,healthy

Cases (every link shaped to 200 Mbit/s, as tests/integration/test_netns_groups.py):
  node     node 5's link shaped to 1/4: the goal is node 5 named in <= ceil(log2 8) + 2 = 5 rounds
  healthy  nothing shaped lower: the goal is no finding in 5 runs of 5
  link     the path between nodes 2 and 3 shaped to 1/4: one `link` finding naming both
  pairs    (not in the default list) node 5 at 1/4 found by the pair tournament instead
           (`--scopes pairs`, same sizes), for the rounds and seconds it takes
Then the simulated search at 8..1,024 nodes (reports.shared.group_search.estimate, the same
search code with a simulated backend). Prints a table; exit 0 whatever the numbers.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from reports.shared.group_search import estimate  # noqa: E402
from reports.shared.records import NetRecord
from reports.table.read import read_records  # noqa: E402
from tests.harness.netns import NetnsCluster, unavailable_reason  # noqa: E402
from tests.integration.test_netns_groups import (  # noqa: E402
    NET,
    NODES,
    PORT,
    RATE_MBIT,
    SLOW_MBIT,
    groups_run,
    localisation,
    rounds_used,
)

CASES = {
    "node": ({("node", ("nsgn5",))}, "node 5 at 1/4"),
    "healthy": (set(), "none"),
    "link": ({("link", ("nsgn2", "nsgn3"))}, "link 2-3 at 1/4"),
    "pairs": ({("node", ("nsgn5",))}, "node 5 at 1/4, pair tournament"),
}


def pairs_run(c: NetnsCluster, out: Path) -> tuple[int, list[NetRecord]]:
    """The tournament on the same bed: (rounds incl. the confirmation pass, records)."""
    args = [a if a != "groups" else "pairs" for a in NET]
    for rc, so, se in c.launch(1, PORT, [*args, "--out", str(out)], timeout=400):
        assert rc == 0, f"rc {rc}\n{so[-2000:]}\n{se[-2000:]}"
    recs = read_records(out).net.records()
    return len({(r.extra.get("pass"), r.extra.get("round")) for r in recs}), recs


def one(case: str, out: Path) -> tuple[int, list[tuple[str, tuple[str, ...]]], float]:
    with NetnsCluster(prefix="nsg", nodes=NODES, rate_mbit=RATE_MBIT) as c:
        if case == "link":
            c.shape_pair(2, 3, SLOW_MBIT)
        elif case != "healthy":
            c.shape_node(5, SLOW_MBIT)
        t0 = time.monotonic()
        if case == "pairs":
            rounds, recs = pairs_run(c, out)
        else:
            recs = groups_run(c, out)
            rounds = rounds_used(recs)
        took = time.monotonic() - t0
    return rounds, [(f.component, f.hosts) for f in localisation(recs)], took


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--cases", default="node,healthy,link")
    args = p.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"localise_bench: {reason}", file=sys.stderr)
        return 2
    limit = math.ceil(math.log2(NODES)) + 2
    print(
        f"# groups search on {NODES} namespaced nodes, links {RATE_MBIT} Mbit/s, slow {SLOW_MBIT:g} Mbit/s; "
        f"goal: culprit named in <= {limit} rounds, 0 false findings"
    )
    print(f"# {'case':<8} {'run':>3} {'rounds':>6} {'seconds':>7}  {'named':<28} {'missed':>6} {'false':>5}")
    with tempfile.TemporaryDirectory(prefix="netspeed-bench-") as tmp:
        for case in args.cases.split(","):
            want, _ = CASES[case]
            for k in range(args.runs):
                rounds, found, took = one(case, Path(tmp) / f"{case}{k}")
                got = set(found)
                names = "; ".join(f"{c} {'-'.join(h)}" for c, h in found) or "none"
                print(
                    f"  {case:<8} {k + 1:>3} {rounds:>6} {took:>7.1f}  {names:<28} {len(want - got):>6} "
                    f"{len(got - want):>5}",
                    flush=True,
                )
    print("# simulated (same search, simulated backend): nodes, round-robin rounds, groups rounds")
    for n in (8, 64, 512, 1024):
        e = estimate(n)
        print(f"  {n:>5} {e['round_robin_rounds']:>6.0f} {e['group_rounds']:>4.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
