"""Node inventory (`stoker inventory`): PCIe link state of GPUs and NICs, network ports,
GPU<->NIC affinity, NVLink, GPU error counters and the measured host link, written as
`kind: "host"` records to DIR/host.jsonl. parse.py is pure; read.py and copy.py are the IO."""
