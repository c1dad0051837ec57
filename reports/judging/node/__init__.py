"""The node's judges (pure): the inventory (GPUs, links, ports by role, GPU faults) and the
accelerators' compute appetite.

May import: reports.shared, reports.judging.node, reports.judging.network
"""
