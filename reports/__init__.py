"""reports: the record schema shared by every part of stoker, and the judgement.

Only this package's light modules (records, ops, units, errors, manifest) may be imported
by netbench and iobench; nothing here imports torch, mpi4py or runs subprocesses (hardware
detection is IO on the measuring side, netbench/inventory/hardware.py).
"""
