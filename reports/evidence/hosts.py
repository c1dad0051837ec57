"""Host facts (pure): what the hosts showed of themselves — the node inventory (host.jsonl,
`kind: "host"` records, judged by reports.judging.node.inventory) and the hardware each host's
manifest detected, folded into one view of the run.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any


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
