"""Storage evidence (pure): the io records as the report shows them, each marked with whether
it may stand for the storage against an advertised figure (reports/shared/storage_rule.py decides).

torch.save / torch.dcp records are the framework's save path through the page cache, shown
beside and used by the starvation model's checkpoint component.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from reports.shared.records import IoRecord
from reports.shared.spread import spread_of
from reports.shared.storage_rule import judged_by_iops, why_not_compared

# the framework's own save paths (iobench/torch_ckpt.py): a real checkpoint through the page
# cache, shown beside fio and used by the starvation model, never held against the spec
REAL_SAVE_BACKENDS = ("torch.save", "torch.dcp")


def sustained_text(r: IoRecord) -> str:
    """'0.52 GB/s past the half-size save' (iobench/sustained.py), or '' for a record of one size."""
    v = r.extra.get("sustained_GBps")
    if r.backend not in REAL_SAVE_BACKENDS or isinstance(v, bool) or not isinstance(v, (int, float)):
        return ""
    return f"{v:.3g} GB/s past the half-size save"


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
                    sustained_text(r),
                    "faster than fio's sequential write on this path: a cache absorbed it, not the device's figure"
                    if r.extra.get("cache_absorbed") is True
                    else "",
                    "measured again: under its threshold at first"
                    if r.extra.get("confirmation") is True
                    else "",
                    f"fio job {r.extra['job']}" if r.extra.get("job") not in (None, r.workload) else "",
                    "small-block random I/O: judged by its IOPS" if judged_by_iops(r) else "",
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
