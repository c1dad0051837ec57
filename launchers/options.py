"""Command-line options shared by `stoker run` and `stoker submit`: the profile, its
overrides (every knob of a profile can be set), the spec and the workload."""

from __future__ import annotations

import argparse
import difflib
import re
import shutil
from pathlib import Path

from launchers.profiles import PROFILES, Profile, get_profile, with_overrides
from reports.shared.errors import UsageError
from reports.shared.records import IO_FAMILIES, OPS
from reports.shared.units import parse_size


def add_profile_arguments(parser: argparse.ArgumentParser, default: str | None) -> None:
    parser.add_argument("--spec", help="cluster spec YAML: what the hardware is advertised to do")
    parser.add_argument(
        "--workload",
        help="workload: a YAML file or a preset name (e.g. llama-70b, unet3d): what the accelerators will need",
    )
    parser.add_argument(
        "--profile",
        choices=tuple(PROFILES),
        default=default,
        help=f"sizes and durations (default {default or 'quick without GPUs, standard with'})",
    )
    g = parser.add_argument_group("profile overrides")
    g.add_argument("--ops", help="collectives to sweep, comma-separated")
    g.add_argument("--min-bytes", help="smallest message size (K/M/G = powers of 1024)")
    g.add_argument("--max-bytes", help="largest message size")
    g.add_argument("--step-factor", type=int, help="size multiplier between steps")
    g.add_argument("--iters", type=int, help="timed iterations per size")
    g.add_argument("--warmup", type=int, help="untimed iterations per size")
    g.add_argument("--workloads", help="storage workloads, comma-separated")
    g.add_argument("--ckpt-bytes", help="checkpoint bytes per writer")
    g.add_argument("--io-runtime", type=int, help="seconds per timed storage workload")
    g.add_argument(
        "--save-repeats",
        type=int,
        metavar="N",
        help="torch.save and DCP saves per figure beside fio in the storage phase (default 3, the "
        "median judged; 0: fio alone, no torch saves)",
    )
    g.add_argument("--net-timeout", type=int, help="seconds one network phase may take")
    g.add_argument("--io-timeout", type=int, help="seconds the storage phase may take")
    g.add_argument(
        "--compute-budget",
        type=float,
        metavar="S",
        help="seconds per accelerator for the compute phase's matmul sweep (default: the profile's)",
    )


def _csv(text: str | None) -> tuple[str, ...] | None:
    return None if text is None else tuple(x.strip() for x in text.split(",") if x.strip())


def _names(text: str | None, option: str, known: tuple[str, ...], phase: str) -> tuple[str, ...] | None:
    """A comma-separated list of known names, checked here, before anything runs: a typo
    (`--ops allreduce`) or an empty list would otherwise surface as a phase failing after
    the others had run (the storage phase would run 47 s first, then exit 3)."""
    names = _csv(text)
    if names is None:
        return None
    if not names:
        raise UsageError(
            f"{option} is empty: give one or more of {','.join(known)}, or --skip {phase} to leave it out"
        )
    for n in names:
        if n not in known:
            close = difflib.get_close_matches(n, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"{option}: unknown name {n!r}{hint}; known: {','.join(known)}")
    return names


def _size(text: str | None, what: str) -> str | None:
    if text is not None:
        parse_size(text, what)  # fail here, with one line, rather than inside a phase
    return text


def profile_from_args(args: argparse.Namespace, default: str = "standard") -> Profile:
    return with_overrides(
        get_profile(args.profile or default),
        ops=_names(args.ops, "--ops", OPS, "network"),
        min_bytes=_size(args.min_bytes, "--min-bytes"),
        max_bytes=_size(args.max_bytes, "--max-bytes"),
        step_factor=args.step_factor,
        iters=args.iters,
        warmup=args.warmup,
        workloads=_names(args.workloads, "--workloads", IO_FAMILIES, "storage"),
        ckpt_bytes=_size(args.ckpt_bytes, "--ckpt-bytes"),
        io_runtime_s=args.io_runtime,
        save_repeats=_repeats(args.save_repeats),
        net_timeout_s=args.net_timeout,
        io_timeout_s=args.io_timeout,
        compute_budget_s=_positive(args.compute_budget, "--compute-budget"),
    )


def _repeats(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 100:
        raise UsageError(f"--save-repeats {value}: give 0 to 100 saves per figure, e.g. --save-repeats 3")
    return value


def _positive(value: float | None, option: str) -> float | None:
    if value is not None and not 0 < value <= 86400:
        raise UsageError(f"{option} {value:g}: give seconds between 0 and 86400, e.g. {option} 20")
    return value


def checked_file(path: str | None, option: str, cwd: Path) -> str | None:
    """An absolute path to an existing file (phases run elsewhere: relative paths break)."""
    if path is None:
        return None
    p = cwd / path
    if not p.is_file():
        raise UsageError(f"{option} {path}: no such file")
    return str(p)


def checked_workload(given: str | None, cwd: Path) -> str | None:
    """An absolute path to a workload file, or a preset name as given (llama-70b, unet3d):
    `stoker report` and `compare` accept both, so `run` and `submit` do too."""
    if given is None or (cwd / given).is_file():
        return checked_file(given, "--workload", cwd)
    from reports.judging.workload.workload import load_workload  # raises UsageError naming the presets

    load_workload(given)
    return given


def _preset_yaml(name: str) -> str:
    from reports.shared import catalog

    if catalog.normalise(name) in {catalog.normalise(n) for n in catalog.names("model preset")}:
        return f"preset: {name}\n"
    return f"name: {name}\ndataloader: {{preset: {name}}}\n"


def keep_inputs(out: Path, spec: str | None, workload: str | None) -> None:
    """Copy the spec and workload into the results dir as spec.yaml / workload.yaml: the
    results then carry what they were judged against (`stoker report DIR` and `stoker
    compare` use them when no --spec / --workload is given)."""
    for given, name in ((spec, "spec.yaml"), (workload, "workload.yaml")):
        if given and not Path(given).is_file():
            (out / name).write_text(_preset_yaml(given))  # a preset name (checked_workload)
        elif given and Path(given).resolve() != (out / name).resolve():
            shutil.copyfile(given, out / name)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str, flag: str = "--duration") -> float:
    """'90', '90s', '3m', '4h', '2d' -> seconds; UsageError otherwise."""
    m = _DURATION.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"{flag} {text!r}: give a positive duration such as 90s, 30m, 4h or 2d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]
