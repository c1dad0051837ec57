"""The NCCL path's decisions, without a GPU: graph or eager agreed by the group,
the replayed path checked, buffer sets rotated as nccl-tests shifts its offset, device choice
under one-GPU-per-task launches, one backend and one GPU per rank agreed through a real
rendezvous store, `auto` refusing a node whose driver has GPUs torch cannot use, and every
round's groups released. Scripted backends stand in for NCCL where a GPU would be needed."""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch.distributed as dist

from netbench import backends
from netbench.backends import agreement_problem, pick_device, resolve
from netbench.collectives import TABLE
from netbench.harness import GRAPH_REPLAYS, slots_for
from reports.shared.errors import UsageError
from tests.unit.test_graph_timing import GraphBackend, OneRank, measure_graph, run_graph


def test_a_capture_that_failed_elsewhere_makes_every_rank_time_eagerly() -> None:
    b = GraphBackend(peers_ok=False)  # this rank captured; another rank of the group did not
    r = measure_graph(b, iters=10)
    assert b.agreed == 1 and b.captured == [10] and b.replays == 0  # captured, never replayed
    assert not r.graph and r.graph_error == "capture failed on another rank of the group"
    # the eager path's count of collectives: 2 warm-up + 10 (statistics) + 10 (headline)
    assert b.eager_calls == 2 + 10 + 10


class DataGraphBackend(GraphBackend):
    """Ops that really compute a two-rank all_reduce into their buffer; `corrupt` makes a
    replayed graph leave a wrong element, which only a check of the replayed path can see."""

    def __init__(self, corrupt: bool) -> None:
        super().__init__()
        self.corrupt = corrupt
        self.touched: list[int] = []

    def bind(self, op: str, send: Any, recv: Any, comm: Any, root: int, in_place: bool) -> Any:
        want = TABLE["all_reduce"].expected(recv.size, 2, 0, 0)

        def run() -> None:
            self.eager_calls += 1
            self.touched.append(id(recv))
            self.clock[0] += 10e-6
            recv[:] = want

        run.recv = recv  # type: ignore[attr-defined]
        return run

    def to_numpy(self, buf: Any) -> np.ndarray:
        return np.asarray(buf, dtype=np.float64)

    def capture(self, op: Callable[[], object], iters: int) -> Callable[[], object] | None:
        self.captured.append(iters)

        def replay() -> None:
            self.replays += 1
            for _ in range(iters):
                op()
            if self.corrupt and iters == 1:
                self.last_recv[0] += 1  # the graph-launched op got one element wrong

        self.last_recv = getattr(op, "recv", None)
        return replay


def _all_reduce(b: Any, *, check: bool, graph: bool, slots: int = 1, iters: int = 4) -> Any:
    return measure_graph(b, graph, iters, op="all_reduce", warmup=1, in_place=True, check=check, slots=slots)


def test_graph_mode_checks_the_replayed_path_after_timing() -> None:
    good = _all_reduce(DataGraphBackend(corrupt=False), check=True, graph=True)
    assert good.graph and good.wrong == 0
    b = DataGraphBackend(corrupt=True)
    bad = _all_reduce(b, check=True, graph=True)
    # the eager op before capture was right; the check is of the graph-launched op
    assert bad.graph and bad.wrong == 1
    assert b.captured == [4, 1]  # the timed graph, then one op captured for the check
    assert b.replays == GRAPH_REPLAYS + 1  # the timed launches (the first included), then the check


