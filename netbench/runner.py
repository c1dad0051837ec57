"""One `stoker net` run on one rank: find the topology, walk the scopes, measure every
op and size in each group, and (global rank 0 only) write records, manifests and the table."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netbench import output
from netbench.backends import ITEMSIZE, Backend
from netbench.collectives import TABLE, Collective
from netbench.harness import ROOT, RankResult, measure, slots_for
from netbench.rank_run import RankRun, Settings, manifest_settings, measure_step
from netbench.sweep import mean_across_ranks, slowest
from netbench.topology import (
    Group,
    Topology,
    host_groups,
    host_pairs_rounds,
    my_host,
    pair_rounds,
    scope_groups,
)
from netbench.watchdog import Watchdog
from reports.shared.errors import UsageError
from reports.shared.manifest import base_manifest, installed_versions
from reports.shared.outdir import claim
from reports.shared.records import (
    CONFIRMED_SCOPES,
    MANIFEST_FILE,
    NET_FILE,
    NetRecord,
    RecordWriter,
    is_confirmation,
    new_run_id,
    utc_now,
)
from reports.shared.spec import load_spec
from reports.shared.units import gbps

CONFIRMING = {"confirmation": True}  # the records of a test measured again (netbench.confirm)


def _warn(r: RankRun, line: str) -> None:
    if r.quiet and r.tag.get("soak_pass") != r.s.soak_first:
        return  # a soak says what it skips once, in its first pass
    if r.writer is not None:
        sys.stdout.flush()
        sys.stderr.write(line + "\n")
        sys.stderr.flush()


def _manifest(
    b: Backend, s: Settings, run_id: str, host: str, topo: Topology, launcher: str
) -> dict[str, Any]:
    m = base_manifest("net", run_id, os.environ)
    m["host"] = host
    m["launcher"] = launcher
    m["ranks_on_host"] = topo.hosts.count(host)
    m["versions"] = {**installed_versions(("torch", "mpi4py", "numpy")), **b.versions()}
    m["devices"] = [b.device]
    m["settings"] = {**manifest_settings(s), "backend": b.name, "world": b.world}
    try:
        from netbench.inventory.hardware import detect_hardware

        m["hardware"] = detect_hardware()
    except Exception as exc:  # hardware detection must never cost the measurement
        m["hardware_error"] = f"{type(exc).__name__}: {exc}"
    return m


def _record(
    r: RankRun,
    scope: str,
    g: Group,
    coll: Collective,
    size: int,
    got: Sequence[RankResult],
    in_place: bool,
    extra: dict[str, Any],
) -> NetRecord:
    n = len(g.ranks)
    itemsize = ITEMSIZE[r.s.dtype]
    lay = coll.layout(size, n, itemsize)
    nbytes = coll.size_bytes(lay, itemsize)
    t = mean_across_ranks([x.time_s for x in got])
    st = slowest([x.stats for x in got])
    algbw = gbps(nbytes, t) * coll.algbw_share(n)  # as nccl-tests prints it (hypercube: (n-1)/n)
    return NetRecord(
        run_id=r.run_id,
        ts=utc_now(),
        hosts=g.hosts,
        nodes=len(g.hosts),
        op=coll.name,
        scope=scope,
        ranks=n,
        backend=r.b.name,
        dtype=r.s.dtype,
        bytes=nbytes,
        time_s=t,
        algbw_GBps=algbw,
        busbw_GBps=algbw * coll.bus_factor(n),
        wrong=sum(x.wrong for x in got),
        count=lay.count,
        redop=coll.redop,
        root=ROOT if coll.rooted else -1,
        in_place=in_place,
        iters=r.s.iters,
        warmup=r.s.warmup,
        group=g.index,
        time_min_s=st.min,
        time_p50_s=st.p50,
        time_p99_s=st.p99,
        time_cv=st.cv,
        device=r.b.device,
        extra={**r.tag, **extra},
    )


def _modes(r: RankRun, coll: Collective) -> list[bool]:
    """Which in_place values to measure: out-of-place (in place where the API has no other
    form), plus in-place with --in-place where the op and backend have it."""
    only = coll.name in r.b.only_in_place
    modes = [only]
    if r.s.in_place and not only and coll.in_place_ok and coll.name in r.b.in_place_ops:
        modes.append(True)
    return modes


def _gather_one(
    r: RankRun,
    scope: str,
    comm: Any,
    mine: Group | None,
    coll: Collective,
    size: int,
    in_place: bool,
    pool: int,
) -> list[RankResult | None] | None:
    """Measure on this rank's group (if it has one that can run the op) and gather every
    rank's result at global rank 0. Ranks outside any group still join the gather, which
    keeps all groups of a round in step."""
    res: RankResult | None = None
    if comm is not None and mine is not None and coll.runs_on(len(mine.ranks)):
        lay = coll.layout(size, len(mine.ranks), ITEMSIZE[r.s.dtype])
        if lay.count > 0:
            with measure_step(r.wd, f"{coll.name} at {size} B in scope {scope} (group {mine.index})"):
                res = measure(
                    r.b,
                    comm,
                    coll,
                    lay,
                    group=mine.index,
                    iters=r.s.iters,
                    warmup=r.s.warmup,
                    in_place=in_place,
                    check=r.s.check,
                    graph=r.s.graph,
                    slots=slots_for(lay, ITEMSIZE[r.s.dtype], pool, r.s.iters),
                )
    with measure_step(r.wd, f"collecting results of {coll.name} at {size} B in scope {scope}"):
        return r.b.gather(res)


def _round(
    r: RankRun,
    scope: str,
    groups: Sequence[Group],
    ops: Sequence[str],
    sizes: Sequence[int],
    extra: dict[str, Any],
) -> dict[int, float]:
    """Measure `ops` x `sizes` on disjoint groups at once; returns busbw of each group's last row."""
    b = r.b
    with measure_step(r.wd, f"creating the {scope} groups"):
        comm = b.split([g.ranks for g in groups])
    mine = next((g for g in groups if b.rank in g.ranks), None)
    many = len(groups) > 1
    for g in groups:
        r.say(
            output.scope_header(
                scope,
                g.index,
                len(g.ranks),
                g.hosts,
                b.name,
                r.s.dtype,
                ", ".join(f"{k} {v}" for k, v in extra.items()),
            )
        )
    last: dict[int, float] = {}
    for opname in ops:
        coll = TABLE[opname]
        if not any(coll.runs_on(len(g.ranks)) for g in groups):
            need = "a power-of-two count of" if coll.power_of_two else f"{coll.min_ranks}"
            r.say(f"# op {opname} needs {need} ranks per group: skipped in scope {scope}")
            continue
        r.say(output.op_header(opname))
        modes = _modes(r, coll)
        for line in output.column_header(modes, many):
            r.say(line)
        for size in sizes:
            rows: dict[int, list[NetRecord]] = {}
            for in_place in modes:
                everything = _gather_one(r, scope, comm, mine, coll, size, in_place, max(sizes))
                if everything is None or r.writer is None:
                    continue
                _graph_fallback(r, everything)
                for g in groups:
                    got = [x for x in everything if x is not None and x.group == g.index]
                    if got:
                        graph = {"graph": all(x.graph for x in got)}
                        rec = _record(
                            r, scope, g, coll, size, got, in_place, {**extra, **_round_extra(g), **graph}
                        )
                        r.writer.write(rec)
                        r.n_records += 1
                        r.lowest[scope] = min(r.lowest.get(scope, rec.busbw_GBps), rec.busbw_GBps)
                        if scope in CONFIRMED_SCOPES and not is_confirmation(rec.extra):
                            r.swept.append(rec)
                        rows.setdefault(g.index, []).append(rec)
            for index, recs in rows.items():
                last[index] = recs[0].busbw_GBps
                r.say(output.row(recs, index if many else None))
    with measure_step(r.wd, f"releasing the {scope} groups"):
        b.release()  # a pairs scope makes N - 1 rounds of groups: none outlives its round
    return last


