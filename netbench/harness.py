"""The one timing loop, shared by every op and backend (nccl-tests' common.cu).

Per op and size: fill fresh buffers, run once and count wrong elements (the check),
then `warmup` ops, a barrier, and `iters` ops back to back with ONE sync at the end:
t = elapsed / iters. Timestamps are also taken between the back-to-back ops (a
perf_counter read on CPUs, a CUDA event record on GPUs; neither synchronises), which
gives the per-iteration min/p50/p99/CV without a second pass and without changing what
the headline time means. On GPUs an event record costs microseconds of host time, which
shows on ops the host cannot enqueue fast enough (8 bytes): there the headline loop has
only its two end events, and the statistics come from a second loop with one per op.

With `graph` (NCCL's default, nccl-tests -G): after the check and warm-up, the `iters` ops are
captured as one CUDA graph and launched GRAPH_REPLAYS times between marks, the first launch
(which uploads the graph) included, as nccl-tests -G N times its N launches from the first:
t = mean launch time / iters (nccl-tests `-G 3`), and the statistics are over the launches'
per-op means (single ops inside a graph cannot be timed). The host's per-call
cost (~25-30 us in torch) leaves the timed loop, which is what nccl-tests -G measures. A
backend without graphs (gloo, MPI) times eagerly, as does a one-rank group (nothing to capture:
`graph_wanted`); a capture that fails does too, and the
result says why (`graph_error`). A capture that fails inside NCCL leaves the communicator in
error (NCCL's ncclCommEnsureReady), so the backend raises a StokerError instead, which ends the
run with one line rather than an eager fallback that would abort on that communicator. Graph or eager is agreed by every rank of the group before
timing (an all-reduce of "captured here"): a capture that fails on one rank only would otherwise
have graph ranks run iters x launches collectives while eager ranks run another count, and the
job hang. In graph mode the check runs after timing, as nccl-tests does it: buffers refilled,
one op captured and launched as a graph, the result compared, so the replayed path is checked.

As nccl-tests' startColl shifts the buffer offset every iteration (so that a mid-size message
does not sit in cache from the iteration before), consecutive iterations use different buffer
sets: `slots` of them, min(iters, pool / buffer size) with the sweep's largest size as the pool
(nccl-tests: maxbytes).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from netbench.backends import Backend, Timer
from netbench.collectives import Collective, Layout, count_wrong
from netbench.sweep import IterStats, iter_stats
from reports.shared.errors import StokerError

ROOT = 0  # nccl-tests' default root (-r 0), as a rank of the group
GRAPH_REPLAYS = 3  # timed launches of the captured graph, the first included (nccl-tests -G 3)


@dataclass(frozen=True, kw_only=True, slots=True)
class RankResult:
    """What one rank measured; rank 0 combines these into a record."""

    group: int
    time_s: float  # this rank's elapsed / iters
    stats: IterStats
    wrong: int
    graph: bool = False  # timed as a captured CUDA graph
    graph_error: str = ""  # why capture failed (timed eagerly instead); "" when it did not


@dataclass(frozen=True, slots=True)
class _Slot:
    """One buffer set: the op's send and receive views, and what to write back into the
    underlying allocations to start again from fresh values (the check after a graph)."""

    send: Any
    recv: Any
    initial: tuple[tuple[Any, np.ndarray], ...]

    def reset(self, b: Backend) -> None:
        for buf, values in self.initial:
            b.fill(buf, values)


def slots_for(lay: Layout, itemsize: int, pool_bytes: int, iters: int) -> int:
    """How many buffer sets to rotate through (nccl-tests startColl: steps = maxbytes / the
    larger of the send and receive bytes, offset = iter % steps); at least 1, at most iters."""
    per = max(lay.send, lay.recv) * itemsize
    return max(1, min(iters, pool_bytes // per if per else 1))


def _buffers(b: Backend, coll: Collective, lay: Layout, n: int, me: int, in_place: bool) -> _Slot:
    values = coll.values(lay, n, me, ROOT)
    if not in_place:
        zeros = np.zeros(lay.recv)
        send, recv = b.alloc(values), b.alloc(zeros)
        return _Slot(send, recv, ((send, values), (recv, zeros)))
    chunk = lay.count // n if coll.per_rank_chunks else lay.count
    if lay.recv > lay.send:  # all_gather: my input is my chunk of the output
        full = np.zeros(lay.recv)
        full[me * chunk : (me + 1) * chunk] = values
        buf = b.alloc(full)
        return _Slot(b.view(buf, me * chunk, chunk), buf, ((buf, full),))
    buf = b.alloc(values)
    if lay.send > lay.recv:  # reduce_scatter: my output is my chunk of the input
        return _Slot(buf, b.view(buf, me * chunk, chunk), ((buf, values),))
    return _Slot(buf, buf, ((buf, values),))


def _rotating(ops: list[Callable[[], object]]) -> Callable[[], object]:
    """One call that runs the next buffer set's op each time (the first call: set 0)."""
    if len(ops) == 1:
        return ops[0]
    nxt = itertools.cycle(ops).__next__
    return lambda: nxt()()


