"""Confirm before fail (pure): a figure under its threshold that was measured again at the
end of its phase (the same test, the same nodes) is judged by both measurements.

Storage: `stoker io --spec` measures a fio test again when its figure is under the spec's
threshold (reports.shared.storage_rule.to_confirm). Network: `stoker net` measures a swept scope's judged op again when its
plateau is under the threshold the report holds it to, the spec's or, without one, what healthy
systems of the detected kind reach, and the intra-node scope's op where a node is a low outlier
of the fleet (net_to_confirm; confirm_nodes judges those nodes); the pairs' fleet rule has its
own second pass (reports.shared.outliers.confirmation_pairs); a storage test in which a node is a low
outlier of the others is run again too (storage_rule.outliers_to_confirm; confirm_storage_nodes
judges the node). `stoker check --baseline` runs a
step again when a figure is past the accepted one's tolerance (BASELINE). Both mark the second measurement
`confirmation: true` (docs/contract.md). The first measurements are judged as always; the
confirmations apart, the same way. A failing finding whose confirmation passes is a
`transient` (shown, not failed: a dip that did not last); one whose confirmation fails too
fails with both figures (`first_GBps`, `confirm_GBps`). A finding without a confirmation is
left as it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reports.evidence.sweeps import Sweep
from reports.judging import advertised
from reports.judging.coverage import gpus_seen
from reports.judging.network import reference
from reports.judging.network.localise import intra_node_findings, storage_findings
from reports.shared import records
from reports.shared.findings import FAILING, PASSED, Finding
from reports.shared.records import CONFIRMED_SCOPES, IoRecord, NetRecord
from reports.shared.spec import Spec, fill_from_hardware, given_scopes
from reports.shared.storage_rule import judged_by_iops

if TYPE_CHECKING:
    import pandas as pd

Key = tuple[str, str, str]  # path, workload, direction


def is_confirmation(r: IoRecord | NetRecord) -> bool:
    return records.is_confirmation(r.extra)


def _storage_key(f: Finding) -> Key:
    return (str(f.extra.get("path")), str(f.extra.get("workload")), str(f.extra.get("direction")))


def _storage_head(f: Finding) -> str:
    return f.message.split(":", 1)[0]


def _net_key(f: Finding) -> Key:
    return (f.component, f.check, str(f.extra.get("scope")))


def _net_head(f: Finding) -> str:
    return f"{f.extra.get('scope')} {f.check}"


def _baseline_key(f: Finding) -> Key:
    return (f.component, f.check, ",".join(f.hosts))


def _baseline_head(f: Finding) -> str:
    return f"{' '.join(f.hosts)} {f.check}".strip()


@dataclasses.dataclass(frozen=True, kw_only=True, slots=True)
class Kind:
    """How the findings of one kind of figure are matched and named: the key a finding and its
    confirmation share, the head of a transient's message, what else may have used the part."""

    key: Callable[[Finding], Key]
    head: Callable[[Finding], str]
    shared: str
    digits: str  # the figures' format
    under: str = "under the threshold"


STORAGE = Kind(key=_storage_key, head=_storage_head, shared="the storage", digits=".2f")
NETWORK = Kind(key=_net_key, head=_net_head, shared="the network", digits=".3g")
# a node a low outlier of its fleet's intra-node figures, the scope swept again
NODE = Kind(
    key=_baseline_key,
    head=_baseline_head,
    shared="the node",
    digits=".3g",
    under="a low outlier of the fleet",
)
# a node a low outlier of its record's per-host storage figures, the test run again
STORAGE_NODE = Kind(
    key=_baseline_key,
    head=_baseline_head,
    shared="the storage",
    digits=".3g",
    under="a low outlier of the fleet",
)
# `stoker check --baseline`: a regression measured again by the same step, the same settings
BASELINE = Kind(
    key=_baseline_key,
    head=_baseline_head,
    shared="the node",
    digits=".3g",
    under="past the accepted figure's tolerance",
)


def merge(first: Sequence[Finding], again: Sequence[Finding], kind: Kind = STORAGE) -> list[Finding]:
    """The first findings, each failing one judged with its confirmation when there is one."""
    confirming = {kind.key(f): f for f in again}
    out = []
    for f in first:
        c = confirming.get(kind.key(f))
        if c is None or f.status not in FAILING or c.measured is None or f.measured is None:
            out.append(f)
            continue
        both = {**f.extra, "first_GBps": f.measured, "confirm_GBps": c.measured}
        again_at = (
            "measured again at the end of the phase (the same test, the same nodes): "
            f"{c.measured:{kind.digits}} {f.unit}"
        )
        if c.status in PASSED:
            msg = (
                f"{kind.head(f)}: {f.measured:{kind.digits}} {f.unit} at first, {kind.under}, and {again_at}, which passes: "
                f"a transient dip, not failed; if it recurs, look at what else used {kind.shared} then."
            )
            out.append(
                dataclasses.replace(f, status="transient", measured=c.measured, message=msg, extra=both)
            )
        else:  # still under; or judged otherwise (suspect: above what the link carries)
            said = "still under" if c.status in FAILING else f"judged {c.status} ({c.message})"
            out.append(
                dataclasses.replace(
                    f, message=f"{f.message} {again_at[0].upper()}{again_at[1:]}, {said}.", extra=both
                )
            )
    return out


