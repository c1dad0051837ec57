"""Evidence: what the records show, computed once and pure (docs/architecture.md: records ->
table -> evidence -> judgement -> render).

`build()` turns a RecordSet into an `Evidence`: the sweeps as recorded and as judged (one
`Sweep` type), per-host intra-node figures, the pair matrix with node scores and
confirmations, the groups search replayed, the storage records with which may be compared,
and the host facts. Judgement reads only this; render reads this and the judgement, never
re-computing either.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from reports.evidence import confirmations, groups, hosts, rails, storage, sweeps
from reports.evidence.pairs import PairEvidence
from reports.evidence.stragglers import Stragglers, stragglers
from reports.evidence.sweeps import Sweep
from reports.shared.group_search import SearchResult
from reports.shared.records import IoRecord, NetRecord, is_confirmation
from reports.table.read import NetTable, RecordSet, SkippedLine


@dataclass(frozen=True, kw_only=True, slots=True)
class Evidence:
    run_ids: list[str]
    net: NetTable  # the records themselves, for the few places that list them
    io: list[IoRecord]
    host: list[dict[str, Any]]  # host.jsonl records, as read
    manifests: list[dict[str, Any]]
    skipped: list[SkippedLine]
    shown: pd.DataFrame  # the net rows the report shows (in-place dropped where out-of-place exists)
    sweeps: list[Sweep]  # as recorded: per scope, op, backend, ranks
    curves: dict[tuple[str, str], Sweep]  # as judged: per effective scope and op
    wrong: int  # net records left out of the figures: their correctness check failed
    per_host: pd.DataFrame  # intra-node busbw per host and op at the largest size
    pairs: PairEvidence
    search: SearchResult | None  # the groups search replayed on its records
    io_frame: pd.DataFrame
    hardware: dict[str, Any] = field(default_factory=dict)  # the hosts' detected hardware, folded
    cpu_ranks: bool = False  # every net record ran on CPU ranks (gloo shares cores with compute)
    stragglers: Stragglers | None = None  # per-process times of imported nccl-tests -I results
    soak: list[NetRecord] = field(default_factory=list)  # a soak's records (extra.soak_pass)
    counters: list[dict[str, Any]] = field(default_factory=list)  # a soak's counter deltas
    compute: list[dict[str, Any]] = field(default_factory=list)  # matmul appetite per device
    # the tests measured again because their first figure was under its threshold
    # (`confirmation: true`): judged beside the first measurement (reports.judging.confirm),
    # never pooled with it (`net`, `io`, the curves, localisation and stability hold none)
    confirm_curves: dict[tuple[str, str], Sweep] = field(default_factory=dict)
    confirm_frame: pd.DataFrame | None = None  # their rows (per-node figures); None: none
    io_again: list[IoRecord] = field(default_factory=list)
    # records marked `confirmation` that confirm nothing they were judged beside (confirmations.py)
    confirm_notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        again = 0 if self.confirm_frame is None else len(self.confirm_frame)  # every record read
        return {
            "net": len(self.net) + again,
            "io": len(self.io) + len(self.io_again),
            **({"host": len(self.host)} if self.host else {}),
        }

    @property
    def ranks_per_node(self) -> float | None:
        """Ranks per node of the sweeps that crossed nodes (None: none did)."""
        f = self.net.frame
        crossing = f[f["scope"].isin(("world", "inter-node")) & (f["nodes"] >= 2)]
        return float((crossing["ranks"] / crossing["nodes"]).max()) if len(crossing) else None

    @property
    def net_scopes(self) -> set[str]:
        return {str(s) for s in self.net.frame["scope"].unique()}


def build(rs: RecordSet, localised: Callable[[pd.DataFrame, PairEvidence], None] | None = None) -> Evidence:
    """The evidence of a record set. `localised` is called with the per-host figures and the
    pair evidence as soon as they are computed, before the rest (stoker report starts drawing
    their figures then, on its other core)."""
    again = rs.net.frame["confirmation"].to_numpy(dtype=bool)
    again, io_again, confirm_notes = _bound(rs, again)  # a confirmation binds to what it confirms
    net = rs.net.subset(~rs.net.frame["confirmation"].to_numpy(dtype=bool))  # the first; the rest apart
    frame = net.frame
    shown = sweeps.shown(frame)
    per_host, pair_ev = sweeps.per_host(shown), rails.pair_evidence(frame)
    if localised is not None:
        localised(per_host, pair_ev)
    curves, wrong = sweeps.judged(frame)
    return Evidence(
        run_ids=rs.run_ids(),
        net=net,
        io=[r for r in rs.io if not is_confirmation(r.extra)],
        host=rs.host,
        manifests=rs.manifests,
        skipped=rs.skipped,
        shown=shown,
        sweeps=sweeps.recorded(shown),
        curves=curves,
        wrong=wrong,
        per_host=per_host,
        pairs=pair_ev,
        search=groups.replay(net),
        io_frame=storage.io_frame(rs.io),  # every record shown, a confirmation marked
        hardware=hosts.summarise(_hardware(rs)),
        cpu_ranks=len(frame) > 0 and bool((frame["device"] == "cpu").all()),
        stragglers=stragglers(net.where(frame["per_iter"].to_numpy(dtype=bool))),
        soak=net.where(frame["soak"].to_numpy(dtype=bool)),
        counters=rs.counters,
        compute=rs.compute,
        confirm_curves=sweeps.judged(rs.net.subset(again).frame)[0] if again.any() else {},  # bound only
        confirm_frame=rs.net.subset(again).frame if again.any() else None,
        io_again=io_again,
        confirm_notes=confirm_notes,
    )


def _hardware(rs: RecordSet) -> list[dict[str, Any]]:
    """What the manifests detected; where none names a GPU model, what the inventory records
    say the GPUs are (a ROCm node read by `stoker inventory` alone)."""
    found = [m["hardware"] for m in rs.manifests if isinstance(m.get("hardware"), dict)]
    if any(h.get("gpu_model") for h in found):
        return found
    return found + hosts.from_inventory(rs.host)


def _bound(rs: RecordSet, again: Any) -> tuple[Any, list[IoRecord], list[str]]:
    """The rows of net confirmations that confirm a first measurement, the io ones that do,
    and a note per confirmation left out (reports/evidence/confirmations.py)."""
    import numpy as np

    io_first = [r for r in rs.io if not is_confirmation(r.extra)]
    io_kept, notes = confirmations.bound_io(io_first, [r for r in rs.io if is_confirmation(r.extra)])
    if not again.any():
        return again, io_kept, notes
    f = rs.net.frame
    marked = rs.net.where(again)
    tests = f[again][["run_id", "op", "scope"]].drop_duplicates()
    related = f.merge(tests, on=["run_id", "op", "scope"], how="left", indicator=True)["_merge"] == "both"
    first = rs.net.where(related.to_numpy(dtype=bool) & ~again)
    keep, net_notes = confirmations.bound_net(first, marked)
    bound = again.copy()
    bound[np.flatnonzero(again)] = np.asarray(keep, dtype=bool)
    return bound, io_kept, net_notes + notes
