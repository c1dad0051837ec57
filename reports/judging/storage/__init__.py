"""The storage judges (pure): the checkpoint figures a save measured and how training writes a
checkpoint.

May import: reports.shared, reports.evidence, reports.judging.storage
"""
