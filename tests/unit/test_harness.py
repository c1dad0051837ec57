"""The timing loop's bookkeeping with a scripted backend (pure logic: no processes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from netbench.collectives import TABLE
from netbench.harness import measure


class ScriptedTimer:
    """Marks on a shared scripted clock; a mark itself adds `mark_s` (an event record)."""

    def __init__(self, clock: list[float], mark_s: float, intrusive: bool) -> None:
        self.clock, self.mark_s, self.intrusive = clock, mark_s, intrusive
        self.marks: list[float] = []

    def prepare(self, marks: int) -> None:
        pass

    def mark(self) -> None:
        self.clock[0] += self.mark_s
        self.marks.append(self.clock[0])

    def intervals(self) -> list[float]:
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


class ScriptedBackend:
    def __init__(self, intrusive: bool) -> None:
        self.clock = [0.0]
        self.intrusive = intrusive
        self.timers = 0  # one per timed loop

    def group_size(self, comm: Any) -> int:
        return 2

    def group_rank(self, comm: Any) -> int:
        return 0

    def alloc(self, values: np.ndarray) -> np.ndarray:
        return np.array(values, dtype=np.float32)

    def fill(self, buf: np.ndarray, values: np.ndarray) -> None:
        buf[:] = values

    def agree(self, comm: Any, ok: bool) -> bool:
        self.agreed = getattr(self, "agreed", 0) + 1
        return ok

    def bind(self, op: str, send: Any, recv: Any, comm: Any, root: int, in_place: bool) -> Any:
        def run() -> None:  # one op takes 10 us
            self.clock[0] += 10e-6

        return run

    def sync(self) -> None:
        pass

    def barrier(self, comm: Any) -> None:
        pass

    def timer(self) -> ScriptedTimer:
        self.timers += 1
        return ScriptedTimer(self.clock, 2e-6, self.intrusive)


def test_cpu_timer_one_loop_headline_is_the_mean_of_its_marks() -> None:
    b = ScriptedBackend(intrusive=False)
    coll = TABLE["all_reduce"]
    r = measure(
        b, None, coll, coll.layout(1024, 2, 4), group=0, iters=10, warmup=0, in_place=True, check=False
    )  # type: ignore[arg-type]
    assert b.timers == 1  # one timed loop
    assert abs(r.time_s - 12e-6) < 1e-12  # op 10 us + mark 2 us, as measured
    assert abs(r.stats.p50 - 12e-6) < 1e-12


def test_intrusive_timer_keeps_marks_out_of_the_headline() -> None:
    b = ScriptedBackend(intrusive=True)
    coll = TABLE["all_reduce"]
    r = measure(
        b, None, coll, coll.layout(1024, 2, 4), group=0, iters=10, warmup=0, in_place=True, check=False
    )  # type: ignore[arg-type]
    # the per-op loop for the statistics, then the headline loop with two marks only
    assert abs(r.time_s - (10 * 10e-6 + 2e-6) / 10) < 1e-12  # 10.2 us: one mark over 10 ops
    assert abs(r.stats.p50 - 12e-6) < 1e-12  # per-op marks in the statistics
