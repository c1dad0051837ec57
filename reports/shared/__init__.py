"""The floor every part of stoker stands on: what measurement (netbench, iobench), the
launchers and every room of the report share. The record schema and its vocabularies
(records, ops, findings, units, errors, plausible), the run's files (manifest, phases, outdir,
safe_read, safe_write, redact, runs, setaside, hostnames, spread), and the rules both sides
apply by the report's own terms: the catalog of advertised figures, the spec, which storage
figure is measured again (storage_rule), the outlier rule and the groups search, and how fio's
output reads (fio_json, fio_text, fio_classes). Nothing here runs a tool or imports torch.

May import: reports.shared
"""
