"""launchers: how a run reaches the machines — pure command builders for srun, torchrun,
mpirun and local runs, the sbatch template, `stoker run` and `stoker submit`, and the
`stoker` command-line entry point."""
