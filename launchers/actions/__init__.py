"""What `stoker check` and `stoker drain` may do to a node: the rules (pure), the scheduler's
commands, the check's steps and the Prometheus export.

May import: reports.shared, reports.judging, launchers
"""
