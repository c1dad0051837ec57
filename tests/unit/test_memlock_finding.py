"""A node with RDMA ports and a finite locked-memory limit (the inventory's `memlock`, read from
/proc/self/limits) is a `misconfigured` finding naming the fix; `unlimited`, an unread limit or a
node without RDMA ports is not judged. `stoker check` (and so `stoker preflight`) fails on it."""

from __future__ import annotations

from typing import Any

import pytest

from launchers.actions import check_plan as cp
from reports.judging.node.inventory import judge_inventory


def node(memlock: Any, *ports: str) -> list[dict[str, Any]]:
    recs: list[dict[str, Any]] = [{"host": "n1", "component": "node", "device": "n1", "memlock": memlock}]
    recs += [
        {"host": "n1", "component": "network port", "device": d, "port": "1", "state": "ACTIVE"}
        for d in ports
    ]
    recs.append({"host": "n1", "component": "network port", "device": "eno1", "port": None, "state": "UP"})
    return recs


def test_a_limited_rdma_node_is_misconfigured_with_the_fix_named() -> None:
    (f,) = judge_inventory(node(8 << 20, "mlx5_0", "mlx5_1"))
    assert (f.component, f.check, f.status, f.hosts, f.measured) == (
        "node",
        "memlock",
        "misconfigured",
        ("n1",),
        8388608.0,
    )
    assert f.extra["rdma_devices"] == ["mlx5_0", "mlx5_1"]
    for fix in ("ulimit -l unlimited", "limits.conf", "PropagateResourceLimits", "--ulimit memlock=-1"):
        assert fix in f.message
    assert "ulimit -l 8192" in f.message  # the limit as the user sees it
    assert cp.outcome([f], []).verdict == "fail"  # stoker check, and so stoker preflight, fail on it


@pytest.mark.parametrize(
    "recs",
    [node("unlimited", "mlx5_0"), node(None, "mlx5_0"), node(65536)],
    ids=["unlimited", "unread", "no-rdma-port"],
)
def test_nothing_to_say(recs: list[dict[str, Any]]) -> None:
    assert judge_inventory(recs) == []
