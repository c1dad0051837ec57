"""`--fabric ib|efa|roce|tcp` as a table: what each one adds to a pod (Kubernetes, and the
pod_config of a SkyPilot task on Kubernetes) and to every node's environment. Pure data;
the renderers apply an entry without knowing which one it is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Fabric:
    name: str
    about: str
    device_resource: str | None = None  # extended resource of the fabric's devices, per pod
    default_devices: int = 0  # how many of them (--fabric-devices overrides)
    resources: tuple[tuple[str, str], ...] = ()  # further limits = requests (hugepages need memory)
    env: tuple[tuple[str, str], ...] = ()
    capabilities: tuple[str, ...] = ()  # securityContext.capabilities.add
    network_annotation: bool = False  # Multus / SR-IOV: k8s.v1.cni.cncf.io/networks
    host_network: bool = False  # hostNetwork + dnsPolicy ClusterFirstWithHostNet


FABRICS: dict[str, Fabric] = {
    f.name: f
    for f in (
        Fabric(
            name="ib",
            about="InfiniBand through the RDMA shared device plugin",
            device_resource="rdma/ib",
            default_devices=1,
            env=(("NCCL_IB_DISABLE", "0"),),
            # RDMA pins (registers) memory: without IPC_LOCK ibv_reg_mr fails
            capabilities=("IPC_LOCK",),
        ),
        Fabric(
            name="efa",
            about="AWS Elastic Fabric Adapter (p5: 32 devices, p4d: 4)",
            device_resource="vpc.amazonaws.com/efa",
            default_devices=32,
            # libfabric's EFA provider wants 2 MiB huge pages; hugepages need a memory request
            resources=(("hugepages-2Mi", "5120Mi"), ("memory", "32Gi")),
            env=(("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1"), ("NCCL_IB_DISABLE", "1")),
            capabilities=("IPC_LOCK",),
        ),
        Fabric(
            name="roce",
            about="RoCE on SR-IOV virtual functions attached with Multus",
            env=(("NCCL_IB_DISABLE", "0"), ("NCCL_IB_GID_INDEX", "3")),  # 3: RoCE v2 over IPv4
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
