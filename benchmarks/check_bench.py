"""How long `stoker check` takes on this machine, and that a healthy run is silent.

Runs the default check (inventory without the copy test, the short all_reduce, the short
disk test) ROUNDS times on --path and prints each wall time, the median and the slowest,
against the target: well under a minute (the default --limit is 50 s).

    .venv/bin/python benchmarks/check_bench.py [--path /var/tmp] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET_S = 60.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default="/var/tmp")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    walls = []
    for i in range(args.rounds):
        t = time.monotonic()
        p = subprocess.run(
            [sys.executable, "-m", "launchers.cli", "check", "--path", args.path],
            capture_output=True,
            text=True,
            timeout=120,
        )
        walls.append(time.monotonic() - t)
        said = (p.stdout + p.stderr).strip()
        print(
            f"round {i + 1}: exit {p.returncode}, {walls[-1]:.1f} s, {'silent' if not said else repr(said[:300])}"
        )
    med, worst = statistics.median(walls), max(walls)
    print(
        f"stoker check: median {med:.1f} s, slowest {worst:.1f} s over {len(walls)} rounds (target < {TARGET_S:.0f} s)"
    )
    return 0 if worst < TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
