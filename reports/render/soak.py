"""report.html's "Soak" section: the time series of a soak, on one time axis
(minutes since its first record). Pure apart from matplotlib drawing into memory:

- busbw over time per scope (one line per op at the largest size), the passing band when a
  spec gives the figure, and the windows of `unstable` findings shaded;
- a node x time heat map of each node's best pair busbw as a share of that pass's fleet median;
- the counters that moved, on the same axis (error counters red, the others grey);
- storage bandwidth per pass.
"""

from __future__ import annotations

import html
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from reports.evidence.soak import SPIKE_K, io_series, node_scores, pair_series, soak_pass, spikes
from reports.render.plots import encode_png, load_pyplot
from reports.shared.records import IoRecord, NetRecord

_W = (9.0, 3.0)


def _epoch(ts: str) -> float:
    try:
        return float(time.mktime(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")))
    except (ValueError, TypeError):
        return 0.0


def _axis(ax: Any, t_end: float, title: str, ylabel: str) -> None:
    ax.set_xlim(0, max(t_end, 0.1))
    ax.set_xlabel("minutes since the soak's first record")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)


def _shade(ax: Any, windows: Sequence[tuple[float, float, str]]) -> None:
    for i, (a, b, label) in enumerate(windows):
        ax.axvspan(a, max(b, a + 0.05), color="tab:red", alpha=0.12, label="unstable" if i == 0 else None)
        ax.annotate(
            label, (a, 1.0), xycoords=("data", "axes fraction"), fontsize=6, color="tab:red", va="top"
        )


def _img(b64: str, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}">'


def section(
    net: Sequence[NetRecord],
    io: Sequence[IoRecord],
    counters: Sequence[Mapping[str, Any]],
    findings: Sequence[Any],
    expected: Mapping[str, float],
    threshold: float | None,
) -> list[str]:
    """The section's HTML pieces; [] when the records are not a soak's."""
    soaked = [r for r in net if soak_pass(r) is not None]
    soaked_io = [r for r in io if soak_pass(r) is not None]
    if not soaked and not soaked_io:
        return []
    both: list[NetRecord | IoRecord] = [*soaked, *soaked_io]
    t0 = min(_epoch(r.ts) for r in both)
    start: dict[int, float] = {}
    for r in both:
        k = soak_pass(r)
        assert k is not None
        start[k] = min(start.get(k, 1e18), (_epoch(r.ts) - t0) / 60)
    t_end = max([(_epoch(r.ts) - t0) / 60 for r in both] + [0.0]) + 0.05
    windows = [
        (
            start.get(f.extra["window"]["passes"][0], 0.0),
            (_epoch(f.extra["window"]["to"]) - t0) / 60 if f.extra["window"].get("to") else t_end,
            f"{', '.join(f.hosts) or f.component}",
        )
        for f in findings
        if f.status == "unstable" and "window" in f.extra
    ]
    passes = sorted(start)
    out = [
        "<h2>Soak</h2>",
        f'<p class="muted">{len(passes)} passes over {t_end:.1f} minutes (passes {passes[0]}..{passes[-1]}); '
        "each point is one pass; red bands are the windows of unstable findings.</p>",
    ]
    out += _scope_plots(soaked, start, t_end, windows, expected, threshold)
    out += _spikes(soaked)
    out += _heat_map(soaked, start, t_end)
    out += _counter_plot(counters, t0, t_end, windows)
    out += _storage_plot(soaked_io, start, t_end, windows)
    return out


_COMPONENT = {
    "world": "inter-node network",
    "inter-node": "inter-node network",
    "intra-node": "intra-node network",
}


def _scope_plots(
    net: Sequence[NetRecord],
    start: Mapping[int, float],
    t_end: float,
    windows: Sequence[tuple[float, float, str]],
    expected: Mapping[str, float],
    threshold: float | None,
) -> list[str]:
    by_scope: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    top: dict[str, int] = defaultdict(int)
    for r in net:
        if r.scope in _COMPONENT:
            top[r.scope] = max(top[r.scope], r.bytes)
    for r in net:
        k = soak_pass(r)
        if r.scope in _COMPONENT and r.bytes == top[r.scope] and k is not None:
            by_scope[r.scope][r.op][k].append(r.busbw_GBps)
    out = []
    plt = load_pyplot()
    for scope, ops in sorted(by_scope.items()):
        fig, ax = plt.subplots(figsize=_W)
        for op, vals in sorted(ops.items()):
            ks = sorted(vals)
            ax.plot(
                [start[k] for k in ks],
                [min(vals[k]) for k in ks],
                marker="o",
                markersize=2.5,
                linewidth=1.2,
                label=op,
            )
        adv = expected.get(_COMPONENT[scope])
        if adv and threshold:
            ax.axhspan(
                adv * threshold,
                adv,
                color="tab:green",
                alpha=0.12,
                label=f"passes (≥ {threshold:.0%} of {adv:g})",
            )
        _shade(ax, windows)
        ax.set_ylim(bottom=0)
        _axis(ax, t_end, f"{scope}: busbw per pass at {top[scope] >> 20} MiB (lowest group)", "busbw (GB/s)")
        ax.legend(fontsize=7, loc="lower right")
        out.append(_img(encode_png(fig), f"{scope} busbw over time"))
    return out


def _spikes(net: Sequence[NetRecord]) -> list[str]:
    """Passes whose p99 op time (slowest rank) is over SPIKE_K x the scope's median p99: the
    tail that a mean hides. Shown, not judged: with a few iterations p99 is nearly the max."""
    p99: dict[str, dict[int, float]] = defaultdict(dict)
    for r in net:
        k = soak_pass(r)
        if k is not None and r.time_p99_s and r.time_p99_s > 0 and r.time_s > 0:
            # against the mean op time, so that sizes and ops compare
            p99[r.scope][k] = max(p99[r.scope].get(k, 0.0), r.time_p99_s / r.time_s)
    said = [f"{scope}: pass{'es' if len(ks) > 1 else ''} {', '.join(map(str, ks))}"
            for scope, vals in sorted(p99.items()) if (ks := spikes(vals))]  # fmt: skip
    what = "; ".join(said) if said else "none"
    return [
        f'<p class="muted">p99 spikes (p99 / mean op time over {SPIKE_K:g}x its median): {html.escape(what)}.</p>'
    ]


def _heat_map(net: Sequence[NetRecord], start: Mapping[int, float], t_end: float) -> list[str]:
    scores = node_scores(pair_series(net))
    if not scores:
        return []
    passes = sorted({k for v in scores.values() for k in v})
    hosts = sorted(scores)
    fleet = {k: sorted(v[k] for v in scores.values() if k in v) for k in passes}
    med = {k: vs[len(vs) // 2] for k, vs in fleet.items()}
    grid = [
        [scores[h].get(k, float("nan")) / med[k] if med[k] else float("nan") for k in passes] for h in hosts
    ]
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=(_W[0], 0.5 + 0.28 * len(hosts)))
    edges = [start[k] for k in passes] + [t_end]
    mesh = ax.pcolormesh(edges, range(len(hosts) + 1), grid, cmap="RdYlGn", vmin=0, vmax=1.2, shading="flat")
    ax.set_yticks([i + 0.5 for i in range(len(hosts))], hosts, fontsize=7 if len(hosts) < 40 else 4)
    _axis(ax, t_end, "pairs: each node's best pair busbw / the pass's fleet median", "node")
    ax.grid(False)
    fig.colorbar(mesh, ax=ax, pad=0.01, label="share of fleet median")
    return [_img(encode_png(fig), "node by time heat map of pair busbw")]


def _counter_plot(
    counters: Sequence[Mapping[str, Any]],
    t0: float,
    t_end: float,
    windows: Sequence[tuple[float, float, str]],
) -> list[str]:
    moved = [c for c in counters if c.get("severity") != "gauge"]
    if not moved:
        return ['<p class="muted">Counters: none moved between passes (IB port counters, Ethernet statistics, '
                "GPU ECC and Xid lines, where the nodes have them).</p>"]  # fmt: skip
    series: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for c in moved:
        key = f"{c['host']} {c['device']} {c['counter']}"
        series[key].append(((_epoch(str(c.get("ts", ""))) - t0) / 60, float(c["delta"]), str(c["severity"])))
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=_W)
    for key, pts in sorted(series.items())[:12]:
        err = pts[0][2] == "error"
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="v" if err else ".", linestyle="none",
                markersize=7 if err else 4, label=key, color=None if err else "grey")  # fmt: skip
    _shade(ax, windows)
    top = max(p[1] for pts in series.values() for p in pts)
    if top > 50:  # symbol errors by the thousand beside a link_downed of 1
        ax.set_yscale("symlog")
    else:
        ax.set_ylim(0, top * 1.25)
    _axis(ax, t_end, "counters that moved (delta over the pass, read after it)", "delta")
    ax.legend(fontsize=6, loc="upper left")
    return [_img(encode_png(fig), "counter deltas over time")]


def _storage_plot(
    io: Sequence[IoRecord],
    start: Mapping[int, float],
    t_end: float,
    windows: Sequence[tuple[float, float, str]],
) -> list[str]:
    series = io_series(io)
    if not series:
        return []
    plt = load_pyplot()
    fig, ax = plt.subplots(figsize=_W)
    for (_scope, path, workload, direction), vals in sorted(series.items()):
        ks = sorted(vals)
        label = f"{workload} {direction} {path}"
        ax.plot([start[k] for k in ks], [vals[k] for k in ks], marker="s", markersize=3, label=label[:60])
    _shade(ax, windows)
    ax.set_ylim(bottom=0)
    _axis(ax, t_end, "storage bandwidth per checkpoint write (fio bw, all writers)", "GB/s")
    ax.legend(fontsize=6, loc="lower right")
    return [_img(encode_png(fig), "storage bandwidth per pass")]
