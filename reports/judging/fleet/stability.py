"""Stability over a soak (pure): records with `extra.soak_pass` and counters.jsonl in,
`unstable` findings out (docs/contract.md "Soak").

Series, one value per soak pass:
- a scope (world, intra-node, inter-node per group of hosts): per pass, the median over its
  op x size series of busbw / that series' own median (1.0 = its usual speed);
- a node, from the pair tests: its best pair busbw in the pass (a node with a slow NIC caps
  every pair it is in, as in judging/localise.py);
- a link: one pair's busbw in the pass;
- storage: each workload's bandwidth in the passes that wrote it.

A *dip* is a run of consecutive passes below (1 - gap) x the series' own median; a node's
pass must also be below (1 - gap) x the fleet's median node score of that pass (a pass where
every node sags is the machine's, and shows as the scope's dip), and a link's below both its
ends' scores. *Drift* is the least-squares trend over the soak, start to end, as a share of
the median; *p99 spikes* are passes whose p99 op time exceeds SPIKE_K x the median p99.
Counters that moved on the same host in the dip's passes (+-1 pass: a counter read after the
pass it rose in) are named with the dip; a pair's dip whose error counters moved on one end
only (a link flapping: carrier changes) names that end's node, not the pair. An error counter
that rose with no dip beside it is a finding of its own: the network port or GPU, with the
passes it rose in.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import groupby
from typing import Any

from reports.evidence.soak import (
    MIN_PASSES,
    io_series,
    node_scores,
    pair_rails,
    pair_series,
    pass_times,
    scope_series,
    soak_pass,
)
from reports.shared.findings import Component, Finding
from reports.shared.records import IoRecord, NetRecord

GAP = 0.35  # a pass below 65% of the series' own median is a dip: a shared machine jitters less
DRIFT_GAP = 0.25  # a soak that ends 25% below where it started (fitted line) drifts
MIN_DIP_PASSES = 2  # a one-pass dip with no counter beside it is jitter (CPU ranks on a shared machine)
MIN_DRIFT_PASSES = 10  # a trend over fewer passes is noise
MIN_FLEET = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class Dip:
    first: int  # soak passes, inclusive
    last: int
    lowest: float  # the lowest value in the dip
    reference: float  # the series' own median

    @property
    def share(self) -> float:
        return self.lowest / self.reference if self.reference else 0.0


def dips(values: Mapping[int, float], low: Mapping[int, bool]) -> list[Dip]:
    """Runs of consecutive passes flagged low (passes missing from `values` break a run)."""
    ref = statistics.median(values.values()) if values else 0.0
    out: list[Dip] = []
    for k in sorted(values):
        if not low.get(k):
            continue
        if out and out[-1].last == k - 1:
            d = out[-1]
            out[-1] = Dip(first=d.first, last=k, lowest=min(d.lowest, values[k]), reference=ref)
        else:
            out.append(Dip(first=k, last=k, lowest=values[k], reference=ref))
    return out


def below_median(values: Mapping[int, float], gap: float = GAP) -> dict[int, bool]:
    if len(values) < MIN_PASSES:
        return {}
    med = statistics.median(values.values())
    return {k: v < (1 - gap) * med for k, v in values.items()}


def drift(values: Mapping[int, float]) -> float:
    """The fitted line's change from the first pass to the last, as a share of where it
    starts (-0.3: it ends 30% lower; -1 at most); 0 with fewer than MIN_DRIFT_PASSES."""
    if len(values) < MIN_DRIFT_PASSES:
        return 0.0
    xs, ys = list(values), list(values.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    start = my + slope * (min(xs) - mx)  # the fitted line at the first pass and the last
    end = my + slope * (max(xs) - mx)
    return max(-1.0, (end - start) / start) if start > 0 else 0.0  # a line below zero is a fall to 0


# -- judgement ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True, slots=True)
class _Ctx:
    times: dict[int, tuple[str, str]]
    counters: Sequence[Mapping[str, Any]]
    min_dip: int = MIN_DIP_PASSES

    def window(self, first: int, last: int) -> dict[str, Any]:
        t0 = self.times.get(first, ("", ""))[0]
        t1 = self.times.get(last, ("", ""))[1]
        return {"passes": [first, last], "from": t0, "to": t1}

    def words(self, first: int, last: int) -> str:
        w = self.window(first, last)
        span = f"pass {first}" if first == last else f"passes {first}-{last}"
        return f"{span} ({w['from'][11:19]}-{w['to'][11:19]} UTC)" if w["from"] else span

    def moved(self, host: str, first: int, last: int) -> list[Mapping[str, Any]]:
        """Counters (not gauges at rest) that moved on `host` in the dip's passes, +-1."""
        return [
            c
            for c in self.counters
            if c.get("host") == host
            and first - 1 <= int(c.get("soak_pass", -9)) <= last + 1
            and (c.get("severity") != "gauge" or c.get("counter") == "throttle_hw")
        ]


