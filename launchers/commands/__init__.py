"""stoker's own commands on a node: run, net, soak, check, drain, preflight, set-aside,
fingerprint (the `stoker` dispatcher, launchers/cli.py, imports each lazily by name).

May import: reports, netbench, iobench, launchers
"""
