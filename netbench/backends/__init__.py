"""Communication backends behind one interface. torch and mpi4py are imported inside the
backend modules only, so that `stoker --help` and the pure modules never load them."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from netbench.launch_env import LaunchEnv
from reports.errors import UsageError

BACKENDS = ("auto", "nccl", "gloo", "mpi")
# bytes per element of each --dtype (the size column counts elements x this)
ITEMSIZE = {
    "float32": 4,
    "float64": 8,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "int64": 8,
    "int8": 1,
    "uint8": 1,
}
DTYPES = tuple(ITEMSIZE)


class Timer(ABC):
    """Timestamps between back-to-back ops: perf_counter on CPUs, CUDA events on GPUs
    (recording an event does not synchronise, so the loop stays back-to-back)."""

    # True where a mark costs real time next to a fast op (a CUDA event record: microseconds
    # of host time): the harness then keeps marks out of the headline loop
    intrusive: bool = False

    def prepare(self, marks: int) -> None:
        """Called before the timed loop with the number of marks to come (no more are made),
        so that a timer can allocate outside it (CUDA events); a no-op by default."""
        return None

    @abstractmethod
    def mark(self) -> None: ...

    @abstractmethod
    def intervals(self) -> list[float]:
        """Seconds between consecutive marks; call after the backend's sync()."""


class PerfCounterTimer(Timer):
    def __init__(self) -> None:
        import time

        self._now = time.perf_counter
        self._marks: list[float] = []

    def mark(self) -> None:
        self._marks.append(self._now())

    def intervals(self) -> list[float]:
        m = self._marks
        return [b - a for a, b in zip(m, m[1:])]


class Backend(ABC):
    """One process's view of the job. Group-level ops take a `comm` from split()."""

    name: str
    rank: int
    world: int
    device: str  # record field: "cpu" or the GPU's name
    only_in_place: frozenset[str]  # ops whose API has no out-of-place form
    in_place_ops: frozenset[str]  # ops that can also run in place

    @abstractmethod
    def split(self, groups: Sequence[Sequence[int]]) -> Any | None:
        """Create these disjoint groups (a collective call on every rank); return the
        communicator of the group holding this rank, or None."""

    @abstractmethod
    def group_rank(self, comm: Any) -> int: ...

    @abstractmethod
    def group_size(self, comm: Any) -> int: ...

    @abstractmethod
    def alloc(self, values: np.ndarray) -> Any:
        """A buffer of the run's dtype holding `values`."""

    @abstractmethod
    def view(self, buf: Any, start: int, n: int) -> Any: ...

    @abstractmethod
    def to_numpy(self, buf: Any) -> np.ndarray: ...

    @abstractmethod
    def bind(
        self, op: str, send: Any, recv: Any, comm: Any, root: int, in_place: bool
    ) -> Callable[[], object]:
        """The op as a call with everything bound, so the timed loop does no dispatch."""

    @abstractmethod
    def barrier(self, comm: Any) -> None: ...

    @abstractmethod
    def sync(self) -> None:
        """Wait for queued device work (a no-op for host backends)."""

    @abstractmethod
    def timer(self) -> Timer: ...

    def capture(self, op: Callable[[], object], iters: int) -> Callable[[], object] | None:
        """`iters` calls of `op` captured as one replayable graph (CUDA graphs, as nccl-tests
        -G): returns the replay call. None: this backend has no graphs (gloo, MPI), eager
        timing is the only kind. Raises when capture was tried and failed (old NCCL, a driver
        that refuses): the harness then times eagerly and says why."""
        return None

    @abstractmethod
    def gather(self, obj: Any) -> list[Any] | None:
        """Every rank's object at global rank 0 (None elsewhere)."""

    @abstractmethod
    def allgather(self, obj: Any) -> list[Any]: ...

    @abstractmethod
    def bcast(self, obj: Any) -> Any:
        """Global rank 0's object on every rank."""

    @abstractmethod
    def versions(self) -> dict[str, str]: ...

    @abstractmethod
    def close(self) -> None: ...


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def check_installed(name: str) -> None:
    """Cheap (no import): the packages `name` needs are installed, else a UsageError
    naming what to install. A --nproc parent checks this before starting ranks."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r}: choose from {', '.join(BACKENDS)}")
    if name == "mpi" and not _installed("mpi4py"):
        raise UsageError(
            "backend mpi needs mpi4py and an MPI library: pip install mpi4py (and e.g. apt install openmpi-bin libopenmpi-dev)"
        )
    if name in ("nccl", "gloo") and not _installed("torch"):
        raise UsageError(f"backend {name} needs torch: pip install torch (or use --backend mpi with mpi4py)")
    if name == "auto" and not (_installed("torch") or _installed("mpi4py")):
        raise UsageError(
            "netbench needs torch (pip install torch) or mpi4py with an MPI library (pip install mpi4py)"
        )


def resolve(name: str) -> str:
    """auto -> nccl with CUDA GPUs, else gloo; mpi when only mpi4py is installed.
    nccl without a visible GPU is a UsageError (use gloo)."""
    check_installed(name)
    if name == "mpi" or (name == "auto" and not _installed("torch")):
        return "mpi"
    if name == "gloo":
        return name
    import torch

    has_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if name == "nccl" and not has_gpu:
        raise UsageError("backend nccl needs CUDA GPUs and none is visible here: use --backend gloo on CPUs")
    return "nccl" if has_gpu else "gloo"


def open_backend(name: str, le: LaunchEnv, dtype: str, timeout_s: float) -> Backend:
    """Join the job as the launcher describes it."""
    if name == "mpi":
        from netbench.backends.mpi import MpiBackend

        return MpiBackend(dtype)
    from netbench.backends.torch_dist import TorchBackend

    return TorchBackend(name, le, dtype, timeout_s)
