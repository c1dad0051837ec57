"""This machine and the shell launchers: the local sessions' shared state, the builders the
shell scripts call (`python -m launchers.local.argv`), phases run as child processes, the
job's one-line summary and torchrun.sh's preflight relay (node 0 hearing the other nodes'
preflight over TCP when the results dir is each node's own).

May import: reports.shared, launchers
"""
