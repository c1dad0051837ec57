"""fio's normal text output (reports/shared/fio_text.py) and the classification of imported fio jobs
(reports/shared/fio_classes.py), against real fio outputs (tests/data/SOURCES.md). Every expected
figure is worked out by hand from the line of the fixture quoted beside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from launchers import cli
from reports.ingest.fio_records import option_size, records_from_fio_output
from reports.ingest.importers import import_file
from reports.shared.fio_classes import CLASSES, Job, classify, job_of
from reports.shared.fio_text import FioTextError, looks_like_fio_text, parse_text
from reports.shared.storage_rule import why_not_compared
from tests.conftest import DATA

FIO = DATA / "fio"
MiB = 1 << 20


def records(name: str):
    return records_from_fio_output((FIO / name).read_text(), run_id="r1", source_name=name)


def test_fio3_group_reporting_checkpoint_write_text() -> None:
    (rec,) = records("fio-3.33_ckpt_write_group.txt")
    # "ckpt: (groupid=0, jobs=2)"; "write: IOPS=4086, BW=4086MiB/s (4285MB/s)(8177MiB/2001msec)"
    assert rec.bytes == 8177 * MiB == 8574205952
    assert rec.runtime_s == 2.001
    assert rec.bw_GBps == pytest.approx(4.284960, abs=1e-6)  # 8574205952 B / 2.001 s
    assert rec.iops == pytest.approx(4086.457, abs=1e-3)  # "issued rwts: total=0,8177,0,0" / 2.001 s
    assert rec.lat_ms == {"p50": 0.445, "p99": 1.029}  # "50.00th=[  445]", "99.00th=[ 1029]" (usec)
    assert rec.procs == 2 and rec.block_size == MiB  # "bs=(R) 1024KiB-1024KiB"
    assert rec.direct is None  # fio's text output does not say whether O_DIRECT was used
    # job "ckpt", rw=write, 1 MiB blocks: a checkpoint write; fio's own job name kept beside
    assert rec.workload == "checkpoint_write" and rec.extra["job"] == "ckpt"
    assert rec.extra["fio_format"] == "text" and rec.extra["fio_version"] == "fio-3.33"
    assert rec.extra["rw"] == "write" and rec.extra["iodepth"] == 1


def test_fio3_clones_without_group_reporting_add_up() -> None:
    (rec,) = records("fio-3.33_randread_nogroup.txt")
    # two "loader: (groupid=0, jobs=1)" blocks: 1084MiB and 1082MiB, both in 2001msec
    # "issued rwts: total=8670,0,0,0" and "total=8658,0,0,0" of 128 KiB blocks: (8670 + 8658) x
    # 131072 B (fio printed 1084MiB and 1082MiB, rounded to 4 digits; the same sum here)
    assert rec.bytes == (8670 + 8658) * 131072 == 2271215616
    assert rec.bw_GBps == pytest.approx(1.135040, abs=1e-6)  # 2271215616 B / 2.001 s
    assert rec.iops == pytest.approx((8670 + 8658) / 2.001, abs=1e-3)  # issued rwts of each clone
    assert rec.procs == 2 and rec.block_size == 128 << 10
    assert rec.lat_ms == {"p50": 0.231, "p99": 0.289}
    # random reads of 128 KiB by a job named "loader": a dataloader read
    assert rec.workload == "dataloader_read" and rec.extra["job"] == "loader"


def test_fio3_small_random_write_is_judged_by_iops_not_as_a_bandwidth() -> None:
    (rec,) = records("fio-3.33_randwrite_4k.txt")
    # "write: IOPS=52.0k, BW=203MiB/s (213MB/s)(406MiB/2001msec)", "issued rwts: total=0,103972,0,0"
    # 103972 I/Os x 4096 B = 425869312 B (fio printed the amount rounded: 406MiB = 425721856 B)
    assert rec.bytes == 103972 * 4096 == 425869312 and rec.iops == pytest.approx(
        51960.020, abs=1e-3
    )  # 103972 / 2.001
    assert rec.block_size == 4096  # "bs=(R) 4096B-4096B"
    assert rec.workload == "randwrite4k"  # no stoker workload: the job's own name
    assert rec.extra["io_class"] == "random_small" and rec.extra["judged_by"] == "iops"
    assert "IOPS (51,960)" in why_not_compared(rec) and "never a bandwidth" in why_not_compared(rec)


def test_fio3_decimal_units_are_powers_of_1000() -> None:
    (rec,) = records("fio-3.33_ckpt_read_kb_base_1000.txt")
    # --kb_base=1000: "read: IOPS=319, BW=1338MB/s (1276MiB/s)(2680MB/2003msec)", bs=(R) 4194kB
    assert rec.bytes == 2680 * 10**6
    assert rec.bw_GBps == pytest.approx(1.337993, abs=1e-6)  # 2.68e9 B / 2.003 s
    assert rec.block_size == 4194 * 1000
    assert rec.lat_ms == {"p50": 6.063, "p99": 10.421}
    assert rec.workload == "checkpoint_read" and rec.extra["job"] == "checkpoint" and rec.procs == 2


def test_fio2_kb_means_kib_and_its_job_line_reads() -> None:
    (rec,) = records("fio-2.1.14_seqwrite4_issue_excerpt.txt")
    # "write: io=1024.0MB, bw=8904.1KB/s, iops=2226, runt=117752msec": fio 2.x's MB is MiB
    assert rec.bytes == 1024 * MiB
    assert rec.runtime_s == 117.752
    assert rec.bw_GBps == pytest.approx(0.009119, abs=1e-6)  # 1073741824 / 117.752 (fio: 8904.1 KiB/s)
    assert rec.iops == pytest.approx(2226.0, abs=0.01)  # no issued line: round(2226 * 117.752) I/Os
    assert rec.lat_ms == {"p50": 0.155, "p99": 3.568}
    assert rec.block_size == 4096  # "bs=4K-4K/4K-4K/4K-4K"
    assert rec.extra["fio_version"] == "fio-2.1.14-17-g8671"
    assert rec.workload == "seqwrite4" and rec.extra["io_class"] == ""  # sequential 4 KiB: no class


def test_fio3_28_excerpt_cut_short_keeps_the_job_it_printed() -> None:
    (rec,) = records("fio-3.28_microbench_issue_excerpt.txt")
    # "write: IOPS=1384, BW=346MiB/s (363MB/s)(2048MiB/5916msec)"
    assert (rec.workload, rec.bytes, rec.runtime_s) == ("seq-write-256k", 2048 * MiB, 5.916)
    assert rec.bw_GBps == pytest.approx(0.362996, abs=1e-6)  # 2147483648 / 5.916 = 362,995,884 B/s
    assert rec.block_size == 256 << 10 and rec.lat_ms == {"p50": 0.57, "p99": 2.442}
    assert rec.extra["fio_version"] == "fio-3.28-dirty"


def test_fio2_run_status_groups_alone() -> None:
    recs = records("fio-2.x_run_status_groups_issue_excerpt.txt")
    got = {(r.workload, r.direction): (r.bytes, r.runtime_s) for r in recs}
    # "WRITE: io=984576KB, aggrb=16406KB/s, ..., maxt=60011msec" (KB = KiB in fio 2.x)
    assert got[("group 3", "write")] == (984576 * 1024, 60.011)
    assert got[("group 4", "read")] == (301308 * 1024, 60.001)
    assert len(recs) == 5
    g3 = next(r for r in recs if r.workload == "group 3")
    assert g3.bw_GBps == pytest.approx(0.016800, abs=1e-6)  # fio: aggrb=16406 KiB/s = 0.0167997 GB/s


def test_json_with_fio_note_before_it_reads_and_keeps_the_jobname(tmp_path: Path) -> None:
    # fio-3.33 --output-format=json+ with psync and iodepth=4: fio prints its "note: both
    # iodepth >= 1 and synchronous I/O engine ..." line before the document
    f = tmp_path / "some" / "dir" / "run-7.json"
    f.parent.mkdir(parents=True)
    shutil.copy(FIO / "fio-3.33_jsonplus_note_before.json", f)
    (rec,) = import_file(f).io
    # "jobname" : "ckpt", write "io_bytes" : 9202302976, "runtime" : 2001, "total_ios" : 8776
    assert rec.extra["job"] == "ckpt" and rec.workload == "checkpoint_write"
    assert "run-7" not in rec.workload and rec.extra["fio_format"] == "json"
    assert rec.bytes == 9202302976 and rec.iops == pytest.approx(8776 / 2.001, abs=1e-3)
    assert rec.lat_ms == {"p50": 0.216064, "p99": 0.321536}  # json+ bins: exact


def test_files_are_told_apart_by_content_not_name(tmp_path: Path) -> None:
    text_as_json = tmp_path / "results.json"
    shutil.copy(FIO / "fio-3.33_randwrite_4k.txt", text_as_json)
    json_as_log = tmp_path / "fio.log"
    shutil.copy(FIO / "fio-3.33_ckpt_group.json", json_as_log)
    assert import_file(text_as_json).io[0].extra["fio_format"] == "text"
    assert import_file(json_as_log).io[0].extra["fio_format"] == "json"
    assert looks_like_fio_text((FIO / "fio-3.33_ckpt_write_group.txt").read_text())
    assert not looks_like_fio_text((DATA / "nccl_tests" / "v2.17_srun_allgather_alltoall.log").read_text())


def test_a_damaged_result_line_is_named_with_its_line(tmp_path: Path) -> None:
    lines = (FIO / "fio-3.33_ckpt_write_group.txt").read_text().splitlines(keepends=True)
    assert lines[8].startswith("  write: IOPS=4086")
    lines[8] = "  write: IOPS=4086, BW=4086MiB/s (4285MB/s)(8177MiB/20\n"  # cut inside the figure
    with pytest.raises(FioTextError, match="line 9"):
        parse_text("".join(lines))
    f = tmp_path / "pasted.txt"
    f.write_text("".join(lines))
    out = tmp_path / "out"
    assert cli.main(["import", str(f), "--out", str(out)]) == 2
    # a header with no result after it (the paste stopped early)
    with pytest.raises(FioTextError, match="line 4"):
        parse_text("".join(lines[:4]))


def test_stoker_report_judges_a_dir_holding_fio_text(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(FIO / "fio-3.33_ckpt_write_group.txt", run / "ckpt-node1.out")
    shutil.copy(FIO / "fio-3.33_randwrite_4k.txt", run / "rand.log")
    assert cli.main(["report", str(run)]) == 0
    verdict = json.loads((run / "verdict.json").read_text())
    storage = [f for f in verdict["findings"] if f["component"].endswith("storage")]
    # the checkpoint write is judged as one (no O_DIRECT recorded in text: not held against a
    # figure), the 4 KiB random write is not judged as a bandwidth at all
    assert [(f["workload"], f["direction"], f["measured"]) for f in storage] == [
        ("checkpoint_write", "write", 4.285)
    ]
    assert "direct IO not recorded" in storage[0]["message"]
    report = (run / "report.md").read_text()
    assert "randwrite4k (randwrite, 4 KiB blocks) on rand.log: 51,960 IOPS, p99 0.109 ms" in report


def _job(name: str, direction: str, complete: bool = True, **options: str) -> Job:
    return job_of(name, direction, options, option_size(options, "bs"), complete=complete)


@pytest.mark.parametrize(
    ("job", "klass", "workload"),
    [
        # by what the job does, whatever its name
        (_job("foo", "write", rw="write", bs="4M", end_fsync="1"), "checkpoint write", "checkpoint_write"),
        (_job("x", "write", rw="write", bs="1M", direct="1"), "checkpoint write", "checkpoint_write"),
        (_job("x", "write", rw="write", bs="1M", fsync="8"), "checkpoint write", "checkpoint_write"),
        (_job("ckpt", "write", rw="write", bs="4M"), "", None),  # buffered, never synced: the page cache
        (_job("ckpt", "write", rw="write", bs="4M", end_fsync="0"), "", None),
        (_job("ckpt", "write", rw="write", bs="256k", direct="1"), "", None),  # small blocks
        (_job("ckpt", "write", rw="randwrite", bs="4M", direct="1"), "", None),  # not sequential
        (_job("ckpt", "write", rw="write", bs="4M", direct="1", nrfiles="8"), "", None),  # many files each
        (_job("x", "write", False, rw="write", bs="4M"), "checkpoint write", "checkpoint_write"),  # text: not said
        (_job("bar", "read", rw="read", bs="4M"), "checkpoint read", "checkpoint_read"),
        (_job("bar", "read", rw="read:1M", bs="4M"), "checkpoint read", "checkpoint_read"),  # rw's ':N' skip
        (_job("rnd", "write", rw="randwrite", bs="4k"), "random_small", None),
        (_job("rnd", "read", rw="randread", bs="64k"), "random_small", None),
        (_job("x", "read", rw="randread", bs="128k"), "dataloader read", "dataloader_read"),
        (_job("x", "read", rw="read", bs="256k", nrfiles="16"), "dataloader read", "dataloader_read"),
        (_job("x", "read", rw="read", bs="256k", filename="/d/a:/d/b"), "dataloader read", "dataloader_read"),
        (_job("x", "read", False, rw="read", bs="256k"), "", None),  # text: the file count not said
        (_job("md", "write", rw="write", bs="4k", ioengine="filecreate"), "metadata", "metadata"),
    ],
)  # fmt: skip
def test_classification_table(job: Job, klass: str, workload: str | None) -> None:
    got = classify(job)
    assert (got.name, got.workload) == (klass, workload)


def test_real_jobs_are_classified_by_what_they_do_not_their_names() -> None:
    """tests/data/fio/fio-3.33_classes_by_options.{json,txt}: one job file run by fio 3.33, its
    names chosen to mislead (tests/data/SOURCES.md): `foo` writes 4 MiB blocks with end_fsync,
    `ckpt` writes 1 MiB blocks buffered and never syncs, `bar` reads 4 MiB blocks of one file,
    `samples` reads 256 KiB blocks over 16 files, `tiny` reads 4 KiB blocks at random."""
    got = {
        r.extra["job"]: (r.extra["io_class"], r.workload) for r in records("fio-3.33_classes_by_options.json")
    }
    assert got == {
        "foo": ("checkpoint write", "checkpoint_write"),
        "ckpt": ("", "ckpt"),
        "bar": ("checkpoint read", "checkpoint_read"),
        "samples": ("dataloader read", "dataloader_read"),
        "tiny": ("random_small", "tiny"),
    }
    # the text output's header names rw, bs, ioengine and iodepth only: no sync, no file count
    text = {
        r.extra["job"]: (r.extra["io_class"], r.workload) for r in records("fio-3.33_classes_by_options.txt")
    }
    assert text == {**got, "ckpt": ("checkpoint write", "checkpoint_write"), "samples": ("", "samples")}


def test_docs_table_is_the_code_table() -> None:
    """docs/reports.md's classification table has a row per class, with its workload and what
    it is judged by."""
    doc = (DATA.parent.parent / "docs" / "reports.md").read_text()
    for _, c in CLASSES:
        row = next(line for line in doc.splitlines() if line.startswith(f"| `{c.name}` |"))
        assert c.when in row.replace("`", ""), row
        assert ("IOPS" in row) == (c.judged_by == "iops"), row
        assert f"`{c.workload}`" in row if c.workload else "the job's name" in row, row


def test_json_after_fio_s_own_warning_line_reads() -> None:
    (rec,) = records("fio-3.33_json_fio_warning_before.json")
    # "fio: time_based requires a runtime/timeout setting" before the document; write
    # "io_bytes" : 268435456, "runtime" : 196, "total_ios" : 256, "bw_bytes" : 1369568653
    assert rec.bytes == 268435456 and rec.runtime_s == 0.196
    assert rec.bw_GBps == pytest.approx(1.369569, abs=1e-6)  # 268435456 / 0.196 = fio's bw_bytes
    assert rec.iops == pytest.approx(256 / 0.196, abs=1e-3)
    assert rec.lat_ms == {"p50": 0.423936, "p99": 4.145152}  # clat_ns "50.000000" / "99.000000"
    assert rec.extra["job"] == "ckpt" and rec.workload == "checkpoint_write"


def test_report_names_the_file_and_line_of_fio_text_it_cannot_read(tmp_path: Path) -> None:
    lines = (FIO / "fio-3.33_randwrite_4k.txt").read_text().splitlines(keepends=True)
    assert lines[6].startswith("  write: IOPS=52.0k")
    lines[6] = lines[6].replace("(406MiB/2001msec)", "(406MiB/2O01msec)")  # a letter O for a zero
    run = tmp_path / "run"
    run.mkdir()
    (run / "pasted.txt").write_text("".join(lines))
    shutil.copy(FIO / "fio-3.33_ckpt_write_group.txt", run / "good.txt")
    assert cli.main(["report", str(run)]) == 0
    report = (run / "report.md").read_text()
    assert "pasted.txt: line 7: fio's write line does not read" in report
    assert json.loads((run / "verdict.json").read_text())["records"]["io"] == 1


def test_a_log_prefix_before_every_fio_line_is_read_through() -> None:
    (rec,) = records("fio-3.x_avocado_log_prefixed_issue_excerpt.txt")
    # "12:06:53 DEBUG| [stdout]   read: IOPS=84, BW=42.4MiB/s (44.4MB/s)(128MiB/3020msec)"; the
    # "issued rwts: total=256,75" line above the job line is the previous job's, not this one's
    assert (rec.workload, rec.direction, rec.bytes, rec.runtime_s) == (
        "rand-readwrite",
        "read",
        128 * MiB,
        3.02,
    )
    assert rec.bw_GBps == pytest.approx(0.044443, abs=1e-6)  # 134217728 / 3.020 = 44,442,956 B/s
    assert rec.iops == pytest.approx(254 / 3.02, abs=1e-3)  # no issued line: round(84 * 3.020) I/Os
    assert rec.lat_ms == {"p50": 1.975, "p99": 23.725}


@pytest.mark.parametrize(
    "prefix", ["0: ", "[1,0]<stdout>:", "2026-11-28 15:20:42 INFO [stdout] ", "        "]
)
def test_launcher_and_log_prefixes_give_the_figures_of_the_bare_output(prefix: str) -> None:
    bare = (FIO / "fio-3.33_ckpt_write_group.txt").read_text()
    prefixed = "".join(prefix + line + "\n" for line in bare.splitlines())
    assert parse_text(prefixed) == parse_text(bare)


def test_two_groups_and_a_mixed_job_give_one_record_per_job_and_direction() -> None:
    recs = {(r.extra["job"], r.direction): r for r in records("fio-3.33_two_groups_ckpt_randrw.txt")}
    assert set(recs) == {("ckpt", "write"), ("mixed", "read"), ("mixed", "write")}
    ckpt = recs[("ckpt", "write")]
    # "write: IOPS=813, BW=3253MiB/s (3411MB/s)(6512MiB/2002msec)", "issued rwts: total=0,1628,0,0"
    assert ckpt.bytes == 6828326912 and ckpt.bw_GBps == pytest.approx(3.410753, abs=1e-6)
    assert ckpt.iops == pytest.approx(813.187, abs=1e-3) and ckpt.lat_ms == {"p50": 0.938, "p99": 5.669}
    assert ckpt.workload == "checkpoint_write" and ckpt.block_size == 4 * MiB
    read, write = recs[("mixed", "read")], recs[("mixed", "write")]
    # "read: IOPS=38.1k, BW=149MiB/s (156MB/s)(297MiB/2001msec)", "write: IOPS=16.4k, BW=64.0MiB/s
    # (67.1MB/s)(128MiB/2001msec)", "issued rwts: total=76146,32770,0,0"
    # exact: 76146 x 4096 = 311894016 B (printed 297MiB), 32770 x 4096 = 134225920 B (printed 128MiB)
    assert (read.bytes, read.runtime_s) == (311894016, 2.001)
    assert read.bw_GBps == pytest.approx(0.155869, abs=1e-6)  # 311894016 / 2.001 = 155,869,073 B/s
    assert read.iops == pytest.approx(38053.973, abs=1e-3) and read.lat_ms == {"p50": 0.083, "p99": 1.745}
    assert write.bytes == 134225920 and write.iops == pytest.approx(16376.812, abs=1e-3)
    assert write.lat_ms == {"p50": 0.1, "p99": 3.425}
    # rw=randrw in 4 KiB blocks: both directions are small random I/O, judged by IOPS
    assert {r.extra["io_class"] for r in (read, write)} == {"random_small"}
    assert read.workload == write.workload == "mixed"


def test_status_interval_text_counts_the_last_print_of_each_job() -> None:
    (rec,) = records("fio-3.33_status_interval.txt")
    # four prints of "ckpt: (groupid=0, jobs=1): err= 0: pid=26065"; the last: "write: IOPS=1805,
    # BW=1805MiB/s (1893MB/s)(5417MiB/3001msec)", "issued rwts: total=0,5417,0,0"
    assert (rec.bytes, rec.runtime_s) == (5417 * MiB, 3.001) and rec.procs == 1
    assert rec.iops == pytest.approx(5417 / 3.001, abs=1e-3)


def test_an_io_in_flight_at_a_print_keeps_the_printed_amount() -> None:
    first = "".join((FIO / "fio-3.33_status_interval.txt").read_text().splitlines(keepends=True)[:30])
    (rec,) = records_from_fio_output(first, run_id="r1", source_name="first")
    # "(1521MiB/867msec)" but "issued rwts: total=0,1522,0,0": one I/O was still in flight, and
    # 1522 MiB does not round to the printed 1521MiB, so the printed amount stands
    assert rec.bytes == 1521 * MiB and rec.iops == pytest.approx(1522 / 0.867, abs=1e-3)


def test_several_runs_in_one_text_the_last_counts_and_the_rest_is_named() -> None:
    text = (FIO / "fio-3.33_ckpt_write_group.txt").read_text() + (
        FIO / "fio-3.33_randwrite_4k.txt"
    ).read_text()
    notes: list[str] = []
    recs = records_from_fio_output(text, run_id="r1", source_name="both.log", notes=notes)
    assert [(r.extra["job"], r.bytes) for r in recs] == [("randwrite4k", 103972 * 4096)]
    assert notes == [
        "both.log: skipped the entries of the 1 run(s) of fio before its last one (the last run counts)"
    ]