def graph_wanted(graph: bool, backend_graphs: bool, ranks: int) -> bool:
    """Whether to capture the timed ops as a CUDA graph: asked for, a backend that can, and a
    group of two ranks or more. On one rank NCCL's collectives launch nothing (in place) or one
    copy: the capture may hold no work at all (torch warns "The CUDA Graph is empty"), and there
    is no link to time; the ops are timed eagerly and their records say graph: false."""
    return graph and backend_graphs and ranks > 1


def measure(
    b: Backend,
    comm: Any,
    coll: Collective,
    lay: Layout,
    *,
    group: int,
    iters: int,
    warmup: int,
    in_place: bool,
    check: bool,
    graph: bool = False,
    slots: int = 1,
) -> RankResult:
    """Check, warm up and time one op at one size on this rank's group."""
    n, me = b.group_size(comm), b.group_rank(comm)
    sets = [_buffers(b, coll, lay, n, me, in_place) for _ in range(max(1, slots))]
    more = {"splits": lay.splits} if lay.splits is not None else {}  # alltoallv's per-peer counts
    ops = [b.bind(coll.name, x.send, x.recv, comm, ROOT, in_place, **more) for x in sets]
    op = _rotating(ops)
    use_graph = graph_wanted(graph, getattr(b, "graphs", False), n)

    def checked(run: Callable[[], object]) -> int:
        sets[0].reset(b)
        run()
        b.sync()
        return count_wrong(b.to_numpy(sets[0].recv), coll.want(lay, n, me, ROOT))

    wrong = checked(ops[0]) if check and not use_graph else 0
    for _ in range(warmup):
        op()
    if use_graph and warmup == 0:
        ops[0]()  # NCCL sets up its communicator at the first call, which must not be in a capture
    replay, graph_error = _capture(b, op, iters) if use_graph else (None, "")
    if use_graph and not b.agree(comm, replay is not None):  # every rank of the group takes one path
        replay, graph_error = None, graph_error or "capture failed on another rank of the group"
    if replay is not None:
        # the first launch (it uploads the graph) is timed with the others, as nccl-tests -G does
        per_op = [t / iters for t in _timed_loop(b, comm, replay, GRAPH_REPLAYS, every_op=True).intervals()]
        if check:  # the replayed path, checked: one op launched from its own graph (nccl-tests)
            one, _ = _capture(b, ops[0], 1)
            wrong = checked(one or ops[0])  # a count of 1 either way: eager peers still match
        return RankResult(
            group=group, time_s=sum(per_op) / len(per_op), stats=iter_stats(per_op), wrong=wrong, graph=True
        )
    if check and use_graph:
        wrong = checked(ops[0])
    timer = _timed_loop(b, comm, op, iters, every_op=True)
    times = timer.intervals()
    headline = sum(times) / iters
    if timer.intrusive:
        headline = _timed_loop(b, comm, op, iters, every_op=False).intervals()[0] / iters
    return RankResult(
        group=group, time_s=headline, stats=iter_stats(times), wrong=wrong, graph_error=graph_error
    )


def _capture(b: Backend, op: Any, iters: int) -> tuple[Any, str]:
    """(replay call or None, why capture failed or "")."""
    try:
        return b.capture(op, iters), ""
    except StokerError:
        raise  # the backend says the run cannot go on (a communicator left in error)
    except Exception as exc:  # a failed capture must cost the graph, never the measurement
        b.sync()
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        return None, f"{type(exc).__name__}: {first}"


def _timed_loop(b: Backend, comm: Any, op: Any, iters: int, *, every_op: bool) -> Timer:
    """`iters` ops back to back after a barrier, one sync at the end; the timer holds the
    marks (one per op, or one at each end of the loop)."""
    timer = b.timer()
    timer.prepare(iters + 1 if every_op else 2)
    b.barrier(comm)
    mark = timer.mark
    mark()
    if every_op:
        for _ in range(iters):
            op()
            mark()
    else:
        for _ in range(iters):
            op()
        mark()
    b.sync()
    return timer
