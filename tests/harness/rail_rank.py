"""Bind one rank to its rail's interface, then run the rank (the multi-rail bed's wrapper).

torchrun starts every local rank with the same environment; on a real node NCCL picks each
GPU's nearest NIC, but gloo uses one interface per process, named by GLOO_SOCKET_IFNAME. So
the bed starts `python rail_rank.py ARGS...` under torchrun: rank LOCAL_RANK gets
GLOO_SOCKET_IFNAME=eth<LOCAL_RANK> (rail j is local rank j) and `python ARGS...` replaces
this process. The product never needs this.
"""

from __future__ import annotations

import os
import sys


def rail_ifname(rail: int) -> str:
    """The interface of rail `rail` in every node of the bed."""
    return f"eth{rail}"


def main() -> None:
    env = dict(os.environ)
    env["GLOO_SOCKET_IFNAME"] = rail_ifname(int(env.get("LOCAL_RANK", "0")))
    os.execve(sys.executable, [sys.executable, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
