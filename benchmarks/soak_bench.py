"""The cost of one soak pass per scope (`stoker net --soak-passes N --scopes S`) on a namespaced
cluster, and of reading one node's counters. Root only (network namespaces, tc).

    flock /tmp/stoker-bed.lock .venv/bin/python benchmarks/soak_bench.py            # 4 nodes, 400 Mbit/s
    .venv/bin/python benchmarks/soak_bench.py --nodes 8 --passes 5

Each scope runs alone for --passes passes (the ranks stay up: one start-up per scope); the
seconds per pass come from the soak's own progress lines ("soak pass k: S s, ..."), i.e. the
sweep plus the counter reads and the per-pass agreement, without the start-up. Sizes as the
soak test (all_reduce at 4 MiB, 3 iterations + 1 warm-up). Prints a table and, from it, how long
a pass of all the scopes takes, and so how many passes an hour of soak gives at this size.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from netbench.inventory.counters import read_snapshot  # noqa: E402
from tests.harness.netns import NetnsCluster, unavailable_reason  # noqa: E402

RATE_MBIT = 400
_PASS = re.compile(r"^soak pass (\d+): ([\d.]+) s")


def net_args(out: Path, scope: str, passes: int) -> list[str]:
    return [
        "-m", "launchers.cli", "net", "--scopes", scope, "--ops", "all_reduce", "--min-bytes", "4M",
        "--max-bytes", "4M", "--pair-bytes", "4M", "--iters", "3", "--warmup", "1", "--backend", "gloo",
        "--timeout", "60", "--soak-passes", str(passes), "--out", str(out),
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--passes", type=int, default=4)
    ap.add_argument("--scopes", default="world,inter-node,pairs")
    a = ap.parse_args()
    reason = unavailable_reason()
    if reason:
        print(f"soak_bench: {reason}", file=sys.stderr)
        return 2
    t = time.perf_counter()
    for _ in range(20):
        read_snapshot()
    read_ms = (time.perf_counter() - t) / 20 * 1000
    rows = []
    with (
        NetnsCluster(prefix="nxb", nodes=a.nodes, rate_mbit=RATE_MBIT) as c,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for scope in a.scopes.split(","):
            out = Path(tmp) / scope
            t0 = time.monotonic()
            res = c.launch(1, 29480, net_args(out, scope, a.passes), timeout=600)
            wall = time.monotonic() - t0
            if any(rc != 0 for rc, _, _ in res):
                print(f"{scope}: failed\n{res[0][1][-2000:]}\n{res[0][2][-2000:]}", file=sys.stderr)
                return 1
            secs = [float(m.group(2)) for ln in res[0][1].splitlines() if (m := _PASS.match(ln))]
            rows.append((scope, statistics.median(secs), min(secs), max(secs), wall - sum(secs)))
    print(
        f"soak pass cost on {a.nodes} namespaced nodes, {RATE_MBIT} Mbit/s links, all_reduce 4 MiB x (3+1):"
    )
    print(f"{'scope':<12} {'median s/pass':>13} {'min':>6} {'max':>6} {'start-up s':>10}")
    for scope, med, lo, hi, startup in rows:
        print(f"{scope:<12} {med:>13.2f} {lo:>6.2f} {hi:>6.2f} {startup:>10.1f}")
    total = sum(r[1] for r in rows)
    print(f"all scopes: {total:.2f} s a pass -> {3600 / total:.0f} passes an hour")
    print(f"reading one node's counters (sysfs + nvidia-smi/dmesg when present): {read_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
