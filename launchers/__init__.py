"""launchers: how a run reaches the machines — the acceptance job's one plan (plan.py: its
phases, commands, limits and expected times, made once from the submit options) that the
sbatch job, the Kubernetes, SkyPilot and dstack jobs and the shell launchers render; pure
command builders for srun, torchrun, mpirun and local runs; `stoker run` and `stoker submit`;
and the `stoker` command-line entry point."""
