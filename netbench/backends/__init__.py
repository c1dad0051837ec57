"""Communication backends behind one interface. torch and mpi4py are imported inside the
backend modules only, so that `stoker --help` and the pure modules never load them."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reports.shared.errors import UsageError
from reports.shared.records import BACKEND_CHOICES

BACKENDS = BACKEND_CHOICES  # what `--backend` takes (reports/shared/records.py declares them)
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


@dataclass(frozen=True, kw_only=True, slots=True)
class CallArgs:
    """What one bind() hands an op's entry in a backend's call table: the buffers, the group,
    and where this rank sits in it."""

    send: Any
    recv: Any
    comm: Any
    root: int
    in_place: bool
    n: int  # ranks in the group
    me: int  # this rank's place in the group
    splits: tuple[tuple[int, ...], ...] | None = None  # alltoallv: elements rank i sends rank j


# One op's call, as nccl-tests' runColl is one function per collective: the arguments in, the
# op with everything bound out (the timed loop then does no dispatch)
Binding = Callable[[CallArgs], Callable[[], object]]


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
    # capture() can make CUDA graphs here (NCCL on a GPU): the same on every rank of a job,
    # since every rank runs the backend the job agreed on
    graphs: bool = False

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
    def fill(self, buf: Any, values: np.ndarray) -> None:
        """Write `values` into an existing buffer, in place (a captured graph holds its address)."""

    @abstractmethod
    def view(self, buf: Any, start: int, n: int) -> Any: ...

    @abstractmethod
    def to_numpy(self, buf: Any) -> np.ndarray: ...

    @abstractmethod
    def bind(
        self,
        op: str,
        send: Any,
        recv: Any,
        comm: Any,
        root: int,
        in_place: bool,
        splits: tuple[tuple[int, ...], ...] | None = None,
    ) -> Callable[[], object]:
        """The op as a call with everything bound, so the timed loop does no dispatch;
        `splits` (alltoallv only): elements rank i sends rank j, [i][j]."""

    @abstractmethod
    def barrier(self, comm: Any) -> None: ...

    @abstractmethod
    def agree(self, comm: Any, ok: bool) -> bool:
        """True on every rank of the group when `ok` is true on all of them (an all-reduce of
        the flag): a choice that would otherwise differ between ranks is made once."""

    def release(self) -> None:
        """Free the groups the last split() made (NCCL communicators hold GPU memory and proxy
        threads: N - 1 pair rounds must not keep N - 1 of them); a no-op by default."""
        return None

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


def driver_gpus(root: str = "/proc/driver/nvidia/gpus") -> int:
    """GPUs the NVIDIA kernel driver has bound (one directory each, by PCI address), whatever
    torch can do with them; 0 without the driver. Read from procfs: no tool to run."""
    import os

    try:
        return len(os.listdir(root))
    except OSError:
        return 0


def _hidden_on_purpose(env: dict[str, str]) -> bool:
    """CUDA_VISIBLE_DEVICES set to nothing (or -1): the user hid the GPUs from CUDA."""
    v = env.get("CUDA_VISIBLE_DEVICES")
    return v is not None and v.strip() in ("", "-1", "none", "NoDevFiles")


def resolve(name: str, gpus_on_node: Callable[[], int] = driver_gpus) -> str:
    """auto -> nccl with CUDA GPUs, else gloo; mpi when only mpi4py is installed.
    nccl without a visible GPU is a UsageError (use gloo). So is auto on a node whose driver
    has GPUs that torch cannot use (a CPU-only torch, a CUDA/driver mismatch): picking gloo
    there while the other nodes pick NCCL would split the job; one line says what to do."""
    import os

    check_installed(name)
    if name == "mpi" or (name == "auto" and not _installed("torch")):
        return "mpi"
    if name == "gloo":
        return name
    import torch

    has_gpu = torch.cuda.is_available() and torch.cuda.device_count() > 0
    if name == "nccl" and not has_gpu:
        raise UsageError("backend nccl needs CUDA GPUs and none is visible here: use --backend gloo on CPUs")
    if not has_gpu and not _hidden_on_purpose(dict(os.environ)) and (n := gpus_on_node()) > 0:
        raise UsageError(
            f"the NVIDIA driver shows {n} GPU(s) on this node but torch cannot use CUDA "
            f"(torch {torch.__version__}, CUDA build {torch.version.cuda or 'none'}): install a CUDA build of "
            "torch that matches the driver, or pass --backend gloo to measure on CPUs on purpose"
        )
    return "nccl" if has_gpu else "gloo"


def pick_device(local_rank: int, visible: int) -> int:
    """The CUDA device a rank uses: its local rank when the node's GPUs are all visible to every
    rank (torchrun, mpirun), device local_rank mod visible when each task sees only its own
    (srun --gpus-per-task, --gpu-bind=single:1): 0 with one GPU per task. Ranks that end up on
    one physical GPU are caught by agreement_problem, with the GPU named."""
    if visible < 1:
        raise UsageError("backend nccl needs a CUDA GPU and this rank sees none: use --backend gloo on CPUs")
    return local_rank % visible


def _spans(ranks: Sequence[int]) -> str:
    return ", ".join(str(r) for r in ranks[:8]) + (f" and {len(ranks) - 8} more" if len(ranks) > 8 else "")


def agreement_problem(choices: Sequence[tuple[str, str]]) -> str | None:
    """What is wrong with the ranks' (backend, physical GPU) choices, in one line; None when
    they agree: one backend for all, and no GPU taken by two ranks (NCCL: 'Duplicate GPU')."""
    by_backend: dict[str, list[int]] = {}
    for rank, (backend, _) in enumerate(choices):
        by_backend.setdefault(backend, []).append(rank)
    if len(by_backend) > 1:
        said = "; ".join(f"{b} on rank(s) {_spans(r)}" for b, r in sorted(by_backend.items()))
        return (
            f"the ranks resolved different backends ({said}): every node must see its GPUs through torch, "
            "or pass the same --backend everywhere"
        )
    by_gpu: dict[str, list[int]] = {}
    for rank, (_, gpu) in enumerate(choices):
        if gpu:
            by_gpu.setdefault(gpu, []).append(rank)
    shared = {g: r for g, r in by_gpu.items() if len(r) > 1}
    if shared:
        g, r = sorted(shared.items())[0]
        return (
            f"ranks {_spans(r)} would share GPU {g}: NCCL needs one GPU per rank; start as many ranks per node "
            "as it has GPUs, or give each task its own (srun --gpus-per-task=1)"
        )
    return None
