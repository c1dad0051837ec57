"""Every GPU path of stoker on a real GPU machine, written out as fixtures (issue 23).

    python benchmarks/gpu_check.py --nccl-tests-tar vendor/nccl-tests-2.19.6.tar.gz
    python benchmarks/gpu_check.py --out tests/data/gpu/h100-check --max-bytes 1G --iters 50

On the machine it runs, in order (each step a list of arguments, never a shell string; a failed
step is said and the next one runs; exit 1 if any failed):

1. builds nccl-tests from the tarball as ../shared/vendor/README.md does (MPI=0, NCCL from the
   `nvidia.nccl` wheel torch uses, NVCC_GENCODE for this GPU's compute capability);
2. runs the ten nccl-tests ops on every GPU of the node (-g N), eager with per-iteration timing
   and JSON (-I 1 -J) and as a CUDA graph (-G 1 -J), logs and JSON kept under OUT/nccl-tests/;
3. `stoker net --backend nccl --nproc N --ops all`, eager (--no-graph) and graph (--graph), into
   OUT/net-eager and OUT/net-graph: real NCCL records for the graph golden
   (tests/data/gpu/graph-scripted is a scripted stand-in until these exist);
4. `stoker inventory` with the host-link copy test, into OUT/inventory (host.jsonl);
5. a torch.save of tensors that live in GPU memory (the device-to-host copy included) to
   OUT, fsynced, timed, its file removed again: OUT/torch_save_gpu.json;
6. OUT/summary.txt: the 8-byte time of stoker's graph run against nccl-tests -G, busbw at >= 128
   MiB against nccl-tests, and the host-link copy against the catalog's PCIe figure.

On a machine without a CUDA GPU it prints one line on stderr and exits 2 before doing anything.
It cannot run in CI (no GPU there): it was written by reading, against the nccl-tests 2.19.6
sources and the recipe in ../shared/vendor/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = (
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
)
BW_FROM = 128 << 20
DEFAULT_TAR = ROOT.parent / "shared" / "vendor" / "nccl-tests-2.19.6.tar.gz"


def _gpu() -> tuple[int, str, tuple[int, int]] | str:
    """(count, name, compute capability) of the CUDA GPUs torch sees, or why there are none."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available() or torch.cuda.device_count() < 1:
        return f"torch {torch.__version__} sees no CUDA GPU (CUDA build {torch.version.cuda or 'none'})"
    return torch.cuda.device_count(), torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0)


class Steps:
    """Runs and logs each step; remembers which failed."""

    def __init__(self, out: Path) -> None:
        self.out, self.failed = out, []  # type: ignore[var-annotated]
        self.log = (out / "gpu_check.log").open("a", encoding="utf-8")

    def run(
        self,
        what: str,
        cmd: list[str],
        *,
        env: dict[str, str] | None = None,
        stdout: Path | None = None,
        timeout: float = 3600,
    ) -> bool:
        print(f"gpu_check: {what}: {' '.join(cmd)}", flush=True)
        self.log.write(f"$ {' '.join(cmd)}\n")
        self.log.flush()
        try:
            with stdout.open("w") if stdout else open(os.devnull, "w") as fh:
                p = subprocess.run(
                    cmd, env=env, stdout=fh, stderr=self.log, timeout=timeout, check=False, cwd=ROOT
                )
        except (OSError, subprocess.SubprocessError) as exc:
            return self.fail(what, f"{type(exc).__name__}: {exc}")
        return (
            True
            if p.returncode == 0
            else self.fail(what, f"exit {p.returncode} (see {self.out / 'gpu_check.log'})")
        )

    def fail(self, what: str, why: str) -> bool:
        print(f"gpu_check: {what} FAILED: {why}", file=sys.stderr, flush=True)
        self.failed.append(what)
        return False


