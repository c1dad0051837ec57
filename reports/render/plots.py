"""The report's figures (matplotlib, Agg backend), returned as base64 PNG for embedding.

Scales to 1,000 nodes: a sweep plot draws one line per op (groups are already averaged),
per-host values become a heatmap grid rather than 1,000 lines, and the pair matrix is a
single image. PNGs carry no software/date metadata, so the same data gives the same bytes.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_DPI = 96


@dataclass(frozen=True, kw_only=True, slots=True)
class Series:
    label: str
    sizes: Sequence[int]
    values: Sequence[float]


def warm_up() -> None:
    """Import matplotlib and draw small figures, thrown away: the imports, fonts, text caches
    and image code are then ready for the first real figure (figure_process.FigureProcess)."""
    bar_plot("warm-up", ["a"], [1.0], [("spec", [2.0])])
    host_grid("warm-up", ["a", "b"], [1.0, 2.0])  # imshow and a colour bar: the grids and the matrix


def load_pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display, no GUI toolkit: works on a headless node
    import matplotlib.pyplot as plt

    return plt


def encode_png(fig: Any, tight: bool = True) -> str:
    buf = io.BytesIO()
    # a tight layout, not bbox_inches="tight": that draws every figure twice (a 1,000-node
    # report has a dozen figures; drawing is most of its rendering time)
    if tight:
        fig.set_layout_engine("tight")
    fig.savefig(buf, format="png", dpi=_DPI, metadata={"Software": None})
    load_pyplot().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


# a tick label or legend entry longer than this is cut in the middle (a storage bar names its path
# by a short key, reports/render/paths.py; an imported job keeps its name): a long one would take the
# width from the plot area (the layout keeps the figure's size and shrinks the axes)
LABEL_CHARS = 42


def fit(label: str, limit: int = LABEL_CHARS) -> str:
    """`label` cut in its middle to `limit` characters, keeping its start (what it is) and its
    end (which path: the last directories tell paths apart)."""
    if len(label) <= limit:
        return label
    head = (limit - 1) // 3
    return label[:head] + "…" + label[len(label) - (limit - 1 - head) :]


def _size_label(n: float, _pos: Any = None) -> str:
    for suffix, unit in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= unit:
            return f"{n / unit:g}{suffix}"
    return f"{n:g}"


def sweep_plot(
    title: str,
    series: Sequence[Series],
    advertised: float | Sequence[tuple[str, float]] | None = None,
    threshold: float | None = None,
) -> str:
    """busbw against message size (log2 x), the advertised line and the passing band
    between threshold × advertised and advertised. `advertised` is one figure, or one
    (scope, GB/s) per scope the curves show: each scope its own line, so that an
    intra-node (NVLink) curve is never drawn against the inter-node (InfiniBand) line."""
    plt = load_pyplot()
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for s in series:
        ax.plot(list(s.sizes), list(s.values), marker="o", markersize=3, linewidth=1.5, label=fit(s.label))
    if isinstance(advertised, (int, float)):
        lines: list[tuple[str, float]] = [("", float(advertised))] if advertised else []
    else:
        lines = [(scope, float(v)) for scope, v in dict(advertised or ()).items() if v]
    for i, (scope, adv) in enumerate(lines):
        color = "black" if len(lines) == 1 else ("black", "tab:purple", "tab:brown")[i % 3]
        name = f"{scope} advertised" if scope else "advertised"
        ax.axhline(adv, color=color, linestyle="--", linewidth=1, label=f"{name} {adv:g} GB/s")
        if threshold:
            ax.axhspan(
                adv * threshold,
                adv,
                color="tab:green" if len(lines) == 1 else color,
                alpha=0.12 if len(lines) == 1 else 0.06,
                label=f"{scope + ' ' if scope else ''}passes (≥ {threshold:.0%} of advertised)",
            )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("message size (bytes, nccl-tests size column)")
    ax.set_ylabel("busbw (GB/s)")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    # fixed margins (the legend is inside): a tight layout measures every text first, which
    # doubles the drawing time of the figure a report draws most often
    fig.subplots_adjust(left=0.085, right=0.985, bottom=0.13, top=0.92)
    return encode_png(fig, tight=False)


def bar_plot(
    title: str,
    labels: Sequence[str],
    achieved: Sequence[float],
    marks: Sequence[tuple[str, Sequence[float | None]]] = (),
) -> str:
    """Horizontal bars of achieved GB/s with tick marks at references (spec, demand). The title
    names only the references drawn ("title vs spec and workload demand"); each mark's value is
    written beside it, so that a demand far below the bars (an LLM's text, KB/s against GB/s)
    is read, not lost on the axis."""
    plt = load_pyplot()
    n = len(labels)
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.35 * n))
    ys = list(range(n))
    ax.barh(ys, list(achieved), color="tab:blue", alpha=0.8, label="achieved")
    drawn = []
    for (name, values), color in zip(marks, ("tab:red", "tab:orange", "tab:purple")):
        pts = [(y, v) for y, v in zip(ys, values) if v]
        if pts:
            drawn.append(name)
            ax.scatter(
                [v for _, v in pts],
                [y for y, _ in pts],
                marker="|",
                s=400,
                color=color,
                linewidths=2,
                label=name,
                zorder=3,
            )
            for y, v in pts:
                ax.annotate(
                    f"{name} {v:.3g}",
                    (v, y),
                    xytext=(3, -9),
                    textcoords="offset points",
                    fontsize=6,
                    color=color,
                )
    ax.set_yticks(ys)
    ax.set_yticklabels([fit(x) for x in labels], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s")
    ax.set_title(title + (" vs " + " and ".join(drawn) if drawn else ""), fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over a mark
    return encode_png(fig)


def host_grid(title: str, hosts: Sequence[str], values: Sequence[float]) -> str:
    """Per-host values as a near-square heatmap grid in host order; the slowest hosts
    stand out as dark cells. Names are written in the cells when they fit."""
    import numpy as np

    plt = load_pyplot()
    n = len(hosts)
    cols = max(1, math.ceil(math.sqrt(n)))
    rows = math.ceil(n / cols)
    grid = np.full(rows * cols, np.nan)
    grid[:n] = values
    fig, ax = plt.subplots(figsize=(min(9.0, 1.2 + 0.9 * cols), min(7.0, 0.8 + 0.5 * rows)))
    im = ax.imshow(grid.reshape(rows, cols), cmap="viridis", aspect="auto")
    if n <= 64:
        vmin, vmax = float(np.nanmin(grid)), float(np.nanmax(grid))
        for i, (h, v) in enumerate(zip(hosts, values)):
            light = vmax > vmin and (v - vmin) / (vmax - vmin) < 0.5
            ax.text(
                i % cols,
                i // cols,
                f"{h}\n{v:.1f}",
                ha="center",
                va="center",
                fontsize=6,
                color="white" if light else "black",
            )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, label="busbw (GB/s)")
    return encode_png(fig)


def host_grids(title: str, per_op: Sequence[tuple[str, Sequence[str], Sequence[float]]]) -> str:
    """Per-host values of several ops in one figure: a near-square grid per op in host order,
    each as % of its fleet median on one colour scale, so the slow hosts of every op stand out
    as dark cells (one figure, not one per op: a 1,000-node report draws it once)."""
    import numpy as np

    plt = load_pyplot()
    k = len(per_op)
    fig, axes = plt.subplots(1, k, figsize=(min(12.0, 1.5 + 3.2 * k), 3.6), squeeze=False)
    im = None
    for ax, (op, hosts, values) in zip(axes[0], per_op):
        n = len(hosts)
        cols = max(1, math.ceil(math.sqrt(n)))
        rows = math.ceil(n / cols)
        v = np.asarray(values, dtype=float)
        med = float(np.median(v)) if n else 0.0
        grid = np.full(rows * cols, np.nan)
        grid[:n] = 100.0 * v / med if med > 0 else v
        im = ax.imshow(grid.reshape(rows, cols), cmap="viridis", aspect="auto", vmin=0.0, vmax=110.0)
        if n <= 16:
            for i, (h, x) in enumerate(zip(hosts, values)):
                ax.text(i % cols, i // cols, f"{h}\n{x:.1f}", ha="center", va="center", fontsize=6)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{op} ({n} hosts)", fontsize=8)
    fig.suptitle(title, fontsize=10)
    if im is not None:
        fig.colorbar(im, ax=list(axes[0]), label="% of the fleet median")
    return encode_png(fig, tight=False)


def matrix_plot(title: str, hosts: Sequence[str], matrix: Any) -> str:
    """The symmetric pair matrix (an array, NaN where unmeasured); unmeasured pairs are blank."""
    import numpy as np

    plt = load_pyplot()
    m = np.asarray(matrix, dtype=float)
    fig, ax = plt.subplots(figsize=(6.5, 5.5))
    im = ax.imshow(m, cmap="viridis", interpolation="nearest")
    if len(hosts) <= 32:
        ax.set_xticks(range(len(hosts)))
        ax.set_xticklabels(list(hosts), rotation=90, fontsize=6)
        ax.set_yticks(range(len(hosts)))
        ax.set_yticklabels(list(hosts), fontsize=6)
    else:
        ax.set_xlabel(f"{len(hosts)} hosts, sorted by name")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, label="busbw (GB/s)")
    return encode_png(fig)


def rail_heatmap(
    title: str,
    hosts: Sequence[str],
    rails: Sequence[int],
    shares: Any,
    marked: Sequence[tuple[int, int]] = (),
) -> str:
    """Node x rail: each cell its share of the rail's fleet median (an array [host, rail], NaN
    blank), hosts down the side in name order; a slow node is a row, a slow NIC one cell. The
    `marked` cells (row, column: the outliers report.md lists) are outlined in red and, where
    there are too many hosts to name every row, their rows are named at the side: at 1,000
    hosts a row is under a pixel tall, and the outline and the name are what a reader finds."""
    import numpy as np
    from matplotlib.patches import Rectangle

    plt = load_pyplot()
    m = np.asarray(shares, dtype=float) * 100
    fig, ax = plt.subplots(figsize=(4.5, 6.5))
    im = ax.imshow(
        m,
        cmap="viridis",
        aspect="auto",
        interpolation="nearest",
        vmin=0,
        vmax=max(100.0, float(np.nanmax(m)) if np.isfinite(m).any() else 100.0),
    )
    ax.set_xticks(range(len(rails)))
    ax.set_xticklabels([str(r) for r in rails], fontsize=7)
    ax.set_xlabel("rail (local rank)")
    if len(hosts) <= 48:
        ax.set_yticks(range(len(hosts)))
        ax.set_yticklabels([fit(h) for h in hosts], fontsize=6)
    else:
        ax.set_ylabel(f"{len(hosts)} hosts, sorted by name")
        rows = sorted({r for r, _ in marked})
        ax.set_yticks(rows)
        ax.set_yticklabels([fit(hosts[r]) for r in rows], fontsize=6, color="red")
    for r, c in marked:
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.2))
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="% of the rail's fleet median")
    return encode_png(fig)


def sweeps_with_lines(title: str, series: Sequence[Series], advertised: Sequence[float | None]) -> str:
    """Several clusters' busbw curves of one op and scope, each with its own advertised
    line in its colour (dashed): how far each is from what it was sold as."""
    plt = load_pyplot()
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    for i, (s, adv) in enumerate(zip(series, advertised)):
        color = f"C{i % 10}"
        # markers and dashes differ too, so that two clusters with the same curve both show
        ax.plot(
            list(s.sizes),
            list(s.values),
            marker="osD^v"[i % 5],
            markersize=4 + (i % 3),
            linewidth=1.5,
            linestyle=("-", "-.", ":")[i % 3],
            label=fit(s.label),
            color=color,
        )
        if adv:
            ax.axhline(
                adv,
                color=color,
                linestyle="--",
                linewidth=1,
                label=f"{fit(s.label.split(' (')[0])} advertised {adv:g} GB/s",
            )
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
    ax.set_xlabel("message size (bytes, nccl-tests size column)")
    ax.set_ylabel("busbw (GB/s)")
    ys = [v for s in series for v in s.values if v > 0] + [a for a in advertised if a]
    # always log-log, so that the charts of one comparison read alike (none linear);
    # a 0.6 GB/s gloo curve under a 450 GB/s NVLink line would be flat at 0 on a linear axis
    ax.set_yscale("log")
    if ys:
        ax.set_ylim(min(ys) / 2, max(ys) * 2)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return encode_png(fig)


def cost_stack(
    title: str,
    names: Sequence[str],
    totals: Sequence[float],
    parts: Sequence[tuple[str, Sequence[float]]],
    unit: str,
    noise: Sequence[float | None] = (),
) -> str:
    """One horizontal bar per cluster: the cost of a unit of work, split into what pays for
    compute and what pays for GPUs waiting on each component (cost x that component's
    share of the idle time); the segments add up to the bar."""
    plt = load_pyplot()
    n = len(names)
    fig, ax = plt.subplots(figsize=(7.5, 1.2 + 0.5 * n))
    ys = list(range(n))
    left = [0.0] * n
    for (label, shares), color in zip(parts, ["tab:green", *[f"C{i}" for i in (0, 1, 3, 4, 5, 6)]]):
        widths = [t * s for t, s in zip(totals, shares)]
        ax.barh(ys, widths, left=left, color=color, label=label, height=0.6)
        left = [a + w for a, w in zip(left, widths)]
    err = [t * (nz or 0.0) for t, nz in zip(totals, noise)]
    if any(err):  # the run-to-run spread where it is known
        ax.errorbar(totals, ys, xerr=err, fmt="none", ecolor="black", capsize=3, linewidth=1)
    for y, t in zip(ys, totals):
        ax.text(t, y, f" ${t:,.2f}", va="center", fontsize=8)
    ax.set_yticks(ys)
    ax.set_yticklabels([fit(x) for x in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_xlim(right=max(totals) * 1.2 if totals else 1)
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return encode_png(fig)


def grouped_bars(
    title: str,
    groups: Sequence[str],
    names: Sequence[str],
    values: Sequence[Sequence[float | None]],
    noise: Sequence[Sequence[float | None]] | None = None,
) -> str:
    """values[i][k]: cluster k in group i (GB/s); a missing value leaves a gap, never a 0 bar.
    noise[i][k]: its relative noise, drawn as an error bar where it is known."""
    plt = load_pyplot()
    n, k = len(groups), max(1, len(names))
    fig, ax = plt.subplots(figsize=(7.5, 1.0 + 0.3 * n * k))
    h = 0.8 / k
    for j, name in enumerate(names):
        have = [i for i in range(n) if values[i][j] is not None]
        vals = [float(values[i][j]) for i in have]  # type: ignore[arg-type]
        err = [v * float((noise[i][j] if noise else None) or 0.0) for i, v in zip(have, vals)]
        ax.barh(
            [i + j * h for i in have],
            vals,
            height=h,
            color=f"C{j % 10}",
            label=fit(name),
            xerr=err if any(err) else None,
            capsize=2,
        )
    ax.set_yticks([i + 0.4 - h / 2 for i in range(n)])
    ax.set_yticklabels([fit(x) for x in groups], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return encode_png(fig)
