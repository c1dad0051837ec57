"""reports: the record schema shared by every part of stoker, and the judgement.

Only this package's light modules (records, units, errors, manifest) may be imported
by netbench and iobench; nothing here imports torch, mpi4py or runs subprocesses
except the detection and import edges.
"""