def test_buffer_sets_rotate_as_nccl_tests_shifts_its_offset() -> None:
    lay = TABLE["all_reduce"].layout(1024, 2, 4)  # 256 float32 each way: 1024 B per set
    assert slots_for(lay, 4, pool_bytes=4096, iters=20) == 4  # 4096 / 1024
    assert slots_for(lay, 4, pool_bytes=1 << 20, iters=20) == 20  # never more than the iterations
    assert slots_for(lay, 4, pool_bytes=512, iters=20) == 1  # the largest size: one set
    b = DataGraphBackend(corrupt=False)
    r = _all_reduce(b, check=False, graph=False, slots=3, iters=6)
    assert r.wrong == 0
    # warm-up 1, then the statistics loop of 6 and the headline loop of 6: sets 0,1,2,0,1,2,...
    ids = b.touched
    assert len(set(ids)) == 3 and all(ids[i] == ids[i + 3] for i in range(len(ids) - 3))
    assert all(ids[i] != ids[i + 1] for i in range(len(ids) - 1))


def test_device_choice_under_one_gpu_per_task() -> None:
    assert pick_device(0, 8) == 0 and pick_device(5, 8) == 5  # torchrun: every GPU visible
    assert pick_device(3, 1) == 0  # srun --gpus-per-task=1 / CUDA_VISIBLE_DEVICES=<one>
    assert pick_device(3, 2) == 1  # --gpus-per-task=2: one of its own two
    with pytest.raises(UsageError, match="sees none"):
        pick_device(0, 0)


def test_agreement_names_split_backends_and_shared_gpus() -> None:
    assert agreement_problem([("nccl", "GPU-a"), ("nccl", "GPU-b")]) is None
    assert agreement_problem([("gloo", ""), ("gloo", "")]) is None
    split = agreement_problem([("nccl", "GPU-a"), ("nccl", "GPU-b"), ("gloo", "")])
    assert split is not None and "gloo on rank(s) 2; nccl on rank(s) 0, 1" in split
    shared = agreement_problem([("nccl", "GPU-a"), ("nccl", "GPU-a"), ("nccl", "GPU-b")])
    assert shared is not None and "ranks 0, 1 would share GPU GPU-a" in shared


def test_choices_travel_through_a_real_rendezvous_store() -> None:
    # two "ranks" as threads on one real TCPStore, as TorchBackend exchanges them before init
    timeout = datetime.timedelta(seconds=20)
    store, _, _ = next(dist.rendezvous("tcp://127.0.0.1:0", rank=0, world_size=1, timeout=timeout))
    port = store.port
    picks = {0: "nccl\tGPU-1", 1: "gloo\t"}
    seen: dict[int, list[tuple[str, str]]] = {}

    def rank(r: int) -> None:
        s = dist.TCPStore("127.0.0.1", port, world_size=None, is_master=False, timeout=timeout)
        s.set(f"stoker/choice/{r}", picks[r])
        got = [s.get(f"stoker/choice/{i}").decode().split("\t", 1) for i in range(2)]
        seen[r] = [(a, b) for a, b in got]

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert seen[0] == seen[1] == [("nccl", "GPU-1"), ("gloo", "")]
    assert "different backends" in (agreement_problem(seen[0]) or "")


def test_auto_refuses_a_node_whose_driver_has_gpus_torch_cannot_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(UsageError, match="driver shows 8 GPU"):
        resolve("auto", gpus_on_node=lambda: 8)  # this CPU torch sees none
    assert resolve("auto", gpus_on_node=lambda: 0) == "gloo"  # a CPU node
    assert resolve("gloo", gpus_on_node=lambda: 8) == "gloo"  # asked for on purpose
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert resolve("auto", gpus_on_node=lambda: 8) == "gloo"  # GPUs hidden from CUDA on purpose


def test_driver_gpus_counts_procfs_entries(tmp_path: Path) -> None:
    assert backends.driver_gpus(str(tmp_path / "absent")) == 0
    for bdf in ("0000:18:00.0", "0000:2a:00.0"):
        (tmp_path / bdf).mkdir()
    assert backends.driver_gpus(str(tmp_path)) == 2


def test_every_round_releases_its_groups(tmp_path: Path) -> None:
    b = OneRank()
    run_graph(b, tmp_path)
    assert b.released == 1  # one scope, one round: its groups released once