def _counter_words(moved: Sequence[Mapping[str, Any]]) -> str:
    total: dict[tuple[str, str], float] = defaultdict(float)
    for c in moved:
        total[(str(c["device"]), str(c["counter"]))] += float(c.get("delta", 0))
    return ", ".join(f"{d} {n} +{v:g}" for (d, n), v in sorted(total.items()))


def _dip_finding(
    ctx: _Ctx,
    component: Component,
    hosts: tuple[str, ...],
    what: str,
    d: Dip,
    unit: str,
    extra: dict[str, Any],
) -> Finding | None:
    """The finding of one dip; None for a dip shorter than MIN_DIP_PASSES that no error
    counter on its hosts explains (one slow pass of CPU ranks on a busy machine)."""
    moved = [c for h in hosts for c in ctx.moved(h, d.first, d.last)]
    explained = any(c.get("severity") == "error" for c in moved)
    if d.last - d.first + 1 < ctx.min_dip and not explained:
        return None
    sides = sorted({str(c.get("host")) for c in moved if c.get("severity") == "error"})
    if component == "link" and len(sides) == 1:
        # error counters (carrier changes: a flapping link, symbol errors) moved on one end of
        # the pair only: that end's port is what failed, not the pair; its node is named
        (side,) = sides
        other = next(h for h in hosts if h != side)
        component, hosts = "node", (side,)
        what = f"{side} (its error counters moved, {other}'s did not): {what}"
        moved = [c for c in moved if c.get("host") == side]
        extra = {**extra, "pair": [*sorted((side, other))]}
    said = _counter_words(moved)
    message = (
        f"{what} fell to {d.share:.0%} of its own median ({d.lowest:.3g} vs {d.reference:.3g} {unit}) in "
        f"{ctx.words(d.first, d.last)}"
        + (f"; counters that moved there: {said}" if said else "; no counter moved with it")
    )
    devices = sorted({str(c["device"]) for c in moved if c.get("severity") == "error"})
    return Finding(
        component=component,
        check="stability",
        status="unstable",
        measured=d.lowest,
        expected=d.reference,
        unit=unit,
        hosts=hosts,
        message=message + ".",
        extra={
            "window": ctx.window(d.first, d.last),
            "devices": devices,
            "counters": [dict(c) for c in moved],
            **extra,
        },
    )


def _node_and_link_dips(ctx: _Ctx, net: Sequence[NetRecord], gap: float) -> list[Finding]:
    """Node and link dips rail by rail (each rail its own fleet, as in localisation): a dip
    on some of a node's rails carries `rail`; one on every rail of it is the node's, `rails`."""
    rails = pair_rails(net)
    if len(rails) == 1:
        return _rail_dips(ctx, pair_series(net), gap, None)
    found = [f for j in rails for f in _rail_dips(ctx, pair_series(net, j), gap, j)]
    out: list[Finding] = []
    for _, group in groupby(sorted(found, key=_who), key=_who):
        fs = list(group)
        if {f.extra["rail"] for f in fs} == set(rails):  # every rail dipped: the node or link itself
            deepest = min(fs, key=lambda f: (f.measured or 0.0) / (f.expected or 1.0))
            extra = {k: v for k, v in deepest.extra.items() if k != "rail"}
            out.append(replace(deepest, extra={**extra, "rails": list(rails)}))
        else:
            out += fs
    return out


