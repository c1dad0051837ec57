"""`--fabric ib|efa|roce|tcp` as data: what each fabric adds to a pod (Kubernetes, and the
pod_config of a SkyPilot task on Kubernetes) and to every rank's environment, and which
extended resource a pod asks for, per device plugin and, for EFA, per instance type.
Pure; the renderers apply a row without knowing which one it is.

Where the numbers come from (checked when written; check them on your cluster with
`kubectl get node NODE -o jsonpath='{.status.allocatable}'`):
- EFA devices per instance: AWS EC2 user guide, "Maximize network bandwidth ... multiple
  network cards" (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html: a
  P5/P5e launch with 32 EFA devices), and torchx's named AWS resources
  (github.com/meta-pytorch/torchx torchx/specs/named_resources_aws.py, PRs 995 and 1098:
  p5 and p5e 32, p5en 16, p4d and p4de 4 `vpc.amazonaws.com/efa` devices).
- `rdma/ib`: CoreWeave's InfiniBand resource (its HGX node pods request `rdma/ib: 1`).
- `rdma/rdma_shared_device_a`: the NVIDIA Network Operator's NicClusterPolicy
  `rdmaSharedDevicePlugin` example, which configures Mellanox/k8s-rdma-shared-dev-plugin
  with resourceName `rdma_shared_device_a` (prefix `rdma`); one shared device per pod.
- `nvidia.com/hostdev`: the Network Operator's host-device network (sriov-network-device-
  plugin with resourceName `hostdev`): one whole HCA per device, one per GPU rail.
- `nvidia.com/sriov_rdma_vf`: an SR-IOV VF pool of the sriov-network-device-plugin, whose
  resourceName is user configured (k8snetworkplumbingwg/sriov-network-device-plugin README);
  one VF per Multus attachment. Name yours with --fabric-resource.
"""

from __future__ import annotations

from dataclasses import dataclass

from reports.shared import spec as spec_file
from reports.shared.errors import UsageError
from reports.shared.spec import Spec


@dataclass(frozen=True, kw_only=True, slots=True)
class Fabric:
    name: str
    about: str
    resources: tuple[tuple[str, str], ...] = ()  # further limits = requests (hugepages)
    env: tuple[tuple[str, str], ...] = ()  # every rank's, wherever the ranks run
    capabilities: tuple[str, ...] = ()  # securityContext.capabilities.add
    network_annotation: bool = False  # Multus / SR-IOV: k8s.v1.cni.cncf.io/networks
    host_network: bool = False  # hostNetwork + dnsPolicy ClusterFirstWithHostNet
    skypilot_tier: str | None = None  # SkyPilot resources.network_tier the fabric needs


@dataclass(frozen=True, kw_only=True, slots=True)
class DeviceRow:
    """One row: a fabric's devices as a device plugin advertises them."""

    fabric: str
    plugin: str  # --device-plugin
    resource: str  # the extended resource name
    count: int  # per pod (per Multus attachment when per_attachment)
    instance_type: str | None = None  # EFA: the count is the instance type's
    per_attachment: bool = False
    source: str = ""


DEVICES: tuple[DeviceRow, ...] = (
    DeviceRow(fabric="ib", plugin="coreweave", resource="rdma/ib", count=1, source="CoreWeave HGX pods"),
    DeviceRow(
        fabric="ib",
        plugin="rdma-shared",
        resource="rdma/rdma_shared_device_a",
        count=1,
        source="NVIDIA Network Operator rdmaSharedDevicePlugin / k8s-rdma-shared-dev-plugin",
    ),
    DeviceRow(
        fabric="ib",
        plugin="hostdev",
        resource="nvidia.com/hostdev",
        count=8,
        source="NVIDIA Network Operator host-device network: one HCA per GPU rail",
    ),
    DeviceRow(
        fabric="roce",
        plugin="sriov",
        resource="nvidia.com/sriov_rdma_vf",
        count=1,
        per_attachment=True,
        source="sriov-network-device-plugin (user-configured resourceName)",
    ),
    *(
        DeviceRow(
            fabric="efa",
            plugin="aws-efa",
            resource="vpc.amazonaws.com/efa",
            count=n,
            instance_type=t,
            source="AWS EC2 user guide efa-acc-inst-types; torchx named_resources_aws",
        )
        for t, n in (
            ("p5.48xlarge", 32),
            ("p5e.48xlarge", 32),
            ("p5en.48xlarge", 16),
            ("p4d.24xlarge", 4),
            ("p4de.24xlarge", 4),
        )
    ),
)
EFA_DEFAULT_TYPE = "p5.48xlarge"  # the EFA row used when no --instance-type is given
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


