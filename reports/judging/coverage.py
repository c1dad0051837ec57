"""Coverage: every promise of the spec, and every need of the workload, against what the run
measured (pure).

Acceptance signs the whole spec, not the part that happened to run. Each promise the spec
makes is one line: the intra-node link (when a node has more than one GPU), the inter-node
link x count (needs two nodes or more), each storage path, the GPU count and model per node.
A line is `measured` (the findings then say whether it was met), `not_met` (the GPU count or
model the hosts showed differs: a failing finding), `unmeasured` (the verdict cannot be
`pass`: it is `incomplete`, and verdict.json's `unmeasured` says what, why and how to measure
it), `out_of_scope` (`--scope node`: only the node was under test; the report still names it),
or `nothing_to_measure` (an intra-node link with one GPU per node: not a missing phase).
A workload's needs (reports.judging.workload.needs: the network scopes its parallelism crosses, the
storage it reads and writes, the accelerator its compute figure assumes) are lines too.

The rule (docs/contract.md): `pass` needs every promise in scope measured and met.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reports.shared.catalog import match_gpu_name
from reports.shared.findings import Finding, ReportScope
from reports.shared.records import IoRecord
from reports.shared.spec import Spec, StorageSpec, match_storage

Scope = ReportScope  # declared in reports/shared/findings.py (REPORT_SCOPES)
Status = Literal["measured", "not_met", "unmeasured", "out_of_scope", "nothing_to_measure"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Line:
    """One promise of the spec and what became of it."""

    what: str  # the promise, e.g. "inter-node network: 8 x ib-ndr per node"
    status: Status
    why: str = ""  # for anything but `measured`: why not
    how: str = ""  # the command or launcher setting that measures it

    def to_dict(self) -> dict[str, str]:
        return {"what": self.what, "status": self.status, "why": self.why, "how": self.how}

    @property
    def sentence(self) -> str:
        """One line for the report's top and the headline."""
        return f"{self.what} not measured: {self.why}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Coverage:
    scope: Scope
    lines: tuple[Line, ...]
    findings: tuple[Finding, ...]  # a promise the hosts showed unmet (GPU count, model)

    @property
    def unmeasured(self) -> list[Line]:
        """What keeps the verdict from `pass`."""
        return [ln for ln in self.lines if ln.status == "unmeasured"]

    @property
    def not_covered(self) -> list[Line]:
        """Named in the report, outside the scope under test."""
        return [ln for ln in self.lines if ln.status == "out_of_scope"]

    def verdict_fields(self) -> dict[str, Any]:
        """verdict.json's coverage fields (docs/contract.md)."""
        drop = ("status",)
        return {
            "scope": self.scope,
            "coverage": [ln.to_dict() for ln in self.lines],
            "unmeasured": [
                {k: v for k, v in ln.to_dict().items() if k not in drop} for ln in self.unmeasured
            ],
            "not_covered": [
                {k: v for k, v in ln.to_dict().items() if k not in drop} for ln in self.not_covered
            ],
        }


def _skipped(phase: str, skipped: Collection[str]) -> str:
    return f"the {phase} phase was left out (--skip {phase})" if phase in skipped else ""


def _network_lines(
    spec: Spec, scopes: Collection[str], nodes: int, skipped: Collection[str], scope: Scope
) -> list[Line]:
    """`scopes`: the effective scopes of the judged curves (correct results of 2 ranks or
    more, pairs and groups aside); `nodes`: the most nodes any record spanned."""
    out: list[Line] = []
    g = spec.gpus_per_node
    if spec.intra_node_GBps is not None:
        desc = spec.intra_node_link.name if spec.intra_node_link else f"{spec.intra_node_GBps:g} GB/s"
        what = f"intra-node network: {desc}"
        if g == 1:
            out.append(
                Line(what=what, status="nothing_to_measure", why="one GPU per node: no link inside a node")
            )
        elif "intra-node" in scopes:
            out.append(Line(what=what, status="measured"))
        else:
            out.append(
                Line(
                    what=what,
                    status="unmeasured",
                    why=_skipped("network", skipped) or "no sweep ran between the GPUs of one node",
                    how=f"stoker run --spec SPEC on a node with its {g or 'G'} GPUs visible (one rank per GPU)",
                )
            )
    if spec.inter_node_GBps is not None:
        what = f"inter-node network: {spec.inter_node_desc or f'{spec.inter_node_GBps:g} GB/s'} per node"
        if "inter-node" in scopes:
            out.append(Line(what=what, status="measured"))
        else:
            why = _skipped("network", skipped) or (
                f"the run had {nodes} node{'s' if nodes != 1 else ''}; crossing nodes needs 2 or more"
                if nodes < 2
                else "no sweep crossed nodes"
            )
            how = f"stoker submit --nodes 2 --gpus-per-node {g or 'G'} --spec SPEC (the acceptance job)"
            if scope == "node":
                out.append(Line(what=what, status="out_of_scope", why=f"--scope node; {why}", how=how))
            else:
                out.append(
                    Line(
                        what=what,
                        status="unmeasured",
                        why=why,
                        how=how + ", or --scope node to judge the node alone",
                    )
                )
    return out


