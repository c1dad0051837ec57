"""One rank's run of `stoker net`: its settings, its state (RankRun, shared by the sweep in
netbench.runner and the passes of netbench.soak) and the watched step every collective call
runs in (measure_step)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

from netbench.backends import Backend
from netbench.watchdog import Watchdog
from reports.shared.errors import MeasurementAborted, StokerError
from reports.shared.records import NetRecord, RecordWriter
from reports.shared.spec import Spec

# rank 0's choice of the swept (scope, op) to measure again, from the first records, the spec
# and the ranks' manifests: the report's own rule, given by the caller (launchers.commands.net_cmd binds
# reports.judging.confirm.net_to_confirm), so that measurement never imports judgement
ConfirmRule = Callable[[Sequence[NetRecord], Spec | None, Sequence[Mapping[str, Any]]], list[tuple[str, str]]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Settings:
    ops: tuple[str, ...]
    sizes: tuple[int, ...]
    iters: int
    warmup: int
    dtype: str
    scopes: tuple[str, ...]
    in_place: bool
    check: bool
    timeout_s: float
    pair_bytes: int
    pair_op: str
    pairs: tuple[tuple[str, str], ...] = ()
    graph: bool = True  # NCCL: time as a captured CUDA graph (gloo/MPI: always eager)
    out: str | None = None
    hosts_override: str | None = None
    soak_s: float | None = None  # soak: repeat the scopes in passes for this long (netbench.soak)
    soak_passes: int | None = None  # ... or at most this many passes
    soak_first: int = 1  # the first pass's number (a soak of several phases counts on)
    spec_file: str | None = None  # a swept figure under its threshold is measured again (netbench.confirm)
    # which, by the report's rule (None: nothing is); a function, so not in the manifest
    confirm_rule: ConfirmRule | None = field(default=None, metadata={"manifest": False})


@dataclass(kw_only=True, slots=True)
class RankRun:
    b: Backend
    s: Settings
    wd: Watchdog
    writer: RecordWriter | None  # global rank 0 only
    run_id: str
    n_records: int = 0
    graph_warned: bool = False
    tag: dict[str, Any] = field(default_factory=dict)  # added to every record (a soak's pass)
    quiet: bool = False  # a soak prints one line per pass instead of the tables
    lowest: dict[str, float] = field(default_factory=dict)  # scope -> lowest busbw since reset
    # global rank 0: what the confirmation pass judges (netbench.confirm)
    spec: Spec | None = None
    manifests: list[dict[str, Any]] = field(default_factory=list)
    swept: list[NetRecord] = field(default_factory=list)  # the swept scopes' first records

    def say(self, line: str) -> None:
        if self.writer is not None and not self.quiet:
            print(line, flush=True)


@contextmanager
def measure_step(wd: Watchdog, what: str) -> Iterator[None]:
    """One watched step: the watchdog ends a hang; an error from the backend (a peer
    died, a connection reset) becomes MeasurementAborted (exit 3) naming the step."""
    wd.arm(what)
    try:
        yield
    except StokerError:
        raise
    except Exception as exc:
        # gloo prefixes its messages with a source location; keep the words
        first = re.sub(r"^\[[^\]]*\]\s*", "", (str(exc).strip().splitlines() or [""])[0])
        first = first.split(". ")[0][:160]
        raise MeasurementAborted(f"{what} failed ({type(exc).__name__}: {first}); {wd.where}") from None
    finally:
        wd.disarm()


def manifest_settings(s: Settings) -> dict[str, Any]:
    """The settings a manifest records: every field but those marked `manifest: False`."""
    return {f.name: getattr(s, f.name) for f in fields(s) if f.metadata.get("manifest", True)}
