"""Runs gpu_check's steps (the IO): each step's commands one after another, together within
the step's share of the command (a command past it is killed and the step marked so), output
kept under OUT (a command's stdout in its file, else in OUT/logs/<step>.log with its stderr).
A failed step is said and the next one runs. Each step leaves OUT/steps/<name>.json, which the
summary reads: a later command with `--steps` adds to the picture instead of starting over."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from benchmarks.gpucheck.plan import Cmd, Ctx, Step

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    step: str
    status: str  # ok | failed | timeout | skipped
    seconds: float
    share_s: int
    note: str = ""


# run(cmd, env, timeout_s, log) -> exit code; raises subprocess.TimeoutExpired past the timeout
Run = Callable[[Cmd, dict[str, str], float, Path], int]


def run_cmd(cmd: Cmd, env: dict[str, str], timeout_s: float, log: Path) -> int:
    """One command, its stdout to its own file (or the step's log), stderr to the step's log."""
    with log.open("a", encoding="utf-8") as err:
        err.write(f"$ {' '.join(cmd.argv)}\n")
        err.flush()
        target = cmd.stdout or log
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("ab") as out:
            # its own session: past the timeout the whole group goes (stoker net's ranks too)
            p = subprocess.Popen(
                list(cmd.argv), stdout=out, stderr=err, cwd=cmd.cwd or ROOT, env=env, start_new_session=True
            )
            try:
                return p.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise


def env_for(cmd: Cmd) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(ROOT), env.get("PYTHONPATH", "")) if x)
    if cmd.path_prepend is not None:
        env["PATH"] = f"{cmd.path_prepend}{os.pathsep}{env.get('PATH', '')}"
    if cmd.ld_library_path is not None:
        env["LD_LIBRARY_PATH"] = f"{cmd.ld_library_path}{os.pathsep}{env.get('LD_LIBRARY_PATH', '')}"
    return env


def prepare_nccl_home(ctx: Ctx) -> str:
    """NCCL_HOME for the nccl-tests build: symlinks to the nvidia.nccl wheel torch uses; the
    reason when it cannot be made."""
    try:
        import nvidia.nccl  # type: ignore[import-not-found]
    except ImportError:
        return "the nvidia.nccl package (torch's NCCL) is not installed"
    nccl = Path(list(nvidia.nccl.__path__)[0])
    home = ctx.work / "nccl"
    (home / "lib").mkdir(parents=True, exist_ok=True)
    for link, target in (
        (home / "include", nccl / "include"),
        (home / "lib" / "libnccl.so.2", nccl / "lib" / "libnccl.so.2"),
        (home / "lib" / "libnccl.so", nccl / "lib" / "libnccl.so.2"),
    ):
        if not link.is_symlink():
            link.symlink_to(target)
    return ""


def skip_reason(step: Step, ctx: Ctx) -> str:
    carried = {"nccl-tests": ctx.nccl_tests_tar, "fio": ctx.fio_tar}
    missing = [n for n in step.needs if carried[n] is None]
    if step.needs and len(missing) == len(step.needs):
        return f"{', '.join(missing)} not carried (see docs/netbench.md, gpu_check)"
    if step.name == "nccl-tests" and not (ctx.nccl_tests_build / "all_reduce_perf").exists():
        return "nccl-tests not built in this OUT: run the build step in the same command"
    if step.name == "io" and not (ctx.fio_dir / "fio").exists():
        return "fio not built in this OUT: run the build step in the same command"
    return ""


def run_step(
    step: Step, ctx: Ctx, run: Run = run_cmd, clock: Callable[[], float] = time.monotonic
) -> Outcome:
    start = clock()
    why = skip_reason(step, ctx)
    if why:
        return _done(
            ctx, Outcome(step=step.name, status="skipped", seconds=0.0, share_s=step.share_s, note=why)
        )
    log = ctx.out / "logs" / f"{step.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    ctx.work.mkdir(parents=True, exist_ok=True)
    if step.name == "build" and ctx.nccl_tests_tar is not None:
        problem = prepare_nccl_home(ctx)
        if problem:
            return _done(
                ctx, Outcome(step=step.name, status="failed", seconds=0.0, share_s=step.share_s, note=problem)
            )
    status, note = "ok", ""
    for cmd in step.commands(ctx):
        left = step.share_s - (clock() - start)
        try:
            if left <= 0:
                raise subprocess.TimeoutExpired(list(cmd.argv), step.share_s)
            rc = run(cmd, env_for(cmd), left, log)
        except subprocess.TimeoutExpired:
            status, note = "timeout", f"past its {step.share_s} s share at {cmd.argv[0]}"
            break
        except OSError as exc:  # not installed, not executable
            if cmd.may_fail:  # what a machine lacks (journalctl in a container) is a finding
                note = f"{note}; " if note else ""
                note += f"{cmd.argv[0]}: {exc.strerror or exc}"
                continue
            status, note = "failed", f"{cmd.argv[0]}: {exc.strerror or exc}"
            break
        if rc != 0 and cmd.may_fail:
            note = f"{note}; " if note else ""
            note += f"{' '.join(cmd.argv[:2])} exited {rc}"
        elif rc != 0:  # the step's other commands still run: one op's failure is not all of them
            status, note = "failed", f"{Path(cmd.argv[0]).name} ... exited {rc} (OUT/logs/{step.name}.log)"
    return _done(
        ctx,
        Outcome(
            step=step.name, status=status, seconds=round(clock() - start, 1), share_s=step.share_s, note=note
        ),
    )


def _done(ctx: Ctx, o: Outcome) -> Outcome:
    d = ctx.out / "steps"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{o.step}.json").write_text(json.dumps(asdict(o)) + "\n")
    return o
