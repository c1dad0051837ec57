"""The starvation model's storage rows (pure): the dataloader's reads and the checkpoint's
stall, judged on wall time as the network rows are (docs/model.md)."""

from __future__ import annotations

from reports.judging.storage import ckpt_save, savepath
from reports.judging.workload.model_rows import Measured, missing, row
from reports.judging.workload.workload import Workload
from reports.shared import catalog
from reports.shared.findings import ModelRow
from reports.shared.spec import Spec


def dataloader_row(
    w: Workload, spec: Spec | None, m: Measured, g: int, c: float | None, usd: float | None
) -> ModelRow | None:
    """Demand follows the compute time C, what the accelerators need when nothing starves
    them; a step stretched by waiting would understate it (and the waiting with it)."""
    dl = w.dataloader
    if dl is None:
        return None
    check = f"dataloader read ({dl.name})"
    note = ""
    if dl.bytes_per_token is not None:
        if c is None or w.global_batch_tokens is None or w.gpus is None:
            return missing(
                "dataloader",
                m.read_component,
                check,
                "GB/s",
                "token-based dataloader needs a model (params, gpus, global_batch_tokens)",
            )
        demand = w.global_batch_tokens / w.gpus * g * dl.bytes_per_token / c / 1e9
        base = c
    else:
        assert dl.bytes_per_sample is not None
        if dl.samples_per_s_per_gpu is not None:
            sps = dl.samples_per_s_per_gpu
        else:
            assert dl.batch is not None
            acc = spec.accelerator.name if spec and spec.accelerator else ""
            key = "a100" if acc.startswith("a100") else "h100"
            if not acc.startswith(("a100", "h100")):
                note = f"MLPerf compute time of the {key.upper()} used (none published for {acc or 'an unknown accelerator'})"
            sps = dl.batch / dl.compute_s[key]
        demand = sps * dl.bytes_per_sample * g / 1e9
        base = c if c is not None else (dl.batch / sps if dl.batch else 1.0)
    achieved = m.read_GBps_per_node
    if achieved is None:
        return missing(
            "dataloader", m.read_component, check, "GB/s per node", "no dataloader_read measurement"
        )
    if m.host_h2d_GBps and m.host_h2d_GBps * g < achieved:
        # the samples still cross each GPU's host link: the slower leg sets the pace
        achieved = m.host_h2d_GBps * g
        note = "; ".join(
            x
            for x in (
                note,
                f"host-to-device leg at the {m.host_link_desc} {m.host_h2d_GBps:g} GB/s per GPU is the slower leg",
            )
            if x
        )
    # reads are prefetched during the step: the GPUs wait only for what the storage cannot deliver in time
    exposed = max(0.0, base * (demand / achieved - 1))
    return row(
        "dataloader",
        m.read_component,
        check,
        demand,
        achieved,
        "GB/s per node",
        exposed,
        base,
        w.idle_budget,
        usd,
        gpus_per_node=g,
        note=note,
    )


def checkpoint_row(
    w: Workload, spec: Spec | None, m: Measured, usd: float | None, g: int = 1
) -> ModelRow | None:
    """Every writing rank saves its shard at once (ckpt_save.py); the GPUs wait for the
    slowest node, or for shared storage's aggregate."""
    ck = w.checkpoint
    if ck is None or w.params is None:
        return None
    size = w.params * ck.bytes_per_param
    interval = ck.interval_minutes * 60
    mode = "async" if ck.async_ else "sync"
    check = f"checkpoint write ({size / 1e9:.0f} GB every {ck.interval_minutes:g} min, {mode})"
    nodes = ckpt_save.job_nodes(w.gpus or g, g)
    rates = m.save or (savepath.given(m.write_GBps, nodes) if m.write_GBps else None)
    if rates is None:
        return missing(
            "checkpoint",
            m.write_component,
            check,
            "GB/s",
            f"no checkpoint_write measurement of a {ck.format} save",
        )
    lay = ckpt_save.layout(size, w.data, ck.format, w.gpus or g, g, w.tensor)
    t = ckpt_save.save_time(size, lay, rates, local=m.write_component == "local storage")
    write_s = t.seconds
    e_max = w.idle_budget / (1 - w.idle_budget) * interval
    note = ""
    if not ck.async_:
        stall, required = write_s, size / e_max / 1e9
    else:
        # async: the GPUs wait only for the copy to host memory (over the host link, an
        # advertised figure, or the one the inventory measured), plus any part of the
        # background write the interval cannot hold
        if m.host_d2h_GBps:
            copy_GBps, source = m.host_d2h_GBps, f"the {m.host_link_desc}"
        else:
            host = catalog.link(spec.accelerator.host_link if spec and spec.accelerator else "pcie5-x16")
            copy_GBps, source = host.GBps, f"the advertised {host.name}"
        copy_s = size / (w.gpus or 1) / (copy_GBps * 1e9)
        stall = copy_s + max(0.0, write_s - interval)
        required = size / interval / 1e9
        note = f"copy-out at {source} {copy_GBps:g} GB/s per GPU: {copy_s:.2f} s"
    writers = (
        f"{lay.writers} rank{'s' if lay.writers != 1 else ''} on {lay.nodes} node{'s' if lay.nodes != 1 else ''}"
        f" write {lay.rank_bytes / 1e9:.3g} GB each ({lay.rule}); set by {t.limit}"
    )
    note = "; ".join(x for x in (t.floor, rates.note, writers, t.beyond, note) if x)
    return row(
        "checkpoint",
        m.write_component,
        check,
        required,
        size / write_s / 1e9,
        "GB/s",
        stall,
        interval,
        w.idle_budget,
        usd,
        checkpoint_bytes=size,
        write_s=write_s,
        serialise_s=t.serialise_s,
        node_s=t.node_s,
        aggregate_s=t.aggregate_s,
        writers=lay.writers,
        writing_nodes=lay.nodes,
        rank_bytes=lay.rank_bytes,
        nodes_measured=rates.nodes_measured,
        floor=t.floor,
        note=note,
    )
