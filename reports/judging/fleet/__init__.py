"""Judges over time and against earlier runs (pure): the accepted baseline (its figures and
its YAML file) and stability over a soak.

May import: reports.shared, reports.evidence, reports.judging.fleet, reports.judging.node
"""
