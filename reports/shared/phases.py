"""The phases of a stoker run or acceptance job, and `DIR/phases.jsonl`, the line each phase
leaves there: ONE source for every launcher (`stoker run`, the sbatch job, torchrun.sh,
mpirun.sh and the jobs that run them) and for the report that reads the lines back.

It sits with the record schema in reports/ because both sides use it: launchers write the
lines (the shell scripts through `stoker phase-record ...`, launchers/commands/phase_record_cmd.py,
never with printf), the report reads them to say what is missing. The
line format is part of docs/contract.md: one JSON object per line, `phase`, `rc`,
`elapsed_s`, then `log` (the phase's output kept as DIR/phase-NAME.log) and/or `error` (its
last line of output) when there is one. Pure but for `append` and `read`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

PHASES_FILE = "phases.jsonl"

PhaseName = Literal[
    "inventory", "compute", "network", "intra-node", "inter-node", "pairs", "groups", "storage", "report"
]
# what a phase leaves in DIR: host facts, network records, storage records, the report
Yields = Literal["host", "compute", "net", "io", "report"]


@dataclass(frozen=True, slots=True)
class PhaseKind:
    name: PhaseName
    yields: Yields
    scopes: tuple[str, ...] = ()  # a network phase's `stoker net --scopes`
    record_scopes: tuple[str, ...] = ()  # the `scope` of the records those scopes write


PHASES: dict[str, PhaseKind] = {
    k.name: k
    for k in (
        PhaseKind("inventory", "host"),
        PhaseKind("compute", "compute"),  # the matmul appetite per device (compute.jsonl)
        # `stoker run`'s one sweep on one machine
        PhaseKind("network", "net", ("world",), ("world",)),
        PhaseKind("intra-node", "net", ("intra-node",), ("intra-node",)),
        PhaseKind("inter-node", "net", ("world", "inter-node"), ("world", "inter-node")),
        PhaseKind("pairs", "net", ("pairs",), ("pair",)),
        PhaseKind("groups", "net", ("groups",), ("groups",)),
        PhaseKind("storage", "io"),
        PhaseKind("report", "report"),
    )
}
assert set(PHASES) == set(get_args(PhaseName))


def phase_name(name: str) -> PhaseName:
    """`name` as a phase of the one list; ValueError for anything else."""
    if name not in PHASES:
        raise ValueError(f"{name!r} is not a phase ({', '.join(PHASES)})")
    return PHASES[name].name


def net_phases(nodes: int, groups_above: int) -> list[PhaseKind]:
    """The network phases of an acceptance job on `nodes` nodes, in the contract's order:
    one node has no inter-node phases; above `groups_above` nodes the groups search
    replaces the pair tournament."""
    names: list[PhaseName] = ["intra-node"]
    if nodes > 1:
        names += ["inter-node", "groups" if nodes > groups_above else "pairs"]
    return [PHASES[n] for n in names]


def job_phases(nodes: int, groups_above: int) -> list[PhaseName]:
    """Every phase of an acceptance job, in order: the node inventory, the matmul appetite,
    the network phases, storage, the report."""
    return ["inventory", "compute", *(k.name for k in net_phases(nodes, groups_above)), "storage", "report"]


def line(
    phase: str,
    rc: int,
    elapsed_s: float,
    *,
    log: str | None = None,
    error: str | None = None,
    skipped: bool = False,
) -> str:
    """One line of DIR/phases.jsonl, newline included. Compact JSON in this key order, as the
    sbatch job has always written it; `elapsed_s` keeps its type (the shell's whole
    seconds stay an integer)."""
    obj: dict[str, Any] = {"phase": phase, "rc": rc, "elapsed_s": elapsed_s}
    if log:
        obj["log"] = log
    if error:
        obj["error"] = error
    if skipped:  # left out on purpose (stoker run --skip)
        obj["skipped"] = True
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n"


def append(directory: Path, text: str) -> None:
    with open(directory / PHASES_FILE, "a", encoding="utf-8") as fh:
        fh.write(text)


def read(directory: Path) -> list[dict[str, Any]]:
    """The phase lines of DIR, in order; empty when the records came from elsewhere
    (stoker net/io, imports). Unreadable lines are left out."""
    from reports.shared.records import iter_jsonl

    path = directory / PHASES_FILE
    if not path.is_file():
        return []
    return [obj for _, obj, _ in iter_jsonl(path) if isinstance(obj, dict)]


def missing_records(name: str, net_scopes: set[str], io_count: int) -> str | None:
    """Why a phase that ended cleanly left nothing behind, or None: a network phase none of
    its record scopes, storage no storage record. An inventory that found nothing to read
    is not a failure (it says so itself), and the report is not measured."""
    kind = PHASES.get(name)
    if kind is None:
        return None
    if kind.yields == "io" and io_count == 0:
        return "wrote no storage records"
    if kind.yields == "net" and not net_scopes & set(kind.record_scopes):
        return "wrote no network records"
    return None


def log_name(phase: str) -> str:
    """The file a shell launcher keeps a phase's output in, created as the phase starts
    (launchers/common.sh, the sbatch job): `phase-NAME.log`."""
    return f"phase-{phase}.log"


def _is_log(name: str) -> bool:
    return name.startswith("phase-") and name.endswith(".log") and len(name) > len("phase-.log")


# the phases that run a soak's passes: the sbatch job's one `soak` phase, and `stoker soak`'s
# `network K..` phases
def _runs_soak(phase: str) -> bool:
    return phase == "soak" or phase.startswith("network ")


def unfinished(
    lines: Sequence[Mapping[str, Any]], files: Iterable[str], last_soak_pass: int
) -> list[tuple[str, str]]:
    """(phase, one line saying so) per phase that started and never ended (pure): a phase's log in DIR
    (`files`: the names in DIR) with no phase line for it, the launcher killed before it
    wrote one (a job cancelled under Slurm); or, with no such log, soak records up to pass
    `last_soak_pass` in a run whose phase lines have none of the soak's phases: its records
    stop without the soak's end."""
    ended = {str(p.get("phase")) for p in lines} | {str(p.get("log")) for p in lines if p.get("log")}
    out = []
    for log in sorted(f for f in files if _is_log(f)):
        name = log[len("phase-") : -len(".log")]
        if name not in ended and log not in ended:
            out.append(
                (
                    name,
                    f"phase {name} started ({log} is in the results dir) but never ended: it has no line in "
                    f"{PHASES_FILE}, so the job was cancelled or killed while it ran; its records are partial",
                )
            )
    if not out and last_soak_pass and lines and not any(_runs_soak(str(p.get("phase"))) for p in lines):
        out.append(
            (
                "soak",
                f"phase soak never ended: its records stop at pass {last_soak_pass} and {PHASES_FILE} has "
                "no line of the soak (the job was cancelled or killed while it ran); its records are partial",
            )
        )
    return out
