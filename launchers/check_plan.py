"""`stoker check`'s steps and outcome (pure): which child commands measure this node in well
under a minute, and how their records become problems (one line each) and an exit code.

Steps: the inventory without the host-link copy; a short all_reduce across this node's
devices at one size (the accepted plateau size when a baseline names one); a short local-disk
write and read (fio, time-based: 1 s ramp + 2 s each). docs/check.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from reports.findings import FAILING, Finding

StepName = Literal["inventory", "net", "io"]
STEPS: tuple[StepName, ...] = ("inventory", "net", "io")
DEFAULT_LIMIT_S = 50.0
ACTION_RESERVE_S = 8.0  # of the limit, kept for scontrol / kubectl / the metrics file
KILL_GRACE_S = 3.0  # TERM at a step's share of the limit, KILL this much later
CPU_BYTES = 4 << 20  # gloo on CPU ranks: 4 MiB is past the latency-bound sizes on loopback
GPU_BYTES = 256 << 20  # NVLink/PCIe: near the plateau of an 8-GPU all_reduce in ~10 ms per op
IO_CKPT_BYTES = "32M"


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
    gpus: int,
    size: int,
    net_timeout_s: int,
) -> list[Step]:
    """The child commands, in order. One GPU (or none with --nproc 1) has no link to test."""
    nproc = gpus or 2
    plan: list[Step] = []
    if "inventory" in which:
        plan.append(Step(name="inventory", argv=(*stoker, "inventory", "--no-copy", "--out", out)))
    if "net" in which and nproc >= 2:
        b = str(size or (GPU_BYTES if gpus else CPU_BYTES))
        argv = (*stoker, "net", "--nproc", str(nproc), "--backend", "nccl" if gpus else "gloo")
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
        argv = (*stoker, "io", "--path", io_path, "--workloads", "checkpoint,dataloader", "--no-torch")
        argv += ("--ckpt-bytes", IO_CKPT_BYTES, "--writers", "1", "--workers", "1", "--files-per-worker", "4")
        plan.append(Step(name="io", argv=(*argv, "--runtime", "2", "--timeout", "10", "--out", out)))
    return plan


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
    problems: tuple[str, ...]  # failing findings, then steps that did not end cleanly
    failed_checks: tuple[str, ...]  # the failing findings' check names (taint values)
    reasons: tuple[str, ...] = ()  # the failing findings, short (drain reasons)


def outcome(findings: Sequence[Finding], results: Sequence[StepResult]) -> Outcome:
    """fail on any failing finding (the contract's rule); else incomplete when a step did not
    end cleanly (a hung tool is not health); else pass."""
    bad = [f for f in findings if f.status in FAILING]
    broken = [r for r in results if r.rc != 0]
    lines = [problem_line(f) for f in bad] + [step_line(r) for r in broken]
    verdict: Verdict = "fail" if bad else "incomplete" if broken else "pass"
    return Outcome(
        verdict=verdict,
        problems=tuple(lines),
        failed_checks=tuple(_short(f) for f in bad),
        reasons=tuple(reason(f) for f in bad),
    )
