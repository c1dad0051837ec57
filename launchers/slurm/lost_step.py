"""Which nodes a failed srun step of the acceptance job lost, read from the step's own output
(OUT/phase-NAME.log: srun's lines and every task's, labelled `T: ` by --label).

The signal is srun's own account of how each node's tasks ended, one line per node as they
end: `srun: error: NODE: task(s) LIST: HOW`. It needs nothing running beside the step (no
heartbeat, no accounting daemon: sacct keeps no per-task end) and names the node itself.
HOW tells a node that is gone from one that is alive:

- `Exited with exit code N`: the tasks ended themselves and said why (a stoker rank's
  watchdog after a hung peer, a lost connection): the node answers, so it is not set aside.
  A hang therefore names no node: every node's tasks exit on their watchdogs and none can be
  told from the others, so the phase aborts and nothing is set aside.
- `Terminated` (SIGTERM): Slurm ending the step itself (--kill-on-bad-exit, its --time), after
  another task failed: a consequence, never a cause.
- `Killed` (SIGKILL from outside the job: the node going down, the OOM killer, a person):
  the node lost its tasks mid-phase, so it is lost. (Slurm's own SIGKILL comes only KillWait
  after its SIGTERM, to a task that did not end on it; stoker's ranks end on SIGTERM at once.)
- anything else (a crash: `Segmentation fault`, `Aborted`): not a lost node; nothing is set aside.

A node whose whole machine stops answering (slurmd, the step's slurmstepd, its tasks) sends no
such line: slurmctld marks it down after SlurmdTimeout and srun then says
`srun: error: Node failure on NODE`, which loses the node too (the job outlives it: the sbatch
asks --no-kill, else Slurm ends the whole job with its node).

A lost node is set aside (DIR/setaside.jsonl, stage `phase`, reports/shared/setaside.py) with
its last error: the last `stoker...: ` line its own tasks printed in that step, else srun's
line about it. `stoker set-aside DIR NODES --phase NAME --step-log FILE` prints the nodes
that go on (exit 0), or exits 3 with fewer than --min-nodes left; the job then runs the
phase once more on those nodes, with new ranks. Pure but for `main`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.shared import setaside

# srun's line as a node's tasks end (Slurm 22.05's srun, its launch/slurm plugin, as recorded on the
# Slurm bed: tests/unit/test_lost_step.py); NODE, then `task 2` or `tasks 2-3,5`, then how they ended
TASK_END = re.compile(r"^srun: error: (?P<node>[^\s:]+): tasks? (?P<tasks>[0-9,-]+): (?P<how>.+)$")
# srun's line when slurmctld finds a node of the step down (the same srun, recorded the same way)
NODE_FAILURE = re.compile(r"^srun: error: Node failure on (?P<node>[^\s:]+)$")
# how srun says a node's tasks ended (the start of its line's last part) -> whether that node is
# lost (the module docstring says why each); an ending not here (a crash) sets nothing aside
ENDS = (
    ("Killed", True),
    ("Terminated", False),
    ("Exited with exit code", False),
)
LABEL = re.compile(r"^\s*(?P<task>[0-9]+): (?P<text>.*)$")  # srun --label's prefix
ERROR = re.compile(r"^stoker[a-z ]*: ")  # a stoker error line, as the phase's own (launchers/common.sh)


@dataclass(frozen=True, slots=True)
class Lost:
    node: str
    tasks: str  # srun's task list, as it wrote it ('' for a node failure)
    srun_line: str  # srun's line about the node's tasks
    error: str  # the last stoker error line its own tasks printed ('' when none)


def task_ids(spec: str) -> set[int]:
    """srun's task list (`2`, `2-3`, `0,2-3`) as task numbers."""
    out: set[int] = set()
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        if lo.isdigit() and (hi.isdigit() or not hi):
            out.update(range(int(lo), int(hi or lo) + 1))
    return out


def node_lost(how: str) -> bool:
    return next((lost for start, lost in ENDS if how.startswith(start)), False)


def lost(log: str, nodes: Sequence[str]) -> list[Lost]:
    """The nodes of `nodes` whose tasks srun saw killed, in `nodes`' order, each with its last error."""
    killed: dict[str, tuple[str, str]] = {}
    for raw in log.splitlines():
        if (m := TASK_END.match(raw.strip())) and node_lost(m["how"].strip()):
            node, tasks = m["node"], m["tasks"]
        elif m := NODE_FAILURE.match(raw.strip()):
            node, tasks = m["node"], ""  # srun names no task: the node's own lines cannot be told
        else:
            continue
        if node in nodes:
            killed.setdefault(node, (tasks, raw.strip()))
    out = []
    for node in nodes:
        if node in killed:
            tasks, line = killed[node]
            out.append(Lost(node, tasks, line, last_error(log, task_ids(tasks))))
    return out


def last_error(log: str, tasks: set[int]) -> str:
    """The last stoker error line that one of `tasks` printed (labelled `T: `)."""
    found = ""
    for raw in log.splitlines():
        m = LABEL.match(raw)
        if m and int(m["task"]) in tasks and ERROR.match(m["text"].strip()):
            found = m["text"].strip()
    return found


def reason(x: Lost) -> str:
    said = f"its last error: {x.error}" if x.error else "its tasks printed no error of their own"
    if not x.tasks:
        return f"Slurm found the node down mid-step ({x.srun_line}); {said}"[:300]
    return (
        f"its tasks were killed from outside the job ({x.srun_line}): the node went down, or its "
        f"processes were killed; {said}"
    )[:300]


def set_aside(phase: str, found: Sequence[Lost]) -> list[setaside.SetAside]:
    return [setaside.SetAside(x.node, reason(x), "phase", phase) for x in found]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--step-log",
        metavar="FILE",
        help="with --phase, under Slurm: the phase's srun output (in DIR); its killed nodes are set aside",
    )


def main(args: argparse.Namespace) -> int:
    """`stoker set-aside DIR NODES --phase NAME --step-log FILE`: set aside the nodes the step
    lost and print the nodes that go on (exit 0), or exit 3 when fewer than --min-nodes are left."""
    out: Path = args.out
    nodes = [n for n in str(args.nodes).split(",") if n]
    path = out / str(args.step_log)
    try:  # a step's output may hold any bytes: what cannot be read as UTF-8 is replaced
        text = (
            path.read_text(encoding="utf-8", errors="replace")
            if path.is_file() and not path.is_symlink()
            else ""
        )
    except OSError:
        text = ""
    aside = set_aside(args.phase, lost(text, nodes))
    named = {s.host for s in aside}
    good = [n for n in nodes if n not in named]
    return setaside.record(out, aside, good, args.min_nodes, f"are left after phase {args.phase}")
