"""What a save's two sizes say about the rate a larger checkpoint is written at, and whether a
save's figure is the device's (pure).

A write-back cache (the page cache ends at the fsync, but a disk's or a hypervisor's cache
does not) and a cloud disk's burst credits absorb a small save: on the 2-core test VM a
341 MB torch.save + fsync ran at 0.7–1.5 GB/s and a 1 GiB one at 0.5–0.66 GB/s. A save's rate
therefore depends on its size, and a checkpoint of tens of GB is written at the rate its
bytes past the absorbed part go. Each repeat of `stoker io`'s save writes two sizes
(iobench/torch_ckpt.py `sizes`); the seconds each byte past the smaller adds (the slope) is
that sustained rate's inverse. Its median over the repeats is taken, not the median of the
rates: a slope near zero is a rate near infinity.

A save faster than fio's sequential write of the same path on the same host (O_DIRECT,
`--runtime` seconds of it) moved its bytes faster than that device was seen to take them: a
cache absorbed them, and the figure is not the device's (`cache_absorbed`).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from reports.shared.records import IoRecord

# a save this much faster than fio's sequential write on the same host is absorbed: fio's
# figure moves a few percent between runs (its bw_cv), so a save level with it is not flagged
ABSORBED_MARGIN = 1.10


def slope_s_per_byte(small_bytes: float, small_s: float, large_bytes: float, large_s: float) -> float | None:
    """Seconds each byte past the smaller save added; None when the larger moved no more."""
    if large_bytes <= small_bytes:
        return None
    return (large_s - small_s) / (large_bytes - small_bytes)


def sustained_GBps(slopes: Sequence[float | None]) -> float | None:
    """The rate of the median slope, GB/s; None without a slope, or when the median slope is
    not positive (the larger saves took no longer: no rate is measured past the smaller)."""
    got = [s for s in slopes if s is not None]
    if not got:
        return None
    mid = statistics.median(got)
    return round(1 / mid / 1e9, 6) if mid > 0 else None


def _host_slope(small: IoRecord, large: IoRecord, host: str) -> float | None:
    def part(r: IoRecord, key: str) -> float:
        v = r.extra.get(key, {})
        return float(v.get(host, 0.0)) if isinstance(v, Mapping) else 0.0

    return slope_s_per_byte(
        part(small, "per_host_bytes"),
        part(small, "per_host_seconds"),
        part(large, "per_host_bytes"),
        part(large, "per_host_seconds"),
    )


def sustained_fields(pairs: Sequence[tuple[IoRecord, IoRecord]], figure_GBps: float) -> dict[str, Any]:
    """The record fields of a save measured at two sizes per repeat (docs/contract.md):
    the smaller save's bytes per process and its median rate, the sustained rate (all hosts together and per
    host) and the non-linearity, the judged figure (`figure_GBps`, at the larger size) over
    the sustained rate."""
    if not pairs:
        return {}
    smalls = [s for s, _ in pairs]
    overall = sustained_GBps([slope_s_per_byte(s.bytes, s.runtime_s, b.bytes, b.runtime_s) for s, b in pairs])
    hosts = pairs[0][1].per_host_bw_GBps
    per_host = {h: sustained_GBps([_host_slope(s, b, h) for s, b in pairs]) for h in hosts}
    return {
        "small_shard_bytes": smalls[0].bytes // max(1, smalls[0].procs),
        "small_GBps": round(statistics.median_low(s.bw_GBps for s in smalls), 6),
        "sustained_GBps": overall,
        "per_host_sustained_GBps": per_host,
        "nonlinearity": round(figure_GBps / overall, 4) if overall else None,
    }


def absorbed_hosts(save: IoRecord, fio_write: IoRecord) -> list[str]:
    """The hosts whose save beat their own fio sequential write on the path by ABSORBED_MARGIN."""
    out = []
    for host, got in save.per_host_bw_GBps.items():
        device = fio_write.per_host_bw_GBps.get(host, 0.0)
        if device > 0 and got > ABSORBED_MARGIN * device:
            out.append(host)
    return out


def absorbed_fields(save: IoRecord, fio_write: IoRecord | None) -> dict[str, Any]:
    """`cache_absorbed` and the fio figures it was held against, when the run has fio's
    sequential write on the path; nothing when it has none (no device figure to hold it to)."""
    if fio_write is None or fio_write.failed or fio_write.bw_GBps <= 0:
        return {}
    compared = {
        h: fio_write.per_host_bw_GBps[h] for h in save.per_host_bw_GBps if h in fio_write.per_host_bw_GBps
    }
    if not compared:
        return {}
    return {"cache_absorbed": bool(absorbed_hosts(save, fio_write)), "fio_per_host_GBps": compared}
