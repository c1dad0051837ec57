"""`stoker net --soak SECONDS` / `--soak-passes N`: the same sweep, repeated in passes by the
same ranks (one process group: no start-up per pass), with each node's counters read
before the first pass and after every pass (netbench/inventory/counters.py).

Every record of pass k carries `extra.soak_pass = k` (and its wall-clock `ts`); the counters
that moved over pass k go to counters.jsonl as `kind: "counter"` records, written by global
rank 0 from what each node's leader read. Global rank 0 decides, after each pass, whether
another fits before the deadline (the last pass's length is the estimate) or a stop was
asked (SIGTERM/SIGINT: the pass in flight finishes, every finished pass is on disk; the
watchdog defers the signal to the soak meanwhile, --timeout still ends a step that hangs, and
under Slurm a pass not over SLURM_STOP_GRACE_S after the signal is cut);
all ranks hear the decision, so they stop together. A plain sweep (no soak) reads the
counters once before and once after it (`sweep_counters`): its counter records carry no
`soak_pass`.

A port or GPU read before a pass and gone after it is a `vanished` counter record of that
pass (an error: the judge names the component and host); interfaces that containers create
and remove, and the Xid tallies of the kernel log, are not ports that can vanish.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from netbench.inventory.counters import Delta, Snapshot, deltas, read_snapshot
from netbench.topology import Topology
from netbench.watchdog import Watchdog
from reports.shared.records import COUNTER_FILE, SCHEMA, RecordWriter, utc_now

if TYPE_CHECKING:
    from netbench.rank_run import RankRun

LAST_FILE = ".counters-last.json"  # the last snapshot: the next soak phase of this run counts on from it
SLURM_STOP_GRACE_S = 20.0  # the pass in flight's time after scancel; the job's epilogue gets the rest
VANISHED = "vanished"  # the counter of a device read before a pass and missing after it
# interfaces that come and go with containers and VMs, not hardware: their going is no finding
TRANSIENT_IFACES = ("veth", "docker", "br-", "virbr", "cali", "flannel", "cni", "vxlan", "tun", "tap", "lxc")


class _Stop:
    """Set by SIGTERM (scancel, a job's time limit, `stoker soak` ending a phase) or SIGINT;
    the watchdog leaves these signals to it while it is installed."""

    def __init__(self, wd: Watchdog) -> None:
        self.asked = ""
        self._wd = wd
        self._old: dict[int, Any] = {}

    def __enter__(self) -> _Stop:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old[sig] = signal.signal(sig, self._handle)
        # under Slurm, scancel's KILL follows its TERM after KillWait (30 s by default)
        self._wd.defer_signals(True, SLURM_STOP_GRACE_S if "SLURM_JOB_ID" in os.environ else None)
        return self

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self.asked = self.asked or signal.Signals(signum).name  # the first: a supervisor forwards TERM

    def __exit__(self, *exc: object) -> None:
        self._wd.defer_signals(False)
        for sig, old in self._old.items():
            signal.signal(sig, old)


def _load_last(out_dir: str, run_id: str) -> dict[str, Snapshot]:
    try:
        obj = json.loads((Path(out_dir) / LAST_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return obj.get("hosts", {}) if isinstance(obj, dict) and obj.get("run_id") == run_id else {}


def vanished(before: Snapshot, after: Snapshot) -> list[Delta]:
    """The ports and GPUs of `before` that `after` lacks, as one `vanished` rise each (pure)."""
    return [
        Delta(device=dev, counter=VANISHED, value=0.0, delta=1.0, severity="error")
        for dev in sorted(set(before) - set(after))
        if not dev.startswith(("gpu@", *TRANSIENT_IFACES))
    ]


def counter_records(
    run_id: str, soak_pass: int | None, before: dict[str, Snapshot], after: dict[str, Snapshot], ts: str
) -> list[dict[str, Any]]:
    """The `kind: "counter"` records of one pass (soak_pass None: of a plain sweep, which
    carry no `soak_pass`): what moved on each host, and what vanished (pure)."""
    out = []
    for host in sorted(after):
        was = before.get(host, {})
        for d in [*deltas(was, after[host]), *vanished(was, after[host])]:
            out.append(
                {
                    "kind": "counter",
                    "schema": SCHEMA,
                    "run_id": run_id,
                    "ts": ts,
                    **({} if soak_pass is None else {"soak_pass": soak_pass}),
                    "host": host,
                    "device": d.device,
                    "counter": d.counter,
                    "value": d.value,
                    "delta": d.delta,
                    "severity": d.severity,
                }
            )
    return out


def _progress(k: int, secs: float, lowest: dict[str, float], moved: list[dict[str, Any]]) -> str:
    bw = ", ".join(f"{scope} {v:.3g}" for scope, v in sorted(lowest.items())) or "no records"
    errs = [m for m in moved if m["severity"] == "error"]
    said = "; ".join(f"{m['host']} {m['device']} {m['counter']} +{m['delta']:g}" for m in errs[:4])
    more = f" (+{len(errs) - 4} more)" if len(errs) > 4 else ""
    return f"soak pass {k}: {secs:.1f} s, lowest busbw GB/s: {bw}; error counters: {said or 'none'}{more}"


def gather_counters(
    r: RankRun, host: str, is_leader: bool, read: Callable[[], Snapshot]
) -> dict[str, Snapshot]:
    """Each node's counters now, read by its leader; {host: snapshot} on global rank 0."""
    from netbench.rank_run import measure_step

    with measure_step(r.wd, "reading the counters"):
        got = r.b.gather((host, read()) if is_leader else None)
    return {x[0]: x[1] for x in (got or []) if x is not None}


def sweep_counters(
    r: RankRun,
    topo: Topology,
    one_sweep: Callable[[], None],
    out_dir: str,
    is_leader: bool,
    read: Callable[[], Snapshot] = read_snapshot,
) -> None:
    """A plain sweep (no soak) between two readings of every node's counters: what rose
    over the sweep goes to counters.jsonl without `soak_pass`, so that a (host, rail) finding
    names the error counters that rose on its NIC, and a NIC whose counters rose while its
    rail measured fine is a finding of its own (reports/judging/network/nic_counters.py)."""
    host = topo.hosts[r.b.rank]
    before = gather_counters(r, host, is_leader, read)
    one_sweep()
    after = gather_counters(r, host, is_leader, read)
    if r.writer is None:
        return
    moved = counter_records(r.run_id, None, before, after, utc_now())
    if moved:
        with RecordWriter(os.path.join(out_dir, COUNTER_FILE)) as w:
            for rec in moved:
                w.write(rec)
    errs = [m for m in moved if m["severity"] == "error"]
    if errs:
        said = "; ".join(f"{m['host']} {m['device']} {m['counter']} +{m['delta']:g}" for m in errs[:4])
        more = f" (+{len(errs) - 4} more)" if len(errs) > 4 else ""
        r.say(f"# error counters that rose during the sweep: {said}{more}")


def soak(
    r: RankRun,
    topo: Topology,
    one_pass: Callable[[], None],
    out_dir: str,
    is_leader: bool,
    read: Callable[[], Snapshot] = read_snapshot,
) -> int:
    """Passes until the deadline, the pass limit or a stop; returns the passes done."""
    from netbench.rank_run import measure_step

    s, b = r.s, r.b
    host = topo.hosts[b.rank]
    rank0 = r.writer is not None

    def gather() -> dict[str, Snapshot]:
        return gather_counters(r, host, is_leader, read)

    start = time.monotonic()
    before = {**gather(), **(_load_last(out_dir, r.run_id) if rank0 else {})}
    writer = RecordWriter(os.path.join(out_dir, COUNTER_FILE)) if rank0 else None
    r.quiet = True
    k, done = s.soak_first, 0
    with _Stop(r.wd) as stop:
        while True:
            t0 = time.monotonic()
            r.tag, r.lowest = {"soak_pass": k}, {}
            one_pass()
            after = gather()
            secs = time.monotonic() - t0
            done += 1
            if writer is not None:
                moved = counter_records(r.run_id, k, before, after, utc_now())
                for rec in moved:
                    writer.write(rec)
                last = Path(out_dir) / LAST_FILE
                last.write_text(json.dumps({"run_id": r.run_id, "hosts": after}), encoding="utf-8")
                print(_progress(k, secs, r.lowest, moved), flush=True)
            before = after
            more = not stop.asked and (s.soak_passes is None or done < s.soak_passes)
            if s.soak_s is not None:
                more = more and time.monotonic() - start + secs <= s.soak_s
            with measure_step(r.wd, "agreeing on the next soak pass"):
                more = bool(b.bcast(more if rank0 else None))
            if not more:
                break
            k += 1
    if writer is not None:
        writer.close()
        why = f"stopped by {stop.asked}" if stop.asked else "done"
        print(
            f"soak: {done} passes ({s.soak_first}..{k}), {time.monotonic() - start:.0f} s, {why}", flush=True
        )
    r.quiet = False
    return done
