"""Mutation score of the modules that decide what users act on, on a fixed random sample.

mutmut (configured in pyproject.toml [tool.mutmut]: reports/judging/, reports/shared/safe_write.py,
reports/shared/plausible.py, and what `stoker check` and `stoker drain` do to a node: launchers/
node_actions.py, drain_cmd.py, check_cmd.py, action_io.py and check_actions.py; the fast tier,
tests/unit with -m "not bed") makes ~12,400 mutants of those modules; every one against the
tests that reach it does not fit a session on 2 cores, so this runs a sample: --sample mutants drawn with random.Random(--seed) from the sorted list of all
mutant names, the same sample each time for the same code. It prints mutmut's own line for each
sampled mutant, the counts and the score (killed / sampled, a mutant with no test reaching it
counted as surviving), and the survivors' names (`mutmut show NAME` prints the diff).

    .venv/bin/pip install mutmut            # not in the test extra: .ci/run does not run this
    .venv/bin/python benchmarks/mutation.py [--sample 30] [--seed 20261126] [--max-children 1]

The first run generates the mutants (about 2 minutes here) and runs the fast tier once to map
each test to the functions it calls (several minutes); mutants/ keeps both for later runs
(delete it after a code change). docs/testing.md records the score and its date.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTANTS = REPO / "mutants"
# one mutant whose run generates every mutant and maps the tests (the first step needs a name)
BOOTSTRAP = "reports.shared.safe_write.x_ledger__mutmut_1"


def _mutmut(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("mutmut")
    return subprocess.run([str(exe), *args], cwd=REPO, text=True, capture_output=True, check=False)


def _all_results() -> dict[str, int | None]:
    """mutant name -> mutmut's exit code for it (None: not run yet), from mutants/**/*.meta."""
    out: dict[str, int | None] = {}
    for meta in sorted(MUTANTS.rglob("*.py.meta")):
        out.update(json.loads(meta.read_text()).get("exit_code_by_key", {}))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=30)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--max-children", type=int, default=1)
    a = ap.parse_args()
    children = f"--max-children={a.max_children}"
    if not _all_results():
        print(f"generating the mutants and mapping the tests (mutmut run {BOOTSTRAP}) ...", flush=True)
        p = _mutmut("run", children, BOOTSTRAP)
        if not _all_results() or not (MUTANTS / "mutmut-stats.json").exists():
            # no map: a test failed in the mapping run (mutmut needs a green tier), or it stopped
            print(
                f"mutmut run exited {p.returncode} without a test map:\n{p.stdout[-3000:]}{p.stderr[-3000:]}"
            )
            return 1
    names = sorted(_all_results())
    sample = sorted(random.Random(a.seed).sample(names, a.sample))
    print(f"{len(names)} mutants; sample of {a.sample}, seed {a.seed}", flush=True)
    p = _mutmut("run", children, *sample)
    results = _all_results()
    from mutmut.__main__ import status_by_exit_code  # mutmut's own names for its exit codes

    status = {n: status_by_exit_code.get(results[n], "not checked") for n in sample}
    for n in sample:
        print(f"{status[n]:>12}  {n}")
    killed = sum(s == "killed" for s in status.values())
    counts = {s: list(status.values()).count(s) for s in sorted(set(status.values()))}
    # mutmut's own report for the sample: its `results --all true` lines for these names
    listed = _mutmut("results", "--all", "true").stdout.splitlines()
    mine = set(sample)
    print("\nmutmut results --all true, the sampled lines:")
    print("\n".join(ln for ln in listed if ln.strip().split(":")[0] in mine))
    print(f"\n{counts}")
    print(f"score: {killed}/{len(sample)} killed = {killed / len(sample):.0%}")
    if p.returncode != 0:
        print(f"mutmut run exited {p.returncode}:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