def _who(f: Finding) -> tuple[str, tuple[str, ...]]:
    return (f.component, f.hosts)


def _rail_dips(
    ctx: _Ctx, pairs: dict[tuple[str, str], dict[int, float]], gap: float, rail: int | None
) -> list[Finding]:
    scores = node_scores(pairs)
    on = {} if rail is None else {"rail": rail}
    said = "" if rail is None else f" on rail {rail}"
    fleet = {
        k: statistics.median(v[k] for v in scores.values() if k in v)
        for k in {k for v in scores.values() for k in v}
    }
    out: list[Finding] = []
    low_nodes: dict[str, set[int]] = {}
    for host, vals in sorted(scores.items()) if len(scores) >= MIN_FLEET else []:
        # with 2 nodes a slow pair cannot be told from a slow node: it is the link's dip
        own = below_median(vals, gap)
        low = {
            k: own.get(k, False) and (len(scores) < MIN_FLEET or v < (1 - gap) * fleet[k])
            for k, v in vals.items()
        }
        found = dips(vals, low)
        low_nodes[host] = {k for d in found for k in range(d.first, d.last + 1)}
        for d in found:
            out += _some(_dip_finding(ctx, "node", (host,), f"{host}'s best pair busbw{said}", d, "GB/s", on))
    for (a, b), vals in sorted(pairs.items()):
        own = below_median(vals, gap)
        low = {
            k: own.get(k, False)
            and (len(scores) < MIN_FLEET or v < (1 - gap) * min(scores[a][k], scores[b][k]))
            and k not in low_nodes.get(a, set()) | low_nodes.get(b, set())
            for k, v in vals.items()
        }
        for d in dips(vals, low):
            out += _some(_dip_finding(ctx, "link", (a, b), f"the {a}-{b} pair's busbw{said}", d, "GB/s", on))
    return out


def _some(f: Finding | None) -> list[Finding]:
    return [] if f is None else [f]


def _overlaps(f: Finding, hosts: Sequence[str], first: int, last: int) -> bool:
    p = f.extra["window"]["passes"]
    return bool(set(f.hosts) & set(hosts)) and p[0] <= last + 1 and first - 1 <= p[1]


def stability(
    net: Sequence[NetRecord],
    io: Sequence[IoRecord],
    counters: Sequence[Mapping[str, Any]],
    gap: float = GAP,
) -> list[Finding]:
    """Every `unstable` finding of a soak; [] when the records are not a soak's (counters
    without `soak_pass`, read around a plain sweep, are reports/judging/network/nic_counters.py's)."""
    counters = [c for c in counters if "soak_pass" in c]
    soaked_net = [r for r in net if soak_pass(r) is not None]
    soaked_io = [r for r in io if soak_pass(r) is not None]
    if not soaked_net and not soaked_io and not counters:
        return []
    ctx = _Ctx(times=pass_times([*soaked_net, *soaked_io]), counters=counters)
    found = _node_and_link_dips(ctx, soaked_net, gap)
    notes: list[tuple[tuple[str, ...], Dip, str]] = []
    for (scope, hosts), vals in sorted(scope_series(soaked_net).items()):
        many = scope in ("world", "inter-node") and len(set(hosts)) > 1
        component: Component = "inter-node network" if many else "intra-node network"
        low = below_median(vals, gap)
        for d in dips(vals, low):
            if any(_overlaps(f, hosts, d.first, d.last) for f in found):
                continue  # a node or link of this scope dipped then: that finding names it
            if any(c.get("severity") == "error" for h in hosts for c in ctx.moved(h, d.first, d.last)):
                # an error counter rose on one of its hosts then: the port or GPU is named, with this dip
                notes.append((hosts, d, f"{scope} busbw fell to {d.share:.0%} of its median then"))
                continue
            found += _some(
                _dip_finding(ctx, component, hosts, f"{scope} busbw", d, "x median", {"scope": scope})
            )
        trend = drift(vals)
        if trend <= -DRIFT_GAP:
            found.append(_drift_finding(ctx, component, hosts, scope, trend, vals))
    for (scope, path, workload, direction), vals in sorted(io_series(soaked_io).items()):
        component = "shared storage" if scope == "shared" else "local storage"
        for d in dips(vals, below_median(vals, gap)):
            # one point per checkpoint write, passes apart: a single slow write is a dip
            found += _some(
                _dip_finding(
                    replace(ctx, min_dip=1),
                    component,
                    (),
                    f"{workload} {direction} on {path}",
                    d,
                    "GB/s",
                    {"path": path},
                )
            )
    return _merged(found) + _counter_findings(ctx, found, notes)


