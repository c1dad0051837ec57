"""Which nodes a multi-node phase lost: torchrun.sh's node 0 asks after each phase that runs one
world across the nodes (the sweeps, storage), and the nodes that go on take new ranks.

Every node's launcher leaves two kinds of files in the shared results dir: a heartbeat,
`.stoker-beat-HOST` (a counter it rewrites every few seconds while it lives), and, as each such
phase ends there, `.stoker-end-I-HOST` (the phase's index I; its exit code, then its last error
line). A node is lost when it left no end of the phase and its heartbeat has not changed for
`stale_s` as node 0 watched it (node 0's own clock, so no two clocks are compared): the node, or
every stoker process on it, died mid-phase. One whose heartbeat still moves is waited for (its
phase ends within its own limit); past `limit_s` it is lost too. A lost node is set aside
(DIR/setaside.jsonl, stage `phase`, reports/shared/setaside.py) and named with the last error of
the nodes that went on. Pure but for `watch` and `main`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reports.shared import setaside

BEAT = ".stoker-beat-"  # + HOST
END = ".stoker-end-"  # + I-HOST


@dataclass(frozen=True, slots=True)
class End:
    rc: int
    error: str


@dataclass(frozen=True, slots=True)
class Decision:
    lost: tuple[str, ...]
    waiting: tuple[str, ...]  # neither ended nor silent long enough: ask again


def parse_end(text: str | None) -> End | None:
    """A node's end of a phase: its first line the exit code, its second the last error (may be
    empty); None for none, or one cut short."""
    lines = (text or "").split("\n")
    if not lines[0].strip().isdigit():
        return None
    return End(int(lines[0].strip()), lines[1].strip()[:300] if len(lines) > 1 else "")


def decide(
    nodes: Sequence[str],
    ends: Mapping[str, End | None],
    quiet_s: Mapping[str, float],
    stale_s: float,
    past_limit: bool = False,
) -> Decision:
    """The nodes with no end whose heartbeat has been still for `stale_s` (all of those without
    an end, `past_limit`) are lost; the others without an end are waited for."""
    silent = [n for n in nodes if ends.get(n) is None]
    lost = [n for n in silent if past_limit or quiet_s.get(n, 0.0) >= stale_s]
    return Decision(tuple(lost), tuple(n for n in silent if n not in lost))


def last_error(nodes: Sequence[str], ends: Mapping[str, End | None]) -> str:
    """The first error, in rank order, of the nodes that ended the phase with one."""
    return next((e.error for n in nodes if (e := ends.get(n)) is not None and e.rc != 0 and e.error), "")


def reason(phase: str, stale_s: float, error: str, past_limit: bool) -> str:
    why = (
        "its phase did not end within the phase's limit although its heartbeat went on"
        if past_limit
        else f"no end of the phase and no heartbeat from its launcher for {stale_s:g} s "
        "(the node, or every stoker process on it, died)"
    )
    said = f"; the nodes that went on said: {error}" if error else ""
    return f"stopped answering during phase {phase}: {why}{said}"[:300]


def set_aside(phase: str, lost: Sequence[str], why: str) -> list[setaside.SetAside]:
    return [setaside.SetAside(n, why, "phase", phase) for n in lost]


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None


def watch(
    out: Path,
    index: int,
    nodes: Sequence[str],
    stale_s: float,
    limit_s: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[Decision, dict[str, End | None], bool]:
    """Read the nodes' ends and heartbeats once a second until every node ended or is lost."""
    start = clock()
    seen: dict[str, tuple[str | None, float]] = {}
    while True:
        now = clock()
        ends = {n: parse_end(_read(out / f"{END}{index}-{n}")) for n in nodes}
        quiet = {}
        for n in nodes:
            beat = _read(out / f"{BEAT}{n}")
            last, since = seen.get(n, (None, start))
            if beat != last:
                last, since = beat, now
            seen[n] = (last, since)
            quiet[n] = now - since
        past = now - start > limit_s
        d = decide(nodes, ends, quiet, stale_s, past)
        if not d.waiting:
            return d, ends, past
        sleep(1.0)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--phase", help="after this multi-node phase: set aside the nodes it lost")
    parser.add_argument("--phase-index", type=int, default=0, help="its index (the end files' I)")
    parser.add_argument("--stale", type=float, default=30.0, help="seconds of a still heartbeat: lost")
    parser.add_argument(
        "--wait-limit", type=float, default=600.0, help="seconds to wait for the ends at most"
    )


def main(args: argparse.Namespace) -> int:
    """`stoker set-aside DIR NODES --phase NAME --phase-index I`: print the nodes that go on
    after the phase (exit 0), or exit 3 when fewer than --min-nodes are left."""
    out: Path = args.out
    nodes = [n for n in str(args.nodes).split(",") if n]
    d, ends, past = watch(out, args.phase_index, nodes, args.stale, args.wait_limit)
    aside = set_aside(args.phase, d.lost, reason(args.phase, args.stale, last_error(nodes, ends), past))
    good = [n for n in nodes if n not in d.lost]
    return setaside.record(out, aside, good, args.min_nodes, f"are left after phase {args.phase}")
