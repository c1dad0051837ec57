"""Slurm: the acceptance sbatch (acceptance.sbatch, rendered by sbatch.py), the GRES check,
pyxis/enroot container steps and `stoker submit` for Slurm.

May import: reports.shared, launchers
"""
