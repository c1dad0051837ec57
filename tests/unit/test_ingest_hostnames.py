"""Host names are checked where records are read and where foreign results are imported: a
name that is not one plain node name (reports/shared/hostnames.py: a Slurm hostlist, a comma or
whitespace list, `ALL`, a name over 253 characters) is skipped and named, never judged, so
no action can be taken on it.

Imported files are the real fio and nccl-tests outputs of tests/data (fio 3.33 client/server
JSON, the nccl-tests 2.13 mpirun log, the 2.17 -J JSON) with their host names replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reports.ingest.importers import import_dir, import_file
from reports.shared.errors import UsageError
from reports.shared.records import RecordWriter, to_dict
from reports.table.read import read_records
from tests.conftest import DATA
from tests.unit.recordgen import net

PLAIN_WHY = "is not one plain node name (letters, digits, '.', '_', '-'; no hostlists, lists or spaces)"
HOSTILE = [
    ("gpu[001-512]", f"host 'gpu[001-512]' {PLAIN_WHY}"),
    ("n1,n2", f"host 'n1,n2' {PLAIN_WHY}"),
    ("n1 n2", f"host 'n1 n2' {PLAIN_WHY}"),
    ("n1\nn2", f"host 'n1\\nn2' {PLAIN_WHY}"),
    ("ALL", "host 'ALL' is the scheduler keyword 'ALL', which means every node"),
    ("x" * 1_000_000, f"host {'x' * 40!r} is 1000000 characters long (at most 253)"),
]


def _write(path: Path, names: list[str]) -> None:
    with RecordWriter(path) as w:
        for h in names:
            w.write({**to_dict(net("pair", "all_reduce", 2**30, 40.0, ("n1", h), ranks=2)), "pass": 1})


@pytest.mark.parametrize("blank_line", [False, True], ids=["columns", "lines"])
def test_the_reader_skips_and_names_records_of_hostile_host_names(tmp_path: Path, blank_line: bool) -> None:
    _write(tmp_path / "net.jsonl", ["n2", *(h for h, _ in HOSTILE), "n3"])
    if blank_line:  # a blank line sends the file to the line-by-line reader
        (tmp_path / "net.jsonl").write_text((tmp_path / "net.jsonl").read_text() + "\n")
    rs = read_records(tmp_path)
    assert (rs.net._table is None) == blank_line
    assert [r.hosts for r in rs.net.records()] == [("n1", "n2"), ("n1", "n3")]
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [
        ("net.jsonl", i, why) for i, (_, why) in enumerate(HOSTILE, 2)
    ]


def test_io_host_and_counter_records_are_checked_too(tmp_path: Path) -> None:
    io = {
        "schema": 1,
        "kind": "io",
        "run_id": "r1",
        "ts": "2026-01-01T00:00:00Z",
        "hosts": ["n1"],
        "nodes": 1,
        "workload": "ckpt",
        "direction": "write",
        "path": "/scratch",
        "scope": "local",
        "procs": 1,
        "bytes": 1 << 30,
        "bw_GBps": 1.0,
        "per_host_bw_GBps": {"n1": 1.0},
        "iops": 1.0,
        "lat_ms": {},
    }
    lines = [io, {**io, "hosts": ["n[1-2]"]}, {**io, "per_host_bw_GBps": {"ALL": 1.0}}]
    (tmp_path / "io.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    host = {"schema": 1, "kind": "host", "run_id": "r1", "host": "n1"}
    (tmp_path / "host.jsonl").write_text(json.dumps(host) + "\n" + json.dumps({**host, "host": "a,b"}) + "\n")
    rs = read_records(tmp_path)
    assert len(rs.io) == 1 and [h["host"] for h in rs.host] == ["n1"]
    assert [(s.file, s.line, s.reason) for s in rs.skipped] == [
        ("io.jsonl", 2, f"host 'n[1-2]' {PLAIN_WHY}"),
        ("io.jsonl", 3, "host 'ALL' is the scheduler keyword 'ALL', which means every node"),
        ("host.jsonl", 2, f"host 'a,b' {PLAIN_WHY}"),
    ]


def test_fio_client_named_by_a_hostlist_is_named_and_left_out(tmp_path: Path) -> None:
    text = (DATA / "fio" / "fio-3.33_client_server.json").read_text()
    # the server on port 18652 says it is `gpu[001-512]`: its entries (and its share of the
    # "All clients" entry's twin) are left out; port 18651's 33554432 bytes in 21 ms remain
    first = text.index('"hostname" : "127.0.0.1",\n      "port" : 18652')
    bad = text[:first] + text[first:].replace('"127.0.0.1"', '"gpu[001-512]"', 1)
    (tmp_path / "fio.json").write_text(bad)
    got = import_file(tmp_path / "fio.json")
    (rec,) = got.io
    assert rec.hosts == ("127.0.0.1",) and rec.bytes == 33554432
    assert rec.bw_GBps == pytest.approx(33554432 / 0.021 / 1e9, rel=1e-5)
    assert got.notes == [f"fio.json: skipped the entries of host 'gpu[001-512]' {PLAIN_WHY}"]


def test_fio_whose_only_host_is_hostile_imports_nothing_and_says_why(tmp_path: Path) -> None:
    doc = json.loads((DATA / "fio" / "fio-3.33_ckpt_group.json").read_text())
    (tmp_path / "fio.json").write_text(json.dumps({**doc, "hostname": "n1,n2"}))
    with pytest.raises(UsageError, match=r"fio.json: skipped the entries of host 'n1,n2' is not one plain"):
        import_file(tmp_path / "fio.json")


def test_fio_without_a_host_keeps_the_placeholder_and_says_it_is_imported(tmp_path: Path) -> None:
    (tmp_path / "fio.json").write_text((DATA / "fio" / "fio-3.33_ckpt_group.json").read_text())
    (rec,) = import_file(tmp_path / "fio.json").io
    # "unknown" is a placeholder (reports/hostnames.PLACEHOLDER_HOSTS, never acted on); the
    # record says it was imported: its run id and its `source`
    assert rec.hosts == ("unknown",) and rec.run_id.startswith("import-")
    assert rec.extra["source"] == "fio.json"


def test_nccl_log_table_of_a_hostlist_rank_is_named_and_skipped(tmp_path: Path) -> None:
    text = (DATA / "nccl_tests" / "v2.13_mpirun_all_reduce.log").read_text()
    assert text.count("on    gpu-a02 device") == 8
    (tmp_path / "all_reduce.log").write_text(text.replace("on    gpu-a02 device", "on gpu[001-512] device"))
    with pytest.raises(UsageError) as err:
        import_file(tmp_path / "all_reduce.log")
    assert str(err.value) == f"all_reduce.log: skipped the table at line 28: host 'gpu[001-512]' {PLAIN_WHY}"
    # `stoker report DIR` says the same and judges nothing of it
    got = import_dir(tmp_path)
    assert not got.net and got.notes == [str(err.value)]


def test_nccl_json_device_named_all_is_named_and_skipped(tmp_path: Path) -> None:
    doc = json.loads((DATA / "nccl_tests" / "v2.17_all_reduce.json").read_text())
    doc["config"]["devices"][3]["hostname"] = "ALL"
    (tmp_path / "ar.json").write_text(json.dumps(doc))
    with pytest.raises(
        UsageError, match=r"^ar.json: skipped: config.devices host 'ALL' is the scheduler keyword"
    ):
        import_file(tmp_path / "ar.json")


def test_mamf_finder_output_of_a_hostlist_host_is_named_and_not_imported(tmp_path: Path) -> None:
    import argparse

    from reports.commands import import_cmd

    text = (DATA / "compute" / "mamf-finder-gfx1151.txt").read_text()  # real mamf-finder output
    assert text.count("Linux fe5b1b32a344 ") == 1
    (tmp_path / "mamf.txt").write_text(text.replace("Linux fe5b1b32a344 ", "Linux gpu[1-4] "))
    with pytest.raises(UsageError) as err:
        import_cmd.main(
            argparse.Namespace(files=[str(tmp_path / "mamf.txt")], out=str(tmp_path / "out"), op=None)
        )
    assert str(err.value) == (
        f"{tmp_path / 'mamf.txt'}: mamf-finder output not imported: host 'gpu[1-4]' {PLAIN_WHY}"
    )
    assert not (tmp_path / "out" / "compute.jsonl").exists()
