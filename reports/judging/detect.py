"""Detected hardware as the report sees it (pure): `summarise()` folds the per-host
`hardware` of a run's manifest lines into one view (the most common value, with a note
when hosts disagree).

The detection itself — running nvidia-smi/rocm-smi and reading sysfs — is IO on the
measuring side (netbench/inventory/hardware.py); every measuring phase writes its result
into the host's manifest line, so a report never runs a tool, and reports made on another
machine judge the hardware the run had. With no manifest carrying `hardware` (an import of
plain nccl-tests logs, say), nothing is detected and findings need a spec.
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
