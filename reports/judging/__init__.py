"""Judging: spec, catalog, comparison with advertised figures, the starvation model, localisation
(hardware detection is IO on the measuring side: netbench/inventory/hardware.py)."""
