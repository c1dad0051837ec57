"""torch.distributed: NCCL on GPUs, gloo on CPUs.

torch has no out-of-place all_reduce, broadcast or reduce: those always run in place
(records say in_place=true). The NCCL path is thin and has not been run in this
project's CI (no GPU there); its CUDA-graph capture (`capture`, nccl-tests -G) has not
been run on a GPU at all yet (tests/unit/test_harness.py drives the harness's side of it;
benchmarks/gpu_check.py runs it on a GPU machine).

Before the process group exists, every rank writes to the rendezvous store which backend it
resolved and which physical GPU it took, and reads everyone else's: a job whose ranks chose
different backends, or two ranks on one GPU, stops there with one line on every rank."""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from netbench.backends import (
    Backend,
    CallArgs,
    PerfCounterTimer,
    Timer,
    agreement_problem,
    pick_device,
)
from netbench.backends.torch_calls import CALLS
from netbench.launch_env import LaunchEnv, require_rendezvous
from netbench.spawn import free_port
from reports.shared.errors import MeasurementAborted, UsageError

_DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int64": torch.int64,
    "int8": torch.int8,
    "uint8": torch.uint8,
}
NCCL_GRAPHS = (2, 9, 6)  # the first NCCL whose collectives can be captured in a CUDA graph
# the torch that netbench's calls need: group_dst/group_src/group_peer arrived in 2.6 (pytorch
# PRs 140827, 140843, 141054); send/recv inside a CUDA graph capture in 2.7 (133984, 148462)
TORCH_GROUP_ARGS = (2, 6)
TORCH_P2P_GRAPHS = (2, 7)
P2P_OPS = frozenset({"sendrecv", "hypercube"})


def torch_release(version: str) -> tuple[int, int]:
    """'2.6.0+cu124' -> (2, 6); an unreadable version -> (0, 0)."""
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        return (0, 0)


def torch_refusal(version: str) -> str:
    """Why this torch cannot run stoker net, in one line; "" when it can."""
    if torch_release(version) >= TORCH_GROUP_ARGS:
        return ""
    return (
        f"stoker net needs torch >= 2.6 (group_dst/group_src/group_peer), this is torch {version}: "
        "pip install 'torch>=2.6', or --backend mpi"
    )


def capture_refusal(version: str, op: str) -> str:
    """Why this op cannot be captured in a CUDA graph on this torch (timed eagerly); "" when it can."""
    if op in P2P_OPS and torch_release(version) < TORCH_P2P_GRAPHS:
        return f"capturing {op} (send/recv) in a CUDA graph needs torch >= 2.7, this is torch {version}"
    return ""


def gpu_identity(uuid: str | None, pci: tuple[int, int, int]) -> str:
    """The physical GPU: its UUID (the same whatever CUDA_VISIBLE_DEVICES renumbered), else its
    PCI address. An empty or all-zero UUID (a HIP device may report one) is no identity: every
    GPU would look the same and the run would refuse with "ranks share a GPU"."""
    u = str(uuid or "").strip().lower().removeprefix("gpu-")
    if u.strip("0-"):
        return f"GPU-{u}"
    return f"{pci[0]:04x}:{pci[1]:02x}:{pci[2]:02x}"


def capture_abort(exc: BaseException) -> str:
    """The one line that ends a run whose CUDA graph capture failed inside NCCL."""
    first = (str(exc).strip().splitlines() or [""])[0][:160]
    return (
        f"CUDA graph capture failed inside NCCL ({type(exc).__name__}: {first}); the communicator "
        "keeps that error, so no eager run can follow on it: rerun with --no-graph"
    )


class CudaEventTimer(Timer):
    """Events created and recorded once before the timed loop (torch creates the CUDA event
    at its first record), so a mark in the loop is one cudaEventRecord on a known stream:
    on a host-bound op (8 bytes) creating events there cost ~50% of the op's time, and even a
    record costs ~15% (H100, one rank): hence `intrusive`, see netbench.harness."""

    intrusive = True

    def __init__(self) -> None:
        self._events: list[torch.cuda.Event] = []
        self._records: list[Callable[[], object]] = []
        self._used = 0

    def prepare(self, marks: int) -> None:
        stream = torch.cuda.current_stream()
        self._events = [torch.cuda.Event(enable_timing=True) for _ in range(marks)]
        for ev in self._events:
            ev.record(stream)
        self._records = [partial(ev.record, stream) for ev in self._events]

    def mark(self) -> None:  # one of the marks prepare() made: IndexError past them
        self._records[self._used]()
        self._used += 1

    def intervals(self) -> list[float]:
        e = self._events[: self._used]
        return [a.elapsed_time(b) / 1e3 for a, b in zip(e, e[1:])]


