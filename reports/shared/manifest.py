"""The environment manifest written beside records: versions, hosts, devices, settings,
and only allowlisted environment variables (secrets live in the environment)."""

from __future__ import annotations

import platform
import socket
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from reports.shared.redact import REDACTED, redact

__all__ = ["REDACTED", "allowlisted_env", "base_manifest", "installed_versions"]

# Prefixes that configure the communication stack. Anything else is left out on purpose:
# the environment holds tokens and passwords, and reports get shared.
ENV_PREFIXES: tuple[str, ...] = (
    "NCCL_",
    "UCX_",
    "FI_",
    "OMPI_MCA_",
    "GLOO_",
    "TORCH_",
    "RCCL_",
    "HSA_",
    "MPICH_",
    "I_MPI_",
    "CUDA_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "SLURM_JOB_ID",
    "SLURM_JOB_NUM_NODES",
    "SLURM_NTASKS",
    "SLURM_JOB_PARTITION",
    "SLURM_CLUSTER_NAME",
    "STOKER_",
)
# Even inside an allowed prefix, a name that says it holds a credential keeps its name (that
# it was set can matter) but not its value; any other value loses its URL passwords and
# token=/key=/password= parameters (reports/shared/redact.py). Broad on purpose: a redacted setting
# costs little, a leaked password in a shared report a lot.


def allowlisted_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` whose names start with an allowed prefix; values under
    names that look secret are recorded as REDACTED, credentials inside other values too."""
    out: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIXES):
            continue
        out[name] = redact(name, value)
    return dict(sorted(out.items()))


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """Versions of the packages present, read from their metadata without importing them:
    importing mpi4py's MPI under torchrun would initialise MPI, and torch costs seconds."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str] = {}
    for dist in names:
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


def base_manifest(tool: str, run_id: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """What every manifest carries; callers add versions, devices and settings."""
    return {
        "schema": 1,
        "kind": "manifest",
        "tool": tool,
        "run_id": run_id,
        "host": socket.gethostname(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "env": allowlisted_env(environ),
    }
