"""The namespaced cluster harness itself, measured against the rates tc was told to enforce."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import bed_missing, needs_root, needs_tool
from tests.harness.netns import NETNS_ETC, NetnsCluster, unavailable_reason

pytestmark = [needs_root, needs_tool("iperf3")]

# A shaped TCP stream delivers payload at rate × 1448/1514 (MSS over wire frame with
# Ethernet, IP, TCP and timestamp headers) ≈ 0.956 × rate; iperf3 measured 0.94–0.957 here.
GOODPUT_LOW, GOODPUT_HIGH = 0.90, 1.0

ALL_REDUCE = """
import socket, torch, torch.distributed as dist
dist.init_process_group("gloo")
x = torch.full((1 << 16,), float(dist.get_rank() + 1))
dist.all_reduce(x)
print(dist.get_rank(), socket.gethostname(), int(x[0].item()), int((x != x[0]).sum()), flush=True)
dist.destroy_process_group()
"""


@pytest.fixture(autouse=True)
def _available() -> None:
    reason = unavailable_reason()
    if reason:
        bed_missing(reason)


@pytest.fixture
def pair_1g() -> Iterator[NetnsCluster]:
    with NetnsCluster(prefix="nxh", nodes=2, rate_mbit=1000) as c:
        yield c


def test_names_resolve_and_hosts_differ(pair_1g: NetnsCluster) -> None:
    c = pair_1g
    assert c.run(1, ["hostname"]).stdout.strip() == "nxhn1"
    looked_up = c.run(1, ["getent", "hosts", "nxhn0"]).stdout.split()
    assert looked_up[:2] == [c.addr(0), "nxhn0"]


def test_shaped_node_goodput_both_directions(pair_1g: NetnsCluster) -> None:
    for server, client in ((0, 1), (1, 0)):
        gbit = pair_1g.tcp_goodput_bps(server, client, seconds=1.0) / 1e9
        assert GOODPUT_LOW <= gbit <= GOODPUT_HIGH, (server, client, gbit)


def test_gloo_all_reduce_across_namespaces(pair_1g: NetnsCluster, tmp_path: Path) -> None:
    script = tmp_path / "ar.py"
    script.write_text(ALL_REDUCE)
    results = pair_1g.torchrun(nproc=1, port=29400, module_args=[str(script)], timeout=120)
    lines = []
    for rc, out, err in results:
        assert rc == 0, err[-2000:]
        lines += [ln.split() for ln in out.splitlines() if ln.strip()]
    # rank r runs on node r (static rendezvous) and 1 + 2 = 3 everywhere.
    assert sorted(lines) == [["0", "nxhn0", "3", "0"], ["1", "nxhn1", "3", "0"]]


def test_slow_pair_inside_a_shaped_fleet() -> None:
    with NetnsCluster(prefix="nxh", nodes=3, rate_mbit=400) as c:
        c.shape_pair(0, 1, 100)
        slow_ab = c.tcp_goodput_bps(0, 1, seconds=1.0) / 1e6
        slow_ba = c.tcp_goodput_bps(1, 0, seconds=1.0) / 1e6
        node = c.tcp_goodput_bps(2, 0, seconds=1.0) / 1e6
    assert 100 * GOODPUT_LOW <= slow_ab <= 100 * GOODPUT_HIGH, slow_ab
    assert 100 * GOODPUT_LOW <= slow_ba <= 100 * GOODPUT_HIGH, slow_ba
    assert 400 * GOODPUT_LOW <= node <= 400 * GOODPUT_HIGH, node


def test_shape_pair_alone_leaves_other_pairs_unshaped() -> None:
    with NetnsCluster(prefix="nxh", nodes=3) as c:
        c.shape_pair(0, 1, 200)
        slow = c.tcp_goodput_bps(0, 1, seconds=1.0) / 1e6
        fast = c.tcp_goodput_bps(0, 2, seconds=1.0) / 1e6
    assert 200 * GOODPUT_LOW <= slow <= 200 * GOODPUT_HIGH, slow
    assert fast > 2 * 200, fast  # an unshaped veth carries several Gbit/s


def test_teardown_removes_everything_and_stale_leftovers() -> None:
    # What a crashed run with more nodes would leave behind.
    subprocess.run(["ip", "netns", "add", "nxh-n7"], check=True)
    (NETNS_ETC / "nxh-n7").mkdir(parents=True, exist_ok=True)
    with pytest.raises(KeyboardInterrupt):
        with NetnsCluster(prefix="nxh", nodes=2) as c:
            assert (
                "nxh-n7" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            )
            c.popen(0, ["sleep", "60"])
            raise KeyboardInterrupt
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not [ln for ln in listed.splitlines() if ln.startswith("nxh-")], listed
    assert not list(NETNS_ETC.glob("nxh-*"))