def _graph_fallback(r: RankRun, results: Sequence[RankResult | None]) -> None:
    """One line, the first time a CUDA-graph capture failed: from then on that op is timed
    eagerly (its records say graph: false)."""
    why = next((x.graph_error for x in results if x is not None and x.graph_error), "")
    if why and not r.graph_warned:
        r.graph_warned = True
        _warn(
            r, f"# CUDA graph capture failed ({why}): timing eagerly where it fails; records say graph: false"
        )


def _round_extra(g: Group) -> dict[str, Any]:
    out: dict[str, Any] = {} if g.round is None else {"round": g.round}
    return out if g.rail is None else {**out, "rail": g.rail}


def _pairs(
    r: RankRun, topo: Topology, rounds: list[list[Group]], pass_no: int
) -> dict[int, dict[tuple[str, str], float]]:
    """Run the rounds; busbw per host pair, rail by rail."""
    bw: dict[int, dict[tuple[str, str], float]] = {}
    for groups in rounds:
        last = _round(r, "pair", groups, (r.s.pair_op,), (r.s.pair_bytes,), {"pass": pass_no})
        for g in groups:
            if g.index in last:
                bw.setdefault(g.rail or 0, {})[(g.hosts[0], g.hosts[1])] = last[g.index]
    return bw


def _warn_untested(r: RankRun, topo: Topology, scope: str) -> None:
    missing = topo.untested_rails()
    if missing:
        said = "; ".join(f"{h}: rail {', '.join(map(str, js))}" for h, js in missing.items())
        _warn(r, f"# {scope}: rails not tested (ranks per node differ; rail j is local rank j): {said}")


