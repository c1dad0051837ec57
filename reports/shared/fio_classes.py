"""How an imported fio job is classified (pure): the table of docs/iobench.md, "How imported
fio jobs are classified". The first row whose every condition holds names the job's class;
a job no row fits keeps its own name as its workload.

A class says which workload the record stands for (stoker's own names, so a checkpoint
write someone ran by hand is judged as stoker's is) and by what it is judged: `bandwidth`
(GB/s against the spec's storage figures) or `iops` (small random I/O: its GB/s is no
bandwidth of the storage and is never compared with one; reports/shared/storage_rule.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

JudgedBy = Literal["bandwidth", "iops"]
RANDOM_SMALL = "random_small"  # the class whose figure is its IOPS
SMALL_BLOCK = 64 << 10  # bytes: a random job at or under this block size is judged by IOPS
LARGE_BLOCK = 1 << 20  # bytes: a sequential job at or over this moves checkpoint-sized blocks

_RANDOM = frozenset({"randread", "randwrite", "randrw", "randtrim"})
_SEQUENTIAL = frozenset({"read", "write", "rw", "readwrite", "trim"})
_METADATA_ENGINES = frozenset({"filecreate", "filestat", "filedelete", "dircreate", "dirstat", "dirdelete"})
_CKPT_NAME = re.compile(r"ckpt|checkpoint", re.IGNORECASE)
_LOADER_NAME = re.compile(r"data|loader|train|sample", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True, slots=True)
class Job:
    """What classification reads of one imported job and direction."""

    name: str
    direction: str  # read | write
    rw: str  # fio's rw= ("" when the output does not say)
    block_size: int  # bytes (0 when the output does not say)
    ioengine: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class JobClass:
    name: str  # the class, shown in the record's `io_class`
    workload: str | None  # the record's workload; None: the job's own name
    judged_by: JudgedBy
    when: str  # the row's condition, as docs/iobench.md prints it


def _metadata(j: Job) -> bool:
    return j.ioengine in _METADATA_ENGINES


def _ckpt(direction: str) -> Callable[[Job], bool]:
    def rule(j: Job) -> bool:
        return (
            j.direction == direction
            and bool(_CKPT_NAME.search(j.name))
            and j.rw in _SEQUENTIAL
            and j.block_size >= LARGE_BLOCK
        )

    return rule


def _random_small(j: Job) -> bool:
    return j.rw in _RANDOM and 0 < j.block_size <= SMALL_BLOCK


def _loader(j: Job) -> bool:
    return j.direction == "read" and j.rw in _RANDOM and bool(_LOADER_NAME.search(j.name))


# (rule, class) in order: the first that holds wins
CLASSES = (
    (
        _metadata,
        JobClass(
            name="metadata", workload="metadata", judged_by="iops",
            when="ioengine filecreate / filestat / filedelete / dircreate / dirstat / dirdelete",
        ),
    ),
    (
        _ckpt("write"),
        JobClass(
            name="checkpoint write", workload="checkpoint_write", judged_by="bandwidth",
            when="name holds ckpt or checkpoint, sequential writes (rw=write), bs >= 1 MiB",
        ),
    ),
    (
        _ckpt("read"),
        JobClass(
            name="checkpoint read", workload="checkpoint_read", judged_by="bandwidth",
            when="name holds ckpt or checkpoint, sequential reads (rw=read), bs >= 1 MiB",
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
            when="name holds data, loader, train or sample, random reads, bs > 64 KiB",
        ),
    ),
)  # fmt: skip
UNCLASSIFIED = JobClass(name="", workload=None, judged_by="bandwidth", when="any other job")


def classify(job: Job) -> JobClass:
    return next((c for rule, c in CLASSES if rule(job)), UNCLASSIFIED)
