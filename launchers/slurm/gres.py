"""Does the cluster declare the GPUs a job asks for? (pure: `sinfo -h -o %G` text in, a
one-line problem or None out). Checked before sbatch, whose own answer is "Invalid generic
resource (gres) specification", which does not say what to pass instead."""

from __future__ import annotations

import re

# one gres entry: gpu[:type]:count[(S:sockets)], e.g. gpu:8, gpu:a100:4(S:0-1)
_GPU = re.compile(r"^gpu(?::[^:(]+)?:(\d+)(?:\(.*\))?$")


def gpus_per_node(sinfo_gres: str) -> int:
    """The most GPUs any node group in `sinfo -h -o %G` declares (0: none, `(null)`)."""
    best = 0
    for line in sinfo_gres.splitlines():
        # entries are comma-separated, but a socket list inside (...) has commas too
        entries = re.split(r",(?![^(]*\))", line.strip())
        best = max(best, sum(int(m.group(1)) for e in entries if (m := _GPU.match(e.strip()))))
    return best


def gres_problem(sinfo_gres: str, wanted: int, partition: str | None = None) -> str | None:
    """A one-line message when `--gpus-per-node wanted` cannot be met, else None."""
    if wanted <= 0:
        return None
    where = f"partition {partition}" if partition else "this cluster"
    have = gpus_per_node(sinfo_gres)
    if have == 0:
        return (
            f"the nodes of {where} declare no GPUs (`sinfo -o %G` shows no gpu gres): drop --gpus-per-node "
            "to test with CPU ranks (gloo), or pick a GPU partition with --partition"
        )
    if have < wanted:
        return (
            f"the nodes of {where} declare at most {have} GPUs each (`sinfo -o %G`): "
            f"pass --gpus-per-node {have} or less"
        )
    return None
