"""fio JSON parsing against golden outputs (fio 3.33 generated here; fio 2.x hand-made in the
2.x layout); expected numbers are worked out by hand from the files' own fields."""

from __future__ import annotations

import pytest

from reports.ingest.fio_records import records_from_fio_output
from reports.shared.errors import UsageError
from reports.shared.fio_json import load_document, parse_fio, percentile_from_bins
from tests.conftest import DATA

FIO = DATA / "fio"


def records(name: str):
    return records_from_fio_output((FIO / name).read_text(), run_id="r1", source_name=name)


def test_fio3_group_reporting_checkpoint_write() -> None:
    (rec,) = records("fio-3.33_ckpt_group.json")
    # io_bytes 33554432 in runtime 20 ms, 32 IOs, 2 clones (numjobs=2)
    # job "ckpt", rw=write, bs=1M: classified a checkpoint write (reports/shared/fio_classes.py)
    assert (rec.workload, rec.direction, rec.procs, rec.bytes) == ("checkpoint_write", "write", 2, 33554432)
    assert rec.extra["job"] == "ckpt" and rec.extra["fio_format"] == "json"
    assert rec.bw_GBps == pytest.approx(33554432 / 0.020 / 1e9, rel=1e-5)  # = fio's bw_bytes 1677721600
    assert rec.iops == pytest.approx(32 / 0.020)
    assert rec.lat_ms == {"p50": 0.978944, "p99": 1.859584}  # clat_ns percentiles / 1e6
    assert rec.block_size == 1 << 20 and rec.direct is True
    assert rec.path == "/tmp/io_scratch" and rec.hosts == ("unknown",) and rec.scope == "local"
    assert rec.extra["fio_version"] == "fio-3.33" and rec.backend == "fio"


def test_fio3_clones_without_group_reporting_are_summed_with_exact_percentiles() -> None:
    (rec,) = records("fio-3.33_randread_nogroup_jsonplus.json")
    # two clones: 622723072 + 623509504 bytes, 9502 + 9514 IOs, both 2001 ms
    assert rec.procs == 2 and rec.bytes == 622723072 + 623509504
    assert rec.bw_GBps == pytest.approx((622723072 + 623509504) / 2.001 / 1e9, rel=1e-5)
    assert rec.iops == pytest.approx((9502 + 9514) / 2.001, rel=1e-5)
    # both clones report p50 203776 ns and p99 325632 ns; the merged histogram agrees
    assert rec.lat_ms == {"p50": pytest.approx(0.203776), "p99": pytest.approx(0.325632)}


def test_status_interval_takes_the_last_complete_document() -> None:
    text = (FIO / "fio-3.33_randrw_status_interval.json").read_text()
    recs = records_from_fio_output(text, run_id="r", source_name="s")
    assert [(r.direction, r.bytes) for r in recs] == [("read", 917831680), ("write", 918880256)]
    assert recs[0].runtime_s == pytest.approx(3.001)
    # a truncated final document (fio killed mid-print) falls back to the one before
    cut = text[: text.rindex('"jobs"')]
    earlier = records_from_fio_output(cut, run_id="r", source_name="s")
    assert earlier[0].bytes < recs[0].bytes


def test_client_server_per_host_and_all_clients_left_out() -> None:
    (rec,) = records("fio-3.33_client_server.json")  # starts with "<vm> ..." noise lines
    # two servers on one host (ports 18651/18652), 33554432 bytes each in 21 and 26 ms: one
    # node (a host name is a node's, never "host:port"), its bytes added over the longer window
    assert rec.hosts == ("127.0.0.1",) and rec.nodes == 1
    assert rec.bytes == 67108864 and rec.procs == 4  # numjobs=2 on each server
    assert rec.per_host_bw_GBps == {"127.0.0.1": pytest.approx(67108864 / 0.026 / 1e9, rel=1e-5)}
    # the window is the longest runtime: same as fio's own "All clients" bw_bytes 2581110153
    assert rec.bw_GBps == pytest.approx(2.581110, rel=1e-5)


def test_fio2_group_reporting_kib_units() -> None:
    (rec,) = records("fio-2.2.10_read_group_handmade.json")  # leading warning line
    # io_bytes 1048576 KiB = 1 GiB in 2000 ms; iops 512; clat percentiles in usec
    assert rec.bytes == 1 << 30 and rec.bw_GBps == pytest.approx(0.536871, abs=1e-6)
    assert rec.iops == pytest.approx(512.0)
    assert rec.lat_ms == {"p50": pytest.approx(7.8), "p99": pytest.approx(15.0)}
    assert rec.path == "/mnt/ckpt" and rec.direct is True and rec.block_size == 1 << 20  # global options


def test_fio2_clones_summed_without_histograms() -> None:
    (rec,) = records("fio-2.1.3_write_nogroup_handmade.json")
    # 64 MiB in 2000 ms (32 iops → 64 IOs) + 32 MiB in 1000 ms (32 IOs); window = 2 s
    assert rec.bytes == 96 << 20 and rec.procs == 2
    assert rec.bw_GBps == pytest.approx((96 << 20) / 2.0 / 1e9, abs=1e-6)
    assert rec.iops == pytest.approx(96 / 2.0)
    # p50: IO-weighted (64*30 + 32*28) / 96 ms; p99: the larger part's, 60 ms
    assert rec.lat_ms["p50"] == pytest.approx((64 * 30 + 32 * 28) / 96, abs=1e-5)
    assert rec.lat_ms["p99"] == pytest.approx(60.0)
    assert rec.path == "/data/bench.file"


def test_metadata_engine_output() -> None:
    doc = parse_fio((FIO / "fio-3.33_filecreate.json").read_text(), host="h1")
    (part,) = doc.parts
    assert (part.host, part.ios, part.runtime_ms) == ("h1", 400, 9)


def test_no_json_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no fio JSON"):
        load_document("fio: unrecognized option '--bogus'\n")


def test_percentile_from_bins() -> None:
    bins = {1000: 50, 2000: 40, 9000: 10}  # ns → count, 100 samples
    assert percentile_from_bins(bins, 50) == pytest.approx(0.001)
    assert percentile_from_bins(bins, 90) == pytest.approx(0.002)
    assert percentile_from_bins(bins, 99) == pytest.approx(0.009)
    assert percentile_from_bins({}, 50) is None


def test_a_job_error_marks_the_record_failed_and_it_is_not_judged() -> None:
    import json

    from reports.judging.advertised import compare_storage
    from reports.shared.spec import Spec, StorageSpec

    doc = json.loads((FIO / "fio-3.33_ckpt_group.json").read_text())
    doc["jobs"][0]["error"] = 5  # EIO, mid-run: fio still wrote its JSON
    (rec,) = records_from_fio_output(json.dumps(doc), run_id="r1", source_name="eio.json")
    assert rec.failed == "fio error 5"
    spec = Spec(storage=(StorageSpec(path="/tmp", kind="local", read_GBps=1.0, write_GBps=1.0),))
    # 1.68 GB/s against 1.0 advertised would be `suspect` if it were judged; a failed run is not
    assert compare_storage([rec], spec) == ([], {})
