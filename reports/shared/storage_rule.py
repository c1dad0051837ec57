"""Which storage records stand for the disk, and which `stoker io --spec` measures again (pure).

A record may stand for the storage against its advertised figure only when its IO bypassed the
page cache (fio O_DIRECT, or buffered over a data set larger than the host's memory) and ran
long enough to be steady (why_not_compared). A fio figure so compared that is under the spec's
storage threshold is measured again at the end of its phase (to_confirm), and so is a fio test
in which a node is a low outlier of the fleet's per-host figures (host_outliers, the rule of
reports.judging.network.localise.storage_findings, spec or not); the second record says `confirmation:
true` (docs/contract.md) and the report judges both (reports/judging/confirm.py). The measuring
side (iobench) and the report decide by this one rule.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from reports.shared.outliers import DEFAULT_MIN_GAP, low_outliers
from reports.shared.records import IO_WORKLOADS, IoRecord
from reports.shared.spec import Spec, match_storage

# a storage record shorter than this is not a steady bandwidth (stoker's fio jobs run at
# least 2 s after their ramp; fio may report a hair under): shown, never judged
MIN_STEADY_S = 1.5


def judged_by_iops(r: IoRecord) -> bool:
    """An imported small-block random fio job (reports/shared/fio_classes.py): its figure is its IOPS,
    and its GB/s is never compared with a bandwidth promise."""
    return r.extra.get("judged_by") == "iops" and r.workload != "metadata"


def iops_note(r: IoRecord) -> str:
    """What the report says of such a job instead of judging it as a bandwidth."""
    p99 = r.lat_ms.get("p99")
    return (
        f"{r.extra.get('job', r.workload)} ({r.extra.get('rw', 'random')}, {r.block_size // 1024} KiB blocks) "
        f"on {r.path}: {r.iops:,.0f} IOPS{f', p99 {p99:.3g} ms' if p99 is not None else ''}; a small-block "
        "random job is shown by its IOPS and not compared with the spec's bandwidth figures"
    )


def why_not_compared(r: IoRecord) -> str:
    """Why a storage record may not stand for the disk against its advertised figure ("" when
    it may)."""
    if r.backend.startswith("torch"):
        return "the framework's save path, through the page cache"
    if judged_by_iops(r):
        return (
            f"small-block random I/O ({r.extra.get('rw', 'random')}, {r.block_size // 1024} KiB): "
            f"judged by its IOPS ({r.iops:,.0f}), never a bandwidth"
        )
    if r.direct is not True:
        data, ram = r.extra.get("data_bytes") or 0, r.extra.get("ram_bytes") or 0
        if not (r.direct is False and data > ram > 0):
            return (
                "buffered IO that the page cache can hold" if r.direct is False else "direct IO not recorded"
            )
    if 0 < r.runtime_s < MIN_STEADY_S:
        return f"ran {r.runtime_s:.2g} s, too short to be a steady bandwidth (at least {MIN_STEADY_S:g} s)"
    return ""


# the bandwidth workloads the spec judges (metadata has no advertised figure)
CONFIRMED_WORKLOADS = tuple(w for w in IO_WORKLOADS if w != "metadata")


def to_confirm(r: IoRecord, spec: Spec) -> bool:
    """Whether `stoker io --spec` measures this record's test again at the end of its phase:
    a figure the report compares with the spec (fio, past the page cache, long enough) that
    is under its threshold, by the report's rule (reports.judging.advertised.compare_storage:
    shared storage's aggregate, local storage's median node)."""
    if r.failed or r.backend != "fio" or r.workload not in CONFIRMED_WORKLOADS or why_not_compared(r):
        return False
    entry = match_storage(r.path, spec.storage)
    expected = (entry.read_GBps if r.direction == "read" else entry.write_GBps) if entry else None
    if not expected:
        return False
    kind = entry.kind if entry else r.scope
    judged = (
        statistics.median(r.per_host_bw_GBps.values())
        if kind == "local" and r.per_host_bw_GBps
        else r.bw_GBps
    )
    return judged < spec.thresholds.storage * expected


def host_outliers(r: IoRecord, min_gap: float = DEFAULT_MIN_GAP) -> list[str]:
    """The nodes of a record that are low outliers of its hosts' per-host figures (the report's
    per-host storage rule: one record's hosts measured alike are one fleet), sorted."""
    return [] if r.failed else low_outliers(r.per_host_bw_GBps, min_gap)[1]


def outliers_to_confirm(r: IoRecord) -> bool:
    """Whether `stoker io` measures this record's fio test again at the end of its phase for a
    node that is a low outlier of the others (with or without a spec)."""
    return r.backend == "fio" and r.workload in IO_WORKLOADS and bool(host_outliers(r))


# A scratch directory stoker makes for a run's storage test and removes at its end (`stoker run`,
# `stoker soak`, `stoker check` without a named path: `.io-scratch-XXXX`; the job scripts' shared
# default `$OUT/io-scratch`). Its path names no disk a later run can find again: a figure
# measured in one is kept by its role, the run's own scratch on a local or a shared file system
# (the record's scope), and a later run's scratch of the same role meets it (docs/check.md).
SCRATCH_PREFIX = ".io-scratch-"
SCRATCH_ROLE = "scratch"


# what a measured path is to the run, on each io record stoker measures (`role`): its own scratch
# dir, or a path the spec names (its promise judges the figure); "" for any other named path
SPEC_ROLE = "spec"


def record_role(path: str, spec_paths: Sequence[str]) -> str:
    """The io record's `role`: SCRATCH_ROLE, SPEC_ROLE when `path` is one of the spec's storage
    paths, else ""."""
    if path_role(path):
        return SCRATCH_ROLE
    return SPEC_ROLE if path.rstrip("/") in {p.rstrip("/") for p in spec_paths} else ""


def path_role(path: str) -> str:
    """SCRATCH_ROLE when `path` is a scratch dir stoker made for one run, else "" (a named
    path: the spec's, --path, the job's LOCAL_IO: itself is its role)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return SCRATCH_ROLE if name.startswith(SCRATCH_PREFIX) or name == "io-scratch" else ""


def spec_advice(path: str, kind: str) -> str:
    """What to add to the spec for `path`. `stoker run`'s throwaway scratch dir (.io-scratch-XXXX,
    removed after the run) is no path to put in a spec: name the dir that holds it."""
    if path_role(path):
        where = path.rstrip("/").rpartition("/")[0] or "/"
        return (
            f"this is stoker run's throwaway scratch dir on the file system of {where}: add {{path: {where}, "
            f"kind: {kind}, read_GBps: X, write_GBps: Y}} to storage in --spec, or measure the storage you mean "
            "with stoker run --path DIR."
        )
    return f"add {{path: {path}, kind: {kind}, read_GBps: X, write_GBps: Y}} to storage in --spec."