def build_nccl_tests(
    steps: Steps, tar: Path, work: Path, cc: tuple[int, int]
) -> tuple[Path, dict[str, str]] | None:
    """nccl-tests built as ../shared/vendor/README.md does; (build dir, env with LD_LIBRARY_PATH)."""
    try:
        import nvidia.nccl  # type: ignore[import-not-found]  # the wheel torch's NCCL comes from
    except ImportError:
        steps.fail("nccl-tests build", "the nvidia.nccl package (torch's NCCL) is not installed")
        return None
    nccl = Path(list(nvidia.nccl.__path__)[0])
    home = work / "nccl"
    (home / "lib").mkdir(parents=True, exist_ok=True)
    for link, target in (
        (home / "include", nccl / "include"),
        (home / "lib" / "libnccl.so.2", nccl / "lib" / "libnccl.so.2"),
        (home / "lib" / "libnccl.so", nccl / "lib" / "libnccl.so.2"),
    ):
        if not link.exists():
            link.symlink_to(target)
    with tarfile.open(tar) as t:
        t.extractall(work, filter="data")
    src = work / "nccl-tests"
    arch = f"{cc[0]}{cc[1]}"
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    ok = steps.run(
        "nccl-tests build",
        [
            "make",
            "-C",
            str(src),
            f"-j{os.cpu_count() or 4}",
            "MPI=0",
            f"CUDA_HOME={cuda}",
            f"NCCL_HOME={home}",
            f"NVCC_GENCODE=-gencode=arch=compute_{arch},code=sm_{arch}",
        ],
    )
    env = {**os.environ, "LD_LIBRARY_PATH": f"{home / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}"}
    return (src / "build", env) if ok else None


def run_nccl_tests(steps: Steps, build: Path, env: dict[str, str], gpus: int, a: argparse.Namespace) -> None:
    out = steps.out / "nccl-tests"
    out.mkdir(exist_ok=True)
    for op in OPS:
        for graph in (False, True):
            tag = f"{op}{'-G' if graph else ''}"
            # -I (per-iteration events) and -G cannot go together: nccl-tests turns -I off under -G
            mode = ["-G", "1"] if graph else ["-I", "1"]
            cmd = [
                str(build / f"{op}_perf"),
                "-b",
                "8",
                "-e",
                a.max_bytes,
                "-f",
                "4",
                "-g",
                str(gpus),
                "-n",
                str(a.iters),
                "-w",
                "1",
                "-c",
                "1",
                *mode,
                "-J",
                str(out / f"{tag}.json"),
            ]
            steps.run(f"nccl-tests {tag}", cmd, env=env, stdout=out / f"{tag}.log")


def run_stoker(steps: Steps, gpus: int, a: argparse.Namespace) -> None:
    net = [
        sys.executable,
        "-m",
        "launchers.cli",
        "net",
        "--backend",
        "nccl",
        "--nproc",
        str(gpus),
        "--ops",
        "all",
        "-b",
        "8",
        "-e",
        a.max_bytes,
        "-f",
        "4",
        "-n",
        str(a.iters),
        "-w",
        "1",
        "--scopes",
        "world",
    ]
    for graph in (False, True):
        name = "net-graph" if graph else "net-eager"
        steps.run(
            f"stoker {name}", [*net, "--graph" if graph else "--no-graph", "--out", str(steps.out / name)]
        )
    steps.run(
        "stoker inventory",
        [sys.executable, "-m", "launchers.cli", "inventory", "--out", str(steps.out / "inventory")],
    )