def _storage_line(entry: StorageSpec, io: Sequence[IoRecord], skipped: Collection[str], scope: Scope) -> Line:
    what = f"{entry.kind} storage {entry.path}"
    promised = [d for d, v in (("read", entry.read_GBps), ("write", entry.write_GBps)) if v is not None]
    here = [r for r in io if not r.failed and r.bytes > 0 and match_storage(r.path, (entry,)) is entry]
    lacking = [d for d in promised if not any(r.direction == d for r in here)]
    if promised and not lacking:
        return Line(what=what, status="measured")
    if not promised and here:
        return Line(what=what, status="measured")
    why = _skipped("storage", skipped) or (
        f"no {' or '.join(lacking)} record on {entry.path}"
        if here
        else f"no storage test ran on {entry.path}"
    )
    if entry.kind == "shared":
        how = f"stoker submit --nodes N --shared-path {entry.path} --spec SPEC"
        if scope == "node":
            return Line(what=what, status="out_of_scope", why=f"--scope node; {why}", how=how)
        how += f" (or stoker run --path {entry.path} for one node's share)"
    else:
        how = f"stoker run --path {entry.path} --spec SPEC (or stoker io --path {entry.path})"
    return Line(what=what, status="unmeasured", why=why, how=how)


def gpus_seen(hardware: Mapping[str, Any], manifests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The GPUs per node the hosts showed: detection's summary (nvidia-smi / rocm-smi), else the
    devices the ranks named in their manifests (an imported nccl-tests log lists each rank's GPU
    and host); the most common count over hosts, and a note when hosts differ."""
    if isinstance(hardware.get("gpu_count"), int):
        return dict(hardware)
    per_host: dict[str, set[tuple[str, str]]] = {}
    for m in manifests:
        for i, d in enumerate(m.get("devices") or ()):
            name = d.get("name") if isinstance(d, Mapping) else None
            if not isinstance(name, str) or not name or name.lower().startswith("cpu"):
                continue
            host = str(d.get("host") or m.get("host") or "?")
            per_host.setdefault(host, set()).add((str(d.get("index", d.get("rank", i))), name))
    if not per_host:
        return dict(hardware)
    counts = Counter(len(v) for v in per_host.values())
    names = Counter(n for v in per_host.values() for _, n in v)
    out: dict[str, Any] = {"gpu_count": counts.most_common(1)[0][0], "gpu_model": names.most_common(1)[0][0]}
    if len(counts) > 1:
        spread = ", ".join(f"{c} on {n} host(s)" for c, n in counts.most_common())
        out["disagreements"] = [f"detected gpu_count differs between hosts: {spread}"]
    return out


def _gpu(
    spec: Spec, hardware: Mapping[str, Any], skipped: Collection[str]
) -> tuple[list[Line], list[Finding]]:
    want_count = spec.gpus_per_node if "gpus_per_node" not in spec.defaulted else None
    acc = spec.accelerator
    if want_count is None and acc is None:
        return [], []
    what = " ".join(x for x in (f"{want_count} x" if want_count else "", acc.name if acc else "GPU") if x)
    what = f"GPUs per node: {what}"
    seen_count, seen_model = hardware.get("gpu_count"), hardware.get("gpu_model")
    if not isinstance(seen_count, int) or seen_count <= 0:
        why = (
            _skipped("inventory", skipped)
            or "no host showed a GPU (0 seen: a CPU-only run, or GPUs hidden from it)"
        )
        how = "stoker run on the node with its GPUs visible (the inventory reads nvidia-smi / rocm-smi)"
        return [Line(what=what, status="unmeasured", why=why, how=how)], []
    bad: list[str] = []
    findings: list[Finding] = []
    if want_count and seen_count != want_count:
        bad.append(f"{seen_count} seen against {want_count} promised")
        findings.append(
            _gpu_finding(
                "GPU count",
                seen_count,
                want_count,
                f"the hosts showed {seen_count} GPUs per node where "
                f"the spec promises {want_count}; check the node's GPUs (nvidia-smi) or the spec",
            )
        )
    for note in hardware.get("disagreements", ()):
        if "gpu_count" in note or "gpu_model" in note:
            bad.append(note)
            findings.append(
                _gpu_finding("GPU count", None, want_count, f"{note}; find the host that differs")
            )
    if acc is not None and isinstance(seen_model, str):
        got = match_gpu_name(seen_model)
        if got is None or got.name != acc.name:
            bad.append(f"the hosts showed {seen_model!r}, not {acc.name}")
            findings.append(
                _gpu_finding(
                    "GPU model",
                    None,
                    None,
                    f"the hosts showed {seen_model!r} where the spec promises "
                    f"{acc.name}; check the nodes or the spec's accelerator",
                )
            )
    if bad:
        return [Line(what=what, status="not_met", why="; ".join(bad))], findings
    return [Line(what=what, status="measured")], []


def _gpus_left_out(
    spec: Spec, seen: Mapping[str, Any], ranks_on: Mapping[str, int], lines: list[Line]
) -> tuple[list[Line], list[Finding]]:
    """A sweep inside a node with fewer ranks than the node's GPUs (the spec's count, else the
    inventory's) left GPUs out: its intra-node line is `not_met`, one finding names the hosts
    and how many GPUs each left out. Returns the lines to add (the intra-node line is changed
    in place in `lines`) and the finding."""
    want = spec.gpus_per_node if "gpus_per_node" not in spec.defaulted else seen.get("gpu_count")
    if not isinstance(want, int) or want <= 1:
        return [], []
    short = {h: r for h, r in sorted(ranks_on.items()) if 0 < r < want}
    if not short:
        return [], []
    said = "; ".join(
        f"{h}: {r} ranks on {want} GPUs, {want - r} left out" for h, r in list(short.items())[:5]
    )
    more = f" (and {len(short) - 5} more hosts)" if len(short) > 5 else ""
    why = f"the sweep inside the node left GPUs out: {said}{more}"
    finding = Finding(
        component="intra-node network",
        check="GPUs swept",
        status="below_spec",
        measured=float(min(short.values())),
        expected=float(want),
        unit="GPUs",
        hosts=tuple(short),
        message=f"{why}; sweep again with one rank per GPU (all {want} visible) before judging the node",
    )
    for i, ln in enumerate(lines):
        if ln.what.startswith("intra-node network") and ln.status == "measured":
            lines[i] = Line(what=ln.what, status="not_met", why=why, how=ln.how)
            return [], [finding]
    return [Line(what=f"GPUs swept per node: {want}", status="not_met", why=why)], [finding]


def _gpu_finding(check: str, measured: float | None, expected: float | None, message: str) -> Finding:
    return Finding(
        component="gpu",
        check=check,
        status="below_spec",
        measured=float(measured) if measured is not None else None,
        expected=float(expected) if expected is not None else None,
        unit="GPUs",
        hosts=(),
        message=message,
    )


def assess(
    spec: Spec | None,
    scopes: Collection[str],
    nodes: int,
    io: Sequence[IoRecord],
    hardware: Mapping[str, Any],
    *,
    manifests: Sequence[Mapping[str, Any]] = (),
    scope: Scope = "cluster",
    skipped: Collection[str] = (),
    needs: Sequence[Line] = (),
    imported: bool = False,
    ranks_on: Mapping[str, int] | None = None,
) -> Coverage:
    """Every promise of `spec` (as the user wrote it, before detection filled it in) against
    the evidence (the scopes of the judged curves, the nodes spanned, the storage records) and
    what the hosts showed (their detected `hardware`, the ranks' manifests); `needs` are the
    workload's (reports.judging.workload.needs), judged by the same rule. `imported`: every figure came
    from another tool's output (`stoker import`, a log dropped in DIR): a promise it does not
    touch is named as not covered, never a missing phase (nothing of stoker's ran). `ranks_on`:
    the most ranks a sweep inside one node ran on each host (a sweep that left GPUs out is `not_met`)."""
    ranks_on = ranks_on or {}
    lines: list[Line] = []
    findings: list[Finding] = []
    if spec is not None:
        lines += _network_lines(spec, scopes, nodes, skipped, scope)
        lines += [_storage_line(e, io, skipped, scope) for e in spec.storage]
        gpu_lines, findings = _gpu(spec, gpus_seen(hardware, manifests), skipped)
        lines += gpu_lines
        gpu_lines, left_out = _gpus_left_out(spec, gpus_seen(hardware, manifests), ranks_on, lines)
        lines += gpu_lines
        findings = [*findings, *left_out]
    lines += needs
    if imported:  # results someone else measured: what they hold is judged, the rest named
        lines = [
            Line(
                what=ln.what, status="out_of_scope", why=f"not in the imported results ({ln.why})", how=ln.how
            )
            if ln.status == "unmeasured"
            else ln
            for ln in lines
        ]
    # a phase left out that no promise names is still said (nothing in the spec needed it)
    named = {p for p in skipped if any(_skipped(p, skipped) in ln.why for ln in lines if ln.why)}
    for p in sorted(set(skipped) - named):
        lines.append(
            Line(
                what=f"{p} phase",
                status="out_of_scope",
                why=f"left out (--skip {p})",
                how=f"stoker run without --skip {p}",
            )
        )
    return Coverage(scope=scope, lines=tuple(lines), findings=tuple(findings))
