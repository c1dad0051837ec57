"""The workload's judges (pure): what the accelerators of a workload need, and the starvation
model of how long they would wait for the network and storage.

May import: reports.shared, reports.evidence, reports.judging
"""
