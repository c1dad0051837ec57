"""Storage evidence (pure): the io records as the report shows them, and which of them may
stand for the storage against an advertised figure.

Only IO that bypassed the page cache (fio O_DIRECT, or buffered over a data set larger than
the host's memory) and ran long enough to be steady is compared; torch.save / torch.dcp
records are the framework's save path through the page cache, shown beside and used by the
starvation model's checkpoint component.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from reports.records import IoRecord
from reports.spread import spread_of

# the framework's own save paths (iobench/torch_ckpt.py): a real checkpoint through the page
# cache, shown beside fio and used by the starvation model, never held against the spec
REAL_SAVE_BACKENDS = ("torch.save", "torch.dcp")
# a storage record shorter than this is not a steady bandwidth (stoker's fio jobs run at
# least 2 s after their ramp; fio may report a hair under): shown, never judged
MIN_STEADY_S = 1.5


def why_not_compared(r: IoRecord) -> str:
    """Why a storage record may not stand for the disk against its advertised figure ("" when
    it may)."""
    if r.backend.startswith("torch"):
        return "the framework's save path, through the page cache"
    if r.direct is not True:
        data, ram = r.extra.get("data_bytes") or 0, r.extra.get("ram_bytes") or 0
        if not (r.direct is False and data > ram > 0):
            return (
                "buffered IO that the page cache can hold" if r.direct is False else "direct IO not recorded"
            )
    if 0 < r.runtime_s < MIN_STEADY_S:
        return f"ran {r.runtime_s:.2g} s, too short to be a steady bandwidth (at least {MIN_STEADY_S:g} s)"
    return ""


def io_frame(io: Sequence[IoRecord]) -> pd.DataFrame:
    """One row per io record, in the report's order."""
    rows = [
        {
            "workload": r.workload,
            "direction": r.direction,
            "path": r.path,
            "scope": r.scope,
            "procs": r.procs,
            "nodes": r.nodes,
            "bw": r.bw_GBps,
            "iops": r.iops,
            "p50_ms": r.lat_ms.get("p50"),
            "p99_ms": r.lat_ms.get("p99"),
            "backend": r.backend,
            "block": r.block_size,
            "bytes": r.bytes,
            "op": str(r.extra.get("op", "")),  # metadata records name their operation (create, stat, ...)
            "cache_suspect": r.cache_suspect,
            "failed": r.failed,
            "compared": not why_not_compared(r),
            # beside the figure: its spread, and whether it is a confirming measurement
            "aside": "; ".join(
                x
                for x in (
                    spread_of(r).text() if "samples_GBps" in r.extra else "",
                    "measured again: under its threshold at first"
                    if r.extra.get("confirmation") is True
                    else "",
                )
                if x
            ),
        }
        for r in io
    ]
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    keys = ["scope", "path", "workload", "direction", "op", "backend", "procs", "block"]
    return df.sort_values(keys, kind="stable").reset_index(drop=True)
