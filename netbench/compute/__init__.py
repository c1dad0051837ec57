"""`stoker compute`: the accelerators' appetite, measured. A matmul sweep over aligned shapes on
every device of the node at once (one process per GPU, as training runs them; CPU matmul on
machines without one), written as `kind: "compute"` records to DIR/compute.jsonl.

sweep.py is the method (shapes, budget, statistics: pure but for the Device it is given);
devices.py the thin torch edge (CPU: perf_counter; CUDA: events, L2 flushed); smi.py reads
clocks, power and throttle reasons through nvidia-smi while the sweep runs; cli.py the command.
The method follows mamf-finder (stas00/ml-engineering, compute/accelerator/benchmarks)."""
