"""CUDA-graph timing (nccl-tests -G) without a GPU: a scripted backend whose "graph" replays
the captured ops on a scripted clock, for the harness (capture, replay, fallback) and for the
runner (the `graph` record field, the one-line fallback notice)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from netbench.collectives import TABLE
from netbench.harness import GRAPH_REPLAYS, measure
from netbench.rank_run import Settings
from netbench.runner import execute
from tests.conftest import DATA
from tests.unit.test_harness import ScriptedBackend

EAGER_OP_S = 10e-6  # an eager op: mostly the host's per-call cost
GRAPH_OP_S = 1e-6  # the same op replayed from a graph: the device's time only
MARK_S = 2e-6  # one timer mark (a CUDA event record)


class GraphBackend(ScriptedBackend):
    """capture() records how it was called and returns a replay that advances the clock by
    `iters` graph ops; `fail` makes capture raise instead, as an old NCCL would."""

    def __init__(self, fail: str = "", can: bool = True, peers_ok: bool = True) -> None:
        super().__init__(intrusive=True)
        self.fail, self.can, self.peers_ok = fail, can, peers_ok
        self.graphs = can
        self.captured: list[int] = []
        self.replays = 0
        self.eager_calls = 0

    def bind(self, op: str, send: Any, recv: Any, comm: Any, root: int, in_place: bool) -> Any:
        def run() -> None:
            self.eager_calls += 1
            self.clock[0] += EAGER_OP_S

        return run

    def agree(self, comm: Any, ok: bool) -> bool:
        self.agreed = getattr(self, "agreed", 0) + 1
        return ok and self.peers_ok  # the other ranks' verdict, scripted

    def capture(self, op: Callable[[], object], iters: int) -> Callable[[], object] | None:
        if not self.can:
            return None
        if self.fail:
            raise RuntimeError(self.fail)
        self.captured.append(iters)

        def replay() -> None:
            self.replays += 1
            self.clock[0] += iters * GRAPH_OP_S

        return replay


def measure_graph(
    b: Any,
    graph: bool = True,
    iters: int = 10,
    *,
    op: str = "all_gather",
    warmup: int = 2,
    in_place: bool = False,
    check: bool = False,
    slots: int = 1,
) -> Any:
    coll = TABLE[op]
    return measure(
        b,
        None,
        coll,
        coll.layout(1024, 2, 4),
        group=0,
        iters=iters,
        warmup=warmup,
        in_place=in_place,
        check=check,
        graph=graph,
        slots=slots,
    )


def test_graph_capture_and_replay_time_the_device_not_the_host() -> None:
    b = GraphBackend()
    r = measure_graph(b, iters=10)
    assert b.captured == [10]  # the iterations, captured once
    assert b.replays == GRAPH_REPLAYS  # every launch timed, the first (upload) included
    assert b.eager_calls == 2  # the warm-up only: no eager timed loop
    # each timed replay: 10 graph ops of 1 us plus one mark of 2 us -> 1.2 us per op
    assert r.graph and r.graph_error == ""
    assert r.time_s == pytest.approx((10 * GRAPH_OP_S + MARK_S) / 10)
    assert r.stats.min == r.stats.p50 == pytest.approx(1.2e-6)


def test_one_eager_op_precedes_capture_even_without_check_and_warmup() -> None:
    b = GraphBackend()
    coll = TABLE["all_reduce"]
    r = measure(
        b,
        None,
        coll,
        coll.layout(1024, 2, 4),
        group=0,
        iters=4,
        warmup=0,  # type: ignore[arg-type]
        in_place=True,
        check=False,
        graph=True,
    )
    assert b.eager_calls == 1 and b.captured == [4] and r.graph


def test_no_graph_and_graphless_backends_time_eagerly_without_a_word() -> None:
    for b, graph in ((GraphBackend(), False), (GraphBackend(can=False), True)):
        r = measure_graph(b, graph=graph)
        assert not r.graph and r.graph_error == "" and b.replays == 0
        assert r.time_s == pytest.approx((10 * EAGER_OP_S + MARK_S) / 10)  # the eager headline loop


def test_failed_capture_falls_back_to_eager_and_says_why() -> None:
    b = GraphBackend(fail="NCCL 2.8.4 cannot be captured in a CUDA graph (needs 2.9.6 or later)\ndetail")
    r = measure_graph(b)
    assert not r.graph and b.replays == 0
    assert (
        r.graph_error == "RuntimeError: NCCL 2.8.4 cannot be captured in a CUDA graph (needs 2.9.6 or later)"
    )
    assert r.time_s == pytest.approx(10.2e-6)  # measured all the same, eagerly


class OneRank(GraphBackend):
    """The runner's side of a one-rank job (gather/bcast are identities)."""

    name, rank, world, device = "nccl", 0, 1, "scripted GPU"
    only_in_place = frozenset({"all_reduce", "broadcast", "reduce"})
    in_place_ops = frozenset({"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"})

    def split(self, groups: Sequence[Sequence[int]]) -> Any:
        return "world"

    def view(self, buf: Any, start: int, n: int) -> Any:
        return buf[start : start + n]

    def to_numpy(self, buf: Any) -> np.ndarray:
        return np.asarray(buf, dtype=np.float64)

    def gather(self, obj: Any) -> list[Any]:
        return [obj]

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def bcast(self, obj: Any) -> Any:
        return obj

    def versions(self) -> dict[str, str]:
        return {"backend": "nccl", "nccl": "scripted"}

    def release(self) -> None:
        self.released = getattr(self, "released", 0) + 1

    def close(self) -> None:
        pass


