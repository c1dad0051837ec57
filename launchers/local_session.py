"""What the local sessions on this machine share (`stoker run`, `stoker soak`, `stoker check`):
how many GPUs this process may use, the ranks to start without one, the exit code of an
interrupt, and the table of phases and findings printed at the end of a run or a soak."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from launchers.phases import PhaseResult

CPU_RANKS = 2
INTERRUPTED = 130  # as a shell reports a Ctrl-C
_NVIDIA_DEV = re.compile(r"^nvidia\d+$")


def count_gpus(dev_names: Iterable[str], environ: Mapping[str, str]) -> int:
    """GPUs this process may use, without importing torch: CUDA_VISIBLE_DEVICES when set,
    else the /dev/nvidiaN device files."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    return sum(1 for n in dev_names if _NVIDIA_DEV.match(n))


def _fmt(value: Any) -> str:
    return f"{value:.3g}" if isinstance(value, float) else ("-" if value is None else str(value))


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def summary(results: list[PhaseResult], verdict: dict[str, Any] | None, out: Path) -> str:
    parts = [
        table(
            [[r.name, "ok" if r.ok else f"exit {r.rc}", f"{r.elapsed_s:.1f}"] for r in results],
            ["phase", "status", "seconds"],
        )
    ]
    if verdict is not None:
        rows = [
            [
                f.get("component", ""),
                f.get("check", ""),
                f.get("status", ""),
                _fmt(f.get("measured")),
                _fmt(f.get("expected")),
                f.get("unit", ""),
            ]
            for f in verdict.get("findings", [])
        ]
        if rows:
            parts.append(table(rows, ["component", "check", "status", "measured", "expected", "unit"]))
        words = str(verdict.get("headline") or str(verdict.get("verdict", "?")).upper())
        parts.append(f"verdict: {words}  (run {verdict.get('run_id', '?')})")
    else:
        parts.append("verdict: none (the report was not written)")
    # only what is there: a report that failed leaves some or none of its files
    written = [n for n in ("report.md", "report.html", "verdict.json") if (out / n).is_file()]
    parts.append(
        f"results: {out}" + (f"  ({', '.join(written)})" if written else "  (no report files were written)")
    )
    return "\n\n".join(parts)
