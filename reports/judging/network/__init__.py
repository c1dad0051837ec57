"""The network's judges (pure): healthy references and wire rates, the rail behind a slow
figure, NIC counters, the groups search's culprits, localisation of a slow node or link, and
the causes NCCL's own words name.

May import: reports.shared, reports.table, reports.evidence, reports.judging.network, reports.judging.fleet
"""
