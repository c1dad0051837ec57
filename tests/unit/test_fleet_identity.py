"""`stoker compare` sets two clusters' figures side by side only when they were measured the
same way (the baseline's identity: tool, ranks and nodes, writers per node, block size); a row
whose figures differ says "not comparable:" and what differs, and ranks nothing. Records are
hand-made (tests/unit/recordgen) and written to directories as `stoker run` writes them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from reports.fleet.clusters import ClusterSummary, summarise
from reports.fleet.ranking import compare
from reports.fleet.rows import Row
from reports.pipeline import collect
from reports.shared.records import RecordWriter
from tests.unit.recordgen import io, net

G = 1 << 30


def _run(directory: Path, nodes: int, busbw: float, backend: str, write_GBps: float) -> ClusterSummary:
    """One run: an all_reduce world sweep over `nodes` nodes at 8 ranks each, and one
    checkpoint write to /data from 2 nodes (8 writers each) with `backend`."""
    directory.mkdir(parents=True)
    hosts = tuple(f"n{i}" for i in range(1, nodes + 1))
    with RecordWriter(directory / "net.jsonl") as w:
        for size, bw in ((G // 4, busbw * 0.9), (G, busbw)):
            w.write(net("world", "all_reduce", size, bw, hosts, ranks=8 * nodes))
    with RecordWriter(directory / "io.jsonl") as w:
        w.write(replace(io("checkpoint_write", "write", "/data", write_GBps, backend=backend), block_size=G))
    c = collect(directory)
    return summarise(directory.name, str(directory), c.report.evidence, c.report.judgement)


def _rows(a: ClusterSummary, b: ClusterSummary) -> tuple[Row, Row]:
    rows = compare([a, b], None).rows
    (network,) = [r for r in rows if r.kind == "network"]
    (storage,) = [r for r in rows if r.kind == "storage"]
    return network, storage


def test_unlike_figures_are_not_comparable_and_rank_nothing(tmp_path: Path) -> None:
    # a: a 2-node sweep (16 ranks) and torch.save; b: an 8-node sweep (64 ranks) and fio. Both
    # 8 ranks and 8 writers per node, so only the tool, ranks and nodes tell them apart.
    a = _run(tmp_path / "a", 2, 40.0, "torch.save", 1.0)
    b = _run(tmp_path / "b", 8, 30.0, "fio", 3.0)
    network, storage = _rows(a, b)
    assert not network.comparable and network.best == ()
    assert network.reasons == ("not comparable: ranks (a 16, b 64); nodes (a 2, b 8)",)
    assert {n: c.value for n, c in network.cells.items()} == {"a": None, "b": None}
    assert not storage.comparable and storage.best == ()
    assert storage.reasons == ("not comparable: tool (a torch.save, b fio)",)
    assert storage.figure == "shared write (checkpoint_write)"


def test_alike_figures_are_compared(tmp_path: Path) -> None:
    # both 2 nodes, 16 ranks, fio with 8 writers per node and a 1G block: compared, a ahead on
    # the network (40 against 30 GB/s at 1G) and b on storage (3.0 against 1.0 GB/s)
    a = _run(tmp_path / "a", 2, 40.0, "fio", 1.0)
    b = _run(tmp_path / "b", 2, 30.0, "fio", 3.0)
    network, storage = _rows(a, b)
    assert network.comparable and network.best == ("a",) and network.reasons == ()
    assert (network.cells["a"].value, network.cells["b"].value) == (40.0, 30.0)
    assert storage.comparable and storage.best == ("b",) and storage.reasons == ()
    assert (storage.cells["a"].value, storage.cells["b"].value) == (1.0, 3.0)
    assert storage.figure == (
        "shared write (checkpoint_write), tool fio, processes per node 8, block size 1G, nodes 2"
    )