def run_graph(b: OneRank, out: Path, graph: bool = True) -> list[dict[str, Any]]:
    s = Settings(
        ops=("all_gather", "broadcast"),
        sizes=(16, 1024),  # 16 B: all_gather gives each rank 16 B at least (nccl-tests)
        iters=10,
        warmup=1,
        dtype="float32",
        scopes=("world",),
        in_place=False,
        check=False,
        timeout_s=60,
        pair_bytes=8,
        pair_op="all_reduce",
        graph=graph,
        out=str(out),
        hosts_override="h0",
    )
    assert execute(b, s, "scripted") == 0  # type: ignore[arg-type]
    return [json.loads(line) for line in (out / "net.jsonl").read_text().splitlines()]


def test_every_record_says_how_it_was_timed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recs = run_graph(OneRank(), tmp_path / "g")
    assert [(r["op"], r["bytes"], r["graph"]) for r in recs] == [
        ("all_gather", 16, True),
        ("all_gather", 1024, True),
        ("broadcast", 16, True),
        ("broadcast", 1024, True),
    ]
    assert all(r["time_s"] == pytest.approx(1.2e-6) for r in recs)
    assert "CUDA graph" not in capsys.readouterr().err
    eager = run_graph(OneRank(), tmp_path / "e", graph=False)
    assert {r["graph"] for r in eager} == {False} and all(
        r["time_s"] == pytest.approx(10.2e-6) for r in eager
    )


def test_a_failed_capture_is_one_line_and_graph_false(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = run_graph(OneRank(fail="operation not permitted when stream is capturing"), tmp_path)
    assert {r["graph"] for r in recs} == {False} and len(recs) == 4
    err = [line for line in capsys.readouterr().err.splitlines() if "CUDA graph" in line]
    assert err == [
        "# CUDA graph capture failed (RuntimeError: operation not permitted when stream is capturing): "
        "timing eagerly where it fails; records say graph: false"
    ]


def test_recorded_fixture_matches_what_the_runner_writes(tmp_path: Path) -> None:
    """tests/data/gpu/graph-scripted: records of this scripted backend (not a GPU), kept so that
    a change in what a graph run writes shows up as a diff; run and ts fields excluded."""
    recs = run_graph(OneRank(), tmp_path)
    kept = [
        json.loads(line) for line in (DATA / "gpu" / "graph-scripted" / "net.jsonl").read_text().splitlines()
    ]
    volatile = {"run_id", "ts"}
    assert [{k: v for k, v in r.items() if k not in volatile} for r in recs] == [
        {k: v for k, v in r.items() if k not in volatile} for r in kept
    ]
