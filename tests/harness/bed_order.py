"""The order the bed tier hands its files to the two xdist workers: the longest first.

With `--dist loadfile` a worker takes a whole file and asks for the next when it runs low; a
three-minute file handed out last runs alone while the other worker has nothing left to do.
Handing out the longest files first (longest-processing-time scheduling) leaves the short
ones for the end, where they fill the gaps; the files of `alone` tests go before all. tests/conftest.py sorts the items so, and turns
xdist's own reordering (the files with the most tests first) off.

SECONDS is a hint for that order only: a stale or missing figure costs minutes of the suite,
never a result. A file not in it goes first (a new bed starts early). Refresh it
from a bed tier's log (each bed test's line `bed: FILE::TEST passed (S s, gwN)`):

    python -m tests.harness.bed_order LOG     # prints the table to paste below
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from collections.abc import Collection
from pathlib import Path

# seconds per file on 2 cores, setup, call and teardown of its tests (a clean-clone CI run; the
# files a change shortened, from that file's own run beside other work)
SECONDS: dict[str, float] = {
    "tests/integration/test_baseline_chain.py": 57,
    "tests/integration/test_check_actions_cli.py": 33,
    "tests/integration/test_check_cli.py": 44,
    "tests/integration/test_check_confirm_root.py": 29,
    "tests/integration/test_check_like_for_like.py": 72,
    "tests/integration/test_check_slurm.py": 61,
    "tests/integration/test_cloud_netns.py": 276,
    "tests/integration/test_compare_runs.py": 6,
    "tests/integration/test_false_alarm_bench.py": 28,
    "tests/integration/test_fio_text_cli.py": 10,
    "tests/integration/test_gpu_fixtures.py": 3,
    "tests/integration/test_io_confirm_root.py": 29,
    "tests/integration/test_io_local.py": 29,
    "tests/integration/test_io_multinode.py": 40,
    "tests/integration/test_io_root.py": 48,
    "tests/integration/test_net_faults.py": 19,
    "tests/integration/test_net_gloo.py": 34,
    "tests/integration/test_net_mpi.py": 3,
    "tests/integration/test_netns_baseline.py": 40,
    "tests/integration/test_netns_cluster3.py": 98,
    "tests/integration/test_netns_confirm.py": 18,
    "tests/integration/test_netns_groups.py": 87,
    "tests/integration/test_netns_harness.py": 15,
    "tests/integration/test_netns_localise.py": 75,
    "tests/integration/test_netns_net.py": 80,
    "tests/integration/test_netns_rails.py": 86,
    "tests/integration/test_netns_rails_groups.py": 118,
    "tests/integration/test_netns_soak.py": 120,
    "tests/integration/test_outdir_cli.py": 10,
    "tests/integration/test_report_cli.py": 12,
    "tests/integration/test_report_compare.py": 13,
    "tests/integration/test_report_html.py": 8,
    "tests/integration/test_run_cmd.py": 50,
    "tests/integration/test_run_cmd_mpirun.py": 99,
    "tests/integration/test_run_report_signal.py": 32,
    "tests/integration/test_run_skip.py": 11,
    "tests/integration/test_run_spec_paths.py": 40,
    "tests/integration/test_slurm_acceptance.py": 350,
    "tests/integration/test_slurm_late_node.py": 183,
    "tests/integration/test_slurm_lost_node.py": 112,
    "tests/integration/test_slurm_setaside.py": 36,
    "tests/integration/test_slurm_soak.py": 97,
    "tests/integration/test_soak_local.py": 58,
    "tests/integration/test_suite_stop.py": 72,
    "tests/integration/test_torchrun_dead_node.py": 125,
    "tests/integration/test_torchrun_late_node.py": 84,
    "tests/integration/test_torchrun_setaside.py": 63,
    "tests/integration/test_torchrun_setaside_local.py": 102,
    "tests/unit/test_ingest_checks.py": 1,
    "tests/validation/test_validate_ddp.py": 47,
    "tests/validation/test_validate_sharded.py": 137,
    "tests/validation/test_validate_sharded_nodes.py": 213,
    "tests/validation/test_validate_storage.py": 122,
}


def cost(file: str) -> float:
    """The seconds a bed file is expected to take; one not in the table goes before them all."""
    return SECONDS.get(file, math.inf)


def longest_first(files: list[str], alone: Collection[str] = ()) -> list[str]:
    """`files` in the order to hand them out: those holding an `alone` test first, then the
    rest, each part by expected seconds, longest first; files of the same cost keep their
    order (the sort is stable). An `alone` test runs while the other worker runs nothing: run
    at the start, one after another, none of them waits for a long file of the other worker
    to end."""
    return sorted(files, key=lambda f: (f not in alone, -cost(f)))


LINE = re.compile(r"bed: (?P<file>[^:\s]+)::\S.* (?:passed|failed|skipped|error) \((?P<s>[\d.]+) s, gw\d+\)")


def table(log: str) -> dict[str, float]:
    """Seconds per file from a bed tier's log (at least 1: every file is known)."""
    spent: Counter[str] = Counter()
    for m in LINE.finditer(log):
        spent[m["file"]] += float(m["s"])
    return {f: max(1, round(s)) for f, s in sorted(spent.items())}


if __name__ == "__main__":
    for f, s in table(Path(sys.argv[1]).read_text(errors="replace")).items():
        print(f'    "{f}": {s:g},')
