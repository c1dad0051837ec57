"""The storage workloads as data (pure): settings in, fio jobs out.

Each workload renders to one or more `FioJob`s, which print as a fio command line or a job
file (`stoker io --dry-run`), so a person can read exactly what runs and run it by hand.
Sizes are in bytes; fio accepts plain byte counts, so nothing is lost in rendering.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass

from reports.shared.records import IO_FAMILIES as FAMILIES

# fio's metadata engines and the metadata op each one measures
METADATA_OPS = (("create", "filecreate"), ("stat", "filestat"), ("delete", "filedelete"))
MIB = 1 << 20
# every bandwidth job runs for a time, not a size, so that it is steady: fio's time_based
# with ramp_time (the ramp is left out of fio's figures). Shorter than MIN_RUNTIME_S is not a
# bandwidth (a 64 MiB shard can be written in 0.4 s); the judge refuses records under it.
MIN_RUNTIME_S = 2
RAMP_S = 1


def default_procs(cpus: int | None = None) -> int:
    """Writers / dataloader workers per node: one per core, between 2 and 8."""
    return max(2, min(8, cpus if cpus is not None else (os.cpu_count() or 2)))


@dataclass(frozen=True, kw_only=True, slots=True)
class IoSettings:
    """Everything that shapes the fio jobs of one `stoker io` run (per node)."""

    families: tuple[str, ...] = FAMILIES
    ckpt_bytes: int = 256 * MIB  # per writer
    ckpt_block: int = 4 * MIB
    writers: int = default_procs()
    save_repeats: int = 3  # torch.save / DCP saves per figure (the median is judged)
    direct: bool = True  # O_DIRECT; False when the file system refuses it
    runtime_s: int = 10  # every bandwidth job (time_based), after RAMP_S of ramp
    dl_workers: int = default_procs()
    dl_sample_bytes: int = 128 << 10  # one random read = one sample
    dl_files: int = 64  # per worker
    dl_file_bytes: int = 4 * MIB
    md_files: int = 2000  # per metadata process
    md_procs: int = 2
    md_file_bytes: int = 4096
    storm_procs: int = 8  # the "import storm": every process reads every file
    storm_files: int = 1000
    storm_file_bytes: int = 4096

    def bytes_needed(self, torch_copy: bool = False, torch_writers: int = 1) -> int:
        """Peak bytes on disk per node (checkpoint shards stay until read back; the torch
        comparison writes one shard per saving process while they are there)."""
        need = 0
        if "checkpoint" in self.families:
            need = max(need, self.ckpt_bytes * (self.writers + (torch_writers if torch_copy else 0)))
        if "dataloader" in self.families:
            need = max(need, self.dl_workers * self.dl_files * self.dl_file_bytes)
        if "metadata" in self.families:
            need = max(
                need,
                self.md_procs * self.md_files * self.md_file_bytes,
                self.storm_files * self.storm_file_bytes,
            )
        return need

    def save_bytes(self) -> int:
        """One torch.save / DCP save's shard per process: ckpt_bytes (whole MiB, at least one),
        every repeat; each repeat saves half of it first (iobench/torch_ckpt.py `sizes`), so the
        rate past the half is measured too (iobench/sustained.py)."""
        return max(MIB, self.ckpt_bytes // MIB * MIB)

    def inodes_needed(self) -> int:
        n = 16
        if "checkpoint" in self.families:
            n += self.writers
        if "dataloader" in self.families:
            n += self.dl_workers * self.dl_files
        if "metadata" in self.families:
            n += max(self.md_procs * self.md_files, self.storm_files)
        return n


@dataclass(frozen=True, kw_only=True, slots=True)
class FioJob:
    """One fio invocation. `name` is the fio job name (records' workload for foreign files);
    `workload` and `op` say what stoker calls it."""

    name: str
    workload: str
    op: str = ""
    options: tuple[tuple[str, str], ...]
    block_size: int = 0
    direct: bool = False

    def args(self) -> list[str]:
        """fio's command-line arguments (the job as `--name=... --opt=value`)."""
        return [f"--name={self.name}"] + [f"--{k}={v}" for k, v in self.options]

    def command(self, fio: str = "fio") -> list[str]:
        # json+ adds the latency histogram, so hosts' percentiles merge exactly
        return [fio, *self.args(), "--output-format=json+"]

    def jobfile(self) -> str:
        return "\n".join([f"[{self.name}]", *(f"{k}={v}" for k, v in self.options)]) + "\n"

    def shell_line(self) -> str:
        return shlex.join(self.command())


def _common(directory: str, procs: int) -> list[tuple[str, str]]:
    # group_reporting: fio merges clones itself, with exact latency percentiles
    return [("directory", directory), ("numjobs", str(procs)), ("group_reporting", "1")]


def _timed(s: IoSettings) -> tuple[tuple[str, str], ...]:
    """Run for runtime_s after RAMP_S of ramp, going over the files again as often as it takes."""
    return (("time_based", "1"), ("runtime", str(s.runtime_s)), ("ramp_time", str(RAMP_S)))


def checkpoint_jobs(s: IoSettings, directory: str) -> list[FioJob]:
    """Every writer writes its own shard in large blocks, fsync at the end; then the shards
    are read back as a resume does, past the page cache (O_DIRECT, or fio's per-file cache
    invalidation plus dropped caches when the file system refuses O_DIRECT). Both for
    runtime_s: a shard written faster than that is written again, so the figure is steady."""
    shard = [
        ("filename_format", "ckpt.$jobnum"),
        ("size", str(s.ckpt_bytes)),
        ("bs", str(s.ckpt_block)),
        ("ioengine", "psync"),
        ("direct", "1" if s.direct else "0"),
    ]
    write = FioJob(
        name="checkpoint_write",
        workload="checkpoint_write",
        block_size=s.ckpt_block,
        direct=s.direct,
        options=(*_common(directory, s.writers), ("rw", "write"), *shard, *_timed(s), ("end_fsync", "1")),
    )
    read = FioJob(
        name="checkpoint_read",
        workload="checkpoint_read",
        block_size=s.ckpt_block,
        direct=s.direct,
        options=(*_common(directory, s.writers), ("rw", "read"), *shard, *_timed(s), ("invalidate", "1")),
    )
    return [write, read]


def dataloader_job(s: IoSettings, directory: str) -> FioJob:
    """Random sample-sized reads over many files by every worker, for `runtime_s`."""
    return FioJob(
        name="dataloader_read",
        workload="dataloader_read",
        block_size=s.dl_sample_bytes,
        direct=s.direct,
        options=(
            *_common(directory, s.dl_workers),
            ("rw", "randread"),
            ("bs", str(s.dl_sample_bytes)),
            ("nrfiles", str(s.dl_files)),
            ("filesize", str(s.dl_file_bytes)),
            ("size", str(s.dl_files * s.dl_file_bytes)),
            ("file_service_type", "random"),
            ("filename_format", "dl.$jobnum.$filenum"),
            ("ioengine", "psync"),
            ("direct", "1" if s.direct else "0"),
            *_timed(s),
            ("invalidate", "1"),
        ),
    )


def metadata_jobs(s: IoSettings, directory: str) -> list[FioJob]:
    """create / stat / delete of many small files with fio's file engines (each I/O is one
    operation), then the import storm."""
    jobs = []
    for op, engine in METADATA_OPS:
        jobs.append(
            FioJob(
                name=f"metadata_{op}",
                workload="metadata",
                op=op,
                options=(
                    *_common(directory, s.md_procs),
                    ("ioengine", engine),
                    ("filesize", str(s.md_file_bytes)),
                    ("nrfiles", str(s.md_files)),
                    ("openfiles", "1"),
                    ("filename_format", "md.$jobnum.$filenum"),
                ),
            )
        )
    return [*jobs, storm_layout_job(s, directory), storm_job(s, directory)]


def storm_layout_job(s: IoSettings, directory: str) -> FioJob:
    """Creates the import-storm files in `<dir>/storm/` (not measured)."""
    return FioJob(
        name="metadata_import_storm_layout",
        workload="",
        op="layout",
        options=(
            ("directory", directory),
            ("filename_format", "storm/f.$filenum"),
            ("nrfiles", str(s.storm_files)),
            ("filesize", str(s.storm_file_bytes)),
            ("size", str(s.storm_files * s.storm_file_bytes)),
            ("rw", "write"),
            ("bs", str(s.storm_file_bytes)),
            ("create_only", "1"),
        ),
    )


def storm_job(s: IoSettings, directory: str) -> FioJob:
    """M processes each open and read the same N small files (`opendir` gives every process
    the whole directory, as every rank of a job imports the same modules), buffered, as
    Python reads them."""
    return FioJob(
        name="metadata_import_storm",
        workload="metadata",
        op="import_storm",
        block_size=s.storm_file_bytes,
        options=(
            ("opendir", f"{directory}/storm"),
            ("numjobs", str(s.storm_procs)),
            ("group_reporting", "1"),
            ("rw", "read"),
            ("bs", str(s.storm_file_bytes)),
            ("openfiles", "1"),
            ("file_service_type", "sequential"),
        ),
    )


def plan(s: IoSettings, directory: str) -> list[FioJob]:
    """All fio jobs of one path, in the order they run."""
    jobs: list[FioJob] = []
    if "checkpoint" in s.families:
        jobs += checkpoint_jobs(s, directory)
    if "dataloader" in s.families:
        jobs.append(dataloader_job(s, directory))
    if "metadata" in s.families:
        jobs += metadata_jobs(s, directory)
    return jobs


def dry_run_text(s: IoSettings, directories: list[str]) -> str:
    """What `stoker io --dry-run` prints: each fio command line, runnable by hand."""
    lines = [
        f"# stoker io: the fio jobs for {len(directories)} path(s), in order. To run one by hand,",
        "# point --directory at an empty directory you created (and remove it afterwards).",
    ]
    for d in directories:
        for job in plan(s, d):
            lines.append(f"# {job.workload or 'setup'}{' ' + job.op if job.op else ''}")
            lines.append(job.shell_line())
    return "\n".join(lines) + "\n"
