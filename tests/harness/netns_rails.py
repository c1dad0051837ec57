"""A namespaced cluster of several rails (root only): N nodes with R interfaces each.

Rail r is its own network, as on a training fleet where each GPU has its nearest NIC: a
bridge `br<r>` in the switch namespace and a subnet of its own, `eth<r>` in every node on it.
Local rank r of every node uses rail r: the ranks start through `tests/harness/rail_rank.py`,
which sets gloo's GLOO_SOCKET_IFNAME=eth<LOCAL_RANK>. Each (node, rail) link is shaped on
its own (HTB default class on the node's side, tbf on the bridge's port), so one slow NIC of
one node can be made.

    with RailCluster(prefix="nxr", nodes=3, rails=2, rate_mbit=200) as c:
        c.shape_rail(1, 1, 50)              # node 1's rail 1 at a quarter
        c.rail_addr(1, 1)                   # node 1's address on rail 1
        c.torchrun(2, 29460, c.rail_args(["-m", "launchers.cli", "net", ...]))

Names resolve to rail 0 (torchrun's rendezvous runs there). Everything else — processes,
teardown, `run`, `popen`, `run_all`, `launch` — is NetnsCluster's (tests/harness/netns.py).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from tests.harness.netns import BURST, NETNS_ETC, TBF_LATENCY, NetnsCluster, run_ip, run_tc, subnet
from tests.harness.rail_rank import rail_ifname

RAIL_RANK = Path(__file__).with_name("rail_rank.py")


class RailCluster(NetnsCluster):
    def __init__(self, prefix: str, nodes: int, rails: int, rate_mbit: float | None = None) -> None:
        if not 1 <= rails <= 8:
            raise ValueError(f"rails={rails}: use 1..8")
        super().__init__(prefix, nodes, rate_mbit)
        self.rails = rails
        a, b = subnet(prefix).split(".")[1:]
        self._rail_nets = [f"10.{a}.{(int(b) + 1 + r) % 256}" for r in range(rails)]
        self._shaped: set[tuple[int, int]] = set()

    def __enter__(self) -> RailCluster:
        super().__enter__()
        return self

    def rail_addr(self, i: int, rail: int) -> str:
        return f"{self._rail_nets[rail]}.{i + 1}"

    def addr(self, i: int) -> str:
        return self.rail_addr(i, 0)

    def port(self, i: int, rail: int) -> str:
        """The bridge's port of node i on rail `rail`, in the switch namespace."""
        return f"p{i}r{rail}"

    def rail_args(self, python_args: Sequence[str]) -> list[str]:
        """torchrun's script arguments that run `python *python_args` bound to each rank's rail."""
        return [str(RAIL_RANK), *python_args]

    def _build(self) -> None:
        sw = self.switch
        run_ip("netns", "add", sw)
        run_ip("-n", sw, "link", "set", "lo", "up")
        for r in range(self.rails):
            run_ip("-n", sw, "link", "add", f"br{r}", "type", "bridge")
            run_ip("-n", sw, "link", "set", f"br{r}", "up")
        hosts_file = "127.0.0.1\tlocalhost\n" + "".join(
            f"{self.addr(i)}\t{h}\n" for i, h in enumerate(self.hosts)
        )
        for i, ns in enumerate(self.namespaces):
            run_ip("netns", "add", ns)
            run_ip("-n", ns, "link", "set", "lo", "up")
            for r in range(self.rails):
                dev, port = rail_ifname(r), self.port(i, r)
                run_ip("-n", sw, "link", "add", port, "type", "veth", "peer", "name", dev, "netns", ns)
                run_ip("-n", sw, "link", "set", port, "master", f"br{r}")
                run_ip("-n", sw, "link", "set", port, "up")
                run_ip("-n", ns, "addr", "add", f"{self.rail_addr(i, r)}/24", "dev", dev)
                run_ip("-n", ns, "link", "set", dev, "up")
            etc = NETNS_ETC / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
            (etc / "hostname").write_text(self.hosts[i] + "\n")
        if self.rate_mbit:
            for i in range(self.n):
                self.shape_node(i, self.rate_mbit)
        self._wait_rails()

    def _wait_rails(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for i, ns in enumerate(self.namespaces):
            for r in range(self.rails):
                for where, dev in ((ns, rail_ifname(r)), (self.switch, self.port(i, r))):
                    while "state UP" not in run_ip("-n", where, "link", "show", dev).stdout:
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"{dev} in {where} did not come up")
                        time.sleep(0.05)

    def shape_rail(self, i: int, rail: int, rate_mbit: float) -> None:
        """Node i's link on rail `rail` sends and receives at most `rate_mbit`."""
        ns, dev, rate = self.namespaces[i], rail_ifname(rail), f"{rate_mbit}mbit"
        verb = "change" if (i, rail) in self._shaped else "add"
        if verb == "add":
            run_tc(ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1")
        run_tc(ns, "class", verb, "dev", dev, "parent", "1:", "classid", "1:1", "htb",
               "rate", rate, "ceil", rate, "burst", BURST, "cburst", BURST)  # fmt: skip
        run_tc(self.switch, "qdisc", "replace", "dev", self.port(i, rail), "root", "handle", "1:",
               "tbf", "rate", rate, "burst", BURST, "latency", TBF_LATENCY)  # fmt: skip
        self._shaped.add((i, rail))

    def shape_node(self, i: int, rate_mbit: float) -> None:
        """Every rail of node i at `rate_mbit` (a slow node, not one slow NIC)."""
        for r in range(self.rails):
            self.shape_rail(i, r, rate_mbit)

    def shape_pair(self, i: int, j: int, rate_mbit: float) -> None:
        raise NotImplementedError("RailCluster shapes (node, rail) links: use shape_rail")

    def netem(self, i: int, delay_ms: float, loss_pct: float = 0.0) -> None:
        raise NotImplementedError("RailCluster shapes (node, rail) links: use shape_rail")
