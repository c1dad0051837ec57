"""Who shares a node, and the groups of each scope (pure).

A rank's host name is STOKER_HOSTNAME if set, else socket.gethostname(); tests give
fake hosts per rank with STOKER_HOSTS_MAP / --hosts-override "h0,h0,h1,h1" (rank i's host).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reports.shared.errors import UsageError
from reports.shared.records import CLI_NET_SCOPES

SCOPES = CLI_NET_SCOPES  # what `--scopes` takes (records say `pair` for `pairs`)


def my_host(rank: int, override: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """This rank's host name: the override map, then STOKER_HOSTNAME, then the system's."""
    env = os.environ if environ is None else environ
    mapping = override or env.get("STOKER_HOSTS_MAP", "")
    if mapping:
        hosts = [h.strip() for h in mapping.split(",")]
        if rank >= len(hosts) or not hosts[rank]:
            raise UsageError(
                f"--hosts-override/STOKER_HOSTS_MAP names {len(hosts)} hosts but this is rank {rank}: give one host per rank"
            )
        return hosts[rank]
    return env.get("STOKER_HOSTNAME", "").strip() or socket.gethostname()


@dataclass(frozen=True, kw_only=True, slots=True)
class Topology:
    hosts: tuple[str, ...]  # host of each global rank

    @property
    def nodes(self) -> tuple[str, ...]:
        """Distinct hosts in order of their first rank."""
        return tuple(dict.fromkeys(self.hosts))

    def node_ranks(self) -> list[list[int]]:
        """Global ranks of each node, node by node."""
        by_host: dict[str, list[int]] = {}
        for r, h in enumerate(self.hosts):
            by_host.setdefault(h, []).append(r)
        return list(by_host.values())

    def leaders(self) -> list[int]:
        """Local rank 0 of each node (the first rank on it)."""
        return [ranks[0] for ranks in self.node_ranks()]

    def untested_rails(self) -> dict[str, tuple[int, ...]]:
        """{host: rails the pairs and groups scopes cannot measure on it}: rail j is local
        rank j, measured only between nodes that both run a rank j, so where ranks per node
        differ a node's missing rails, and a rail only one node has, go untested."""
        node_ranks = self.node_ranks()
        width = max((len(rs) for rs in node_ranks), default=0)
        have = [sum(1 for rs in node_ranks if j < len(rs)) for j in range(width)]
        out = {}
        for host, rs in zip(self.nodes, node_ranks):
            missing = tuple(j for j in range(width) if j >= len(rs) or have[j] < 2)
            if missing:
                out[host] = missing
        return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Group:
    index: int  # the record's `group`
    ranks: tuple[int, ...]  # global ranks, in group-rank order
    hosts: tuple[str, ...]  # distinct hosts taking part
    round: int | None = None  # pairs: the tournament round
    rail: int | None = None  # pairs and groups: the local rank index every member runs at


def _group(
    topo: Topology, index: int, ranks: Sequence[int], rnd: int | None = None, rail: int | None = None
) -> Group:
    # torch.distributed numbers a group's ranks in global-rank order; so do we, so that
    # roots, peers and expected chunks agree with the backend's group ranks
    ordered = tuple(sorted(ranks))
    hosts = tuple(dict.fromkeys(topo.hosts[r] for r in ordered))
    return Group(index=index, ranks=ordered, hosts=hosts, round=rnd, rail=rail)


def _rail_groups(
    topo: Topology,
    node_ranks: Sequence[Sequence[int]],
    node_sets: Sequence[Sequence[int]],
    rnd: int,
    first: int,
) -> list[Group]:
    """Each set of node indices on every rail at once: rail j is the group of each node's
    local rank j (the rails are separate networks, so a round costs the same on 8 rails as
    on one). A rail is measured where every node of the set has it. Indices from `first`."""
    node_ranks = topo.node_ranks()
    out: list[Group] = []
    for nodes in node_sets:
        for j in range(min(len(node_ranks[i]) for i in nodes)):
            out.append(_group(topo, first + len(out), [node_ranks[i][j] for i in nodes], rnd=rnd, rail=j))
    return out


