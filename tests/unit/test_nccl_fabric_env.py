"""The NCCL environment a GPU rank takes from its node's inventory (netbench/nccl_env.py
`fabric_env`), the RoCE GID index from a port's GID table, the locked-memory limit and whether
GPU Direct RDMA is possible (netbench/inventory/node_facts.py), on recorded outputs
(tests/data/inventory: show-gids-connectx6.txt, proc-self-limits.txt, nvidia-version-open.txt;
each file's '# ' header names its source)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netbench.inventory.node import read_node
from netbench.inventory.node_facts import gdr_support, parse_memlock, roce_gid_index
from netbench.inventory.read import network_ports
from netbench.inventory.this_node import host_records
from netbench.nccl_env import fabric_env

D = Path(__file__).resolve().parents[1] / "data" / "inventory"
SYSFS_TYPE = {"v1": "IB/RoCE v1", "v2": "RoCE v2"}  # what show_gids shortens to v1 / v2


def recorded(name: str) -> str:
    return "\n".join(line for line in (D / name).read_text().split("\n") if not line.startswith("# "))


def show_gids() -> tuple[dict[int, str], dict[int, str]]:
    """The recorded show_gids table as the sysfs files it was read from."""
    gids, types = {}, {}
    for line in recorded("show-gids-connectx6.txt").splitlines():
        cells = line.split()
        if len(cells) >= 6 and cells[0].startswith("mlx5") and cells[2].isdigit():
            gids[int(cells[2])] = cells[3]
            types[int(cells[2])] = SYSFS_TYPE[cells[-2]]
    return gids, types


def test_gid_index_is_the_roce_v2_ipv4_entry_of_a_recorded_table() -> None:
    gids, types = show_gids()
    assert len(gids) == 6
    # 0-3 are link-local IPv6 (fe80::), 4 is the IPv4 address as RoCE v1, 5 as RoCE v2
    assert roce_gid_index(gids, types) == 5


def test_gid_index_of_the_table_in_nccls_tracker() -> None:
    # ibv_devinfo -v of mlx5_bond_0 as quoted in github.com/NVIDIA/nccl/issues/769: index 1 (the
    # link-local v2 GID) timed out, index 3 worked
    gids = {
        0: "fe80:0000:0000:0000:0ac0:ebff:feda:1cfb",
        1: "fe80::ac0:ebff:feda:1cfb",
        2: "0000:0000:0000:0000:0000:ffff:c800:d106",
        3: "::ffff:200.0.209.6",
    }
    types = {0: "IB/RoCE v1", 1: "RoCE v2", 2: "IB/RoCE v1", 3: "RoCE v2"}
    assert roce_gid_index(gids, types) == 3
    assert roce_gid_index({k: v for k, v in gids.items() if k < 3}, types) is None  # no IPv4 v2 GID
    # an empty entry (all zeros) of a port with no address yet is never chosen
    assert roce_gid_index({0: "0000:0000:0000:0000:0000:0000:0000:0000"}, {0: "RoCE v2"}) is None


def roce_tree(root: Path, gids: dict[int, str], types: dict[int, str]) -> None:
    port = root / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    (port / "gids").mkdir(parents=True)
    (port / "gid_attrs" / "types").mkdir(parents=True)
    for f, text in (
        ("state", "4: ACTIVE\n"),
        ("rate", "100 Gb/sec (4X EDR)\n"),
        ("link_layer", "Ethernet\n"),
    ):
        (port / f).write_text(text)
    for i in range(8):  # the rest of the table is empty entries, whose type cannot be read
        (port / "gids" / str(i)).write_text(gids.get(i, "0000:0000:0000:0000:0000:0000:0000:0000") + "\n")
        if i in types:
            (port / "gid_attrs" / "types" / str(i)).write_text(types[i] + "\n")


def test_the_inventory_reads_the_gid_index_of_a_roce_port(tmp_path: Path) -> None:
    roce_tree(tmp_path, *show_gids())
    (port,) = network_ports(tmp_path)
    assert (port["device"], port["link_layer"], port["roce_gid_index"]) == ("mlx5_0", "Ethernet", 5)


def port(device: str, state: str = "ACTIVE", n: str | None = "1", **kw: Any) -> dict[str, Any]:
    return {"component": "network port", "device": device, "port": n, "state": state, **kw}


DGX = [  # 4 GPU rails, a storage HCA, an unused one DOWN, a management NIC and a storage NIC
    *(port(f"mlx5_{i}", rate_Gbps=400.0, link_layer="InfiniBand") for i in (0, 3, 4, 5)),
    port("mlx5_1", rate_Gbps=200.0, link_layer="InfiniBand"),
    port("mlx5_2", state="DOWN", link_layer="InfiniBand"),
    port("eno1", state="UP", n=None, rate_Gbps=1.0, link_layer="Ethernet"),
]
RAILS = {"mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5"}


def test_nccl_ib_hca_names_the_gpu_rails_exactly() -> None:
    assert fabric_env(DGX, RAILS, {}) == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1"}
    # no affinity known: every active RDMA port, never a DOWN one
    assert fabric_env(DGX, None, {}) == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1,mlx5_3:1,mlx5_4:1,mlx5_5:1"}


@pytest.mark.parametrize("mine", ["mlx5_0,mlx5_3", ""])
def test_the_users_own_value_wins(mine: str) -> None:
    assert fabric_env(DGX, RAILS, {"NCCL_IB_HCA": mine}) == {}


def test_roce_ports_get_the_gid_index_their_tables_agree_on() -> None:
    roce = [port(f"mlx5_{i}", link_layer="Ethernet", roce_gid_index=3) for i in range(2)]
    assert fabric_env(roce, None, {}) == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1", "NCCL_IB_GID_INDEX": "3"}
    assert fabric_env(roce, None, {"NCCL_IB_GID_INDEX": "1"}) == {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_1:1"}
    split = [*roce[:1], port("mlx5_1", link_layer="Ethernet", roce_gid_index=5)]
    assert "NCCL_IB_GID_INDEX" not in fabric_env(split, None, {})  # disagree: NCCL picks per port
    none = [port("mlx5_0", link_layer="Ethernet", roce_gid_index=None)]
    assert "NCCL_IB_GID_INDEX" not in fabric_env(none, None, {})


def test_a_node_without_rdma_names_its_fastest_up_interfaces_for_sockets() -> None:
    eth = [
        port("eno1", state="UP", n=None, rate_Gbps=1.0),
        port("ens3f0", state="UP", n=None, rate_Gbps=100.0),
        port("ens3f1", state="UP", n=None, rate_Gbps=100.0),
        port("ens4", state="DOWN", n=None, rate_Gbps=200.0),
    ]
    assert fabric_env(eth, None, {}) == {"NCCL_SOCKET_IFNAME": "=ens3f0,ens3f1"}
    assert fabric_env(eth, None, {"NCCL_SOCKET_IFNAME": "eth"}) == {}
    assert "NCCL_SOCKET_IFNAME" not in fabric_env(DGX, RAILS, {})  # RDMA carries the data


def test_a_rank_reads_its_own_hosts_latest_inventory(tmp_path: Path) -> None:
    recs = [
        {"kind": "host", "host": "n1", **port("mlx5_0", state="DOWN")},
        {"kind": "host", "host": "n2", **port("mlx5_9")},
        {"kind": "host", "host": "n1", **port("mlx5_0")},  # read again: this one counts
        {
            "kind": "host",
            "host": "n1",
            "component": "host link",
            "device": "GPU0",
            "nearest_nic": "mlx5_0",
            "nic_path": "PXB",
        },
    ]
    (tmp_path / "host.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    mine = host_records(str(tmp_path), "n1", sys_root=tmp_path / "no-sys")
    assert sorted((r["component"], r["state"] if "state" in r else None) for r in mine) == [
        ("host link", None),
        ("network port", "ACTIVE"),
    ]
    # no inventory of this host in DIR: its ports read from sysfs now
    roce_tree(tmp_path / "sys", *show_gids())
    (p,) = host_records(str(tmp_path), "n3", sys_root=tmp_path / "sys")
    assert (p["device"], p["roce_gid_index"]) == ("mlx5_0", 5)


def test_memlock_from_recorded_limits() -> None:
    assert parse_memlock(recorded("proc-self-limits.txt")) == 8 << 20
    assert (
        parse_memlock("Max locked memory         unlimited            unlimited            bytes\n")
        == "unlimited"
    )
    assert parse_memlock(None) is None


def test_gdr_possible_by_module_or_dma_buf() -> None:
    open_module = recorded("nvidia-version-open.txt")
    closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Release Build\n"
    assert gdr_support(("nvidia_peermem",), "5.4.0-150-generic", closed) == "nvidia_peermem"
    assert gdr_support((), "6.8.0-49-generic", open_module) == "dma-buf"
    assert gdr_support((), "5.4.0-150-generic", open_module) == "none"  # dma-buf needs 5.12
    assert gdr_support((), "6.8.0-49-generic", closed) == "none"  # the proprietary module: no dma-buf
    assert gdr_support(("nvidia_peermem",), "6.8.0", None) is None  # no NVIDIA driver: nothing to say


def test_the_node_record_carries_memlock_and_gdr(tmp_path: Path) -> None:
    proc, sys = tmp_path / "proc", tmp_path / "sys"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "limits").write_text(recorded("proc-self-limits.txt"))
    (proc / "driver" / "nvidia").mkdir(parents=True)
    (proc / "driver" / "nvidia" / "version").write_text(recorded("nvidia-version-open.txt"))
    (proc / "sys" / "kernel").mkdir(parents=True)
    (proc / "sys" / "kernel" / "osrelease").write_text("5.15.0-91-generic\n")
    (sys / "module" / "nvidia_peermem").mkdir(parents=True)
    rec = read_node(proc, sys)
    assert (rec["memlock"], rec["gdr"], rec["kernel"]) == (8 << 20, "nvidia_peermem", "5.15.0-91-generic")
