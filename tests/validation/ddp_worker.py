"""One rank of a real data-parallel training loop (gloo, CPU), for benchmarks/validate_model.py.

Started by the harness with torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR/PORT). An
MLP of `--depth` Linear(width, width) layers in fp32 (each weight 4 x width^2 bytes, so DDP's
buckets fill at the same granularity as a transformer's many small tensors) is trained with
DistributedDataParallel (or FSDP2 `fully_shard` with `--fsdp`). Steps alternate: a
`no_sync()` step (forward, backward, optimizer, no communication: the compute time C) and a
normal step (the real step time). FSDP has no communication-free step (its forward gathers
the parameters), so its compute steps run a plain copy of the same MLP. Prints one JSON
line: this rank's per-step seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn


def _mlp(width: int, depth: int) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--depth", type=int, default=12)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--steps", type=int, default=8, help="timed steps of each kind")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--fsdp", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo")
    model = _mlp(a.width, a.depth)
    params = sum(p.numel() for p in model.parameters())
    plain = _mlp(a.width, a.depth)
    plain_opt = torch.optim.SGD(plain.parameters(), lr=1e-6)
    if a.fsdp:
        from torch.distributed.fsdp import fully_shard

        for layer in model:
            if isinstance(layer, nn.Linear):
                fully_shard(layer)
        net: nn.Module = fully_shard(model)
    else:
        net = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb)
    opt = torch.optim.SGD(net.parameters(), lr=1e-6)
    x = torch.randn(a.batch, a.width)
    marks: dict[str, float] = {}  # set by the hook below, inside backward
    # the first layer's weight gradient is the last one the backward pass produces
    model[0].weight.register_hook(lambda g: marks.__setitem__("last_grad", time.perf_counter()) or g)

    def step(sync: bool) -> float:
        dist.barrier()  # every rank starts together: the step measures this step alone
        # CPU time of this thread, where forward, backward and step run (one intra-op thread); the
        # process's would count gloo's threads, the wall clock the other jobs on the shared cores
        c0 = time.thread_time()
        t0 = time.perf_counter()
        marks.clear()
        if a.fsdp and not sync:
            plain(x).square().mean().backward()
            plain_opt.step()
            plain_opt.zero_grad(set_to_none=True)
            cpu[sync].append(time.thread_time() - c0)
            return time.perf_counter() - t0
        # DDP's no_sync() must cover the forward too: the forward arms the gradient hooks
        with contextlib.nullcontext() if sync else net.no_sync():  # type: ignore[operator]
            loss = net(x).square().mean()
            t_fwd = time.perf_counter()
            loss.backward()
            t_bwd = time.perf_counter()
        opt.step()
        opt.zero_grad(set_to_none=True)
        t_end = time.perf_counter()
        cpu[sync].append(time.thread_time() - c0)
        # forward, backward compute (to the last gradient), backward return, step: seconds from t0
        phases[sync].append((t_fwd - t0, marks.get("last_grad", t_bwd) - t0, t_bwd - t0, t_end - t0))
        return t_end - t0

    phases: dict[bool, list[tuple[float, float, float, float]]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}  # CPU seconds of each step
    for _ in range(a.warmup):
        step(True)
        step(False)
    phases[True].clear()
    phases[False].clear()
    cpu[True].clear()
    cpu[False].clear()
    compute, full = [], []
    for _ in range(a.steps):
        compute.append(step(False))
        full.append(step(True))
    print(
        json.dumps(
            {
                "rank": dist.get_rank(),
                "compute_s": compute,
                "compute_cpu_s": cpu[False],
                "step_s": full,
                "params": params,
                "phases_sync": phases[True],
                "phases_nosync": phases[False],
                "grad_bytes": params * 4,
                "pid": os.getpid(),
            }
        ),
        flush=True,
    )
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
