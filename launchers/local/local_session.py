"""What the local sessions on this machine share (`stoker run`, `stoker soak`, `stoker check`):
how many GPUs this process may use, the exit code of an interrupt, and the table of phases
and findings printed at the end of a run or a soak."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from launchers.local.phases import PhaseResult

INTERRUPTED = 130  # as a shell reports a Ctrl-C
_NVIDIA_DEV = re.compile(r"^nvidia\d+$")


# the variables that hide GPUs from a process: CUDA's, and HIP's and the ROCm runtime's on AMD
VISIBLE_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")  # the ROCm kernel driver's agents


def count_gpus(dev_names: Iterable[str], environ: Mapping[str, str], amd_gpus: int = 0) -> int:
    """GPUs this process may use, without importing torch: CUDA_VISIBLE_DEVICES (or HIP's,
    ROCm's) when set, else the /dev/nvidiaN device files, else on an AMD node (/dev/kfd) the
    GPU agents the ROCm driver lists (`amd_gpus`, kfd_gpus): an MI300X node runs its ranks on
    its GPUs through RCCL, never gloo on its CPUs."""
    for var in VISIBLE_VARS:
        visible = environ.get(var)
        if visible is not None:
            return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    names = list(dev_names)
    return sum(1 for n in names if _NVIDIA_DEV.match(n)) or (amd_gpus if "kfd" in names else 0)


def kfd_gpus(properties: Iterable[str]) -> int:
    """GPU agents among the KFD topology nodes' `properties` files ("name value" lines, one per
    property, as the amdgpu driver prints them): a node with SIMDs is a GPU, the CPU's has none."""
    count = 0
    for text in properties:
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "simd_count" and value.strip().isdigit() and int(value) > 0:
                count += 1
                break
    return count


def local_gpus(environ: Mapping[str, str]) -> int:
    """count_gpus of this machine (reads /dev and the KFD topology)."""
    devs = os.listdir("/dev") if os.path.isdir("/dev") else []
    amd = 0
    if "kfd" in devs and KFD_NODES.is_dir():
        texts = []
        for node in sorted(KFD_NODES.iterdir()):
            try:
                texts.append((node / "properties").read_text(errors="replace"))
            except OSError:
                continue
        amd = kfd_gpus(texts)
    return count_gpus(devs, environ, amd)


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
