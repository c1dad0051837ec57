"""Host facts (pure): what the hosts showed of themselves — the node inventory (host.jsonl,
`kind: "host"` records, judged by reports.judging.node.inventory) and the hardware each host's
manifest detected, folded into one view of the run.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any


def from_inventory(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each host's GPU model and count from its inventory's `gpu` records that name a model (a
    ROCm node's: netbench/inventory/read.py `amd_gpu_records`), in the shape of a manifest's
    `hardware`; hosts whose records name none are left out. The latest record of each
    (host, device) counts, as in the inventory's judgement."""
    latest: dict[tuple[Any, Any], str] = {}
    for r in records:
        if r.get("component") == "gpu" and isinstance(r.get("model"), str) and r["model"]:
            latest[(r.get("host"), r.get("device"))] = r["model"]
    by_host: dict[Any, list[str]] = collections.defaultdict(list)
    for (host, _), model in latest.items():
        by_host[host].append(model)
    return [
        {"gpu_model": collections.Counter(models).most_common(1)[0][0], "gpu_count": len(models)}
        for _, models in sorted(by_host.items(), key=lambda kv: str(kv[0]))
    ]


def summarise(hardware: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One view of many hosts' detection results: the most common value of each key the
    judgement uses, and a note for each key on which hosts disagree."""
    if not hardware:
        return {}
    out: dict[str, Any] = {"hosts": len(hardware)}
    notes = []
    for key in ("gpu_model", "gpu_count", "nic_total_GBps", "nic_desc"):
        counts = collections.Counter(h[key] for h in hardware if key in h and h[key] is not None)
        if not counts:
            continue
        ((value, _),) = counts.most_common(1)
        out[key] = value
        if len(counts) > 1 and key != "nic_desc":
            spread = ", ".join(f"{v!r} on {n} host(s)" for v, n in counts.most_common())
            notes.append(f"detected {key} differs between hosts: {spread}")
    if notes:
        out["disagreements"] = notes
    return out