def _groups(r: RankRun, topo: Topology) -> None:
    """The log-round search for a slow node or link (reports.shared.group_search): each
    round measures the search's groups at once with real collectives; rank 0's busbw of each
    group is shared so that every rank's copy of the search takes the same next step."""
    from reports.shared.group_search import group_search

    done = 0

    def measure(hgroups: list[tuple[str, ...]]) -> list[float]:
        nonlocal done
        groups = host_groups(topo, hgroups, done)
        last = _round(r, "groups", groups, (r.s.pair_op,), (r.s.pair_bytes,), {})
        # a host group is as fast as its slowest rail
        slowest = {
            hg: min(last.get(g.index, 0.0) for g in groups if set(g.hosts) == set(hg)) for hg in hgroups
        }
        with measure_step(r.wd, f"sharing the results of groups round {done}"):
            values = r.b.bcast([slowest[hg] for hg in hgroups] if r.writer is not None else None)
        done += 1
        return list(values)

    _warn_untested(r, topo, "groups")

    res = group_search(topo.nodes, measure)
    named = [*res.culprits, *(f"{a}-{b}" for a, b in res.links)]
    r.say(f"# groups search: {res.rounds} rounds; slow: {', '.join(named) or 'none'}")


def _scope(r: RankRun, topo: Topology, scope: str) -> None:
    rounds, why = scope_groups(topo, scope)
    if scope == "groups" and not why:
        _groups(r, topo)
        return
    if not rounds:
        _warn(r, output.skipped(scope, why))
        return
    if scope != "pairs":
        _round(r, scope, rounds[0], r.s.ops, r.s.sizes, {})
        return
    _warn_untested(r, topo, "pairs")
    first = _pairs(r, topo, rounds, 1)
    from reports.shared.outliers import rail_confirmation_pairs

    with measure_step(r.wd, "sharing the confirmation pairs"):
        again = r.b.bcast(rail_confirmation_pairs(first) if r.writer is not None else None)
    if again:
        _pairs(r, topo, pair_rounds(topo, host_pairs_rounds(topo, again)), 2)


def plan_scopes(scopes: Sequence[str], topo: Topology) -> list[str]:
    """On one host world and intra-node are the same ranks: measure them once, as
    intra-node (the name that says which link was measured)."""
    if len(topo.nodes) == 1 and "world" in scopes and "intra-node" in scopes and len(topo.hosts) > 1:
        return [s for s in scopes if s != "world"]
    return list(scopes)


def _claim(out_dir: str, run_id: str) -> str | None:
    try:
        claim(Path(out_dir), run_id)
    except UsageError as exc:
        return str(exc)
    return None


def execute(b: Backend, s: Settings, launcher: str) -> int:
    """Run the whole sweep on this rank; returns the exit code."""
    wd = Watchdog(s.timeout_s, speak=b.rank == 0, where="no records written yet")
    try:
        return _sweep(b, s, launcher, wd)
    finally:
        wd.close()


def _sweep(b: Backend, s: Settings, launcher: str, wd: Watchdog) -> int:
    rank0 = b.rank == 0
    host = my_host(b.rank, s.hosts_override)
    with measure_step(wd, "start-up (exchanging host names)"):
        topo = Topology(hosts=tuple(b.allgather(host)))
        run_id = b.bcast(new_run_id() if rank0 else None)
    out_dir = s.out or os.path.join("stoker-results", run_id)
    with measure_step(wd, "start-up (checking the results dir)"):
        # rank 0 claims the dir; every rank hears the answer, so a refusal stops them all at once
        refused = b.bcast(_claim(out_dir, run_id) if rank0 else None)
    if refused:
        raise UsageError(refused)
    wd.where = f"records so far are kept in {out_dir}"
    is_leader = b.rank in topo.leaders()
    mine = _manifest(b, s, run_id, host, topo, launcher) if is_leader else None
    with measure_step(wd, "start-up (collecting manifests)"):
        manifests = b.gather(mine)
    writer = RecordWriter(os.path.join(out_dir, NET_FILE)) if rank0 else None
    if writer is not None and manifests is not None:
        with RecordWriter(os.path.join(out_dir, MANIFEST_FILE)) as mw:
            for m in manifests:
                if m is not None:
                    mw.write(m)
    r = RankRun(b=b, s=s, wd=wd, writer=writer, run_id=run_id)
    if writer is not None:
        r.manifests = [m for m in manifests or [] if m is not None]
        r.spec = load_spec(s.spec_file) if s.spec_file else None
    if s.soak_s is not None or s.soak_passes is not None:
        from netbench.soak import soak

        soak(r, topo, lambda: sweep(r, topo), out_dir, is_leader)
    else:
        from netbench.soak import sweep_counters

        sweep_counters(r, topo, lambda: sweep(r, topo), out_dir, is_leader)
    r.say(output.footer(out_dir, r.n_records))
    if writer is not None:
        writer.close()
    return 0


def sweep(r: RankRun, topo: Topology) -> None:
    """Every scope once (one pass of a soak)."""
    s = r.s
    if s.pairs:
        _pairs(r, topo, pair_rounds(topo, host_pairs_rounds(topo, s.pairs)), 1)
    else:
        planned = plan_scopes(s.scopes, topo)
        if len(planned) < len(s.scopes):
            _warn(
                r, output.skipped("world", "one host: the same ranks as intra-node, measured as intra-node")
            )
        for scope in planned:
            _scope(r, topo, scope)
        from netbench.confirm import confirm_under

        confirm_under(r, topo, lambda scope, groups, op: _round(r, scope, groups, (op,), s.sizes, CONFIRMING))
