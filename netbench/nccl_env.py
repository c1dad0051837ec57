"""NCCL's own account of a GPU run, kept (pure): the environment that makes every rank's NCCL
write its INFO lines — the network it chose and why, GPU Direct RDMA, each channel's transport —
into the results dir, one file per rank (NCCL expands %h to the host and %p to the pid). The
report reads them (reports/ingest/nccl_debug_files.py) and names the cause of a slow figure from
them (docs/diagnosis.md). A user who set NCCL_DEBUG or NCCL_DEBUG_FILE chose where NCCL speaks:
that choice stands."""

from __future__ import annotations

import os
from collections.abc import Mapping

from reports.shared.records import NCCL_DEBUG_DIR

# INIT: the network chosen, the channels' transports, nRanks/nNodes; NET: GDR per NIC, the
# plugin; ENV: the NCCL_* settings it was given. GRAPH (the topology search) is left out: long.
SUBSYS = "INIT,NET,ENV"


def debug_env(environ: Mapping[str, str], out: str | None) -> dict[str, str]:
    """What to add to a rank's environment before NCCL starts (nothing without a results dir,
    or where the user set NCCL_DEBUG / NCCL_DEBUG_FILE)."""
    if not out or environ.get("NCCL_DEBUG") or environ.get("NCCL_DEBUG_FILE"):
        return {}
    return {
        "NCCL_DEBUG": "INFO",
        "NCCL_DEBUG_SUBSYS": SUBSYS,
        "NCCL_DEBUG_FILE": os.path.join(out, NCCL_DEBUG_DIR, "%h.%p.log"),
    }
