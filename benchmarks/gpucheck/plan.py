"""The steps of one gpu_check command (pure): what each runs, as argument lists, and the share
of the 9-minute command it may take (the device tool gives a command 10 minutes; 9 leaves the
start and the copy back). Every path a step writes is under OUT; build and scratch space is
OUT/work, removed at the end.

nccl-tests and fio come as source tarballs (../shared/vendor/README.md): the device machine has
neither and reaches no network, and ../shared does not travel with a device run, so they are
copied into the checkout's vendor/ (ignored by git) and named in the device tool's `carry`.
Without them the steps that need them are skipped with a note.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_S = 540  # one device command: 10 minutes at most, 9 planned
NCCL_TESTS_TAR = "nccl-tests-2.19.6.tar.gz"
FIO_TAR = "fio-3.42-135.tar.gz"
# the ops both stoker and nccl-tests time (benchmarks/net_bench.py's comparison set)
NET_OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
# nccl-tests 2.19.6 src/common.cu: `int warmup_iters = 1; int iters = 20;`. stoker net's defaults
# are the same (-n 20, -w 1), so both run with their defaults here. nccl-tests warms up once per
# op for all sizes before the sweep and runs one more untimed op per size; stoker warms up per size.
ITERS, WARMUP = 20, 1
# -G 3: three launches timed from the first, as stoker's graph mode (netbench.harness.GRAPH_REPLAYS);
# -G 1: nccl-tests' usual graph figure, one launch (its upload included)
NCCL_TESTS_MODES = {"plain": (), "G1": ("-G", "1"), "G3": ("-G", "3")}
SIZES = ("-b", "8", "-e", "1G", "-f", "4")
RAW = {  # the inventory's sources, kept byte for byte as fixtures
    "nvidia-smi-q.txt": ("nvidia-smi", "-q"),
    "topo-m.txt": ("nvidia-smi", "topo", "-m"),
    "nvlink-s.txt": ("nvidia-smi", "nvlink", "-s"),
    "query-gpu.csv": (
        "nvidia-smi",
        "--query-gpu=index,uuid,pci.bus_id,pcie.link.gen.gpucurrent,pcie.link.gen.max,"
        "pcie.link.width.current,pcie.link.width.max,ecc.errors.uncorrected.volatile.total",
        "--format=csv,noheader",
    ),
    "query-smi-sampler.csv": (
        "nvidia-smi",
        "--query-gpu=index,uuid,name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu,"
        "clocks_throttle_reasons.active",
        "--format=csv,noheader,nounits",
    ),
    "versions.csv": ("nvidia-smi", "--query-gpu=name,driver_version,vbios_version", "--format=csv"),
    "dmesg.txt": ("dmesg",),
    "journal-k.txt": ("journalctl", "-k", "--no-pager", "-q", "-o", "short"),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Ctx:
    """What the commands are built from."""

    out: Path
    python: str
    gpus: int
    cc: tuple[int, int]
    nccl_tests_tar: Path | None  # None: not carried
    fio_tar: Path | None

    @property
    def work(self) -> Path:
        return self.out / "work"

    @property
    def nccl_tests_build(self) -> Path:
        return self.work / "nccl-tests" / "build"

    @property
    def fio_dir(self) -> Path:
        return self.work / "fio"


@dataclass(frozen=True, kw_only=True, slots=True)
class Cmd:
    argv: tuple[str, ...]
    stdout: Path | None = None  # where its output is kept (else OUT/logs/<step>.log)
    cwd: Path | None = None
    path_prepend: Path | None = None  # a built tool's directory, put first on PATH
    ld_library_path: Path | None = None
    may_fail: bool = False  # a non-zero exit is a finding kept in its output, not a failed step


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    name: str
    share_s: int
    what: str
    needs: tuple[str, ...] = ()  # "nccl-tests", "fio": carried tarballs
    commands: Callable[[Ctx], list[Cmd]] = field(default=lambda c: [])


def _stoker(c: Ctx, *args: str) -> tuple[str, ...]:
    return (c.python, "-m", "launchers.cli", *args)


def _bare(c: Ctx, what: str) -> tuple[str, ...]:
    return (c.python, "-m", "benchmarks.gpucheck.bare", what, "--out", str(c.out / "bare" / f"{what}.json"))


def raw_cmds(c: Ctx) -> list[Cmd]:
    # dmesg may be refused, nvlink -s has nothing on a PCIe GPU: what they said is the fixture
    return [Cmd(argv=argv, stdout=c.out / "raw" / name, may_fail=True) for name, argv in RAW.items()]


def build_cmds(c: Ctx) -> list[Cmd]:
    """nccl-tests as ../shared/vendor/README.md builds it (MPI=0, torch's NCCL, this GPU's
    architecture; the NCCL home of symlinks is made by execute.prepare_nccl_home), then fio."""
    arch = f"{c.cc[0]}{c.cc[1]}"
    out: list[Cmd] = []
    if c.nccl_tests_tar is not None:
        out += [
            Cmd(argv=("tar", "xzf", str(c.nccl_tests_tar), "-C", str(c.work))),
            Cmd(
                argv=(
                    "make",
                    "-C",
                    str(c.work / "nccl-tests"),
                    "-j16",
                    "MPI=0",
                    "CUDA_HOME=/usr/local/cuda",
                    f"NCCL_HOME={c.work / 'nccl'}",
                    f"NVCC_GENCODE=-gencode=arch=compute_{arch},code=sm_{arch}",
                )
            ),
        ]
    if c.fio_tar is not None:
        out += [
            Cmd(argv=("tar", "xzf", str(c.fio_tar), "-C", str(c.work))),
            Cmd(argv=("./configure", "--disable-native"), cwd=c.fio_dir),
            Cmd(argv=("make", "-j16"), cwd=c.fio_dir),
        ]
    return out


def nccl_tests_cmds(c: Ctx) -> list[Cmd]:
    out = []
    for op in NET_OPS:
        for mode, flags in NCCL_TESTS_MODES.items():
            argv = (
                str(c.nccl_tests_build / f"{op}_perf"),
                *SIZES,
                "-g",
                str(c.gpus),
                "-n",
                str(ITERS),
                "-w",
                str(WARMUP),
                "-c",
                "1",
                *flags,
            )
            log = c.out / "nccl-tests" / f"{op}-{mode}.log"
            out.append(Cmd(argv=argv, stdout=log, ld_library_path=c.work / "nccl" / "lib"))
    return out


def net_cmds(c: Ctx) -> list[Cmd]:
    base = ("net", "--backend", "nccl", "--nproc", str(c.gpus), "--ops", ",".join(NET_OPS), *SIZES)
    run = (*base, "-n", str(ITERS), "-w", str(WARMUP), "--scopes", "world")
    return [
        Cmd(argv=_stoker(c, *run, flag, "--out", str(c.out / name)))
        for flag, name in (("--graph", "net-graph"), ("--no-graph", "net-eager"))
    ]


def compute_cmds(c: Ctx) -> list[Cmd]:
    # 45 s per GPU for the three dtypes after the warm-up: the standard profile's grid, cut short
    return [
        Cmd(
            argv=_stoker(
                c,
                "compute",
                "--device",
                "cuda",
                "--dtypes",
                "bf16,fp16,fp8",
                "--budget",
                "45",
                "--out",
                str(c.out / "compute"),
            )
        )
    ]


def io_cmds(c: Ctx) -> list[Cmd]:
    scratch = c.work / "io"
    return [
        Cmd(argv=("mkdir", "-p", str(scratch))),
        Cmd(
            argv=_stoker(
                c,
                "io",
                "--path",
                str(scratch),
                "--workloads",
                "checkpoint",
                "--ckpt-bytes",
                "1G",
                "--writers",
                str(max(1, c.gpus)),
                "--runtime",
                "5",
                "--out",
                str(c.out / "io"),
            ),
            path_prepend=c.fio_dir,
        ),
    ]


def soak_cmds(c: Ctx) -> list[Cmd]:
    soak = (
        "net",
        "--backend",
        "nccl",
        "--nproc",
        str(c.gpus),
        "--ops",
        "all_reduce",
        "-b",
        "1M",
        "-e",
        "64M",
    )
    return [Cmd(argv=_stoker(c, *soak, "--scopes", "world", "--soak", "30", "--out", str(c.out / "soak")))]


STEPS: tuple[Step, ...] = (
    Step(
        name="raw",
        share_s=15,
        what="nvidia-smi -q, topo -m, nvlink -s, the queries, dmesg, journalctl -k",
        commands=raw_cmds,
    ),
    Step(
        name="inventory",
        share_s=25,
        what="stoker inventory with the host-link copy test",
        commands=lambda c: [Cmd(argv=_stoker(c, "inventory", "--out", str(c.out / "inventory")))],
    ),
    Step(
        name="copy",
        share_s=20,
        what="host-link copy the nvbandwidth way (bare)",
        commands=lambda c: [Cmd(argv=_bare(c, "copy"))],
    ),
    Step(
        name="build",
        share_s=60,
        what="nccl-tests and fio from the carried tarballs",
        needs=("nccl-tests", "fio"),
        commands=build_cmds,
    ),
    Step(
        name="nccl-tests",
        share_s=50,
        what=f"{', '.join(NET_OPS)}: plain, -G 1, -G 3",
        needs=("nccl-tests",),
        commands=nccl_tests_cmds,
    ),
    Step(
        name="net", share_s=150, what="stoker net, graph and eager, the same ops and sizes", commands=net_cmds
    ),
    Step(name="compute", share_s=65, what="stoker compute bf16, fp16, fp8", commands=compute_cmds),
    Step(
        name="matmul",
        share_s=25,
        what="a bare mamf-finder-style matmul loop, bf16, fp16, fp8",
        commands=lambda c: [Cmd(argv=_bare(c, "matmul"))],
    ),
    Step(
        name="save",
        share_s=25,
        what="torch.save and DCP of GPU tensors to an fsync (bare)",
        commands=lambda c: [Cmd(argv=_bare(c, "save"))],
    ),
    Step(
        name="io",
        share_s=40,
        what="stoker io checkpoint: fio, torch.save, DCP",
        needs=("fio",),
        commands=io_cmds,
    ),
    Step(name="soak", share_s=50, what="stoker net --soak 30 with the counters", commands=soak_cmds),
    Step(name="summary", share_s=5, what="the summary table (OUT/summary.txt)"),
)
NAMES = tuple(s.name for s in STEPS)


def select(text: str | None) -> tuple[Step, ...]:
    """The steps named in --steps (comma list), in the plan's order; all when None. ValueError
    names an unknown one."""
    if text is None:
        return STEPS
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if n not in NAMES]
    if bad or not names:
        raise ValueError(f"--steps {text!r}: give a comma list of {','.join(NAMES)}")
    return tuple(s for s in STEPS if s.name in names)


def plan_lines(steps: Sequence[Step], carried: Sequence[str]) -> list[str]:
    """--plan: each step, its share of the command and what it runs; a step whose tarball is not
    carried says it will be skipped."""
    total = sum(s.share_s for s in steps)
    lines = [f"gpu_check plan: {len(steps)} steps, {total} s of a {COMMAND_S} s command"]
    for s in steps:
        missing = [n for n in s.needs if n not in carried]
        note = (
            f"  (skipped: {', '.join(missing)} not carried)"
            if missing and len(missing) == len(s.needs)
            else ""
        )
        lines.append(f"  {s.name:<11}{s.share_s:>4} s  {100 * s.share_s / COMMAND_S:4.1f}%  {s.what}{note}")
    return lines
