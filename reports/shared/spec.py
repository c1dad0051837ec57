"""The cluster spec (`--spec FILE`, docs/contract.md): what the hardware is advertised to do.

`load_spec(path)` reads the YAML; every number may be given directly or as `{GBps: X}`
(or `{Gbps: X}` in bits), links and accelerators by catalog name. A malformed file raises
UsageError naming the file, the field and what was expected, e.g.
`spec.yaml: network.inter_node.count: expected a positive integer, got 'eight'`.
`fill_from_hardware(spec, hardware)` completes a spec (or builds one) from what
the hosts detected (reports.evidence.hosts); what the spec says always wins.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reports.shared import catalog
from reports.shared.catalog import Accelerator, Link
from reports.shared.errors import UsageError
from reports.shared.findings import DEFAULT_THRESHOLDS, THRESHOLD_KINDS, Thresholds
from reports.shared.plausible import setting_why


@dataclass(frozen=True, kw_only=True, slots=True)
class StorageSpec:
    path: str
    kind: str  # shared | local (overrides the record's scope)
    read_GBps: float | None  # shared: the whole file system; local: one node
    write_GBps: float | None
    source: str = "spec"
    pvc: str | None = None  # Kubernetes: the PersistentVolumeClaim the pods mount at `path` (else hostPath)


@dataclass(frozen=True, kw_only=True, slots=True)
class Spec:
    name: str = "unnamed"
    file: str = ""
    accelerator: Accelerator | None = None
    gpus_per_node: int | None = None
    intra_node_GBps: float | None = None  # per GPU, unidirectional
    intra_node_link: Link | None = None
    inter_node_GBps: float | None = None  # per node, all NICs together, unidirectional
    inter_node_link: Link | None = None
    inter_node_count: int | None = None  # the links per node the user wrote (`count`), with the link
    inter_node_desc: str = ""
    # GPUs joined by NVLink (bridged pairs or quads) when fewer than the node holds: a collective
    # over more GPUs crosses the slower link between domains (PCIe)
    nvlink_domain: int | None = None
    between_domains_GBps: float | None = None  # per GPU, unidirectional
    between_domains_link: Link | None = None
    # how the nodes reach each other (network.fabric: ib | efa | roce | tcp): what `stoker submit`
    # renders a pod for when no --fabric is given; None: not said (the inter-node link may say)
    fabric: str | None = None
    storage: tuple[StorageSpec, ...] = ()
    # host -> the rack (or leaf switch) it sits in: the report names it beside a node or rail
    # that stands out, and counts a rack's outliers
    racks: dict[str, str] = field(default_factory=dict)
    price_per_gpu_hour: float | None = None
    thresholds: Thresholds = DEFAULT_THRESHOLDS  # resolved once here, at load; every judge reads it
    detected: tuple[str, ...] = ()  # what was filled in from hardware detection
    defaulted: tuple[str, ...] = ()  # fields taken from the accelerator's defaults

    @property
    def inter_node_per_gpu_GBps(self) -> float | None:
        """The node's NIC bandwidth shared by its GPUs (count x link / gpus_per_node)."""
        if self.inter_node_GBps is None or not self.gpus_per_node:
            return None
        return self.inter_node_GBps / self.gpus_per_node

    def intra_node_for(self, gpus: int) -> tuple[float | None, Link | None, str]:
        """(advertised GB/s per GPU, link, its description) for a collective over `gpus` GPUs of one
        node: the intra-node link's, or the link between NVLink domains once the collective spans
        more GPUs than one domain holds (its ring crosses that slower link)."""
        if self.nvlink_domain is not None and gpus > self.nvlink_domain:
            lk = self.between_domains_link
            name = lk.name if lk else f"{self.between_domains_GBps:g} GB/s"
            return (
                self.between_domains_GBps,
                lk,
                f"{name} between NVLink domains of {self.nvlink_domain} GPUs: {gpus} GPUs span several",
            )
        return (
            self.intra_node_GBps,
            self.intra_node_link,
            (self.intra_node_link.name if self.intra_node_link else "spec"),
        )


def thresholds_of(spec: Spec | None) -> Thresholds:
    """The pass thresholds a judgement holds figures to: the spec's, resolved when it was loaded,
    or the defaults when there is no spec."""
    return spec.thresholds if spec is not None else DEFAULT_THRESHOLDS


