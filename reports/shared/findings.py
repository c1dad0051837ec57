"""The judgement's vocabulary and its one verdict (docs/contract.md `verdict.json`).

The schema of what judging produces and rendering reads: components, statuses and verdicts
as closed `Literal` types, `Finding`, the starvation model's `ModelRow`, and `Judgement`
(findings + the verdict, decided once by `verdict_of`). Render imports this, never judging.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Component = Literal[
    "intra-node network",
    "inter-node network",
    "shared storage",
    "local storage",
    "node",
    "link",
    "host link",  # the last four: node inventory (host.jsonl)
    "network port",
    "nvlink",
    "gpu",
]
# transient: under its threshold at first, passing when measured again (shown, not failed)
# incorrect: wrong data or an error the tool or NCCL printed; misconfigured: what NCCL says it
# did contradicts the spec (sockets on an RDMA fabric, P2P switched off): reports/judging/network/diagnosis.py
Status = Literal[
    "ok",
    "below_spec",
    "starving",
    "no_reference",
    "suspect",
    "unstable",
    "regression",
    "transient",
    "incorrect",
    "misconfigured",
]
Verdict = Literal["pass", "fail", "incomplete", "unjudged"]
# the parts of a training job the GPUs can wait for, in the order a buyer reads them
Part = Literal["data parallel", "tensor parallel", "pipeline", "dataloader", "checkpoint"]
# what a report judges (`--scope`, verdict.json `scope`): the whole cluster, or one node alone
ReportScope = Literal["cluster", "node"]
COMPONENTS: tuple[Component, ...] = get_args(Component)
STATUSES: tuple[Status, ...] = get_args(Status)
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
PARTS: tuple[Part, ...] = get_args(Part)
REPORT_SCOPES: tuple[ReportScope, ...] = get_args(ReportScope)
FAILING: tuple[Status, ...] = (
    "incorrect",
    "misconfigured",
    "below_spec",
    "starving",
    "unstable",
    "regression",
)  # unstable: a soak's dip or rising error counter; regression: under the accepted baseline
# judged and passed: a transient's confirming measurement passed its threshold
PASSED: tuple[Status, ...] = ("ok", "transient")


@dataclass(frozen=True, kw_only=True, slots=True)
class Thresholds:
    """The share of an advertised figure that passes, per component kind: the spec's `thresholds`,
    resolved once when the spec is read (reports.shared.spec), these defaults where it says nothing
    (the one place they are written). Every judge reads this one object, and a finding's
    `threshold` in verdict.json is taken from it (or is the healthy reference's share)."""

    network: float = 0.80
    storage: float = 0.80


THRESHOLD_KINDS = tuple(f.name for f in dataclasses.fields(Thresholds))  # the spec's `thresholds` keys
DEFAULT_THRESHOLDS = Thresholds()


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    component: Component
    check: str  # short name of what was compared
    status: Status
    measured: float | None
    expected: float | None
    unit: str
    hosts: tuple[str, ...]
    message: str  # one sentence a person can act on
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. size used, idle share, $/day

    def __post_init__(self) -> None:
        # the types say it; this says it at run time too, where a string came from a file
        if self.component not in COMPONENTS or self.status not in STATUSES:
            raise ValueError(f"not a finding: component {self.component!r}, status {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        out["hosts"] = list(self.hosts)
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRow:
    """One line of the starvation model: what the workload needs of a component."""

    part: Part  # which part of the training step waits
    component: Component  # the network or storage component the part depends on
    check: str  # the sentence a person reads
    required: float | None
    achieved: float | None
    unit: str
    idle_share: float  # share of step time the accelerators wait for this component
    usd_per_day: float | None  # idle share x GPUs x price x 24
    status: Status  # ok | starving | no_reference
    extra: dict[str, Any] = field(default_factory=dict)  # exposed_s, base_s, message size, notes


@dataclass(frozen=True, kw_only=True, slots=True)
class Judgement:
    """Everything judging decided about one results directory; the verdict is decided here
    once (`verdict_of` over the findings and the missing phases) and never again."""

    run_id: str
    verdict: Verdict
    findings: list[Finding]
    missing: list[str] = field(default_factory=list)  # phases that produced nothing, promises unmeasured
    missing_phases: list[str] = field(default_factory=list)  # the phases alone (verdict.json)
    not_covered: list[str] = field(default_factory=list)  # promises outside the scope under test
    coverage: dict[str, Any] = field(default_factory=dict)  # verdict.json's coverage fields
    expected: dict[str, float] = field(default_factory=dict)  # component -> advertised GB/s used
    thresholds: Thresholds = DEFAULT_THRESHOLDS  # the share that passes
    model: list[ModelRow] = field(default_factory=list)
    model_summary: dict[str, Any] = field(default_factory=dict)
    spec_name: str | None = None
    workload_name: str | None = None
    notes: list[str] = field(default_factory=list)
    hardware: dict[str, Any] = field(default_factory=dict)  # what detection found (summarised)
    # every collective ran on CPU ranks of a machine that showed no GPU (reports/judging/cpu_path.py)
    cpu_path: bool = False

    @property
    def headline(self) -> str:
        return headline(self.verdict, self.findings, self.missing, cpu_path=self.cpu_path)


# the process exit for each verdict (docs/contract.md): an unjudged exploratory run is not an
# error; the acceptance job turns it into one unless told otherwise (`--allow-unjudged`)
EXIT_CODES: dict[Verdict, int] = {"pass": 0, "fail": 1, "incomplete": 3, "unjudged": 0}


def verdict_of(findings: Sequence[Finding], missing: Sequence[str] = ()) -> Verdict:
    """docs/contract.md's order: `fail` when any finding is below_spec, starving, unstable or a regression; else
    `incomplete` when a phase that should have produced records did not (`missing`: one
    line per such phase); else `unjudged` when nothing was judged: no finding is `ok` (or a
    `transient`, which passed when measured again), or one
    is `suspect` (a result the hardware cannot physically give: the measurement cannot vouch
    for it), or a main figure (`is_main`) had no reference and nothing else of its component
    passed (a baseline's figure); else `pass`."""
    if any(f.status in FAILING for f in findings):
        return "fail"
    if missing:
        return "incomplete"
    judged = {f.component for f in findings if f.status in PASSED}  # e.g. against a baseline
    if (
        not any(f.status in PASSED for f in findings)
        or any(f.status == "suspect" for f in findings)
        or any(f.status == "no_reference" and is_main(f) and f.component not in judged for f in findings)
    ):
        return "unjudged"
    if any(f.extra.get("matched_none") for f in findings):
        return "unjudged"  # a baseline judged none of a node's figures: never a quiet pass
    return "pass"


def is_main(f: Finding) -> bool:
    """A main figure of the acceptance: a network scope's busbw plateau. Left without a reference
    it keeps the verdict from `pass` whatever else passed (a host link and a disk that pass say
    nothing of an NVLink no one judged)."""
    return f.component in ("intra-node network", "inter-node network") and f.check.endswith("busbw plateau")


# the headline of a run on a machine without a GPU that nothing judged: what its figures are for
CPU_PATH = (
    "UNJUDGED — no GPU here: these are the CPU path's figures (gloo ranks over this machine's loopback, "
    "its disk); they test stoker and this machine, not a GPU cluster. Nothing judged them: give --spec "
    "with what this machine should reach, or run on the GPU nodes."
)


def headline(
    verdict: Verdict, findings: Sequence[Finding], missing: Sequence[str] = (), *, cpu_path: bool = False
) -> str:
    """The verdict in words, one line; "PASS" only for `pass`. A verdict that rests on what healthy
    systems reach (no spec: reports.judging.network.reference) says so; a run nothing judged on a
    machine without a GPU (`cpu_path`) says what its figures are for."""
    by_reference = sum(f.extra.get("basis") == "reference" for f in findings)
    basis = (
        f" {by_reference} check{'s' if by_reference != 1 else ''} judged against what healthy systems "
        "of the detected kind reach (no spec given)."
        if by_reference
        else ""
    )
    if verdict == "fail":
        counts = Counter(f.status for f in findings if f.status in FAILING)
        n = sum(counts.values())
        what = ", ".join(f"{k} {s}" for s, k in sorted(counts.items()))
        return f"FAIL — {n} finding{'s' if n != 1 else ''} to act on ({what}).{basis}"
    if verdict == "incomplete":
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        return f"INCOMPLETE — {missing[0] if missing else 'a phase produced no records'}{more}."
    if verdict == "unjudged":
        suspect = sum(f.status == "suspect" for f in findings)
        if suspect:
            return (
                f"UNJUDGED — {suspect} finding{'s are' if suspect != 1 else ' is'} suspect (above what the "
                "hardware can do: page cache or a wrong spec), so the measurement cannot vouch for the hardware."
            )
        unmatched = [f for f in findings if f.extra.get("matched_none")]
        if unmatched and any(f.status in PASSED for f in findings):
            names = sorted({h for f in unmatched for h in f.hosts}) or ["the run"]
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            return (
                f"UNJUDGED — not comparable: the baseline judged none of the figures of {shown} "
                "(another tool, size, ranks or disk); give a baseline of what was measured here."
            )
        n = sum(f.status == "no_reference" for f in findings)
        if cpu_path and findings:
            return CPU_PATH
        if not findings:
            return (
                "UNJUDGED — nothing to judge: no figure spans two ranks or more, or says how many it "
                "ran on (a broadcast, reduce or sendrecv table's bus factor does not tell its ranks: keep "
                "its '# Using devices' lines)."
            )
        return (
            f"UNJUDGED — nothing was judged: {n} check{'s' if n != 1 else ''} had no reference — give --spec "
            "(or put spec.yaml in the results directory)."
        )
    return f"PASS — no finding is below spec or starving.{basis}"


def verdict_json(j: Judgement, **extra: Any) -> dict[str, Any]:
    """verdict.json (docs/contract.md) of a judgement: its verdict as decided, never again."""
    return {
        "verdict": j.verdict,
        "headline": j.headline,
        "run_id": j.run_id,
        "findings": [f.to_dict() for f in j.findings],
        **extra,
        **j.coverage,
    }