def _gpu_identity(index: int) -> str:
    """The physical GPU behind a CUDA device index (see gpu_identity)."""
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    pci = tuple(int(getattr(props, f"pci_{k}_id", 0)) for k in ("domain", "bus", "device"))
    return gpu_identity(str(uuid) if uuid else None, (pci[0], pci[1], pci[2]))


class _Comm:
    __slots__ = ("pg", "ranks")

    def __init__(self, pg: Any, ranks: Sequence[int]) -> None:
        self.pg = pg
        self.ranks = tuple(ranks)


class TorchBackend(Backend):
    only_in_place = frozenset({"all_reduce", "broadcast", "reduce"})
    in_place_ops = frozenset({"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter"})

    def __init__(self, name: str, le: LaunchEnv, dtype: str, timeout_s: float) -> None:
        refused = torch_refusal(torch.__version__)
        if refused:
            raise UsageError(refused)
        if le.world < 1:
            raise UsageError(
                f"the {le.source or le.launcher} environment does not say how many ranks there are: export WORLD_SIZE or use --backend mpi"
            )
        if le.world == 1 and not (le.launcher == "torchrun" and le.master_addr and le.master_port):
            # a lone rank still needs a store; a free port avoids clashes. Under torchrun the
            # agent hosts the store at MASTER_ADDR/PORT and ranks only connect: use that one
            addr, port = "127.0.0.1", free_port()
        else:
            addr, port = require_rendezvous(le)
        self.name = name
        self.rank, self.world = le.rank, le.world
        self._dtype = _DTYPES[dtype]
        gpu_id = ""
        if name == "nccl":
            gpus = torch.cuda.device_count()
            # one GPU per task (srun --gpus-per-task=1, --gpu-bind=single:1, CUDA_VISIBLE_DEVICES
            # with one device) shows each rank only its own GPU: device 0 whatever its local rank
            index = pick_device(le.local_rank, gpus)
            torch.cuda.set_device(index)
            self._dev = torch.device("cuda", torch.cuda.current_device())
            self.device = torch.cuda.get_device_name(self._dev)
            gpu_id = _gpu_identity(index)
        else:
            self._dev = torch.device("cpu")
            self.device = "cpu"
        self.graphs = self._dev.type == "cuda"
        # our own watchdog aborts first; this only bounds a hang it cannot see
        timeout = datetime.timedelta(seconds=max(60.0, 2 * timeout_s))
        # the rendezvous init_process_group would make, made first so that every rank can see
        # which backend and which GPU each other rank took before any of them commits to one
        store, _, _ = next(
            dist.rendezvous(f"tcp://{addr}:{port}", rank=le.rank, world_size=le.world, timeout=timeout)
        )
        store.set_timeout(timeout)
        # torchrun's agent store outlives an elastic restart: keys per restart, never stale ones
        key = f"stoker/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/choice"
        store.set(f"{key}/{le.rank}", f"{name}\t{gpu_id}")
        choices = [store.get(f"{key}/{r}").decode().split("\t", 1) for r in range(le.world)]
        problem = agreement_problem([(b, g) for b, g in choices])
        if problem:
            raise UsageError(problem)
        dist.init_process_group(
            name,
            store=dist.PrefixStore("default_pg", store),
            rank=le.rank,
            world_size=le.world,
            timeout=timeout,
        )
        self._world = _Comm(dist.group.WORLD, range(le.world))
        self._made: list[Any] = []  # process groups of the last split(), destroyed by release()
        self._bound = ""  # the op of the last bind(): capture() is always of the op just bound

    def split(self, groups: Sequence[Sequence[int]]) -> _Comm | None:
        mine = None
        for ranks in groups:
            if list(ranks) == list(range(self.world)):
                comm = self._world
            else:
                comm = _Comm(dist.new_group(list(ranks)), ranks)
                if self.rank in ranks:
                    self._made.append(comm.pg)
            if self.rank in ranks:
                mine = comm
        return mine

    def release(self) -> None:
        """Destroy this rank's groups of the last split (its NCCL communicators)."""
        for pg in self._made:
            dist.destroy_process_group(pg)
        self._made = []

    def group_rank(self, comm: _Comm) -> int:
        return comm.ranks.index(self.rank)

    def group_size(self, comm: _Comm) -> int:
        return len(comm.ranks)

    def alloc(self, values: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(values).to(device=self._dev, dtype=self._dtype)

    def fill(self, buf: torch.Tensor, values: np.ndarray) -> None:
        buf.copy_(torch.from_numpy(values).to(dtype=self._dtype))

    def view(self, buf: torch.Tensor, start: int, n: int) -> torch.Tensor:
        return buf.narrow(0, start, n)

    def to_numpy(self, buf: torch.Tensor) -> np.ndarray:
        return buf.detach().to(device="cpu", dtype=torch.float64).numpy()

    def bind(
        self,
        op: str,
        send: torch.Tensor,
        recv: torch.Tensor,
        comm: _Comm,
        root: int,
        in_place: bool,
        splits: tuple[tuple[int, ...], ...] | None = None,
    ) -> Callable[[], object]:
        self._bound = op
        if op not in CALLS:
            raise ValueError(op)
        args = CallArgs(
            send=send,
            recv=recv,
            comm=comm,
            root=root,
            in_place=in_place,
            n=len(comm.ranks),
            me=self.group_rank(comm),
            splits=splits,
        )
        return CALLS[op](args)

    def barrier(self, comm: _Comm) -> None:
        # NCCL: name the device, or torch guesses it (and warns)
        dist.barrier(group=comm.pg, device_ids=[self._dev.index] if self._dev.type == "cuda" else None)
        self.sync()

    def agree(self, comm: _Comm, ok: bool) -> bool:
        flag = torch.tensor([1 if ok else 0], dtype=torch.int32, device=self._dev)
        dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=comm.pg)
        return bool(flag.item())

    def sync(self) -> None:
        if self._dev.type == "cuda":
            torch.cuda.synchronize(self._dev)

    def timer(self) -> Timer:
        return CudaEventTimer() if self._dev.type == "cuda" else PerfCounterTimer()

    def capture(self, op: Callable[[], object], iters: int) -> Callable[[], object] | None:
        """NCCL: the ops captured into one torch.cuda.CUDAGraph (torch.cuda.graph captures on its
        own side stream; replay() launches on the current one, where the timer's events are).
        gloo: None. The caller has already run the op eagerly (check, warm-up), which
        NCCL needs before capture to set up its communicator. What rules capture out before it
        starts raises RuntimeError (the harness times eagerly); a failure inside the capture
        raises MeasurementAborted: NCCL keeps the error in the communicator
        (ncclCommEnsureReady), so an eager run on it would abort, and no fresh communicator can
        be made by one rank alone."""
        if self._dev.type != "cuda":
            return None
        if os.environ.get("TORCH_NCCL_BLOCKING_WAIT", "0") not in ("", "0"):
            # blocking wait synchronises the host on every NCCL call, which a capture forbids
            raise RuntimeError(
                "TORCH_NCCL_BLOCKING_WAIT is set: NCCL calls block, which a CUDA graph capture forbids"
            )
        if torch.cuda.nccl.version() < NCCL_GRAPHS:
            have = ".".join(map(str, torch.cuda.nccl.version()))
            raise RuntimeError(f"NCCL {have} cannot be captured in a CUDA graph (needs 2.9.6 or later)")
        refused = capture_refusal(torch.__version__, self._bound)
        if refused:
            raise RuntimeError(refused)
        graph = torch.cuda.CUDAGraph()
        try:
            # thread_local: NCCL's watchdog thread polls events while we capture; "global" mode
            # would turn its (harmless) calls into a capture error
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                for _ in range(iters):
                    op()
        except Exception as exc:
            raise MeasurementAborted(capture_abort(exc)) from None
        return graph.replay

    def gather(self, obj: Any) -> list[Any] | None:
        out: list[Any] | None = [None] * self.world if self.rank == 0 else None
        dist.gather_object(obj, out, dst=0)
        return out

    def allgather(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out

    def bcast(self, obj: Any) -> Any:
        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def versions(self) -> dict[str, str]:
        v = {"torch": torch.__version__, "backend": self.name}
        if self.name == "nccl":
            v["nccl"] = ".".join(str(x) for x in torch.cuda.nccl.version())
        v["gloo"] = "built into torch " + torch.__version__ if dist.is_gloo_available() else "absent"
        return v

    def close(self) -> None:
        if dist.is_initialized():
            dist.destroy_process_group()