def _merged(found: Sequence[Finding]) -> list[Finding]:
    """One finding per component: its deepest dip names it, the others are listed (a link
    that sags eleven times is one thing to fix, not eleven)."""
    groups: dict[tuple[Any, ...], list[Finding]] = defaultdict(list)
    for f in found:
        key = (
            f.component,
            f.hosts,
            f.unit,
            "drift" in f.extra,
            f.extra.get("scope"),
            f.extra.get("path"),
            f.extra.get("rail"),
        )
        groups[key].append(f)
    out = []
    for fs in groups.values():
        if len(fs) == 1:
            out.append(fs[0])
            continue
        deepest = min(fs, key=lambda f: (f.measured or 0.0) / (f.expected or 1.0))
        wins = [f.extra["window"] for f in fs]
        spans = ", ".join(
            f"{w['passes'][0]}-{w['passes'][1]}" for w in wins if w is not deepest.extra["window"]
        )
        out.append(
            replace(
                deepest,
                message=f"{deepest.message[:-1]} ({len(fs) - 1} more dips: passes {spans}).",
                extra={
                    **deepest.extra,
                    "dips": wins,
                    "devices": sorted({d for f in fs for d in f.extra.get("devices", [])}),
                    "counters": [c for f in fs for c in f.extra.get("counters", [])],
                },
            )
        )
    return out


def _drift_finding(
    ctx: _Ctx,
    component: Component,
    hosts: tuple[str, ...],
    scope: str,
    trend: float,
    vals: Mapping[int, float],
) -> Finding:
    first, last = min(vals), max(vals)
    return Finding(
        component=component,
        check="stability",
        status="unstable",
        measured=1 + trend,
        expected=1.0,
        unit="x median",
        hosts=hosts,
        message=f"{scope} busbw drifted {trend:+.0%} over {ctx.words(first, last)} (least-squares trend).",
        extra={"window": ctx.window(first, last), "drift": trend, "scope": scope},
    )


def _counter_findings(
    ctx: _Ctx, dips_found: Sequence[Finding], notes: Sequence[tuple[tuple[str, ...], Dip, str]]
) -> list[Finding]:
    """Error counters that rose where no dip of the same host explains them."""
    rises: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for c in ctx.counters:
        if c.get("severity") == "error" and float(c.get("delta", 0)) > 0:
            rises[(str(c["host"]), str(c["device"]))].append(c)
    out = []
    for (host, device), cs in sorted(rises.items()):
        passes = sorted(int(c["soak_pass"]) for c in cs)
        if any(
            _overlaps(f, (host,), passes[0], passes[-1]) and device in f.extra["devices"] for f in dips_found
        ):
            continue
        gpu = device.startswith("gpu")
        seen = [
            text
            for hosts, d, text in notes
            if host in hosts and d.first - 1 <= passes[-1] and passes[0] <= d.last + 1
        ]
        with_dip = "; ".join(seen) if seen else "no dip of its bandwidth went with it (yet)"
        out.append(
            Finding(
                component="gpu" if gpu else "network port",
                check="stability",
                status="unstable",
                measured=sum(float(c["delta"]) for c in cs),
                expected=0.0,
                unit="count",
                hosts=(host,),
                message=f"{host} {device}: {_counter_words(cs)} in {ctx.words(passes[0], passes[-1])}; "
                f"{with_dip}: an error counter that rises under load is a component to reseat or replace "
                "before it costs a run.",
                extra={
                    "device": device,
                    "window": ctx.window(passes[0], passes[-1]),
                    "counters": [dict(c) for c in cs],
                },
            )
        )
    return out
