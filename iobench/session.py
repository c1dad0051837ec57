"""One `stoker io` run: every path, every workload, all nodes in step.

Each step runs on every host and is gathered, errors included, so that when one host fails
(full disk, fio error, bad path) all of them stop together instead of waiting at the next
barrier; rank 0 writes the records. The work directory goes away in every case.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, TypeVar

from iobench import safety, sustained, torch_ckpt
from iobench.aggregate import HostResult, RecordContext, aggregate, host_results
from iobench.coordinator import Coordinator, connect
from iobench.runner import DiskFull, find_fio, fio_version, run_job
from iobench.workloads import RAMP_S, FioJob, IoSettings, plan
from reports.shared.errors import MeasurementAborted, StokerError, UsageError
from reports.shared.manifest import base_manifest, installed_versions
from reports.shared.outdir import claim
from reports.shared.records import IO_FILE, MANIFEST_FILE, IoRecord, RecordWriter
from reports.shared.spec import Spec, load_spec
from reports.shared.spread import median_record, spread_of
from reports.shared.storage_rule import outliers_to_confirm, record_role, to_confirm
from reports.shared.units import format_size

T = TypeVar("T")
_MIB = 1 << 20
_ERRORS: dict[str, type[StokerError]] = {"DiskFull": DiskFull, "UsageError": UsageError}


def collective(coord: Coordinator, fn: Callable[[], T]) -> list[T]:
    """fn() on every host; the values in rank order, or the first host's error on all."""
    try:
        item: tuple[Any, tuple[str, str] | None] = (fn(), None)
    except StokerError as exc:
        item = (None, (type(exc).__name__, str(exc)))
    gathered = coord.gather((coord.host, item))
    for host, (_, err) in gathered:
        if err is not None:
            kind, msg = err
            prefix = f"{host}: " if coord.world > 1 else ""
            raise _ERRORS.get(kind, MeasurementAborted)(prefix + msg)
    return [value for _, (value, _) in gathered]