def torch_save_from_gpu(steps: Steps, nbytes: int) -> None:
    """torch.save of tensors in GPU memory: the device-to-host copy and the write, to an fsync."""
    import torch

    state = {
        f"layer{i}.weight": torch.randint(0, 256, (64 << 20,), dtype=torch.uint8, device="cuda:0")
        for i in range(max(1, nbytes // (64 << 20)))
    }
    total = sum(t.numel() for t in state.values())
    target = steps.out / "torch_save_gpu.pt"
    torch.cuda.synchronize()
    start = time.perf_counter()
    with target.open("wb") as fh:
        torch.save(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    secs = time.perf_counter() - start
    target.unlink()  # the file this step created, not a fixture
    rec = {
        "what": "torch.save from GPU memory",
        "device": torch.cuda.get_device_name(0),
        "bytes": total,
        "tensors": len(state),
        "seconds": round(secs, 4),
        "GBps": round(total / secs / 1e9, 3),
        "torch": torch.__version__,
        "filesystem_of": str(steps.out),
    }
    (steps.out / "torch_save_gpu.json").write_text(json.dumps(rec, indent=1) + "\n")


def summary(out: Path) -> list[str]:
    """The figures the issue note asks for, from the files the steps wrote."""
    from reports.ingest.nccl_tests import parse_text
    from reports.judging.inventory import judge_inventory
    from reports.table import read_records

    lines: list[str] = []
    graph = out / "net-graph"
    ours = read_records(graph).net if (graph / "net.jsonl").exists() else []
    for op in OPS:
        log = out / "nccl-tests" / f"{op}-G.log"
        if not log.exists():
            continue
        nt = parse_text(log.read_text(), run_id="nt", ts="", source_name=log.name, op=op)
        # same size and mode (torch has no out-of-place all_reduce/broadcast/reduce: in place there)
        theirs = {(r.bytes, r.in_place): r for r in (nt.records if nt else [])}
        mine = {(r.bytes, r.in_place): r for r in ours if r.op == op}
        both = sorted(set(theirs) & set(mine))
        if not both:
            continue
        s = both[0]
        lines.append(
            f"{op}: {s[0]} B time stoker graph {mine[s].time_s * 1e6:.2f} us vs nccl-tests -G "
            f"{theirs[s].time_s * 1e6:.2f} us (x{mine[s].time_s / theirs[s].time_s:.3f})"
        )
        for b in (x for x in both if x[0] >= BW_FROM):
            lines.append(
                f"{op}: {b[0]} B{' in place' if b[1] else ''} busbw stoker {mine[b].busbw_GBps:.2f} "
                f"vs nccl-tests {theirs[b].busbw_GBps:.2f} GB/s "
                f"(x{mine[b].busbw_GBps / theirs[b].busbw_GBps:.3f})"
                if theirs[b].busbw_GBps
                else f"{op}: {b[0]} B busbw 0 (one GPU)"
            )
    inv = out / "inventory"
    if (inv / "host.jsonl").exists():
        for f in judge_inventory(read_records(inv).host):
            if f.check == "host link copy":
                lines.append(f"host link copy: {f.message}")
    save = out / "torch_save_gpu.json"
    if save.exists():
        rec = json.loads(save.read_text())
        lines.append(
            f"torch.save from GPU memory: {rec['bytes']} B in {rec['seconds']} s = {rec['GBps']} GB/s"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="where the fixtures go (default tests/data/gpu/<gpu>-check)")
    p.add_argument("--nccl-tests-tar", default=os.environ.get("STOKER_NCCL_TESTS_TAR", str(DEFAULT_TAR)))
    p.add_argument("--max-bytes", default="1G")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--save-bytes", type=int, default=1 << 30)
    a = p.parse_args(argv)
    gpu = _gpu()
    if isinstance(gpu, str):
        print(f"gpu_check: needs a CUDA GPU and {gpu}: run it on a GPU machine", file=sys.stderr)
        return 2
    count, name, cc = gpu
    tar = Path(a.nccl_tests_tar)
    if not tar.is_file():
        print(f"gpu_check: no nccl-tests tarball at {tar}: give --nccl-tests-tar", file=sys.stderr)
        return 2
    out = Path(a.out or ROOT / "tests" / "data" / "gpu" / f"{name.split()[1].lower()}-check")
    out.mkdir(parents=True, exist_ok=True)
    steps = Steps(out)
    (out / "machine.json").write_text(
        json.dumps({"gpus": count, "name": name, "compute_capability": list(cc)}) + "\n"
    )
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as work:
        built = build_nccl_tests(steps, tar, Path(work), cc)
        if built is not None:
            run_nccl_tests(steps, built[0], built[1], count, a)
    run_stoker(steps, count, a)
    try:
        torch_save_from_gpu(steps, a.save_bytes)
    except Exception as exc:  # a CUDA or disk error costs this step only
        steps.fail("torch.save from GPU memory", f"{type(exc).__name__}: {exc}")
    lines = summary(out)
    (out / "summary.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if steps.failed:
        print(f"gpu_check: failed steps: {', '.join(steps.failed)}", file=sys.stderr)
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