FABRICS: dict[str, Fabric] = {
    f.name: f
    for f in (
        Fabric(
            name="ib",
            about="InfiniBand through an RDMA device plugin",
            env=(("NCCL_IB_DISABLE", "0"),),
            # RDMA pins (registers) memory: without IPC_LOCK ibv_reg_mr fails
            capabilities=("IPC_LOCK",),
            skypilot_tier="best",
        ),
        Fabric(
            name="efa",
            about="AWS Elastic Fabric Adapter (devices per instance type)",
            # libfabric's EFA provider wants 2 MiB huge pages (limits = requests)
            resources=(("hugepages-2Mi", "5120Mi"),),
            env=(("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("NCCL_IB_DISABLE", "1")),
            capabilities=("IPC_LOCK",),
            # on AWS VMs SkyPilot attaches EFA only with the best network tier
            skypilot_tier="best",
        ),
        Fabric(
            name="roce",
            about="RoCE on SR-IOV virtual functions attached with Multus",
            # no NCCL_IB_GID_INDEX: each rank takes the RoCE v2 IPv4 GID of its own ports' tables
            # (netbench/nccl_env.py), where a fixed 3 is wrong on any port with another layout
            env=(("NCCL_IB_DISABLE", "0"),),
            capabilities=("IPC_LOCK",),
            network_annotation=True,
        ),
        Fabric(
            name="tcp",
            about="plain TCP on the nodes' own interfaces (host networking)",
            env=(("NCCL_IB_DISABLE", "1"),),
            host_network=True,
        ),
    )
}


assert tuple(FABRICS) == spec_file.FABRICS  # the spec's network.fabric names these

AUTO = "auto"  # --fabric's default: the spec's, else tcp with one line saying so
# The spec's inter-node link (reports/judging/catalog/links.yaml, by its catalog name) and the
# fabric that carries it. Ethernet links are absent: RoCE or plain TCP, the name does not say.
LINK_FABRIC: dict[str, str] = {
    "ib-hdr": "ib",
    "ib-ndr": "ib",
    "ib-xdr": "ib",
    "efa-v1": "efa",
    "efa-v2": "efa",
    "efa-v3": "efa",
}
FALLBACK = "tcp"


def choose(given: str | None, spec: Spec | None) -> tuple[str, str]:
    """The fabric a cloud job renders and one line saying where it came from: --fabric when given
    (it wins), else the spec's network.fabric, else the fabric of its inter-node link; else tcp,
    the line then a warning naming how to set it."""
    if given and given != AUTO:
        return given, ""
    if spec is not None and spec.fabric:
        return spec.fabric, f"--fabric {spec.fabric}: the spec's network.fabric (--fabric overrides it)"
    link = spec.inter_node_link.name if spec is not None and spec.inter_node_link else None
    if link in LINK_FABRIC:
        name = LINK_FABRIC[link]
        return (
            name,
            f"--fabric {name}: from the spec's network.inter_node link {link} (--fabric overrides it)",
        )
    why = (
        "no --spec"
        if spec is None
        else f"the spec's inter-node link {link} may be RoCE or TCP"
        if link
        else "the spec names no network.fabric nor an inter-node link"
    )
    return FALLBACK, (
        f"warning: the fabric is not known ({why}): rendering --fabric {FALLBACK} (host networking, no "
        "RDMA); set it with --fabric ib|efa|roce or network.fabric in the spec"
    )


def plugins(fabric: str) -> list[str]:
    """The --device-plugin choices of a fabric, its default first."""
    return list(dict.fromkeys(r.plugin for r in DEVICES if r.fabric == fabric))


def device_row(fabric: str, plugin: str | None, instance_type: str | None) -> DeviceRow | None:
    """The table's row for the fabric (None: it has no devices); bad choices are UsageError."""
    rows = [r for r in DEVICES if r.fabric == fabric]
    if not rows:
        if plugin:
            raise UsageError(f"--device-plugin {plugin}: --fabric {fabric} has no devices to request")
        return None
    names = plugins(fabric)
    if plugin and plugin not in names:
        raise UsageError(
            f"--device-plugin {plugin!r} is not one for --fabric {fabric}: use {', '.join(names)}"
        )
    rows = [r for r in rows if r.plugin == (plugin or names[0])]
    if rows[0].instance_type is None:
        return rows[0]
    want = instance_type or EFA_DEFAULT_TYPE
    for r in rows:
        if r.instance_type == want:
            return r
    known = ", ".join(f"{r.instance_type} {r.count}" for r in rows)
    raise UsageError(
        f"--instance-type {want}: no {rows[0].resource} count known for it ({known}); "
        f"give --fabric-resource {rows[0].resource}=N"
    )


def parse_resources(items: list[str]) -> tuple[tuple[str, int], ...]:
    """--fabric-resource NAME=COUNT (repeatable) -> pairs; one line and exit 2 when bad."""
    out: dict[str, int] = {}
    for item in items:
        name, sep, count = item.rpartition("=")
        if not sep or not name or "/" not in name or not count.isdigit() or int(count) < 1:
            raise UsageError(
                f"--fabric-resource {item!r}: use NAME=COUNT with an extended resource name and a "
                "positive count, e.g. rdma/shared_ib=1 or vpc.amazonaws.com/efa=16"
            )
        out[name] = int(count)
    return tuple(out.items())