def round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Circle method: n-1 rounds (n even) or n rounds (n odd) of disjoint pairs, every pair
    of 0..n-1 exactly once; with n odd one node sits out each round, in turn."""
    players: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    m = len(players)
    rounds: list[list[tuple[int, int]]] = []
    for _ in range(m - 1):
        pairs = []
        for i in range(m // 2):
            a, b = players[i], players[m - 1 - i]
            if a is not None and b is not None:
                pairs.append((min(a, b), max(a, b)))
        rounds.append(pairs)
        players = [players[0], players[-1], *players[1:-1]]  # rotate all but the first
    return rounds


def scope_groups(topo: Topology, scope: str) -> tuple[list[list[Group]], str]:
    """Rounds of disjoint groups for a scope (one round except for pairs), or ([], why)
    when the scope cannot run on this topology."""
    node_ranks = topo.node_ranks()
    if scope == "world":
        return [[_group(topo, 0, range(len(topo.hosts)))]], ""
    if scope == "intra-node":
        groups = [_group(topo, i, rs) for i, rs in enumerate(node_ranks) if len(rs) > 1]
        return ([groups], "") if groups else ([], "every node has one rank")
    if len(node_ranks) < 2:
        return [], f"one node ({topo.nodes[0]})"
    if scope == "inter-node":
        width = max(len(rs) for rs in node_ranks)
        rails = [[rs[j] for rs in node_ranks if j < len(rs)] for j in range(width)]
        groups = [_group(topo, j, rail) for j, rail in enumerate(rails) if len(rail) > 1]
        return [groups], ""
    if scope == "pairs":
        return pair_rounds(topo, round_robin(len(node_ranks))), ""
    if scope == "groups":  # rounds are chosen as the search goes (netbench.runner): none up front
        return (
            ([], "")
            if len(node_ranks) >= 4
            else ([], f"{len(node_ranks)} nodes: the search needs 4, use --scopes pairs")
        )
    raise UsageError(f"unknown scope {scope!r}: choose from {', '.join(SCOPES)}")


def host_groups(topo: Topology, groups: Sequence[Sequence[str]], rnd: int) -> list[Group]:
    """Groups of host names (one round of the groups search) -> one group per rail of each:
    local rank j of every member, all rails at once, in order (host group, rail)."""
    index = {h: i for i, h in enumerate(topo.nodes)}
    return _rail_groups(topo, topo.node_ranks(), [[index[h] for h in g] for g in groups], rnd, 0)


def pair_rounds(topo: Topology, rounds: Sequence[Sequence[tuple[int, int]]]) -> list[list[Group]]:
    """Node-index pairs -> one group per rail of each pair (local rank j of both nodes), every
    rail of every pair of a round at once; group indices run on across rounds."""
    node_ranks = topo.node_ranks()
    out: list[list[Group]] = []
    index = 0
    for k, pairs in enumerate(rounds):
        out.append(_rail_groups(topo, node_ranks, pairs, k, index))
        index += len(out[-1])
    return out


def schedule_rounds(nodes: int, rails: int) -> int:
    """Rounds of the pair tournament on `nodes` nodes of `rails` ranks each: the rails of a
    pair run in the same round, so the count does not depend on `rails`."""
    topo = Topology(hosts=tuple(f"n{i}" for i in range(nodes) for _ in range(rails)))
    return len(pair_rounds(topo, round_robin(nodes)))


def host_pairs_rounds(topo: Topology, pairs: Sequence[tuple[str, str]]) -> list[list[tuple[int, int]]]:
    """Explicit host pairs -> rounds of disjoint node-index pairs (greedy packing)."""
    index = {h: i for i, h in enumerate(topo.nodes)}
    rounds: list[list[tuple[int, int]]] = []
    for a, b in pairs:
        for h in (a, b):
            if h not in index:
                raise UsageError(
                    f"--pairs names host {h!r}, which runs no rank here; hosts: {', '.join(topo.nodes)}"
                )
        if a == b:
            raise UsageError(f"--pairs {a}:{b} pairs a host with itself; give two different hosts")
        pair = (index[a], index[b])
        for rnd in rounds:
            if not {x for p in rnd for x in p} & set(pair):
                rnd.append(pair)
                break
        else:
            rounds.append([pair])
    return rounds


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """'a:b,c:d' -> [('a','b'), ('c','d')]."""
    out = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) != 2 or not all(parts):
            raise UsageError(f"bad --pairs entry {item!r}: give HOSTA:HOSTB pairs separated by commas")
        out.append((parts[0], parts[1]))
    return out