def compare_storage(io: Sequence[IoRecord], spec: Spec | None) -> tuple[list[Finding], dict[str, float]]:
    """advertised.compare_storage over the first measurements, with the confirmations merged.
    Small-block random jobs are judged by their IOPS, never as a bandwidth: left out here."""
    io = [r for r in io if not judged_by_iops(r)]
    first, expected = advertised.compare_storage([r for r in io if not is_confirmation(r)], spec)
    again = [r for r in io if is_confirmation(r)]
    if not again:
        return first, expected
    return merge(first, advertised.compare_storage(again, spec)[0]), expected


def compare_network(
    curves: Mapping[tuple[str, str], Sweep],
    again: Mapping[tuple[str, str], Sweep],
    spec: Spec | None,
    *,
    written: frozenset[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[list[Finding], dict[str, float]]:
    """advertised.compare_network over the first sweeps' curves, with the confirmations' merged."""
    first, expected = advertised.compare_network(dict(curves), spec, written=written, env=env)
    if not again:
        return first, expected
    confirming = advertised.compare_network(dict(again), spec, written=written, env=env)[0]
    return merge(first, confirming, NETWORK), expected


def confirm_nodes(first: Sequence[Finding], again: pd.DataFrame | None) -> list[Finding]:
    """The per-node intra-node findings of the fleet rule (reports.judging.network.localise) judged with
    the intra-node sweep measured again (`again`: its rows): a node that is no longer a low
    outlier of the fleet measured again is a transient; one that still is fails with both
    figures. Other findings, and nodes the confirmation did not measure, are left as they are."""
    if again is None or again.empty:
        return list(first)
    still = {(f.check, f.hosts): f for f in intra_node_findings(again)}
    out: list[Finding] = []
    for f in first:
        op = f.extra.get("op")
        rows = again[
            (again["scope"] == "intra-node")
            & (again["op"] == op)
            & (again["host"] == (f.hosts[0] if f.hosts else ""))
            & (again["n_hosts"] == 1)
            & (again["wrong"] == 0)
        ]
        if f.component != "node" or f.extra.get("basis") != "fleet" or op is None or rows.empty:
            out.append(f)
            continue
        best = float(rows[rows["bytes"] == rows["bytes"].max()]["busbw_GBps"].max())
        c = still.get((f.check, f.hosts)) or dataclasses.replace(f, status="ok", measured=best)
        out += merge([f], [c], NODE)
    return out


def confirm_storage_nodes(first: Sequence[Finding], again: Sequence[IoRecord]) -> list[Finding]:
    """The per-host storage findings of the fleet rule (reports.judging.network.localise.
    storage_findings) judged with the test measured again (`again`: the storage confirmations,
    reports.shared.storage_rule.outliers_to_confirm): a node no longer a low outlier of the test's
    hosts then is a transient; one that still is fails with both figures. Other findings, and
    nodes the confirmation did not measure, are left as they are."""
    if not again:
        return list(first)
    out: list[Finding] = []
    for f in first:
        host = f.hosts[0] if len(f.hosts) == 1 else ""
        recs = [
            r
            for r in again
            if not r.failed
            and f.check == f"per-host {r.workload} {r.direction} {r.path}"
            and host in r.per_host_bw_GBps
        ]
        if f.component != "node" or f.extra.get("basis") != "fleet" or not recs:
            out.append(f)
            continue
        r = recs[-1]  # the last measurement of the test
        still = {(g.check, g.hosts): g for g in storage_findings([r])}
        c = still.get((f.check, f.hosts)) or dataclasses.replace(
            f, status="ok", measured=r.per_host_bw_GBps[host]
        )
        out += merge([f], [c], STORAGE_NODE)
    return out


def judged_spec(
    spec: Spec | None, hardware: Mapping[str, Any], manifests: Sequence[Mapping[str, Any]]
) -> Spec | None:
    """The spec the report judges by: the user's, completed from what the hosts showed (else the
    devices the ranks named), so that a fresh cluster is held to what healthy systems reach."""
    seen = hardware if hardware.get("gpu_model") else {**hardware, **gpus_seen(hardware, manifests)}
    return fill_from_hardware(spec, seen) if seen else spec


def net_to_confirm(
    recs: Sequence[NetRecord], spec: Spec | None, manifests: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """(scope to sweep again, op) for each network figure the report would fail (the first
    measurements of the swept scopes, judged as `stoker report` judges them: the spec's
    threshold, or the healthy reference of the detected hardware). A world sweep standing for
    the inter-node link is swept again as world."""
    from reports.evidence import hosts
    from reports.evidence.sweeps import judged, main_op
    from reports.table.read import records_frame

    first = [r for r in recs if not is_confirmation(r) and r.scope in CONFIRMED_SCOPES]
    if not first:
        return []
    frame = records_frame(first)
    curves, _ = judged(frame)
    found = [m["hardware"] for m in manifests if isinstance(m.get("hardware"), dict)]
    filled = judged_spec(spec, hosts.summarise(found), manifests)
    findings, _ = advertised.compare_network(
        curves, filled, written=given_scopes(spec), env=reference.run_env(manifests)
    )
    out: list[tuple[str, str]] = []
    for f in findings:
        c = main_op(curves, str(f.extra.get("scope")))
        if f.status in FAILING and c is not None:
            out.append(("world" if c.from_world else c.scope, c.op))
    # a node a low outlier of the fleet's intra-node figures (the fleet rule)
    out += [("intra-node", str(f.extra["op"])) for f in intra_node_findings(frame)]
    return list(dict.fromkeys(out))
