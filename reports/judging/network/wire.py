"""From a world sweep's busbw across nodes to each NIC's wire rate, per algorithm (pure).

A world sweep of n ranks on k nodes (g = n/k ranks per node, one NIC each: a rail) reports busbw
= algbw x B, with S the size column, algbw = S / t and B the nccl-tests bus factor (all_reduce
2(n−1)/n, all_gather and reduce_scatter (n−1)/n). What a node sends across the network while the
op runs is T x S, where T depends on the algorithm NCCL ran; spread over the node's g rails, each
NIC carries T x S / g in time t:

    wire = algbw x T / g = busbw x T / (B x g)

T per algorithm (ALGORITHMS), derived:

- **ring** (flat: every ring passes through all n ranks, entering and leaving each node once).
  In a ring all_reduce each rank sends 2(n−1)/n x S_c to the next one for its channel's share
  S_c; a ring leaves a node once, so the node sends 2(n−1)/n x S_c per channel and, summed over
  the channels (Σ S_c = S), T = 2(n−1)/n = B. So wire = busbw / g whatever the node count: a
  flat ring's busbw is the per-NIC rate x NICs per node over GPUs per node (8 x 400G NDR at
  48 GB/s per NIC: busbw 384 GB/s on 2 nodes and on 4). all_gather / reduce_scatter: T = (n−1)/n
  = B, the same wire = busbw / g.
- **tree** (all_reduce: a double binary tree over the nodes, a chain inside each; each tree
  carries half the data, S/2). A node is interior in at most one of the two trees: there it
  sends S/2 up and S/2 down to each of at most two children, in the other tree (a leaf) S/2 up:
  T ≤ S/2 + 2 x S/2 + S/2 = 2S, so T = 2 (NCCL's own model of the tree: busBw = 2 x algBw, not
  2(n−1)/n, github.com/NVIDIA/nccl-tests/issues/274; the two trees:
  developer.nvidia.com/blog/massively-scale-deep-learning-training-nccl-2-4/). On 2 nodes each
  node is the root of one tree and the only child in the other: S/2 + S/2, T = 1 (why a 2-node tree's busbw can exceed the NICs:
  github.com/NVIDIA/nccl-tests/issues/196, NVIDIA: "force NCCL_ALGO=RING" to measure the network).
- **nvls_tree** (all_reduce: NVLink SHARP inside the node, the same tree across nodes): T as tree.
- **collnet** (all_reduce with in-network reduction on the switch, CollNet / NVLS across nodes):
  each node sends its partial sum once and receives the result once, T = 1. Only when NCCL_ALGO
  names it: it needs switches that reduce.

The promise holds for the algorithm that ran: NCCL_ALGO in the run's environment names the ones
allowed (a list, or "^X" excluding). Without it the promise is the floor over ring, tree and
nvls_tree (ASSUMED): the reading with the largest T, the one that takes the most NIC traffic
for the busbw seen, judges; the one with the smallest T is what the NICs carried at least (a
figure above the link even then is suspect).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from reports.shared.ops import bus_factor

Algorithm = Literal["ring", "tree", "nvls_tree", "collnet"]


def _ring(op: str, n: int, k: int) -> float:
    return bus_factor(op, n)


def _tree(op: str, n: int, k: int) -> float:
    return 1.0 if k == 2 else 2.0


def _collnet(op: str, n: int, k: int) -> float:
    return 1.0


# T: what a node sends across the network per byte of S, by algorithm, for the ops it runs
ALGORITHMS: dict[Algorithm, tuple[tuple[str, ...], Callable[[str, int, int], float]]] = {
    "ring": (("all_reduce", "all_gather", "reduce_scatter"), _ring),
    "tree": (("all_reduce",), _tree),
    "nvls_tree": (("all_reduce",), _tree),
    "collnet": (("all_reduce",), _collnet),
}
ASSUMED: tuple[Algorithm, ...] = ("ring", "tree", "nvls_tree")
# NCCL_ALGO's words (lower case) for each algorithm
NCCL_NAMES: dict[str, Algorithm] = {
    "ring": "ring",
    "tree": "tree",
    "nvlstree": "nvls_tree",
    "collnetdirect": "collnet",
    "collnetchain": "collnet",
    "collnet": "collnet",
    "nvls": "collnet",
}
WIRE_OPS = tuple(sorted({op for ops, _ in ALGORITHMS.values() for op in ops}))


@dataclass(frozen=True, kw_only=True, slots=True)
class Wire:
    """One NIC's wire rate behind a world busbw."""

    rate: float  # GB/s: the reading the promise is judged by (the largest T among `algos`)
    least: float  # GB/s: the reading with the smallest T (what the NICs carried at least)
    algo: Algorithm  # the algorithm whose reading is `rate`
    algos: tuple[Algorithm, ...]  # those NCCL may have used
    why: str  # how `algos` is known


def allowed(op: str, env: Mapping[str, str]) -> tuple[tuple[Algorithm, ...], str]:
    """The algorithms NCCL may have run `op` with, and how that is known."""
    runs = [a for a, (ops, _) in ALGORITHMS.items() if op in ops]
    said = env.get("NCCL_ALGO", "").strip()
    if said:
        exclude = said.startswith("^")
        named = {
            NCCL_NAMES[w] for w in (x.strip().lower() for x in said.lstrip("^").split(",")) if w in NCCL_NAMES
        }
        chosen = [a for a in runs if (a not in named if exclude else a in named)]
        if exclude:
            chosen = [a for a in chosen if a in ASSUMED]
        if chosen:
            return tuple(chosen), f"NCCL_ALGO={said}"
    assumed = tuple(a for a in ASSUMED if a in runs)
    return assumed, (
        f"NCCL_ALGO={said} names none of {', '.join(runs)}: " if said else "algorithm not recorded: "
    ) + f"the floor over {', '.join(assumed)}"


def wire_rate(op: str, busbw: float, ranks: int, nodes: int, env: Mapping[str, str]) -> Wire | None:
    """Each NIC's wire rate behind a world `op` busbw over `ranks` on `nodes` (module docstring);
    None for an op with no algorithm here."""
    algos, why = allowed(op, env)
    if not algos:
        return None
    g = ranks / nodes
    algbw = busbw / bus_factor(op, ranks)
    readings = {a: algbw * ALGORITHMS[a][1](op, ranks, nodes) / g for a in algos}
    top = max(algos, key=lambda a: readings[a])
    return Wire(rate=readings[top], least=min(readings.values()), algo=top, algos=algos, why=why)
