"""Opening the backend a run asked for: the one module that imports both implementations
(netbench.backends.mpi, netbench.backends.torch_dist), each only when chosen, so that the
interface in netbench.backends stays below them."""

from __future__ import annotations

from netbench.backends import Backend
from netbench.launch_env import LaunchEnv


def open_backend(name: str, le: LaunchEnv, dtype: str, timeout_s: float) -> Backend:
    """Join the job as the launcher describes it."""
    if name == "mpi":
        from netbench.backends.mpi import MpiBackend

        return MpiBackend(dtype)
    from netbench.backends.torch_dist import TorchBackend

    return TorchBackend(name, le, dtype, timeout_s)