class Fields:
    """Typed reads from a YAML mapping with errors that name the file and the field."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, where: str, expected: str, got: Any) -> UsageError:
        shown = (
            repr(got) if not isinstance(got, int) or abs(got) < 10**60 else f"a {len(str(got))}-digit number"
        )
        return UsageError(f"{self.file}: {where}: expected {expected}, got {shown[:200]}")

    def mapping(self, value: Any, where: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, "a mapping (key: value lines)", value)
        return value

    def known_keys(self, value: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> None:
        for key in value:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                prefix = f"{where}." if where else ""
                raise UsageError(
                    f"{self.file}: {prefix}{key}: unknown field{hint}; known: {', '.join(allowed)}"
                )

    def number(self, value: Any, where: str, *, positive: bool = True, maximum: float | None = None) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if isinstance(value, str):  # PyYAML reads 70e9 and 4.0e6 (no exponent sign) as strings
            try:
                value, ok = float(value), True
            except ValueError:
                ok = False
        ok = ok and math.isfinite(value)
        want = "a positive number" if positive else "a number >= 0"
        if maximum is not None:
            want += f" no larger than {maximum:g}"
        if not ok or (value <= 0 if positive else value < 0) or (maximum is not None and value > maximum):
            raise self.fail(where, want, value)
        if why := setting_why(where, value):  # a physical range per unit (reports/shared/plausible.py)
            raise self.fail(where, f"{want}, {why}", value)
        return float(value)

    def integer(self, value: Any, where: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.fail(where, "a positive integer", value)
        if why := setting_why(where, value):  # a physical range per unit (reports/shared/plausible.py)
            raise self.fail(where, f"a positive integer {why}", value)
        return value

    def text(self, value: Any, where: str, choices: tuple[str, ...] = ()) -> str:
        if not isinstance(value, str) or not value.strip() or (choices and value not in choices):
            raise self.fail(where, f"one of {', '.join(choices)}" if choices else "a name", value)
        return value

    def rate(self, value: Any, where: str) -> float:
        """A bandwidth in GB/s: a number, {GBps: X} or {Gbps: X} (bits)."""
        if isinstance(value, Mapping) and set(value) <= {"GBps", "Gbps"} and len(value) == 1:
            ((unit, v),) = value.items()
            n = self.number(v, f"{where}.{unit}")
            return n / 8 if unit == "Gbps" else n
        if isinstance(value, Mapping):
            raise self.fail(where, "{GBps: X} or {Gbps: X}", dict(value))
        return self.number(value, where)

    def catalog_name(self, kind: str, value: Any, where: str) -> str:
        try:
            return catalog.resolve(kind, self.text(value, where))[0]
        except UsageError as exc:
            if str(exc).startswith(self.file):
                raise
            raise UsageError(f"{self.file}: {where}: {exc}") from None


def read_yaml(path: str | Path, what: str) -> tuple[Fields, Mapping[str, Any]]:
    from reports.shared.safe_read import load_yaml  # regular file, UTF-8, bounded depth and aliases

    f = Fields(str(path))
    data = load_yaml(path, what)
    return f, f.mapping(data if data is not None else {}, "top level")


# network.fabric's names: the fabrics `stoker submit --platform` renders (launchers/cloud/fabrics.py)
FABRICS = ("ib", "efa", "roce", "tcp")
_SPEC_KEYS = (
    "name",
    "accelerator",
    "gpus_per_node",
    "network",
    "storage",
    "racks",
    "price_per_gpu_hour",
    "thresholds",
)


def _link_rate(f: Fields, value: Any, where: str) -> tuple[float, Link | None, str]:
    """intra_node: a link name, {link: name}, or a rate."""
    rate, lk, _, desc = _link_count_rate(f, value, where)
    return rate, lk, desc


def _link_count_rate(f: Fields, value: Any, where: str) -> tuple[float, Link | None, int | None, str]:
    """(GB/s, link, count as written, words): a link name, {link: name, count: N}, or a rate
    (no link, no count)."""
    if isinstance(value, str) or (isinstance(value, Mapping) and "link" in value):
        if isinstance(value, Mapping):
            f.known_keys(value, where, ("link", "count"))
            name, count = value["link"], value.get("count", 1)
            count = f.integer(count, f"{where}.count")
        else:
            name, count = value, 1
        lk = catalog.link(f.catalog_name("link", name, where if isinstance(value, str) else f"{where}.link"))
        desc = lk.name if count == 1 else f"{count} x {lk.name}"
        return lk.GBps * count, lk, count, desc
    rate = f.rate(value, where)
    return rate, None, None, f"{rate:g} GB/s"


# a Kubernetes object name (RFC 1123 subdomain), as a PersistentVolumeClaim's must be
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


def _storage(f: Fields, items: Any) -> tuple[StorageSpec, ...]:
    if not isinstance(items, list):
        raise f.fail("storage", "a list of {path, kind, read_GBps, write_GBps}", items)
    out = []
    for i, item in enumerate(items):
        where = f"storage[{i}]"
        m = f.mapping(item, where)
        f.known_keys(
            m, where, ("path", "kind", "read_GBps", "write_GBps", "class", "count", "capacity_TiB", "pvc")
        )
        path = f.text(m.get("path"), f"{where}.path")
        kind = f.text(m.get("kind", "shared"), f"{where}.kind", ("shared", "local"))
        read = f.rate(m["read_GBps"], f"{where}.read_GBps") if "read_GBps" in m else None
        write = f.rate(m["write_GBps"], f"{where}.write_GBps") if "write_GBps" in m else None
        source = "spec"
        if "class" in m:
            sc = catalog.storage_class(f.catalog_name("storage class", m["class"], f"{where}.class"))
            if sc.per == "TiB":
                if "capacity_TiB" not in m:
                    raise f.fail(
                        f"{where}.capacity_TiB",
                        f"the capacity in TiB ({sc.name} is provisioned per TiB)",
                        None,
                    )
                mult = f.number(m["capacity_TiB"], f"{where}.capacity_TiB")
                source = f"{sc.name} x {mult:g} TiB"
            else:
                mult = float(f.integer(m.get("count", 1), f"{where}.count"))
                source = f"{sc.name} x {mult:g}"
            read = sc.read_GBps * mult if read is None else read
            write = sc.write_GBps * mult if write is None else write
        pvc = f.text(m["pvc"], f"{where}.pvc") if "pvc" in m else None
        if pvc is not None and not _K8S_NAME.match(pvc):
            raise f.fail(
                f"{where}.pvc", "a PersistentVolumeClaim's name (lower-case letters, digits, '-', '.')", pvc
            )
        out.append(
            StorageSpec(path=path, kind=kind, read_GBps=read, write_GBps=write, source=source, pvc=pvc)
        )
    return tuple(out)


def parse_spec(data: Mapping[str, Any], file: str) -> Spec:
    f = Fields(file)
    f.known_keys(data, "", _SPEC_KEYS)
    kw: dict[str, Any] = {"file": file}
    if "name" in data:
        kw["name"] = str(data["name"])
    if "accelerator" in data:
        kw["accelerator"] = catalog.accelerator(
            f.catalog_name("accelerator", data["accelerator"], "accelerator")
        )
    if "gpus_per_node" in data:
        kw["gpus_per_node"] = f.integer(data["gpus_per_node"], "gpus_per_node")
    net = f.mapping(data.get("network", {}), "network")
    f.known_keys(net, "network", ("intra_node", "inter_node", "nvlink_domain", "between_domains", "fabric"))
    if "fabric" in net:
        kw["fabric"] = f.text(net["fabric"], "network.fabric", FABRICS)
    if "intra_node" in net:
        kw["intra_node_GBps"], kw["intra_node_link"], _ = _link_rate(
            f, net["intra_node"], "network.intra_node"
        )
    if "inter_node" in net:
        kw["inter_node_GBps"], kw["inter_node_link"], kw["inter_node_count"], kw["inter_node_desc"] = (
            _link_count_rate(f, net["inter_node"], "network.inter_node")
        )
    if "nvlink_domain" in net:
        kw["nvlink_domain"] = f.integer(net["nvlink_domain"], "network.nvlink_domain")
    if "between_domains" in net:
        if "nvlink_domain" not in net:
            raise f.fail("network.between_domains", "network.nvlink_domain beside it", net["between_domains"])
        kw["between_domains_GBps"], kw["between_domains_link"], _ = _link_rate(
            f, net["between_domains"], "network.between_domains"
        )
    if "storage" in data:
        kw["storage"] = _storage(f, data["storage"])
    if "racks" in data:
        kw["racks"] = _racks(f, data["racks"])
    if "price_per_gpu_hour" in data:
        kw["price_per_gpu_hour"] = f.number(data["price_per_gpu_hour"], "price_per_gpu_hour", positive=False)
    th = f.mapping(data.get("thresholds", {}), "thresholds")
    f.known_keys(th, "thresholds", THRESHOLD_KINDS)
    kw["thresholds"] = Thresholds(**{k: f.number(v, f"thresholds.{k}", maximum=1.0) for k, v in th.items()})
    spec = fill_defaults(Spec(**kw))
    if spec.nvlink_domain is not None and spec.between_domains_GBps is None:
        raise f.fail(
            "network.between_domains",
            "the link between NVLink domains (a catalog link name such as pcie5, or {GBps: X}), or an "
            "accelerator whose host link it is",
            None,
        )
    if spec.nvlink_domain is not None and spec.gpus_per_node and spec.nvlink_domain > spec.gpus_per_node:
        raise f.fail(
            "network.nvlink_domain", f"at most gpus_per_node ({spec.gpus_per_node})", spec.nvlink_domain
        )
    return spec


def _racks(f: Fields, value: Any) -> dict[str, str]:
    """racks: {RACK: [host, ...]} (a rack or leaf switch and the nodes under it) -> {host: rack};
    a host in two racks is refused."""
    from reports.shared.hostnames import why_not_plain

    out: dict[str, str] = {}
    for rack, hosts in f.mapping(value, "racks").items():
        where = f"racks.{rack}"
        name = f.text(rack, "racks", ())
        if not isinstance(hosts, list) or not hosts:
            raise f.fail(where, "a list of host names", hosts)
        for h in hosts:
            if not isinstance(h, str) or why_not_plain(h):
                raise f.fail(where, "plain host names (letters, digits, '.', '_', '-')", h)
            if out.setdefault(h, name) != name:
                raise f.fail(where, f"hosts in one rack only ({h} is in {out[h]} too)", h)
    return out


def fill_defaults(spec: Spec) -> Spec:
    """What the accelerator implies when the spec does not say: its intra-node link and
    the usual GPUs per node."""
    acc = spec.accelerator
    if acc is None:
        return spec
    changes: dict[str, Any] = {}
    if spec.intra_node_GBps is None:
        lk = catalog.link(acc.intra_link)
        changes.update(intra_node_GBps=lk.GBps, intra_node_link=lk)
    if spec.gpus_per_node is None:
        changes["gpus_per_node"] = acc.gpus_per_node
    if spec.nvlink_domain is not None and spec.between_domains_GBps is None:
        between = catalog.link(acc.host_link)
        changes.update(between_domains_GBps=between.GBps, between_domains_link=between)
    if not changes:
        return spec
    return dataclasses.replace(spec, **changes, defaulted=spec.defaulted + tuple(changes))


def load_spec(path: str | Path) -> Spec:
    f, data = read_yaml(path, "spec")
    return parse_spec(data, f.file)


def given_scopes(spec: Spec | None) -> frozenset[str]:
    """The network scopes whose advertised figure the user's spec gives (its accelerator's intra-node
    link counts: naming the accelerator names its link)."""
    if spec is None:
        return frozenset()
    given = {"intra-node"} if spec.intra_node_GBps is not None else set()
    return frozenset(given | ({"inter-node"} if spec.inter_node_GBps is not None else set()))


def fill_from_hardware(spec: Spec | None, hardware: Mapping[str, Any]) -> Spec | None:
    """Complete `spec` (or make one) from the detected hardware (reports.evidence.hosts); the spec wins where it
    says something. Returns None when neither says anything usable."""
    base = spec or Spec(name="detected")
    changes: dict[str, Any] = {}
    filled: list[str] = []
    model = hardware.get("gpu_model")
    if base.accelerator is None and isinstance(model, str):
        acc = catalog.match_gpu_name(model)
        if acc is not None:
            changes["accelerator"] = acc
            filled.append(f"accelerator={acc.name} (from {model!r})")
    count = hardware.get("gpu_count")
    if (
        (base.gpus_per_node is None or "gpus_per_node" in base.defaulted)
        and isinstance(count, int)
        and count > 0
    ):
        changes["gpus_per_node"] = count
        filled.append(f"gpus_per_node={count}")
    nic = hardware.get("nic_total_GBps")
    if base.inter_node_GBps is None and isinstance(nic, (int, float)) and nic > 0:
        changes["inter_node_GBps"] = float(nic)
        changes["inter_node_desc"] = str(hardware.get("nic_desc", f"{nic:g} GB/s detected"))
        filled.append(f"inter_node={changes['inter_node_desc']}")
    if not changes:
        return spec
    out = fill_defaults(dataclasses.replace(base, **changes, detected=base.detected + tuple(filled)))
    return out


def match_storage(path: str, entries: Sequence[StorageSpec]) -> StorageSpec | None:
    """The spec entry for a measured path: the longest spec path that is it or contains it."""
    best: StorageSpec | None = None
    for e in entries:
        root = e.path.rstrip("/") or "/"
        if path == root or path.startswith(root if root == "/" else root + "/"):
            if best is None or len(root) > len(best.path.rstrip("/")):
                best = e
    return best
