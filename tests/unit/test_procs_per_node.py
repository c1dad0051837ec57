"""Processes per node of an io record: written once when the record is made (iobench's aggregate,
where every node ran as many), read by the report, the baseline and compare through the one
function `procs_per_node`, which derives it from procs and nodes only for a record without it.
Expected values are worked out by hand."""

from __future__ import annotations

import dataclasses

import pytest

from iobench.aggregate import HostResult, RecordContext, aggregate
from reports.fleet.clusters import io_figures
from reports.judging.fleet.baseline_figures import figures
from reports.judging.storage.savepath import pick
from reports.shared.records import IoRecord, per_node, procs_per_node
from tests.unit.recordgen import evidence, io

CTX = RecordContext(run_id="r", workload="checkpoint_write", path="/p", scope="shared", direct=True)


def _part(host: str, procs: int) -> HostResult:
    return HostResult(host=host, direction="write", bytes=10**9, ios=10, start_s=0.0, end_s=1.0, procs=procs)


def test_the_record_says_the_processes_every_node_ran() -> None:
    rec = aggregate([_part("a", 8), _part("b", 8)], CTX)
    assert (rec.procs, rec.nodes, rec.extra["procs_per_node"]) == (16, 2, 8)
    # one host's two parts are its 4 + 4: each node ran 8
    rec = aggregate([_part("a", 4), _part("a", 4), _part("b", 8)], CTX)
    assert (rec.procs, rec.nodes, rec.extra["procs_per_node"]) == (16, 2, 8)


def test_nodes_that_ran_different_numbers_leave_it_out() -> None:
    rec = aggregate([_part("a", 8), _part("b", 4)], CTX)
    assert "procs_per_node" not in rec.extra
    assert procs_per_node(rec) == 6  # (8 + 4) / 2


@pytest.mark.parametrize(
    ("procs", "nodes", "want"),
    [
        (32, 4, 8),
        (3, 2, 2),  # 1.5: the even one
        (5, 2, 2),  # 2.5: the even one
        (7, 2, 4),  # 3.5: the even one
        (1, 4, 1),  # 0.25: at least one
        (8, 0, 8),  # no nodes recorded: one
    ],
)
def test_a_record_without_it_reads_procs_over_nodes(procs: int, nodes: int, want: int) -> None:
    assert per_node(procs, nodes) == want
    rec = dataclasses.replace(io("checkpoint_write", "write", "/p", 1.0), procs=procs, nodes=nodes)
    assert procs_per_node(rec) == want


@pytest.mark.parametrize("bad", ["8", True, 0, -2, 17, 2.0, None])
def test_a_value_that_cannot_be_is_not_read(bad: object) -> None:
    """17 writers per node of a record of 16 processes cannot be: procs over nodes (16 / 2) stands."""
    rec = dataclasses.replace(
        io("checkpoint_write", "write", "/p", 1.0), procs=16, extra={"procs_per_node": bad}
    )
    assert procs_per_node(rec) == 8


def _written(n: int) -> IoRecord:
    """12 fio processes on 2 nodes whose record says `n` per node (procs over nodes would say 6)."""
    rec = io("checkpoint_write", "write", "/ckpt", 4.0, direct=True, runtime_s=60.0)
    return dataclasses.replace(rec, procs=12, extra={"procs_per_node": n})


def test_the_save_model_the_baseline_and_compare_read_the_field() -> None:
    rates = pick([_written(4)])
    assert rates is not None and rates.node_writers == 4
    (fig,) = io_figures([_written(4)])
    assert (fig.procs, fig.nodes, fig.procs_per_node) == (12, 2, 4)
    (accepted,) = [f for f in figures(evidence(io=[_written(4)])) if f.kind == "storage"]
    assert accepted.procs == 4
