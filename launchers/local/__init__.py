"""This machine and the shell launchers: the local sessions' shared state, the builders the
shell scripts call (`python -m launchers.local.argv`), phases run as child processes and the
job's one-line summary.

May import: reports.shared, launchers
"""
