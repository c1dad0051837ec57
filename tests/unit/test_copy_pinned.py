"""The host-link copy test's pinned buffer, on a fake torch whose caching host allocator keeps
freed pinned blocks (as torch's CachingHostAllocator does: `torch.cuda.empty_cache()` frees device
memory only, github.com/pytorch/pytorch/issues/134332) and places a new block on the NUMA node the process is bound
to. Each GPU must get a block of its own node, allocated under its binding."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from netbench.inventory.copy import fresh_pinned


@dataclass(eq=False)
class Memory:
    node: int
    nbytes: int


class Tensor:
    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    def data_ptr(self) -> int:
        return id(self.mem)


@dataclass
class FakeTorch:
    """Pinned allocations go through a cache: a freed block (its last tensor gone) is reused by
    the next allocation that fits, whatever node the caller is bound to now."""

    node: int = 0  # the NUMA node of the CPUs the process is bound to
    host_empty_cache: bool = True
    free: list[Memory] = field(default_factory=list)
    registered: list[int] = field(default_factory=list)
    uint8: str = "uint8"

    def __post_init__(self) -> None:
        self._C = SimpleNamespace(**({"_host_emptyCache": self.free.clear} if self.host_empty_cache else {}))
        self.cuda = SimpleNamespace(
            cudart=lambda: SimpleNamespace(
                cudaHostRegister=self._register, cudaHostUnregister=self._unregister
            ),
            empty_cache=lambda: None,  # device memory only: the host cache keeps its blocks
        )

    def _register(self, ptr: int, n: int, flags: int) -> int:
        self.registered.append(ptr)
        return 0  # cudaSuccess

    def _unregister(self, ptr: int) -> int:
        self.registered.remove(ptr)
        return 0

    def empty(self, n: int, dtype: Any = None, pin_memory: bool = False) -> Tensor:
        assert pin_memory
        fit = next((m for m in self.free if m.nbytes >= n), None)
        if fit is not None:
            self.free.remove(fit)
        mem = fit or Memory(self.node, n)
        t = Tensor(mem)
        weakref.finalize(t, self.free.append, mem)  # back to the cache, not to the OS
        return t

    def zeros(self, n: int, dtype: Any = None) -> Tensor:
        return Tensor(Memory(self.node, n))  # pageable: first touched on the caller's node


def test_the_fake_reproduces_the_reuse_that_empty_cache_does_not_stop() -> None:
    torch = FakeTorch()
    seen = []
    for node in (0, 1):
        torch.node = node
        buf = torch.empty(1 << 30, dtype=torch.uint8, pin_memory=True)  # the old copier's buffer
        seen.append(buf.mem.node)
        del buf
        torch.cuda.empty_cache()
    assert seen == [0, 0]  # GPU 1's buffer sits on node 0


@pytest.mark.parametrize("host_empty_cache", [True, False])
def test_each_gpu_gets_a_pinned_buffer_on_its_own_node(host_empty_cache: bool) -> None:
    torch = FakeTorch(host_empty_cache=host_empty_cache)
    seen = []
    for node in (0, 1, 1, 0):
        torch.node = node
        with fresh_pinned(torch, 1 << 30) as buf:
            seen.append(buf.mem.node)
            if not host_empty_cache:
                assert torch.registered == [buf.data_ptr()]  # pinned in place while in use
            del buf
    assert seen == [0, 1, 1, 0]
    assert torch.free == [] and torch.registered == []  # nothing left cached or pinned
