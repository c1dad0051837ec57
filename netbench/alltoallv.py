"""alltoallv's traffic pattern as nccl-tests generates it (src/alltoallv.cu, 2.19.6, pure).

Each rank sends the same total, spread over its peers by distance in rank space: with the
default spread 1.0 rank i sends rank j a share proportional to (j - i) mod n, so it sends
nothing to itself and most to the rank just before it. Per-peer bytes are aligned down to
16 bytes, as in the other tests:

  paramcount  = (count / n) & ~(16 / eltsize - 1)                 (AlltoAllvGetCollByteCount)
  total_bytes = paramcount x n x eltsize
  peer(i, j)  = floor((1 - s) x total / n + s x d(i, j) x total / (n(n-1)/2)) & ~15,
                d(i, j) = (j - i + n) mod n                        (GetPeerBytesDistanceWeighted)
  size column = max(send, recv) bytes = sum over j of peer(0, j)   (the pattern is balanced)
  busbw       = algbw x (n-1)/n, algbw = size / time               (AlltoAllvGetBw)

The spread comes from NCCL_TESTS_ALLTOALLV_SPREAD there; stoker uses the default, 1.0.
"""

from __future__ import annotations

SPREAD = 1.0  # nccl-tests' default (NCCL_TESTS_ALLTOALLV_SPREAD unset)


def param_count(count: int, n: int, itemsize: int) -> int:
    """Elements per peer before the pattern (nccl-tests' paramcount, its `count` column)."""
    mask = max(1, 16 // itemsize) - 1
    return (count // n) & ~mask


def peer_bytes(i: int, j: int, n: int, total: int, spread: float = SPREAD) -> int:
    """Bytes rank i sends rank j."""
    if n == 1:
        return total & ~15
    distance = (j - i + n) % n
    uniform = total / n
    dist = distance * total / (n * (n - 1) // 2)
    return int((1.0 - spread) * uniform + spread * dist) & ~15


def matrix(count: int, n: int, itemsize: int) -> tuple[tuple[int, ...], ...]:
    """Elements rank i sends rank j, [i][j], for a requested `count` elements."""
    total = param_count(count, n, itemsize) * n * itemsize
    return tuple(tuple(peer_bytes(i, j, n, total) // itemsize for j in range(n)) for i in range(n))
