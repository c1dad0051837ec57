"""Collective op names and nccl-tests bus factors: the one definition every package imports.

It sits at the record-schema level so that netbench (which may import only the schema from
reports/), the starvation model and the nccl-tests importer read the same names and the same
factors. Factors follow nccl-tests doc/PERFORMANCE.md ("Bus bandwidth") and the `*GetBw`
functions of its src/<op>.cu (read in nccl-tests 2.19.6):

  all_reduce                                       busbw = algbw x 2(n-1)/n
  all_gather, reduce_scatter, alltoall,            busbw = algbw x (n-1)/n
  gather, scatter, alltoallv
  broadcast, reduce, sendrecv, hypercube           busbw = algbw x 1
gather, scatter and alltoallv are three ops nccl-tests builds beside the seven it always had
(src/gather.cu, scatter.cu, alltoallv.cu: GatherGetBw, ScatterGetBw, AlltoAllvGetBw); the fourth,
hypercube (src/hypercube.cu, built as hypercube_perf), is an all_gather made of log2(n) rounds of
ncclSend/ncclRecv between ranks r and r^mask, run on power-of-two rank counts only ("nRanks N is
not a power of 2, skipping"). Its HyperCubeGetBw prints as algbw what one rank receives per
second, baseBw = count x typesize x (nranks-1) / sec with count one rank's share, and busbw =
algbw x 1: its algbw is (n-1)/n of size / time (`algbw_share`), where every other op prints
size / time.
"""

from __future__ import annotations

from typing import Literal, get_args

Op = Literal[
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "broadcast",
    "reduce",
    "alltoall",
    "sendrecv",
    "gather",
    "scatter",
    "alltoallv",
    "hypercube",
]
OPS: tuple[Op, ...] = get_args(Op)

# factor kind per op: "twice-ring" 2(n-1)/n, "ring" (n-1)/n, "one" 1
_KIND: dict[str, Literal["twice-ring", "ring", "one"]] = {
    "all_reduce": "twice-ring",
    "all_gather": "ring",
    "reduce_scatter": "ring",
    "alltoall": "ring",
    "broadcast": "one",
    "reduce": "one",
    "sendrecv": "one",
    "gather": "ring",
    "scatter": "ring",
    "alltoallv": "ring",
    "hypercube": "one",
}
assert set(_KIND) == set(OPS), "every op has a bus factor"


def is_op(name: str) -> bool:
    return name in _KIND


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for `op` among n ranks (0 for a group of fewer than one rank).
    A one-rank group moves nothing over a bus: 0 for the ring ops, as nccl-tests prints."""
    kind = _KIND[op]
    if n <= 0:
        return 0.0
    if kind == "one":
        return 1.0
    ring = (n - 1) / n
    return 2 * ring if kind == "twice-ring" else ring


def algbw_share(op: str, n: int) -> float | None:
    """What nccl-tests prints as algbw, as a fraction of size / time among n ranks: 1 for every
    op but hypercube, (n-1)/n for it (src/hypercube.cu HyperCubeGetBw); None for a hypercube
    whose rank count is not known (n <= 0): its algbw then tells nothing checkable."""
    if op != "hypercube":
        return 1.0
    return (n - 1) / n if n > 0 else None


def is_power_of_two(n: int) -> bool:
    """Whether n ranks can run hypercube (nccl-tests HyperCubeRunTest: nRanks & (nRanks-1) == 0)."""
    return n > 0 and n & (n - 1) == 0


def ranks_from_factor(op: str, algbw: float, busbw: float) -> int:
    """Invert bus_factor: the rank count a printed algbw/busbw pair implies (0 when it cannot
    be told: a factor of 1 says nothing, and rows printed as 0.01/0.02 give f = 2 exactly)."""
    kind = _KIND.get(op)
    if kind is None or kind == "one" or algbw <= 0 or busbw <= 0:
        return 0
    f = busbw / algbw
    if kind == "twice-ring":
        n = 2 / (2 - f) if f < 2 else 0.0  # f = 2(n-1)/n  <=>  n = 2 / (2 - f)
    else:
        n = 1 / (1 - f) if f < 1 else 0.0  # f = (n-1)/n  <=>  n = 1 / (1 - f)
    return max(0, round(n)) if 0 < n < 1e6 else 0