class Session:
    def __init__(
        self,
        coord: Coordinator,
        settings: IoSettings,
        *,
        out: Path,
        run_id: str,
        torch_ckpt: bool,
        timeout_s: float,
        spec: Spec | None = None,
    ) -> None:
        self.coord = coord
        self.spec = spec  # a figure under its threshold is measured again (confirm_under)
        self.s = settings
        self.out = out
        self.run_id = run_id
        self.torch_note = torch_ckpt_note(torch_ckpt) if "checkpoint" in settings.families else "not run"
        self.timeout_s = timeout_s
        self.fio = find_fio()
        self.fio_version = fio_version(self.fio)
        self.writer = RecordWriter(out / IO_FILE) if coord.rank == 0 else None
        self.ram = min(collective(coord, safety.ram_bytes))
        self.hosts: list[str] = coord.gather(coord.host)

    def say(self, text: str) -> None:
        if self.coord.rank == 0:
            print(f"stoker io: {text}", flush=True)

    def write(self, rec: IoRecord) -> None:
        soak = os.environ.get("STOKER_SOAK_PASS", "")
        if soak.isdigit():  # a soak's checkpoint write: the pass it follows (launchers/commands/soak_cmd.py)
            rec = dataclasses.replace(rec, extra={**rec.extra, "soak_pass": int(soak)})
        if self.writer is not None:
            self.writer.write(rec)

    def write_manifests(self, paths: list[Path]) -> None:
        def mine() -> dict[str, Any]:
            m = base_manifest("iobench", self.run_id, os.environ)
            m["host"] = self.coord.host
            m.update(
                fio=self.fio_version,
                fio_path=self.fio,
                settings=asdict(self.s),
                # the torch checkpoint's version, or why it did not run
                torch=self.torch_note or installed_versions(("torch",)).get("torch", "installed"),
                ram_bytes=safety.ram_bytes(),
                paths={str(p): asdict(safety.mount_of(p)) for p in paths},
            )
            return m

        lines = collective(self.coord, mine)
        if self.coord.rank == 0:
            self.out.mkdir(parents=True, exist_ok=True)
            with open(self.out / MANIFEST_FILE, "a", encoding="utf-8") as fh:
                for m in lines:
                    fh.write(json.dumps(m, default=str) + "\n")

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    # ---- one path --------------------------------------------------------------------

    def run_path(self, path: Path) -> None:
        c = self.coord
        wd = safety.WorkDir(path, self.run_id, c.host)
        try:
            collective(c, lambda: wd.__enter__() and None)
            scope = self._scope(path, wd)
            sharers = c.world if scope == "shared" else 1  # nodes filling this one file system
            torch_writers = torch_ckpt.node_writers(self.s.writers)
            need = self.s.bytes_needed(self.torch_note == "", torch_writers) * sharers
            if os.environ.get("STOKER_IO_SKIP_SPACE_CHECK") != "1":  # tests of the disk-full path only
                collective(c, lambda: safety.check_space(path, need, self.s.inodes_needed() * sharers))
            refusals = [r for r in collective(c, lambda: safety.probe_direct(wd.dir)) if r]
            direct = not refusals
            if refusals:
                self.say(f"{path}: {refusals[0]}")
            s = replace(self.s, direct=direct)
            fallback = refusals[0] if refusals else ""
            measured: list[tuple[FioJob, IoRecord]] = []
            for job in plan(s, str(wd.dir)):
                got = self._run_job(job, path, scope, s, fallback)
                measured += [(job, r) for r in got]
                if job.workload == "checkpoint_write" and self.torch_note == "":
                    self._torch(path, scope, wd, next((r for r in got if r.direction == "write"), None))
            self.confirm_under(measured, path, scope, s, fallback)
            c.barrier()  # nobody removes files another node may still read (shared path)
        finally:
            wd.remove()

    def confirm_under(
        self, measured: list[tuple[FioJob, IoRecord]], path: Path, scope: str, s: IoSettings, fallback: str
    ) -> None:
        """At the end of the path's phase, every test with a figure under the spec's threshold,
        or with a node that is a low outlier of the others, runs again on the same nodes
        (reports/shared/storage_rule.py chooses them); its records say `confirmation`
        (reports/judging/confirm.py judges the two together). Every node decides alike: all hold the same records."""
        spec = self.spec
        again: dict[FioJob, str] = {}  # each test once, in the order run
        for job, r in measured:
            if spec is not None and to_confirm(r, spec):
                again.setdefault(job, "under the spec's threshold")
            elif outliers_to_confirm(r):
                again.setdefault(job, "a node a low outlier of the others")
        for job, why in again.items():
            self._run_job(job, path, scope, s, fallback, confirmation=True, why=why)

    def _scope(self, path: Path, wd: safety.WorkDir) -> str:
        """shared when every node sees the marker rank 0 wrote (one file system for all),
        or, alone, when the file system type is a network one."""
        c = self.coord
        host0 = c.gather(wd.dir.name)[0]
        if c.rank == 0:
            (wd.dir / safety.SCOPE_MARKER).write_text(self.run_id + "\n")
        c.barrier()
        seen = collective(c, lambda: (wd.top / host0 / safety.SCOPE_MARKER).exists())
        if c.world > 1:
            return "shared" if all(seen) else "local"
        return "shared" if safety.mount_of(path).fstype in safety.SHARED_FS_TYPES else "local"

    def _run_job(
        self,
        job: FioJob,
        path: Path,
        scope: str,
        s: IoSettings,
        fallback: str,
        confirmation: bool = False,
        why: str = "under the spec's threshold",
    ) -> list[IoRecord]:
        c = self.coord
        dropped = False
        if job.workload == "checkpoint_read" and not s.direct:
            dropped = all(collective(c, safety.drop_caches))
        label = f"{job.workload} {job.op}".strip() if job.workload else ""
        if label and confirmation:
            label += f" (measured again: {why})"
        if label:
            self.say(f"{label} on {path} ...")
        c.barrier()
        procs = int(dict(job.options).get("numjobs", "1"))
        ctx = self._context(job, path, scope, s, fallback, dropped)
        if confirmation:
            ctx = replace(ctx, extra={**ctx.extra, "confirmation": True})
        limit = self.timeout_s + s.runtime_s + RAMP_S  # --timeout is on top of a time-based job's own runtime
        runs = self._measure(ctx, lambda: run_job(self.fio, job, c.host, limit))
        if not job.workload:
            return []
        # gathered in rank order: rank i ran on self.hosts[i]
        named = [r for i, run in enumerate(runs) for r in host_results(run.doc, self.hosts[i], procs)]
        out = []
        for direction in sorted({r.direction for r in named}):
            rec = aggregate([r for r in named if r.direction == direction], ctx)
            self.write(rec)
            self.say(f"{label} on {path}: {figure(rec)}")
            out.append(rec)
        return out

    def _context(
        self, job: FioJob, path: Path, scope: str, s: IoSettings, fallback: str, dropped: bool
    ) -> RecordContext:
        metadata_only = job.workload == "metadata" and job.op != "import_storm"
        data = {
            "checkpoint_write": s.ckpt_bytes * s.writers,
            "checkpoint_read": s.ckpt_bytes * s.writers,
            "dataloader_read": s.dl_workers * s.dl_files * s.dl_file_bytes,
        }.get(job.workload, 0)
        extra: dict[str, Any] = {"fio_version": self.fio_version, "fio_args": job.args()[:40]}
        role = record_role(str(path), [e.path for e in self.spec.storage] if self.spec else ())
        if role:
            extra["role"] = role
        if fallback and job.direct is False and job.workload != "metadata":
            extra["direct_fallback"] = fallback
        if job.workload == "dataloader_read":
            extra["sample_bytes"] = s.dl_sample_bytes
            extra["data_bytes_per_worker"] = s.dl_files * s.dl_file_bytes  # the data set it read
        return RecordContext(
            # the storm's unmeasured layout has no workload; its failure counts as the storm's
            run_id=self.run_id,
            workload=job.workload or "metadata",
            path=str(path),
            scope=scope,
            op=job.op if job.workload else "import_storm",
            direction="write" if job.op in ("create", "delete") else "",
            block_size=job.block_size,
            direct=None if job.workload == "metadata" else job.direct,
            metadata_only=metadata_only,
            cache_check=job.workload != "metadata",
            buffered_data_bytes=0 if job.direct else data,
            caches_dropped=dropped,
            ram_bytes=self.ram,
            extra=extra,
        )

    def _measure(self, ctx: RecordContext, fn: Callable[[], T]) -> list[T]:
        """collective(fn); a failure (full disk, fio error, lost node) is recorded, then raised."""
        try:
            return collective(self.coord, fn)
        except MeasurementAborted as exc:
            zeros = [
                HostResult(
                    host=h,
                    direction=ctx.direction or "write",
                    bytes=0,
                    ios=0,
                    start_s=0.0,
                    end_s=0.0,
                    procs=0,
                )
                for h in self.hosts
            ]
            self.write(aggregate(zeros, ctx, failed=str(exc)))
            raise

    def _torch(self, path: Path, scope: str, wd: safety.WorkDir, fio_write: IoRecord | None) -> None:
        """Per backend: one process per node (the per-process figure), then one per GPU at
        once (the node's figure: every rank of a sharded checkpoint saves its own shard).
        `fio_write`: fio's sequential write on the path just before, the device's figure a
        save is held to (iobench/sustained.py)."""
        c = self.coord
        writers = max(collective(c, lambda: torch_ckpt.node_writers(self.s.writers)))
        # one rank's shard per process (--ckpt-bytes, every repeat), held in RAM: all of a
        # node's never more than a quarter of the smallest node's memory
        nbytes = min(self.s.save_bytes(), max(_MIB, self.ram // 4 // writers // _MIB * _MIB))
        for backend in torch_ckpt.BACKENDS:
            for procs in sorted({1, writers}):
                self._torch_save(path, scope, wd, backend, nbytes, procs, fio_write)

    def _torch_save(
        self,
        path: Path,
        scope: str,
        wd: safety.WorkDir,
        backend: str,
        nbytes: int,
        procs: int,
        fio_write: IoRecord | None = None,
    ) -> None:
        c = self.coord
        who = f"{procs} processes per node" if procs > 1 else "one process per node"
        n = self.s.save_repeats
        small = format_size(torch_ckpt.sizes(nbytes)[0])
        self.say(
            f"checkpoint_write {backend} ({format_size(nbytes)} each, after {small}; {who}, {n} saves of each) on {path} ..."
        )
        c.barrier()
        ctx = RecordContext(
            run_id=self.run_id,
            workload="checkpoint_write",
            path=str(path),
            scope=scope,
            backend=backend,
            direct=False,
            ram_bytes=self.ram,
            extra={
                "shard_bytes": nbytes,
                "writers_per_node": procs,
                "capped_by_ram": nbytes < self.s.save_bytes(),
            },
        )
        results = self._measure(
            ctx, lambda: _save(backend, nbytes, wd.dir, c.host, procs, n, lambda ok: all(c.gather(ok)))
        )
        # one record per save over every host's part in it; the median large save's is written,
        # with the rate past the small save and whether a cache absorbed it (iobench/sustained.py)
        pairs = [
            (
                aggregate([host[i][0] for host in results], ctx),
                aggregate([host[i][1] for host in results], ctx),
            )
            for i in range(min(len(host) for host in results))
        ]
        rec = median_record([large for _, large in pairs])
        extra = {
            **rec.extra,
            **sustained.sustained_fields(pairs, rec.bw_GBps),
            **sustained.absorbed_fields(rec, fio_write),
        }
        rec = dataclasses.replace(rec, extra=extra)
        self.write(rec)
        self.say(f"checkpoint_write {backend} ({who}) on {path}: {figure(rec)}, {spread_of(rec).text()}")


def _save(
    backend: str,
    nbytes: int,
    directory: Path,
    host: str,
    procs: int = 1,
    repeats: int = 1,
    agree: torch_ckpt.Agree = torch_ckpt.alone,
) -> list[torch_ckpt.Pair]:
    target = directory / "torch"
    target.mkdir(exist_ok=True)
    try:
        if procs == 1:
            return torch_ckpt.save(backend, nbytes, target, host, repeats, agree)
        return torch_ckpt.save_many(backend, nbytes, target, host, procs, repeats, agree)
    except OSError as exc:
        if "No space left" in str(exc):
            raise DiskFull(f"disk full during {backend}: {exc}") from None
        raise MeasurementAborted(f"{backend} failed: {exc}") from None
    finally:
        shutil.rmtree(target, ignore_errors=True)  # free the space before the next test


def torch_ckpt_note(wanted: bool) -> str:
    if not wanted:
        return "skipped (--no-torch)"
    return torch_ckpt.torch_missing()


def figure(rec: IoRecord) -> str:
    hosts = (
        f"{rec.procs} proc{'s' if rec.procs != 1 else ''}, {rec.nodes} host{'s' if rec.nodes != 1 else ''}"
    )
    p99 = rec.lat_ms.get("p99")
    lat = f", p99 {p99:.3f} ms" if p99 is not None else ""
    if rec.bytes == 0:
        return f"{rec.iops:,.0f} ops/s{lat} ({hosts})"
    rate = next(
        (
            f", {rec.extra[k]:,.0f} {unit}"
            for k, unit in (("samples_per_s", "samples/s"), ("ops_per_s", "ops/s"))
            if k in rec.extra
        ),
        "",
    )
    suspect = " [cache suspect]" if rec.cache_suspect else ""
    if isinstance(rec.extra.get("sustained_GBps"), float):
        rate += f", {rec.extra['sustained_GBps']:.3f} GB/s past the {format_size(rec.extra['small_shard_bytes'])} save"
    if rec.extra.get("cache_absorbed") is True:
        suspect += " [faster than fio's sequential write here: a cache absorbed it, not the device's figure]"
    return f"{rec.bw_GBps:.3f} GB/s{rate}{lat} ({hosts}){suspect}"


def run(
    settings: IoSettings,
    paths: list[str],
    *,
    out: str,
    run_id: str,
    torch_ckpt: bool,
    timeout_s: float,
    spec_file: str | None = None,
) -> int:
    coord = connect(timeout_s=timeout_s)
    session: Session | None = None
    try:
        # checked on every node together, so one node's bad path or missing fio stops all
        # of them at once instead of leaving the others waiting at a barrier
        collective(coord, find_fio)
        checked = collective(coord, lambda: [safety.check_path(p) for p in paths])[coord.rank]
        run_id = coord.gather(run_id)[0]
        # rank 0 reads the spec (a bad file stops every node); all judge by its copy
        spec = collective(coord, lambda: load_spec(spec_file) if spec_file and coord.rank == 0 else None)[
            0
        ]  # every node files its work under rank 0's run id
        # the results dir is new or this run's own, else every node stops here (exit 2)
        collective(coord, lambda: claim(Path(out), run_id) if coord.rank == 0 else None)
        session = Session(
            coord,
            settings,
            out=Path(out),
            run_id=run_id,
            torch_ckpt=torch_ckpt,
            timeout_s=timeout_s,
            spec=spec,
        )
        if session.torch_note and session.torch_note != "not run":
            session.say(session.torch_note)
        session.write_manifests(checked)
        for p in checked:
            session.run_path(p)
        session.say(f"records in {Path(out) / IO_FILE} (run {run_id})")
        return 0
    finally:
        if session is not None:
            session.close()
        coord.close()
