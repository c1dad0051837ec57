"""How an imported fio job is classified (pure): the table of docs/reports.md, "How imported
fio jobs are classified". A job is classified by what it does, never by its name: its rw mode,
block size, whether its writes reach the storage (O_DIRECT or a sync option) and how many
files each process works on, read from the options fio prints (the JSON's `global options`
and `job options`; the text output's job header). The first row whose every condition holds
names the job's class; a job no row fits keeps its own name as its workload.

A class says which workload the record stands for (stoker's own names, so a checkpoint
write someone ran by hand is judged as stoker's is) and by what it is judged: `bandwidth`
(GB/s against the spec's storage figures) or `iops` (small random I/O: its GB/s is no
bandwidth of the storage and is never compared with one; reports/shared/storage_rule.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

JudgedBy = Literal["bandwidth", "iops"]
RANDOM_SMALL = "random_small"  # the class whose figure is its IOPS
SMALL_BLOCK = 64 << 10  # bytes: a random job at or under this block size is judged by IOPS
LARGE_BLOCK = 1 << 20  # bytes: a sequential job at or over this moves checkpoint-sized blocks

_RANDOM = frozenset({"randread", "randwrite", "randrw", "randtrim"})
_METADATA_ENGINES = frozenset({"filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"})
# fio options that make written data durable before the job ends (any value but 0 / none)
_SYNC_OPTIONS = ("fsync", "fdatasync", "end_fsync", "fsync_on_close", "sync", "write_barrier")


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """What classification reads of one imported job and direction."""

    name: str  # fio's job name: kept in the record, never read by a rule
    direction: str  # read | write
    rw: str  # fio's rw= without its ':N' suffix ("" when the output does not say)
    block_size: int  # bytes (0 when the output does not say)
    ioengine: str = ""
    # the writes reach the storage: O_DIRECT or a sync option; None: the output does not say
    # (fio's text output prints neither), which no row holds against the job
    durable: bool | None = None
    files: int | None = None  # files per process (nrfiles, or filename's ':' list); None: not said


def _on(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "none", "false")


def job_of(name: str, direction: str, options: Mapping[str, str], block_size: int, *, complete: bool) -> Job:
    """The Job of fio's printed options. `complete`: the options are all the job set (fio's JSON
    lists every option given), so an option absent is off; the text output's header names only
    rw, bs, ioengine and iodepth, so what it does not name is not known."""
    rw = options.get("rw", options.get("readwrite", "")).split(":")[0]
    durable = _on(options.get("direct")) or any(_on(options.get(o)) for o in _SYNC_OPTIONS)
    nrfiles = options.get("nrfiles", "")
    filename = options.get("filename", "")
    files = int(nrfiles) if nrfiles.isdigit() else (filename.count(":") + 1 if filename else None)
    return Job(
        name=name,
        direction=direction,
        rw=rw,
        block_size=block_size,
        ioengine=options.get("ioengine", ""),
        durable=True if durable else (False if complete else None),
        files=files if files is not None else (1 if complete else None),
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class JobClass:
    name: str  # the class, shown in the record's `io_class`
    workload: str | None  # the record's workload; None: the job's own name
    judged_by: JudgedBy
    when: str  # the row's condition, as docs/iobench.md prints it


def _metadata(j: Job) -> bool:
    return j.ioengine in _METADATA_ENGINES


def _one_file(j: Job) -> bool:
    return j.files is None or j.files <= 1


def _ckpt_write(j: Job) -> bool:
    return (
        j.direction == "write"
        and j.rw == "write"
        and j.block_size >= LARGE_BLOCK
        and j.durable is not False
        and _one_file(j)
    )


def _ckpt_read(j: Job) -> bool:
    return j.direction == "read" and j.rw == "read" and j.block_size >= LARGE_BLOCK and _one_file(j)


def _random_small(j: Job) -> bool:
    return j.rw in _RANDOM and 0 < j.block_size <= SMALL_BLOCK


def _loader(j: Job) -> bool:
    many_files = j.files is not None and j.files > 1
    return j.direction == "read" and (
        (j.rw in _RANDOM and j.block_size > SMALL_BLOCK) or (j.rw == "read" and many_files)
    )


Rule = Callable[[Job], bool]
# (rule, class) in order: the first that holds wins
CLASSES: tuple[tuple[Rule, JobClass], ...] = (
    (
        _metadata,
        JobClass(
            name="metadata", workload="metadata", judged_by="iops",
            when="ioengine filecreate / filestat / filedelete / dircreate / dirstat / dirdelete",
        ),
    ),
    (
        _ckpt_write,
        JobClass(
            name="checkpoint write", workload="checkpoint_write", judged_by="bandwidth",
            when="sequential writes (rw=write), bs >= 1 MiB, one file per process, reaching the storage "
            "(direct=1, or fsync / fdatasync / end_fsync / fsync_on_close / sync / write_barrier set; "
            "fio's text output says neither and is not held against it)",
        ),
    ),
    (
        _ckpt_read,
        JobClass(
            name="checkpoint read", workload="checkpoint_read", judged_by="bandwidth",
            when="sequential reads (rw=read), bs >= 1 MiB, one file per process",
        ),
    ),
    (
        _random_small,
        JobClass(
            name=RANDOM_SMALL, workload=None, judged_by="iops",
            when="random (randread / randwrite / randrw), bs <= 64 KiB",
        ),
    ),
    (
        _loader,
        JobClass(
            name="dataloader read", workload="dataloader_read", judged_by="bandwidth",
            when="random reads with bs > 64 KiB, or sequential reads over many files per process (nrfiles > 1)",
        ),
    ),
)  # fmt: skip
UNCLASSIFIED = JobClass(name="", workload=None, judged_by="bandwidth", when="any other job")


def classify(job: Job) -> JobClass:
    return next((c for rule, c in CLASSES if rule(job)), UNCLASSIFIED)
