"""The starvation model against real training, on the namespaced test bed (root only).

For each component, real work runs on the bed and stoker predicts the same work from its own
records of that bed (`stoker net` / `stoker io` run there first) through reports.judging:

- DDP / FSDP: a real DistributedDataParallel / fully_shard MLP (gloo, one rank per node,
  fp32) across --nodes namespaced nodes on links shaped to --rate-mbit; compute-only time
  from interleaved no_sync() steps is the workload's `compute_s`; real idle share
  = (step - compute) / step vs the model's idle share.
- checkpoint: a real torch.save (fsync) and DCP save of an MLP + Adam state on a loop
  device throttled to --throttle-mib MiB/s, and on the plain disk (--plain-dir), vs the
  model's sync stall from stoker io's checkpoint records.
- compute: the DDP MLP's compute-only step vs C predicted from `stoker compute`
  records of the bed's CPU (no compute_s given: the model's measured-appetite path).
- dataloader: a real DataLoader (2 workers, prefetch 2) reading 1 MiB sample files from
  the throttled device into a loop with a fixed compute time per step; its measured wait
  share vs the model's dataloader idle share.
- checkpoint-1g (no root, no bed): a real 1 GB torch.save (fsync) and DCP save of an MLP +
  Adam state on the plain disk (--plain-dir), round by round alternately with `stoker io`'s
  checkpoint test of the same path, vs the model's sync stall from those records: saved at
  the size (--ckpt-bytes 1G), from a quarter of it with the rate past a half-size save, and
  from that quarter without that rate (what saves of one size gave: the small save's rate
  extrapolated).

    flock /tmp/stoker-heavy.lock .venv/bin/python benchmarks/validate_model.py --components ddp
    flock /tmp/stoker-heavy.lock .venv/bin/python benchmarks/validate_model.py --components checkpoint,dataloader
    .venv/bin/python benchmarks/validate_model.py --components compute   # no root, no bed
    .venv/bin/python benchmarks/validate_model.py --components checkpoint-1g --repeats 5   # no root, no bed

Each figure is the median of --repeats runs (each run's DDP figures are themselves medians
over steps). Prints a markdown table: component, regime, real, predicted, error, bound.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reports.table.read import RecordSet  # noqa: E402
from tests.harness.blockdev import throttled_disk  # noqa: E402
from tests.harness.netns import NetnsCluster, unavailable_reason  # noqa: E402
from tests.validation import bed, compute_bed  # noqa: E402

# regime -> (batch, bucket MiB, fsdp); on 400 Mbit/s one 12.6 MB gradient all-reduce takes ~0.26 s
TRAINING = {
    "DDP": [
        ("communication-bound", 64, 25.0),
        ("balanced", 1200, 25.0),
        ("compute-bound", 4000, 25.0),
        ("balanced, 7 buckets of 2 MiB", 1200, 2.0),
        ("compute-bound, 7 buckets of 2 MiB", 4000, 2.0),
    ],
    "FSDP": [("communication-bound", 64, 25.0), ("balanced", 1200, 25.0), ("compute-bound", 4000, 25.0)],
}
# the compute time predicted from `stoker compute` records vs the real step's, per batch
COMPUTE = [("batch 1200", 1200), ("batch 4000", 4000)]
DL_SAMPLE = 1 << 20
# the real save of checkpoint-1g: Linear(4096, 4096) x 5 + Adam, 12 B a parameter = 1.007 GB;
# stoker io's shards: the size itself, and a quarter of it (the model extrapolates past it)
SIZED = (4096, 5)
SIZED_MEASURED = {"at the size": "1G", "from a quarter": "256M"}
# the record fields of the rate past a half-size save (iobench/sustained.py): without them a
# record reads as saves of one size did
SUSTAINED_FIELDS = (
    "sustained_GBps",
    "per_host_sustained_GBps",
    "nonlinearity",
    "small_GBps",
    "small_shard_bytes",
)
# regime -> (batch, compute seconds per step); the throttle delivers 4 MiB batches every 0.08 s at 50 MiB/s
DATALOADER = [("starved 2x", 4, 0.040), ("starved 1.25x", 4, 0.064), ("fed (demand 0.67x)", 4, 0.120)]


def _median_rows(runs: list[list[bed.Row]]) -> list[bed.Row]:
    out = []
    for rows in zip(*runs):
        r = rows[0]
        out.append(
            bed.Row(
                component=r.component,
                regime=r.regime,
                unit=r.unit,
                bound=r.bound,
                abs_bound=r.abs_bound,
                real=statistics.median(x.real for x in rows),
                predicted=statistics.median(x.predicted for x in rows),
                detail=f"{len(rows)} runs, real {min(x.real for x in rows):.3g}..{max(x.real for x in rows):.3g}; {r.detail}",
            )
        )
    return out


def training_rows(kind: str, nodes: int, rate: float, repeats: int, steps: int, port: int) -> list[bed.Row]:
    runs = []
    with (
        NetnsCluster(prefix="mdlv", nodes=nodes, rate_mbit=rate) as c,
        tempfile.TemporaryDirectory(prefix="mdl-") as tmp,
    ):
        for rep in range(repeats):
            recs = bed.stoker_net(c, Path(tmp) / f"net{rep}", port=port)
            port += 1
            rows = []
            for regime, batch, bucket in TRAINING[kind]:
                t = bed.train(c, port, batch=batch, bucket_mb=bucket, fsdp=kind == "FSDP", steps=steps)
                port += 1
                pred = bed.predict_training(recs, t, nodes=nodes, bucket_mb=bucket, fsdp=kind == "FSDP")
                rows.append(
                    bed.Row(
                        component=kind,
                        regime=regime,
                        real=t.idle,
                        predicted=pred,
                        unit="idle",
                        bound=0.20,
                        detail=f"C {t.compute_s:.3f} s, step {t.step_s:.3f} s",
                    )
                )
                print(
                    f"  {kind} {regime}: C {t.compute_s:.3f} s step {t.step_s:.3f} s idle {t.idle:.3f} "
                    f"predicted {pred:.3f}; backward no_sync {t.backward_s[0]:.3f} s, sync {t.backward_s[1]:.3f} s",
                    flush=True,
                )
            runs.append(rows)
    return _median_rows(runs)


def compute_rows(nodes: int, repeats: int, steps: int, port: int) -> list[bed.Row]:
    """`stoker compute` (one process per rank, one thread each, fp32) just before each real run;
    the model's C from those records alone, against the real compute-only step. Both on CPU
    clocks (the sweep's process, the step's training thread): on 2 cores shared with other jobs,
    wall time measures the neighbours. The
    ranks run on loopback (compute_bed.train_local): a compute-only step has no network to shape."""
    runs = []
    with tempfile.TemporaryDirectory(prefix="mdl-") as tmp:
        for rep in range(repeats):
            rows = []
            for regime, batch in COMPUTE:
                recs = compute_bed.stoker_compute(Path(tmp) / f"c{rep}-{batch}", nodes)
                t = compute_bed.train_local(port, batch=batch, ranks=nodes, steps=steps)
                port += 1
                pred, how = compute_bed.predict_compute(recs, params=t.params, ranks=nodes, batch=batch)
                rows.append(
                    bed.Row(
                        component="compute",
                        regime=regime,
                        real=t.compute_cpu_s,
                        predicted=pred,
                        unit="s",
                        bound=0.20,
                        detail=f"wall {t.compute_s:.3f} s; " + how.split("(GPUs x ")[-1].rstrip(")"),
                    )
                )
                print(
                    f"  compute {regime}: real {t.compute_cpu_s:.3f} s CPU ({t.compute_s:.3f} s wall) "
                    f"predicted {pred:.3f} s ({how})",
                    flush=True,
                )
            runs.append(rows)
    return _median_rows(runs)


def storage_rows(components: set[str], throttle: int, plain: Path | None, repeats: int) -> list[bed.Row]:
    runs: list[list[bed.Row]] = []
    width, depth = 1024, 8
    nbytes = int(bed.checkpoint_params(width, depth) * bed.CKPT_BYTES_PER_PARAM)
    with throttled_disk(throttle, size="1G") as disk, tempfile.TemporaryDirectory(prefix="mdl-") as tmp:
        places = [("throttled", disk.mount, disk.cgroup_procs)]
        if plain is not None:
            places.append(("plain disk", plain, None))
        for rep in range(repeats):
            rows = []
            if "checkpoint" in components:
                for where, path, cg in places:
                    recs = bed.stoker_checkpoint(path, Path(tmp) / f"ck{rep}{where[0]}", cg, nbytes)
                    real = bed.real_checkpoint(path, cg, width, depth)
                    stall, note = bed.predict_checkpoint(recs, path, nbytes)
                    for backend in ("torch.save", "torch.dcp"):
                        rows.append(
                            bed.Row(
                                component="checkpoint",
                                regime=f"{backend}, {where}",
                                real=real[backend][0],
                                predicted=stall,
                                unit="s",
                                bound=0.15,
                                detail=f"{real['bytes'][backend] / 1e6:.0f} MB; {note}",
                            )
                        )
                        print(
                            f"  checkpoint {backend} {where}: real {real[backend][0]:.3f} s predicted {stall:.3f} s ({note})",
                            flush=True,
                        )
            if "dataloader" in components:
                recs = bed.stoker_dataloader(disk.mount, Path(tmp) / f"dl{rep}", disk.cgroup_procs, DL_SAMPLE)
                for regime, batch, comp in DATALOADER:
                    samples = disk.mount / "validate-samples"
                    steps = 30
                    files = bed.make_samples(samples, (steps + 3) * batch, DL_SAMPLE)
                    real, c = bed.real_dataloader(
                        samples, disk.cgroup_procs, batch=batch, compute_s=comp, steps=steps
                    )
                    for f in files:
                        f.unlink()
                    pred = bed.predict_dataloader(
                        recs, disk.mount, batch=batch, sample_bytes=DL_SAMPLE, compute_s=c
                    )
                    rows.append(
                        bed.Row(
                            component="dataloader",
                            regime=regime,
                            real=real,
                            predicted=pred,
                            unit="idle",
                            bound=0.20,
                            abs_bound=0.02 if regime.startswith("fed") else 0.0,
                            detail=f"compute {c * 1e3:.1f} ms/step",
                        )
                    )
                    print(f"  dataloader {regime}: real {real:.3f} predicted {pred:.3f}", flush=True)
            runs.append(rows)
    return _median_rows(runs)


def _one_size(recs: RecordSet) -> RecordSet:
    """The records as saves of one size left them: no rate past a smaller save."""
    io = [
        dataclasses.replace(r, extra={k: v for k, v in r.extra.items() if k not in SUSTAINED_FIELDS})
        for r in recs.io
    ]
    return dataclasses.replace(recs, io=io)


def sized_checkpoint_rows(plain: Path, repeats: int) -> list[bed.Row]:
    """Round by round, for each size of SIZED_MEASURED: `stoker io`'s checkpoint test at that
    size on `plain`, then the real 1 GB saves; each prediction from the records just before
    the real saves it is set beside."""
    runs: list[list[bed.Row]] = []
    with tempfile.TemporaryDirectory(prefix="mdl-") as tmp:
        for rep in range(repeats):
            rows = []
            for label, size in SIZED_MEASURED.items():
                recs = bed.stoker_io(
                    plain,
                    Path(tmp) / f"ck{rep}-{size}",
                    None,
                    ["--workloads", "checkpoint", "--ckpt-bytes", size, "--writers", "1", "--runtime", "3"],
                )
                real = bed.real_checkpoint(plain, None, *SIZED)
                sources = [(label, recs)]
                if label != "at the size":
                    sources.append((f"{label}, one size", _one_size(recs)))
                for backend, fmt in (("torch.save", "torch.save"), ("torch.dcp", "dcp")):
                    nbytes, real_s = real["bytes"][backend], real[backend][0]
                    for what, rs in sources:
                        stall, note = bed.predict_checkpoint(rs, plain, nbytes, fmt)
                        rows.append(
                            bed.Row(
                                component="checkpoint-1g",
                                regime=f"{backend} {nbytes / 1e9:.2f} GB, {what}",
                                real=real_s,
                                predicted=stall,
                                unit="s",
                                bound=0.15,
                                detail=note.split("; ")[0],
                            )
                        )
                        print(
                            f"  round {rep + 1} {backend} {what}: real {real_s:.3f} s predicted {stall:.3f} s "
                            f"({(stall - real_s) / real_s:+.0%}; {note})",
                            flush=True,
                        )
            runs.append(rows)
    return _median_rows(runs)


def table(rows: list[bed.Row]) -> str:
    lines = [
        "| component | regime | real | predicted | error | bound | within | notes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        fmt = (lambda x: f"{x:.1%}") if r.unit == "idle" else (lambda x: f"{x:.2f} s")
        err = f"{r.error:+.0%}" if r.real else "n/a"
        bound = f"±{r.bound:.0%}" + (f" or ±{r.abs_bound:.0%} points" if r.abs_bound else "")
        lines.append(
            f"| {r.component} | {r.regime} | {fmt(r.real)} | {fmt(r.predicted)} | {err} | {bound} "
            f"| {'yes' if r.ok else 'NO'} | {r.detail} |"
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--components", default="ddp,fsdp,checkpoint,dataloader")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--rate-mbit", type=float, default=400.0)
    ap.add_argument("--throttle-mib", type=int, default=50)
    ap.add_argument(
        "--plain-dir", default="/var/tmp", help="the unthrottled disk for the checkpoint rows ('' to skip)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    wanted = {x.strip().lower() for x in a.components.split(",")}
    no_bed = {"compute", "checkpoint-1g"}
    reason = unavailable_reason() if wanted - no_bed else ""  # these alone need no bed
    if reason:
        print(f"validate_model: {reason}", file=sys.stderr)
        return 2
    rows: list[bed.Row] = []
    os.sync()  # pending writeback from elsewhere would compete with the first measurements
    for kind in ("DDP", "FSDP"):
        if kind.lower() in wanted:
            rows += training_rows(kind, a.nodes, a.rate_mbit, a.repeats, a.steps, port=29720)
    if "compute" in wanted:
        rows += compute_rows(a.nodes, a.repeats, a.steps, port=29820)
    if "checkpoint-1g" in wanted:
        if not a.plain_dir:
            print("validate_model: checkpoint-1g saves on --plain-dir: give one", file=sys.stderr)
            return 2
        where = Path(tempfile.mkdtemp(prefix="mdl-plain-", dir=a.plain_dir))
        try:
            rows += sized_checkpoint_rows(where, a.repeats)
        finally:
            where.rmdir()
    if wanted & {"checkpoint", "dataloader"}:
        plain = Path(tempfile.mkdtemp(prefix="mdl-plain-", dir=a.plain_dir)) if a.plain_dir else None
        try:
            rows += storage_rows(wanted, a.throttle_mib << 20, plain, a.repeats)
        finally:
            if plain is not None:
                plain.rmdir()
    print(table(rows))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
