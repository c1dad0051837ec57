"""A confirmation binds to what it confirms (reports/evidence/confirmations.py):
records marked `confirmation: true` of other hosts, other ranks, another size or path, or dated
before the first measurement, never turn a fail into a transient; they are left out and named in
the report's notes. Records written by hand, read through the files as `stoker report` reads them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from reports import evidence
from reports.judging.judge import Judgement, judge
from reports.shared.findings import FAILING
from reports.shared.records import IO_FILE, NET_FILE, IoRecord, NetRecord, RecordWriter
from reports.table.read import read_records
from tests.unit.test_confirm import SPEC as IO_SPEC
from tests.unit.test_confirm import fio_rec
from tests.unit.test_confirm_net import SPEC as NET_SPEC
from tests.unit.test_confirm_net import net_rec


def _judge(tmp: Path, net: tuple[NetRecord, ...] = (), io: tuple[IoRecord, ...] = ()) -> Judgement:
    for name, recs in ((NET_FILE, net), (IO_FILE, io)):
        if recs:
            with RecordWriter(tmp / name) as w:
                for r in recs:
                    w.write(r)
    return judge(evidence.build(read_records(tmp)), NET_SPEC if net else IO_SPEC)


def _status(j: Judgement, component: str) -> str:
    (f,) = [f for f in j.findings if f.component == component]
    return f.status


def test_a_bound_network_confirmation_still_makes_a_transient(tmp_path: Path) -> None:
    j = _judge(tmp_path, net=(net_rec(0.076), net_rec(0.095, confirmation=True)))
    assert _status(j, "inter-node network") == "transient"
    assert not any("were ignored" in n for n in j.notes)


def test_a_network_confirmation_of_other_hosts_ranks_size_or_date_is_ignored_and_named(
    tmp_path: Path,
) -> None:
    good = net_rec(0.095, confirmation=True)
    forged = {
        "hosts": dataclasses.replace(good, hosts=("a", "c")),
        "ranks": dataclasses.replace(good, ranks=4),
        "size": dataclasses.replace(good, bytes=good.bytes * 2),
        "backend": dataclasses.replace(good, backend="mpi"),
        "dated": dataclasses.replace(good, ts="2019-06-01T00:00:00Z"),
    }
    for what, rec in forged.items():
        d = tmp_path / what
        d.mkdir()
        j = _judge(d, net=(net_rec(0.076), rec))
        assert _status(j, "inter-node network") in FAILING, what
        assert any("were ignored" in n and "inter-node all_reduce" in n for n in j.notes), (what, j.notes)
        assert j.verdict == "fail", what


def test_a_storage_confirmation_of_another_host_path_or_earlier_date_is_ignored(tmp_path: Path) -> None:
    good = fio_rec(8.4, confirmation=True)
    forged = {
        "host": dataclasses.replace(good, hosts=("n2",), per_host_bw_GBps={"n2": 8.4}),
        "dated": dataclasses.replace(good, ts="2019-06-01T00:00:00Z"),
        "run": dataclasses.replace(good, run_id="other"),
    }
    for what, rec in forged.items():
        d = tmp_path / what
        d.mkdir()
        j = _judge(d, io=(fio_rec(7.6), rec))
        (f,) = [f for f in j.findings if f.extra.get("path") == "/scratch"]
        assert f.status in FAILING and "confirm_GBps" not in f.extra, what
        assert any("were ignored" in n and "/scratch" in n for n in j.notes), (what, j.notes)
    d = tmp_path / "bound"
    d.mkdir()
    j = _judge(d, io=(fio_rec(7.6), good))
    (f,) = [f for f in j.findings if f.extra.get("path") == "/scratch"]
    assert f.status == "transient"


def test_the_findings_table_shows_the_first_figure_and_the_confirmation_side_by_side(tmp_path: Path) -> None:
    from reports.render.markdown import findings_table

    j = _judge(tmp_path, net=(net_rec(0.076), net_rec(0.095, confirmation=True)))
    table = findings_table([f for f in j.findings if f.component == "inter-node network"])
    assert list(table["measured"]) == ["0.08 first, 0.10 again"]  # fnum: two decimals
