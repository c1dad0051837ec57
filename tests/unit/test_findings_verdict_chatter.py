"""The reason an incomplete report names is the rank's own error, not Slurm's chatter after it."""

from __future__ import annotations

import json
from pathlib import Path

from reports.pipeline import last_error_line


def test_slurmstepd_with_a_node_name_is_chatter(tmp_path: Path) -> None:
    # the phase log of a real 2-node job (CI, MpiDefault=pmix, --backend nccl without GPUs)
    (tmp_path / "phase-intra-node.log").write_text(
        "0: stoker net: backend nccl needs CUDA GPUs and none is visible here: use --backend gloo on CPUs\n"
        "srun: error: n1: task 0: Exited with exit code 2\n"
        "slurmstepd-n1: error: *** STEP 2.2 ON n1 CANCELLED AT 2026-11-23T08:11:32 ***\n"
        "timeout: sending signal TERM to command 'srun'\n",
        encoding="utf-8",
    )
    line = last_error_line(
        tmp_path, json.loads('{"phase": "intra-node", "rc": 143, "log": "phase-intra-node.log"}')
    )
    assert (
        line
        == "stoker net: backend nccl needs CUDA GPUs and none is visible here: use --backend gloo on CPUs"
    )
