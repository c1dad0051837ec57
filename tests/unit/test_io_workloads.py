"""Workload rendering, settings validation and the dry run (pure)."""

from __future__ import annotations

import pytest

from iobench.cli import settings_from_args
from iobench.workloads import IoSettings, checkpoint_jobs, dataloader_job, metadata_jobs, plan
from launchers.cli import build_parser
from reports.shared.errors import UsageError

MIB = 1 << 20


def settings(*argv: str) -> IoSettings:
    return settings_from_args(build_parser().parse_args(["io", *argv]))


def test_checkpoint_write_renders_exact_fio_arguments() -> None:
    s = IoSettings(ckpt_bytes=64 * MIB, ckpt_block=4 * MIB, writers=3)
    write, read = checkpoint_jobs(s, "/d")
    assert write.args() == [
        "--name=checkpoint_write",
        "--directory=/d",
        "--numjobs=3",
        "--group_reporting=1",
        "--rw=write",
        "--filename_format=ckpt.$jobnum",
        "--size=67108864",
        "--bs=4194304",
        "--ioengine=psync",
        "--direct=1",
        "--time_based=1",
        "--runtime=10",
        "--ramp_time=1",
        "--end_fsync=1",
    ]
    assert write.command()[-1] == "--output-format=json+" and write.command()[0] == "fio"
    assert (
        "--rw=read" in read.args() and "--invalidate=1" in read.args() and "--end_fsync=1" not in read.args()
    )
    assert write.jobfile().splitlines()[:3] == ["[checkpoint_write]", "directory=/d", "numjobs=3"]


def test_buffered_fallback_renders_direct_0() -> None:
    s = IoSettings(direct=False)
    assert "--direct=0" in checkpoint_jobs(s, "/d")[0].args()
    assert "--direct=0" in dataloader_job(s, "/d").args()


def test_dataloader_is_time_based_random_sample_reads() -> None:
    job = dataloader_job(
        IoSettings(runtime_s=7, dl_workers=4, dl_sample_bytes=65536, dl_files=10, dl_file_bytes=MIB), "/d"
    )
    a = job.args()
    for token in (
        "--rw=randread",
        "--bs=65536",
        "--nrfiles=10",
        "--filesize=1048576",
        "--size=10485760",
        "--numjobs=4",
        "--time_based=1",
        "--runtime=7",
        "--ramp_time=1",
    ):
        assert token in a


def test_metadata_ops_and_import_storm() -> None:
    jobs = metadata_jobs(IoSettings(md_files=100, storm_procs=5, storm_files=50), "/d")
    assert [(j.workload, j.op) for j in jobs] == [
        ("metadata", "create"),
        ("metadata", "stat"),
        ("metadata", "delete"),
        ("", "layout"),
        ("metadata", "import_storm"),
    ]
    assert "--ioengine=filecreate" in jobs[0].args() and "--ioengine=filedelete" in jobs[2].args()
    assert "--opendir=/d/storm" in jobs[4].args() and "--numjobs=5" in jobs[4].args()
    assert "--nrfiles=50" in jobs[3].args() and "--create_only=1" in jobs[3].args()


def test_families_select_jobs() -> None:
    names = [j.name for j in plan(IoSettings(families=("dataloader",)), "/d")]
    assert names == ["dataloader_read"]


def test_bytes_and_inodes_needed() -> None:
    s = IoSettings(
        ckpt_bytes=100 * MIB,
        writers=4,
        dl_workers=2,
        dl_files=10,
        dl_file_bytes=MIB,
        md_procs=2,
        md_files=1000,
        md_file_bytes=4096,
        storm_files=10,
    )
    assert s.bytes_needed() == 400 * MIB  # the largest family; they run one after another
    assert s.bytes_needed(torch_copy=True) == 500 * MIB  # plus one torch shard beside the fio shards
    # a node of 8 GPUs saves 8 torch shards at once beside the fio shards: (4 + 8) x 100 MiB
    assert s.bytes_needed(torch_copy=True, torch_writers=8) == 1200 * MIB
    assert s.inodes_needed() == 16 + 4 + 20 + 2000


def test_settings_from_args() -> None:
    s = settings("--workloads", "checkpoint", "--ckpt-bytes", "64M", "--writers", "2", "--runtime", "3")
    assert (s.families, s.ckpt_bytes, s.writers, s.runtime_s) == (("checkpoint",), 64 * MIB, 2, 3)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--workloads", "checkpoint,bogus"], "unknown workload"),
        (["--ckpt-bytes", "12Q"], "bad --ckpt-bytes"),
        (["--ckpt-block", "64K"], "between 1M and 16M"),
        (["--ckpt-bytes", "1M", "--ckpt-block", "4M"], "at least one block"),
        (["--writers", "0"], "--writers must be"),
        (["--runtime", "0"], "--runtime must be"),
        (["--runtime", "1"], "--runtime must be between 2 and"),  # not long enough to be a steady bandwidth
        (["--sample-bytes", "1000"], "multiple of 512"),
    ],
)
def test_bad_settings(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        settings(*argv)
