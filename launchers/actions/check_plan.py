"""`stoker check`'s steps and outcome (pure): which child commands measure this node in well
under a minute, and how their records become problems (one line each) and an exit code.

Steps: the inventory without the host-link copy; a short all_reduce across this node's
devices at one size; a short local-disk write and read (fio, time-based: 1 s ramp + 2 s each).
docs/check.md. With a baseline the steps measure as the accepted run did (`measure_like`):
its ranks, backend and message size for the all_reduce, its writers, workers and block sizes
on the path checked, so that each figure meets an accepted one measured the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import TYPE_CHECKING, Literal

from reports.shared.findings import FAILING, Finding
from reports.shared.storage_rule import path_role

if TYPE_CHECKING:
    from reports.judging.fleet.baseline import Baseline, Figure

StepName = Literal["inventory", "net", "io"]
STEPS: tuple[StepName, ...] = ("inventory", "net", "io")
DEFAULT_LIMIT_S = 50.0
ACTION_RESERVE_S = 8.0  # of the limit, kept for scontrol / kubectl / the metrics file
KILL_GRACE_S = 3.0  # TERM at a step's share of the limit, KILL this much later
CPU_BYTES = 4 << 20  # gloo on CPU ranks: 4 MiB is past the latency-bound sizes on loopback
GPU_BYTES = 256 << 20  # NVLink/PCIe: near the plateau of an 8-GPU all_reduce in ~10 ms per op
IO_CKPT_BYTES = 32 << 20  # per writer; time-based, so the shard is written over and over
IO_FILE_BYTES = 4 << 20  # each dataloader file
# dataloader files per worker: `stoker io`'s default (iobench/workloads.py, `dl_files`), the data set
# a default run's dataloader figure was accepted on (4 files read ~40% slower here: not like for like)
IO_FILES_PER_WORKER = 64
IO_BLOCK = 4 << 20  # `stoker io`'s default checkpoint block
IO_SAMPLE = 128 << 10  # `stoker io`'s default dataloader sample
IO_FAMILIES = ("checkpoint", "dataloader")  # the disk test's `stoker io --workloads`
MAX_IO_PROCS = 64  # writers or workers a check starts, whatever a baseline says
DEFAULT_IO_PATH = "/var/tmp"  # the disk test's path without --path or a baseline's


@dataclass(frozen=True, kw_only=True, slots=True)
class Measure:
    """How the check measures: the all_reduce's ranks, backend and size, the disk test's
    writers, workers and block sizes (defaults: one writer, one worker)."""

    nproc: int
    backend: str
    size: int
    writers: int = 1
    workers: int = 1
    ckpt_block: int = IO_BLOCK
    sample_bytes: int = IO_SAMPLE
    families: tuple[str, ...] = IO_FAMILIES  # the disk test's families the baseline can judge
    files_per_worker: int = IO_FILES_PER_WORKER  # the dataloader's data set: files of file_bytes
    file_bytes: int = IO_FILE_BYTES


# each disk test family and the accepted figures that judge it
FAMILY_WORKLOADS = {"checkpoint": ("checkpoint_write", "checkpoint_read"), "dataloader": ("dataloader_read",)}


def _procs(figs: Sequence[Figure], default: int) -> tuple[int, int]:
    """(processes per node, block) of the accepted fio figures, when they agree."""
    got = {(f.procs, f.block) for f in figs}
    if len(got) != 1:
        return default, 0
    ((procs, block),) = got
    return (procs if 1 <= procs <= MAX_IO_PROCS else default), block


def measure_like(baseline: Baseline | None, host: str, path: str, gpus: int) -> Measure:
    """The settings the accepted run measured this node with (defaults where the baseline
    has no such figure: the judgement then says "not comparable", never "regression")."""
    nproc, backend = gpus or 2, "nccl" if gpus else "gloo"
    if baseline is None:
        return Measure(nproc=nproc, backend=backend, size=0)  # one writer, one worker
    intra = baseline.like("node-intra", host, op="all_reduce")
    size = intra[0].bytes if intra else 0
    if intra and intra[0].backend == backend and 2 <= intra[0].ranks and (not gpus or intra[0].ranks <= gpus):
        nproc = intra[0].ranks  # fewer GPUs than the node has, or as many gloo ranks as accepted
    role = path_role(path)  # the check's own scratch dir meets the run's by its role
    where = {"role": role} if role else {"path": str(PurePath(path)), "role": ""}

    # the accepted fio figures of each disk test family, looked up once
    fio = {
        fam: [f for w in wls for f in baseline.like("node-storage", host, workload=w, backend="fio", **where)]
        for fam, wls in FAMILY_WORKLOADS.items()
    }
    writers, ckpt_block = _procs(fio["checkpoint"], 1)
    workers, sample = _procs(fio["dataloader"], 1)
    # the data set the accepted run's workers read (the same bytes a worker, in files of at most
    # IO_FILE_BYTES); not recorded (an older baseline): `stoker io`'s default
    sets = {f.data for f in fio["dataloader"] if f.data > 0}
    data = sets.pop() if len(sets) == 1 else IO_FILES_PER_WORKER * IO_FILE_BYTES
    file_bytes = min(IO_FILE_BYTES, data)
    # only what an accepted figure judges is measured (a baseline of checkpoint writes alone
    # does not pay for the dataloader's data set); with none here, every family: "not comparable"
    held = tuple(fam for fam in IO_FAMILIES if fio[fam])
    return Measure(
        families=held or IO_FAMILIES,
        nproc=nproc,
        backend=backend,
        size=size,
        writers=writers,
        workers=workers,
        ckpt_block=ckpt_block if (1 << 20) <= ckpt_block <= (16 << 20) else IO_BLOCK,
        sample_bytes=sample if 512 <= sample <= file_bytes and sample % 512 == 0 else IO_SAMPLE,
        files_per_worker=max(1, data // file_bytes),
        file_bytes=file_bytes,
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class IoTarget:
    """Where the disk test runs: `path`, or a scratch dir of the check's own made in it
    (`scratch`: the baseline accepted this node's local disk in a run's own scratch dir, which
    is gone; the check's scratch meets it by its role), and one line saying why."""

    path: str
    scratch: bool = False
    said: str = ""


def accepted_path(baseline: Baseline | None, host: str, given: str | None = None) -> IoTarget:
    """The disk test's place: `given` (--path) when the baseline accepted it by name (or has no
    scratch figure to meet); else the one named local path the baseline accepted this node's fio
    figures on (a fleet's baseline: any node's, as `Baseline.like`); else, when it accepted them
    in a run's own scratch dir, a scratch dir of the check's own in `given` or DEFAULT_IO_PATH;
    else DEFAULT_IO_PATH. ValueError naming them when it accepted several named paths and none
    was given: the check measures one, and will not guess which."""
    if baseline is None:
        return IoTarget(path=given or DEFAULT_IO_PATH)
    figs = baseline.like("node-storage", host, scope="local", backend="fio")
    paths = sorted({f.path for f in figs if f.path and not f.role})
    scratch = any(f.role for f in figs)
    named = baseline.file or f"run {baseline.run_id}"
    own = f"the baseline {named} accepted {host}'s local disk in a run's own scratch dir (gone since)"
    if given is not None:
        if scratch and str(PurePath(given)) not in paths:
            return IoTarget(
                path=given, scratch=True, said=f"--path {given}: in a scratch dir of its own, as {own}"
            )
        return IoTarget(path=given)
    if len(paths) > 1:
        raise ValueError(
            f"the baseline {named} accepted local storage of {host} on {len(paths)} paths "
            f"({', '.join(paths[:5])}): give --path one of them"
        )
    if paths:
        return IoTarget(
            path=paths[0], said=f"--path {paths[0]}: the local path the baseline {named} accepted for {host}"
        )
    if scratch:
        return IoTarget(
            path=DEFAULT_IO_PATH,
            scratch=True,
            said=f"--path {DEFAULT_IO_PATH}: in a scratch dir of its own there, as {own}",
        )
    return IoTarget(
        path=DEFAULT_IO_PATH,
        said=f"--path {DEFAULT_IO_PATH}: the baseline {named} has no local disk figure of {host}",
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    name: StepName
    argv: tuple[str, ...]


def steps(
    *,
    which: Sequence[StepName],
    stoker: tuple[str, ...],
    out: str,
    io_path: str,
    net_timeout_s: int,
    how: Measure | None = None,
    gpus: int = 0,
    size: int = 0,
    io_workloads: Sequence[str] | None = None,  # None: the families the baseline judges (how.families)
) -> list[Step]:
    """The child commands, in order, measuring as `how` says (without it: the defaults for
    `gpus` GPUs, the all_reduce at `size`). One rank has no link to test."""
    how = how or Measure(nproc=gpus or 2, backend="nccl" if gpus else "gloo", size=size)
    nproc = how.nproc
    plan: list[Step] = []
    if "inventory" in which:
        plan.append(Step(name="inventory", argv=(*stoker, "inventory", "--no-copy", "--out", out)))
    if "net" in which and nproc >= 2:
        b = str(how.size or (GPU_BYTES if how.backend == "nccl" else CPU_BYTES))
        argv = (*stoker, "net", "--nproc", str(nproc), "--backend", how.backend)
        argv += (
            "--scopes",
            "world",
            "--ops",
            "all_reduce",
            "-b",
            b,
            "-e",
            b,
            "--iters",
            "5",
            "--warmup",
            "2",
        )
        plan.append(Step(name="net", argv=(*argv, "--timeout", str(net_timeout_s), "--out", out)))
    if "io" in which:
        families = how.families if io_workloads is None else io_workloads
        argv = (*stoker, "io", "--path", io_path, "--workloads", ",".join(families), "--no-torch")
        argv += ("--ckpt-bytes", str(max(IO_CKPT_BYTES, how.ckpt_block)), "--ckpt-block", str(how.ckpt_block))
        argv += (
            "--writers",
            str(how.writers),
            "--workers",
            str(how.workers),
            "--files-per-worker",
            str(how.files_per_worker),
        )
        argv += ("--sample-bytes", str(how.sample_bytes), "--file-bytes", str(how.file_bytes))
        plan.append(Step(name="io", argv=(*argv, "--runtime", "2", "--timeout", "10", "--out", out)))
    return plan


def io_families(tagged: Sequence[tuple[str, Finding]]) -> tuple[str, ...]:
    """The disk test's workload families (`checkpoint`, `dataloader`) with a figure under the
    baseline's tolerance: the confirmation measures those again, not the whole step (all of them
    when a finding does not say its workload)."""
    family_of = {w: fam for fam, wls in FAMILY_WORKLOADS.items() for w in wls}
    wls = [str(f.extra.get("workload", "")) for t, f in tagged if t == "io" and f.status == "regression"]
    fams = {family_of.get(w) for w in wls}
    return tuple(x for x in IO_FAMILIES if x in fams) if fams and None not in fams else IO_FAMILIES


# the confirmations, cheapest first: the disk test again (only the workloads that regressed) takes
# a few seconds, the all_reduce again its ranks' start (torch's import, ~13 s on a 2-core VM)
CONFIRM_ORDER: tuple[StepName, ...] = ("io", "net", "inventory")


def to_confirm(tagged: Sequence[tuple[str, Finding]]) -> list[StepName]:
    """The measuring steps (in plan order) with a figure under the baseline's tolerance: each is
    run again, with the same settings, before its figures are regressions."""
    under = {t for t, f in tagged if f.status == "regression"}
    return [s for s in STEPS if s in under and s != "inventory"]


def unconfirmed(findings: Sequence[Finding]) -> list[Finding]:
    """A regression its step could not measure again (no time left, or the second run gave no
    figure) is marked `unconfirmed`: measured once, it drains nothing (`outcome`: incomplete)."""
    out = []
    for f in findings:
        if f.status == "regression" and "confirm_GBps" not in f.extra:
            f = replace(
                f,
                message=f"{f.message} Not measured again (no time left in --limit, or no figure the "
                "second time): not confirmed, so nothing is done; run the check again.",
                extra={**f.extra, "unconfirmed": True},
            )
        out.append(f)
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class StepResult:
    name: str
    rc: int  # 124: stopped at its share of the time limit
    elapsed_s: float
    last_line: str = ""


Verdict = Literal["pass", "fail", "incomplete"]
EXIT = {"pass": 0, "fail": 1, "incomplete": 3}


def _short(f: Finding) -> str:
    """A failing finding's name for a taint value: a baseline figure by its kind (its check
    names a path), anything else by its check."""
    return f"{f.status}-{f.extra['figure']}" if "figure" in f.extra else f.check


def problem_line(f: Finding) -> str:
    """One line a person can act on: where, what, the finding's sentence."""
    dev = f.extra.get("device", "")
    where = ",".join(f.hosts) or "this node"
    msg = " ".join(f.message.split())
    return f"{where} {f.component}{' ' + str(dev) if dev else ''} {f.status}: {msg}"


def reason(f: Finding) -> str:
    """The short form a drain reason holds (`sinfo -R` shows it in one column)."""
    dev = f.extra.get("device", "")
    figs = (
        f" ({f.measured:.3g} < {f.expected:.3g} {f.unit})"
        if f.measured is not None and f.expected is not None and f.measured < f.expected
        else ""
    )
    return f"{f.check}{' ' + str(dev) if dev else ''} {f.status}{figs}"


def step_line(r: StepResult) -> str:
    why = "stopped at its share of the time limit" if r.rc == 124 else f"ended with exit code {r.rc}"
    return f"check {r.name}: {why} after {r.elapsed_s:.1f} s" + (f": {r.last_line}" if r.last_line else "")


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    verdict: Verdict
    problems: tuple[str, ...]  # failing findings, steps that did not end cleanly, figures not comparable
    failed_checks: tuple[str, ...]  # the failing findings' check names (taint values)
    reasons: tuple[str, ...] = ()  # the failing findings, short (drain reasons)


def outcome(findings: Sequence[Finding], results: Sequence[StepResult]) -> Outcome:
    """fail on any failing finding (the contract's rule) but a regression not confirmed; else
    incomplete when a step did not end cleanly (a hung tool is not health), a regression was
    measured once only (`unconfirmed`), or a baseline was given and judged none of the figures
    measured (another node's, another cluster's: the check proved nothing); else pass.
    A figure the baseline could not be compared with is a line, never a failure."""
    bad = [f for f in findings if f.status in FAILING and not f.extra.get("unconfirmed")]
    once = [f for f in findings if f.status in FAILING and f.extra.get("unconfirmed")]
    broken = [r for r in results if r.rc != 0]
    unlike = [
        f for f in findings if f.extra.get("basis") == "baseline" and f.extra.get("comparable") is False
    ]
    lines = [problem_line(f) for f in (*bad, *once)]
    lines += [step_line(r) for r in broken] + [problem_line(f) for f in unlike]
    unjudged = any(f.extra.get("matched_none") for f in unlike)
    verdict: Verdict = "fail" if bad else "incomplete" if broken or unjudged or once else "pass"
    return Outcome(
        verdict=verdict,
        problems=tuple(lines),
        failed_checks=tuple(_short(f) for f in bad),
        reasons=tuple(reason(f) for f in bad),
    )
