"""Slurm: the acceptance sbatch (acceptance.sbatch, rendered by sbatch.py), the nodes a failed
step lost (lost_step.py: read from srun's own output), the GRES check, pyxis/enroot container
steps and `stoker submit` for Slurm.

May import: reports.shared, launchers
"""
