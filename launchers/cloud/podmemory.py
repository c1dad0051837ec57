"""A pod's memory limit from what the pod holds (pure), so the acceptance job is not OOM
killed by its own test: the memory-backed /dev/shm (tmpfs pages count against the pod's
memory cgroup), every rank, the storage test's writers and its torch.save / DCP copy.

The per-rank figure is an allowance, not a measurement on this project's machines: a CUDA
process with torch and NCCL loaded holds about 2-3 GiB of host memory (its CUDA context,
pinned staging buffers, the torch import); gloo ranks on CPUs also hold their send,
receive and scratch buffers of the largest message size in host memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

GIB = 1 << 30
RANK_GIB = 3  # host memory a CUDA rank holds beyond its buffers (allowance)
CPU_BUFFERS = 3  # gloo: send, receive and scratch buffers of the largest size, per rank
TORCH_COPIES = 2  # the state dict of one shard, and torch.save's / DCP's staging of it
WRITER_BUFFER = 16 << 20  # one fio writer: a 4 MiB block in flight, direct I/O, and fio itself
BASE_GIB = 2  # bash, torchrun's agent, stoker io's parent, the report: one each


@dataclass(frozen=True, kw_only=True, slots=True)
class PodMemory:
    shm_bytes: int
    ranks: int
    gpus: bool
    max_bytes: int  # the sweep's largest message (gloo ranks hold it in host memory)
    writers: int
    ckpt_bytes: int  # one writer's shard (the torch copy holds one of them)

    def parts(self) -> dict[str, int]:
        """Bytes per holder, in the order the docs and the test add them up."""
        rank = RANK_GIB * GIB + (0 if self.gpus else CPU_BUFFERS * self.max_bytes)
        return {
            "shm": self.shm_bytes,
            "ranks": self.ranks * rank,
            "writers": self.writers * WRITER_BUFFER + TORCH_COPIES * self.ckpt_bytes,
            "base": BASE_GIB * GIB,
        }

    @property
    def limit_gib(self) -> int:
        """Whole GiB, rounded up: the pod's memory request and limit."""
        return math.ceil(sum(self.parts().values()) / GIB)
